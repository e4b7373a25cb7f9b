#!/usr/bin/env bash
# test/doc/errors_doc.sh: the manual's table of error codes (doc/errors.md)
# says what tablestore.error_codes() says: the same codes, each with the
# same SQLSTATE and HTTP status, none missing and none extra.  Runs against
# the server of PGHOST, in a database with the extension (default: tap).
set -u
cd "$(dirname "$0")/../.."
DB=${1:-tap}
doc=$(sed -n '/^| code | SQLSTATE | HTTP | when |$/,/^$/p' doc/errors.md |
	sed -n 's/^| \([A-Za-z]*\) | \([0-9A-Z]\{5\}\)[^|]* | \([0-9]*\) |.*/\1 \2 \3/p' | sort)
sql=$(psql -X -At -F ' ' -d "$DB" -c "SELECT code, sqlstate, http_status FROM tablestore.error_codes()" | sort)
if [ -z "$doc" ] || [ "$doc" != "$sql" ]; then
	echo "doc/errors.md and tablestore.error_codes() differ (< the manual, > the extension):"
	diff <(echo "$doc") <(echo "$sql")
	exit 1
fi
echo "doc/errors.md: $(echo "$doc" | wc -l) error codes, as tablestore.error_codes() gives them"
