#!/usr/bin/perl
# tools/router-api.pl NODE_SQL ROUTER_SQL: the router's install script,
# written to standard output: ROUTER_SQL (sql/tablestore_router.sql) with
# its three marks replaced by parts of NODE_SQL (sql/tablestore.sql), so
# that the SQL API of extension tablestore is defined once, in the node's
# script, and a router re-exposes it with the same signatures, comments
# and privileges.
#
#   -- @key type@            the node's lines between "-- key type: begin"
#                            and "-- key type: end", as they are
#   -- @service properties@  likewise between "-- service properties: begin"
#                            and "-- service properties: end"
#   -- @api@                 every other function of schema tablestore that
#                            the node declares, with its COMMENT, GRANT and
#                            REVOKE statements, in the node's order
#
# How the router has a node function outside the copied blocks is said by a
# line "-- router: HOW" (or "-- router: HOW: why") in the comment before its
# CREATE FUNCTION:
#
#   (none)        a C function: the same declaration calling router_<name>
#                 (the name without its leading underscores), the router's
#                 routing of it (src/router.c); any other language: an error
#   as is         the same declaration: it runs in the router itself
#   SYMBOL        a C function calling SYMBOL of the library
#   own           not copied: the router's script declares the function
#                 itself, with the node's arguments, result and volatility
#   node only     not on the router (a node's internals)
#
# and _routed_<call> functions are the node's half of the router's calls
# (tablestore_router._<call>), node only.
#
# The build fails (exit status 1, the reasons on standard error) when the
# two scripts diverge: a function of schema tablestore that the router's
# script declares other than those of "own", an "own" function whose
# signature differs from the node's, a router call of a node's _routed_
# function that the node does not declare with that number of arguments, a
# function without its "router:" line that needs one, a COMMENT, GRANT or
# REVOKE before its function's CREATE FUNCTION, an ALTER FUNCTION of the
# API (which would not be copied), or a mark missing.
# tools/check-sql-symbols.sh then checks that the library has every C
# function the scripts name.
use strict;
use warnings;

my ($node_file, $router_file) = @ARGV;
die "usage: $0 NODE_SQL ROUTER_SQL\n" unless defined $router_file;

my @errors;

# slurp FILE: the file's text
sub slurp
{
	my ($file) = @_;
	open(my $fh, '<', $file) or die "$file: $!\n";
	local $/;
	my $text = <$fh>;
	close($fh);
	return $text;
}

# match_at TEXT POS RE: the text that RE matches at POS, or undef
sub match_at
{
	# (on $_[0] itself: a copy of the text for every word would be slow)
	my (undef, $pos, $re) = @_;
	pos($_[0]) = $pos;
	return $_[0] =~ /\G($re)/gc ? $1 : undef;
}

# statements TEXT: the SQL statements of a script, each a hash of its text
# (lead: the comment and psql lines before it; body: from its first word to
# its semicolon) and the line its body starts on.  Quotes, dollar quotes,
# comments and the BEGIN ATOMIC ... END of SQL-standard function bodies
# (with their CASE ... END) are skipped when looking for the semicolon.
sub statements
{
	my ($text) = @_;
	my @out;
	my ($start, $i, $n, $line) = (0, 0, length($text), 1);
	my $atomic = 0;

	while ($i < $n)
	{
		my $c = substr($text, $i, 1);

		if ($c eq "\n")
		{
			$line++;
			$i++;
		}
		elsif ($c eq '-' && substr($text, $i, 2) eq '--')
		{
			my $e = index($text, "\n", $i);
			$i = $e < 0 ? $n : $e;
		}
		elsif ($c eq '/' && substr($text, $i, 2) eq '/*')
		{
			my $e = index($text, '*/', $i + 2);
			die "unterminated comment\n" if $e < 0;
			$line += () = substr($text, $i, $e + 2 - $i) =~ /\n/g;
			$i = $e + 2;
		}
		elsif ($c eq "'" || $c eq '"')
		{
			my $e = $i + 1;
			while (1)
			{
				$e = index($text, $c, $e);
				die "unterminated quote at line $line\n" if $e < 0;
				last unless substr($text, $e + 1, 1) eq $c;
				$e += 2;
			}
			$line += () = substr($text, $i, $e + 1 - $i) =~ /\n/g;
			$i = $e + 1;
		}
		elsif ($c eq '$' && defined(my $tag = match_at($text, $i, qr/\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$/)))
		{
			my $e = index($text, $tag, $i + length($tag));
			die "unterminated $tag at line $line\n" if $e < 0;
			$line += () = substr($text, $i, $e + length($tag) - $i) =~ /\n/g;
			$i = $e + length($tag);
		}
		elsif ($c =~ /[A-Za-z_]/ && ($i == 0 || substr($text, $i - 1, 1) !~ /[A-Za-z_0-9.\\]/))
		{
			my $word = uc(match_at($text, $i, qr/[A-Za-z_][A-Za-z_0-9]*/));
			if ($word eq 'BEGIN' && defined match_at($text, $i, qr/BEGIN\s+ATOMIC\b/i))
			{
				$atomic = 1;
			}
			elsif ($atomic && $word eq 'CASE')
			{
				$atomic++;
			}
			elsif ($atomic && $word eq 'END')
			{
				$atomic--;
			}
			$i += length($word);
		}
		elsif ($c eq ';' && !$atomic)
		{
			my $s = substr($text, $start, $i + 1 - $start);
			my $first = $line - (() = $s =~ /\n/g);
			# the lead: whole lines that are blank, comments or psql's
			$s =~ /^((?:[ \t]*(?:--[^\n]*|\\[^\n]*)?\n)*)(.*)$/s;
			my ($lead, $body) = ($1, $2);
			push @out, { lead => $lead, body => $body,
						 line => $first + (() = $lead =~ /\n/g) };
			$start = $i + 1;
			$i++;
		}
		else
		{
			$i++;
		}
	}
	return @out;
}

