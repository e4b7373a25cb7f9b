#!/bin/sh
# tools/check-sql-symbols.sh LIBRARY SCRIPT...: every C function that the
# install and upgrade scripts declare ('MODULE_PATHNAME', 'symbol') is in
# the library, as a version-1 function (its pg_finfo_ record).  Run by the
# build: a function added to the node's API (sql/tablestore.sql), which the
# router's script declares too with router_<name> (tools/router-api.pl),
# fails the build here until the router routes it, rather than failing
# CREATE EXTENSION tablestore_router; and every script of the upgrade chain
# (which an installation of an older version runs, from its base script
# up) must still find its functions.
set -eu
lib=$1
shift
nm -D --defined-only "$lib" | awk '{ print $NF }' | sed -n 's/^pg_finfo_//p' |
	awk -v lib="$lib" '
		FILENAME == "-" { have[$0] = 1; next }
		{
			line = $0
			while (match(line, /'\''MODULE_PATHNAME'\'', *'\''[A-Za-z_0-9]+'\''/)) {
				s = substr(line, RSTART, RLENGTH)
				sub(/.*, *'\''/, "", s)
				sub(/'\''$/, "", s)
				if (!(s in have)) {
					printf "%s:%d: C function %s is not in %s\n", FILENAME, FNR, s, lib
					bad = 1
				}
				line = substr(line, RSTART + RLENGTH)
			}
		}
		END { exit bad }' - "$@"
