#!/usr/bin/env bash
# test/tskey_corrupt.sh: tskey indexes with deliberately corrupted pages.
# Starts its own server, builds one index per kind of corruption, stops the
# server and overwrites bytes of each index file (a leaf's run count, key
# lengths, a line pointer, page header bounds, sibling links into a cycle
# or beyond the file, a downlink, a zeroed page, a key that is not text),
# starts it again, and runs
# verify_index and an index scan on each.  Each must end in an error naming
# the corruption (SQLSTATE XX002 index_corrupted, or XX001), never a crash:
# the server must stay up throughout with no backend killed by a signal.
# Before the corruption, inserts, deletes and VACUUM change every index
# and the server is crashed and restarted, so that its WAL (tskey's
# resource manager's records with the library preloaded) is replayed under
# wal_consistency_checking on the pages then corrupted.
set -u
export LC_ALL=C
cd "$(dirname "$0")/.."
. tools/lib.sh

DIR=$(mktemp -d /tmp/tscorrupt.XXXXXX)
trap 'ts_stop_server "$DIR"; rm -rf "$DIR"' EXIT
ts_start_server "$DIR" -c autovacuum=off -c wal_consistency_checking=$TS_WAL_CHECK || exit 1
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }

KINDS="runcount pklen rklen lpoff upper cycle nextbad downlink zeroed utf16odd badkey"
q -c "CREATE EXTENSION tablestore" >/dev/null || exit 1
for k in $KINDS; do
	q <<SQL >/dev/null || exit 1
CREATE TABLE c_$k (pk tablestore.key NOT NULL, rk tablestore.key NOT NULL, n int);
INSERT INTO c_$k SELECT CASE WHEN g % 3 = 0 THEN '漢字' || (g % 7) ELSE 'p' || (g % 7) END, lpad(g::text, 8, '0'), g
FROM generate_series(1, 4000) g;
CREATE UNIQUE INDEX c_${k}_key ON c_$k USING tskey (pk, rk);
SELECT tablestore.verify_index('c_${k}_key');
SQL
done
# changes replayed after a crash: inserts that split, deletes, VACUUM
q -c "CHECKPOINT" >/dev/null
for k in $KINDS; do
	q <<SQL >/dev/null || exit 1
INSERT INTO c_$k SELECT 'p' || (g % 7), lpad(g::text, 8, '0') || 'z' || repeat('y', g % 60), g FROM generate_series(1, 800) g;
DELETE FROM c_$k WHERE n % 5 = 0;
VACUUM c_$k;
SQL
done
(cd / && runuser -u postgres -- pg_ctl -D "$DIR/data" -m immediate -w stop >/dev/null)
(cd / && runuser -u postgres -- pg_ctl -D "$DIR/data" -l "$DIR/server.log" -o "-c listen_addresses='' -k $DIR -c autovacuum=off" -w start >/dev/null) ||
	{ tail -5 "$DIR/server.log"; echo "corrupt: replay failed"; exit 1; }
for k in $KINDS; do q -c "SELECT tablestore.verify_index('c_${k}_key')" >/dev/null || { echo "corrupt: $k: replayed index fails verify_index"; exit 1; }; done
q -c "CHECKPOINT" >/dev/null
DATA=$(q -c "SHOW data_directory")
declare -A FILE
for k in $KINDS; do FILE[$k]="$DATA/$(q -c "SELECT pg_relation_filepath('c_${k}_key')")"; done
ts_stop_server "$DIR"