# function_name BODY: the name of the function of schema tablestore that a
# CREATE FUNCTION statement declares, or undef
sub function_name
{
	my ($body) = @_;
	return $body =~ /^CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+tablestore\.(\w+)\s*\(/i ? $1 : undef;
}

# parenthesized TEXT POS: the length of the parenthesized group starting at
# POS (its opening parenthesis), nested groups and quotes included
sub parenthesized
{
	my ($text, $pos) = @_;
	my $depth = 0;
	for (my $i = $pos; $i < length($text); $i++)
	{
		my $c = substr($text, $i, 1);
		if ($c eq "'")
		{
			$i = index($text, "'", $i + 1);
			die "unterminated quote\n" if $i < 0;
		}
		elsif ($c eq '(')
		{
			$depth++;
		}
		elsif ($c eq ')' && --$depth == 0)
		{
			return $i + 1 - $pos;
		}
	}
	die "unbalanced parentheses\n";
}

# signature BODY: what the router's API test compares of a function (the
# arguments with their names and defaults, the result, the volatility),
# with the white space normalized
sub signature
{
	my ($body) = @_;
	$body =~ /^CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+tablestore\.\w+\s*/i;
	my $pos = $+[0];
	my $args = substr($body, $pos, parenthesized($body, $pos));
	my $rest = substr($body, $pos + length($args));
	my $result = '';
	if ($rest =~ /^\s*RETURNS\s+/i)
	{
		# the type, up to the first function attribute
		$rest = substr($rest, $+[0]);
		while ($rest =~ /^\s*(\(|[^\s(]+)/
			   && $1 !~ /^(?:AS|LANGUAGE|IMMUTABLE|STABLE|VOLATILE|STRICT|CALLED|SECURITY|PARALLEL|LEAKPROOF|COST|ROWS|SET|BEGIN|RETURN|WINDOW|SUPPORT|TRANSFORM)$/i)
		{
			my $len = $1 eq '(' ? $-[1] + parenthesized($rest, $-[1]) : $+[1];
			$result .= substr($rest, 0, $len);
			$rest = substr($rest, $len);
		}
	}
	# the volatility: among the attributes, not in a body
	(my $attrs = $rest) =~ s/\$(\w*)\$.*?\$\1\$//gs;
	$attrs =~ s/'(?:[^']|'')*'//g;
	$attrs =~ s/\bBEGIN\s+ATOMIC\b.*//is;
	my $volatility = $attrs =~ /\b(IMMUTABLE|STABLE|VOLATILE)\b/i ? uc($1) : 'VOLATILE';
	my $sig = "$args RETURNS $result $volatility";
	$sig =~ s/\s+/ /g;
	$sig =~ s/\( /(/g;
	$sig =~ s/ \)/)/g;
	return $sig;
}

# in_args ARGS: the number of input arguments of an argument list
sub in_args
{
	my ($args) = @_;
	$args =~ s/^\(|\)$//g;
	return 0 if $args =~ /^\s*$/;
	my @args = split /,(?![^(]*\))/, $args;
	return scalar grep { !/^\s*OUT\s/i } @args;
}

my $node_text = slurp($node_file);
my $router_text = slurp($router_file);

# the copied blocks, by their marks' lines
my %block;
my @block_lines;
for my $name ('key type', 'service properties')
{
	if ($node_text =~ /^(-- \Q$name\E: begin\b.*?^-- \Q$name\E: end\b[^\n]*\n)/ms)
	{
		$block{$name} = $1;
		my $first = 1 + (() = substr($node_text, 0, $-[1]) =~ /\n/g);
		push @block_lines, [$first, $first + (() = $block{$name} =~ /\n/g) - 1];
	}
	else
	{
		push @errors, "$node_file: no \"-- $name: begin\" ... \"-- $name: end\"";
	}
}

# the node's functions outside the blocks, how the router has each, and the
# statements of the API
my (%how, %node_sig, %node_in_args, @api);
for my $s (statements($node_text))
{
	next if grep { $s->{line} >= $_->[0] && $s->{line} <= $_->[1] } @block_lines;
	my $body = $s->{body};
	my $name = function_name($body);
	if (defined $name)
	{
		my ($how) = $s->{lead} =~ /^[ \t]*-- router: ([^:\n]*?)\s*(?::[^\n]*)?$/m;
		my $c = $body =~ /\bLANGUAGE\s+C\b/i;
		$node_sig{$name} = signature($body);
		if ($name =~ /^_routed_/)
		{
			$body =~ /^CREATE\s+FUNCTION\s+tablestore\.\w+\s*/i;
			$node_in_args{$name} = in_args(substr($body, $+[0], parenthesized($body, $+[0])));
			$how //= 'node only';
		}
		if (!defined $how)
		{
			if (!$c)
			{
				push @errors, "$node_file:$s->{line}: tablestore.$name is not in C: say how a router has it (-- router: as is | own | node only)";
				next;
			}
			($how = "router_$name") =~ s/^router__+/router_/;
		}
		$how{$name} = $how;
		next if $how eq 'node only' || $how eq 'own';
		if ($how ne 'as is')
		{
			if ($how !~ /^\w+$/ || !$c)
			{
				push @errors, "$node_file:$s->{line}: tablestore.$name: \"-- router: $how\" is not as is, own, node only or, for a C function, the router's symbol";
				next;
			}
			if ($body !~ s/('MODULE_PATHNAME',\s*)'\w+'/$1'$how'/)
			{
				push @errors, "$node_file:$s->{line}: tablestore.$name: no 'MODULE_PATHNAME', 'symbol'";
				next;
			}
		}
		push @api, "\n" if @api;
		push @api, "$body\n";
	}
	elsif ($body =~ /^(?:COMMENT\s+ON|GRANT|REVOKE)\b.*?\bFUNCTION\s+tablestore\.(\w+)/is)
	{
		# a function's comment or privileges follow it
		my @names = $body =~ /\btablestore\.(\w+)\s*\(/g;
		my @on = grep { my $h = $how{$_}; defined $h && $h ne 'node only' && $h ne 'own' } @names;
		if (my @before = grep { !exists $how{$_} } @names)
		{
			push @errors, "$node_file:$s->{line}: names tablestore.$before[0] before its CREATE FUNCTION";
		}
		elsif (@on && @on != @names)
		{
			push @errors, "$node_file:$s->{line}: a statement on functions of which only some are on the router";
		}
		push @api, "$body\n" if @on;
	}
	elsif ($body =~ /^ALTER\s+FUNCTION\s+tablestore\.(\w+)/i)
	{
		# what the router would not copy
		push @errors, "$node_file:$s->{line}: ALTER FUNCTION tablestore.$1: say it in its CREATE FUNCTION";
	}
}

# the router's own functions of schema tablestore: those marked "own", each
# with the node's signature
my %own;
for my $s (statements($router_text))
{
	my $name = function_name($s->{body});
	if (defined $name)
	{
		my $how = $how{$name} // '';
		if ($how ne 'own')
		{
			push @errors, "$router_file:$s->{line}: tablestore.$name: "
				. (exists $how{$name} ? "the build copies it from $node_file (-- router: $how)"
				   : "not a function of $node_file: a router's API is the node's");
			next;
		}
		$own{$name} = 1;
		my $sig = signature($s->{body});
		push @errors, "$router_file:$s->{line}: tablestore.$name$sig differs from the node's $name$node_sig{$name}"
			if $sig ne $node_sig{$name};
	}
	# the calls of the node's _routed_ functions
	while ($s->{body} =~ /\btablestore\.(_routed_\w+)\s*\(/g)
	{
		my ($name, $pos) = ($1, $+[0] - 1);
		my $args = substr($s->{body}, $pos, parenthesized($s->{body}, $pos));
		if (!exists $node_in_args{$name})
		{
			push @errors, "$router_file:$s->{line}: calls tablestore.$name, which $node_file does not declare";
		}
		elsif (in_args($args) != $node_in_args{$name})
		{
			push @errors, "$router_file:$s->{line}: calls tablestore.$name with " . in_args($args)
				. " arguments, $node_file declares $node_in_args{$name}";
		}
	}
}
for my $name (sort grep { $how{$_} eq 'own' } keys %how)
{
	push @errors, "$router_file: does not declare tablestore.$name (its own, says $node_file)"
		unless $own{$name};
}

my %part = ('key type' => $block{'key type'}, 'service properties' => $block{'service properties'},
			'api' => join('', @api));
for my $mark (sort keys %part)
{
	push @errors, "$router_file: no line \"-- \@$mark\@\""
		unless $router_text =~ s/^-- \@\Q$mark\E\@\n/$part{$mark} \/\/ ''/me;
}

if (@errors)
{
	print STDERR "$_\n" for @errors;
	exit 1;
}
print $router_text;
