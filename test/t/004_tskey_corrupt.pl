# test/t/004_tskey_corrupt.pl: tskey indexes with deliberately corrupted
# pages.
#
# One index per kind of corruption (a leaf's run count, key lengths, a line
# pointer, page header bounds, sibling links into a cycle or beyond the
# file, a downlink, a zeroed page, a key that is not text).  Before the
# corruption, inserts, deletes and VACUUM change every index and the server
# is crashed and restarted, so that its WAL (tskey's resource manager's
# records with the library preloaded) is replayed under
# wal_consistency_checking on the pages then corrupted.  With the server
# stopped, bytes of each index file are overwritten; then verify_index and
# an index scan run on each.  verify_index must end in an error naming the
# corruption (SQLSTATE XX002 index_corrupted, or XX001), and nothing may
# crash: the server stays up throughout, no backend killed by a signal.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TablestoreNode;

my @kinds = qw(runcount pklen rklen lpoff upper cycle nextbad downlink zeroed utf16odd badkey tid);
# kind tid: a heap tuple whose entry is lost (its TID changed), the heap TID lost
my $lost_tid;
my $node = ts_node('corrupt');
$node->append_conf('postgresql.conf', qq{
autovacuum = off
wal_consistency_checking = '@{[ts_wal_check()]}'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION tablestore');
for my $k (@kinds)
{
	$node->safe_psql('postgres', qq{
CREATE TABLE c_$k (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, n int);
INSERT INTO c_$k SELECT CASE WHEN g % 3 = 0 THEN '漢字' || (g % 7) ELSE 'p' || (g % 7) END, lpad(g::text, 8, '0'), g
FROM generate_series(1, 4000) g;
CREATE UNIQUE INDEX c_${k}_key ON c_$k USING tskey (pk, rk);
SELECT tablestore.verify_index('c_${k}_key');});
}
# changes replayed after a crash: inserts that split, deletes, VACUUM
$node->safe_psql('postgres', 'CHECKPOINT');
for my $k (@kinds)
{
	$node->safe_psql('postgres', qq{
INSERT INTO c_$k SELECT 'p' || (g % 7), lpad(g::text, 8, '0') || 'z' || repeat('y', g % 60), g FROM generate_series(1, 800) g;
DELETE FROM c_$k WHERE n % 5 = 0;
VACUUM c_$k;});
}
$node->stop('immediate');
$node->start;
for my $k (@kinds)
{
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT tablestore.verify_index('c_${k}_key')");
	is($rc, 0, "$k: the replayed index passes verify_index") or diag($err);
}
$node->safe_psql('postgres', 'CHECKPOINT');
my %file = map {
	$_ => $node->data_dir . '/' . $node->safe_psql('postgres', "SELECT pg_relation_filepath('c_$_\_key')")
} @kinds;
$node->stop;

# corrupt(FILE, KIND): overwrite bytes of a tree page, chosen by parsing it
sub corrupt
{
	my ($file, $kind) = @_;
	my $bs = 8192;
	open(my $fh, '+<:raw', $file) or die "$file: $!";
	my $size = -s $file;
	my $page = sub { my $b = shift; seek($fh, $b * $bs, 0); read($fh, my $p, $bs); return $p; };
	my $put = sub { my ($b, $p) = @_; seek($fh, $b * $bs, 0); print $fh $p; };
	my $special = sub { return unpack('v', substr(shift, 16, 2)); };
	my $opaque = sub { my $p = shift; return unpack('V V v v v', substr($p, $special->($p), 14)); };
	my $lp = sub {
		my ($p, $i) = @_;
		my $w = unpack('V', substr($p, 24 + 4 * ($i - 1), 4));
		return ($w & 0x7FFF, ($w >> 15) & 3, $w >> 17);
	};
	# the first leaf that is not the rightmost
	my ($leaf, $lpage);
	for my $b (2 .. $size / $bs - 1)
	{
		my $p = $page->($b);
		my ($prev, $next, $level, $flags, $id) = $opaque->($p);
		if ($id == 0xFF8A && $level == 0 && $next != 0xFFFFFFFF) { $leaf = $b; $lpage = $p; last; }
	}
	die "no leaf in $file" unless defined $leaf;
	my ($off) = $lp->($lpage, 2);    # the first run (line pointer 1 is the high key)
	my $s = $special->($lpage);
	if ($kind eq 'runcount') { substr($lpage, $off + 2, 2) = pack('v', 0xFFFF); }
	elsif ($kind eq 'pklen') { substr($lpage, $off, 2) = pack('v', 0x7FFF); }
	elsif ($kind eq 'rklen')
	{
		my $pklen = unpack('v', substr($lpage, $off, 2)) & 0x7FFF;
		substr($lpage, $off + 4 + $pklen + 6, 2) = pack('v', 4000);
	}
	elsif ($kind eq 'lpoff') { substr($lpage, 24 + 4, 4) = pack('V', 8100 | (1 << 15) | (600 << 17)); }
	elsif ($kind eq 'upper') { substr($lpage, 14, 2) = pack('v', 8190); }
	elsif ($kind eq 'cycle') { substr($lpage, $s + 4, 4) = pack('V', $leaf); }
	elsif ($kind eq 'nextbad') { substr($lpage, $s + 4, 4) = pack('V', 999999); }
	elsif ($kind eq 'zeroed') { $lpage = "\0" x $bs; }
	elsif ($kind eq 'utf16odd') { substr($lpage, $off, 2) = pack('v', 0x8000 | 3); }
	elsif ($kind eq 'badkey')
	{
		# a PartitionKey byte no text has: a lone low surrogate, or 0xFF in UTF-8
		my $utf16 = unpack('v', substr($lpage, $off, 2)) & 0x8000;
		substr($lpage, $off + 4, 1) = $utf16 ? "\xDC" : "\xFF";
	}
	elsif ($kind eq 'tid')
	{
		# the first entry's heap TID made one no tuple has: a well-formed
		# index that lacks the entry of a heap tuple
		my $pklen = unpack('v', substr($lpage, $off, 2)) & 0x7FFF;
		my ($hi, $lo, $pos) = unpack('v v v', substr($lpage, $off + 4 + $pklen, 6));
		$lost_tid = '(' . (($hi << 16) | $lo) . ",$pos)";
		substr($lpage, $off + 4 + $pklen + 4, 2) = pack('v', 0x7FFF);
	}
	elsif ($kind eq 'downlink')
	{
		my $root = $page->(1);
		my ($roff) = $lp->($root, 1);
		substr($root, $roff, 4) = pack('V', 999999);
		$put->(1, $root);
		close($fh);
		return;
	}
	$put->($leaf, $lpage);
	close($fh);
}
corrupt($file{$_}, $_) for @kinds;
$node->start;

for my $k (@kinds)
{
	my ($rc, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT tablestore.verify_index('c_${k}_key')");
	like($err, qr/ERROR:  XX00[12]: /, "$k: verify_index reports the corruption");
	($rc, $out, $err) = $node->psql('postgres', qq{
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM (SELECT n FROM c_$k WHERE pk OPERATOR(tablestore.>=) ''::tablestore.key ORDER BY pk, rk) s});
	note("$k scan: " . ($err =~ /(ERROR:.*)/ ? substr($1, 0, 140) : 'no error (the scan did not reach the page)'));
	# a page that contradicts the layout is named: index and block
	like($err, qr/corrupted tskey page, index "c_${k}_key" block \d+: /, "$k: the scan's error names the index and the block")
	  if $err =~ /corrupted tskey (index )?page/;
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$k: the server is up after the scan");
}
# heapallindexed finds the heap tuple without an entry, which the light
# check alone (structure only) does not see
my ($rc, $out, $err) = $node->psql('postgres', "SELECT tablestore.verify_index('c_tid_key', false)");
is($rc, 0, 'tid: the light check finds the structure sound') or diag($err);
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT tablestore.verify_index('c_tid_key', false, true)");
like($err, qr/ERROR:  XX002: index "c_tid_key": heap tuple \Q$lost_tid\E with keys \(.*\) has no index entry/,
	"tid: heapallindexed names the heap tuple $lost_tid without an entry");
unlike(slurp_file($node->logfile), qr/terminated by signal|PANIC|TRAP/, 'no backend crashed');
$node->stop;
done_testing();