# corrupt FILE KIND: overwrite bytes of a tree page, chosen by parsing it
corrupt() {
	perl - "$1" "$2" <<'PERL' || exit 1
use strict;
my ($file, $kind) = @ARGV;
open(my $fh, '+<:raw', $file) or die "$file: $!";
my $size = -s $file;
my $bs = 8192;
sub page { my $b = shift; seek($fh, $b * $bs, 0); read($fh, my $p, $bs); return $p; }
sub put { my ($b, $p) = @_; seek($fh, $b * $bs, 0); print $fh $p; }
sub special { my $p = shift; return unpack('v', substr($p, 16, 2)); }
sub opaque { my $p = shift; my $s = special($p); return unpack('V V v v v', substr($p, $s, 14)); }
sub lp { my ($p, $i) = @_; my $w = unpack('V', substr($p, 24 + 4 * ($i - 1), 4));
	return ($w & 0x7FFF, ($w >> 15) & 3, $w >> 17); }
# the first leaf that is not the rightmost, and the root
my ($leaf, $lp);
for my $b (2 .. $size / $bs - 1) {
	my $p = page($b);
	my ($prev, $next, $level, $flags, $id) = opaque($p);
	if ($id == 0xFF8A && $level == 0 && $next != 0xFFFFFFFF) { $leaf = $b; $lp = $p; last; }
}
die "no leaf" unless defined $leaf;
my ($off, $flags, $len) = lp($lp, 2);	# the first run (line pointer 1 is the high key)
my $s = special($lp);
if ($kind eq 'runcount') { substr($lp, $off + 2, 2) = pack('v', 0xFFFF); }
elsif ($kind eq 'pklen') { substr($lp, $off, 2) = pack('v', 0x7FFF); }
elsif ($kind eq 'rklen') {
	my $pklen = unpack('v', substr($lp, $off, 2)) & 0x7FFF;
	substr($lp, $off + 4 + $pklen + 6, 2) = pack('v', 4000);
}
elsif ($kind eq 'lpoff') { substr($lp, 24 + 4, 4) = pack('V', 8100 | (1 << 15) | (600 << 17)); }
elsif ($kind eq 'upper') { substr($lp, 14, 2) = pack('v', 8190); }
elsif ($kind eq 'cycle') { substr($lp, $s + 4, 4) = pack('V', $leaf); }
elsif ($kind eq 'nextbad') { substr($lp, $s + 4, 4) = pack('V', 999999); }
elsif ($kind eq 'zeroed') { $lp = "\0" x $bs; }
elsif ($kind eq 'utf16odd') { substr($lp, $off, 2) = pack('v', 0x8000 | 3); }
elsif ($kind eq 'badkey') {
	# a PartitionKey byte no text has: a lone low surrogate, or 0xFF in UTF-8
	my $utf16 = unpack('v', substr($lp, $off, 2)) & 0x8000;
	substr($lp, $off + 4, 1) = $utf16 ? "\xDC" : "\xFF";
}
elsif ($kind eq 'downlink') {
	my $root = page(1);
	my ($roff) = lp($root, 1);
	substr($root, $roff, 4) = pack('V', 999999);
	put(1, $root);
	exit 0;
}
put($leaf, $lp);
PERL
}
for k in $KINDS; do corrupt "${FILE[$k]}" "$k"; done

(cd / && runuser -u postgres -- pg_ctl -D "$DIR/data" -l "$DIR/server.log" -o "-c listen_addresses='' -k $DIR -c autovacuum=off" -w start >/dev/null) || exit 1

status=0
for k in $KINDS; do
	for what in verify scan; do
		if [ $what = verify ]; then
			sql="SELECT tablestore.verify_index('c_${k}_key')"
		else
			sql="SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM (SELECT n FROM c_$k WHERE pk OPERATOR(tablestore.>=) ''::tablestore.key ORDER BY pk, rk) s"
		fi
		out=$(psql -X -q -At -d postgres -v VERBOSITY=verbose -c "\\set VERBOSITY verbose" -c "$sql" 2>&1)
		code=$(echo "$out" | sed -n 's/^ERROR:  \(XX00[12]\): .*/\1/p' | head -1)
		msg=$(echo "$out" | grep -m1 '^ERROR' | cut -c1-110)
		if [ $what = verify ] && [ -z "$code" ]; then
			echo "corrupt: $k: verify_index gave no corruption error: $out"; status=1
		fi
		if ! q -c "SELECT 1" >/dev/null 2>&1; then echo "corrupt: $k $what: server down"; status=1; break 2; fi
		echo "corrupt: $k $what: ${msg:-no error (the scan did not reach the page)}"
	done
done
if grep -E "terminated by signal|PANIC|TRAP" "$DIR/server.log"; then echo "corrupt: a backend crashed"; status=1; fi
[ $status = 0 ] && echo "corrupt: ok" || echo "corrupt test FAILED"
exit $status
