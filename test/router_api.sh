#!/bin/sh
# test/router_api.sh: the build's check that the router's SQL API is the
# node's (tools/router-api.pl, tools/check-sql-symbols.sh; issue 25 item 4).
# The scripts as they are give the router's install script; each kind of
# divergence, made in a copy of the scripts, fails it with its reason.  A
# function added to the node's API lands on the router with no second edit,
# and fails the symbol check until the router's library routes it.  Needs
# no server; the symbol check needs the built library (tablestore.so).
set -u
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/tsrouterapi.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0

# gen NAME: run the generator on the copies, its messages in $work/NAME.err
gen() {
	perl tools/router-api.pl "$work/node.sql" "$work/router.sql" >"$work/$1.sql" 2>"$work/$1.err"
}
# fails NAME PATTERN: the generator refused the copies, saying PATTERN
fails() {
	if gen "$1"; then
		echo "router API check: $1: accepted"; status=1
	elif grep -q "$2" "$work/$1.err"; then
		echo "router API check: $1: refused ($(head -1 "$work/$1.err" | sed 's/^[^ ]* //'))"
	else
		echo "router API check: $1: refused for another reason:"; cat "$work/$1.err"; status=1
	fi
}
# copies: fresh copies of the two scripts
copies() {
	cp sql/tablestore.sql "$work/node.sql"
	cp sql/tablestore_router.sql "$work/router.sql"
}

copies
if gen as_is; then
	n=$(grep -c '^CREATE FUNCTION tablestore\.' "$work/as_is.sql")
	echo "router API check: the scripts as they are: $n functions of schema tablestore on the router"
else
	echo "router API check: the scripts as they are are refused:"; cat "$work/as_is.err"; status=1
fi

# the router's script declares a function that the build copies
copies
printf '%s\n' "CREATE FUNCTION tablestore.create_table(table_name text) RETURNS void" \
	"	AS 'MODULE_PATHNAME', 'router_create_table' LANGUAGE C VOLATILE;" >>"$work/router.sql"
fails declared_twice 'tablestore.create_table: the build copies it'

# the router's own function with another result than the node's
copies
sed -i 's/^\(CREATE FUNCTION tablestore._may_set_service_properties() RETURNS\) boolean$/\1 integer/' "$work/router.sql"
fails own_signature '_may_set_service_properties.*differs from the node'

# a node's _routed_ function with another number of arguments than the
# router's call gives it
copies
sed -i 's/^\(CREATE FUNCTION tablestore._routed_get_entity(table_name text, partition_key text, row_key text, select_list text\))/\1, extra text)/' "$work/node.sql"
fails routed_arguments 'calls tablestore._routed_get_entity with 4 arguments'

# a function of the node in another language than C that says nothing of
# the router
copies
printf '%s\n' "CREATE FUNCTION tablestore.helper() RETURNS integer LANGUAGE sql RETURN 1;" >>"$work/node.sql"
fails not_said 'tablestore.helper is not in C'

# a C function added to the node's API: on the router with no second edit,
# and refused by the symbol check until the router routes it
copies
printf '%s\n' "CREATE FUNCTION tablestore.count_entities(table_name text) RETURNS bigint" \
	"	AS 'MODULE_PATHNAME', 'count_entities' LANGUAGE C STABLE;" >>"$work/node.sql"
if gen added && grep -q "'MODULE_PATHNAME', 'router_count_entities'" "$work/added.sql"; then
	echo "router API check: a C function added to the node's API is on the router, calling router_count_entities"
else
	echo "router API check: a C function added to the node's API is not on the router"; cat "$work/added.err"; status=1
fi
if [ -f tablestore.so ]; then
	if tools/check-sql-symbols.sh tablestore.so "$work/added.sql" >"$work/symbols.err" 2>&1; then
		echo "router API check: the symbol check accepts router_count_entities, which the library lacks"; status=1
	elif grep -q router_count_entities "$work/symbols.err"; then
		echo "router API check: the symbol check refuses it ($(sed 's/^[^ ]* //' "$work/symbols.err"))"
	else
		cat "$work/symbols.err"; status=1
	fi
else
	echo "router API check: no tablestore.so (not built): the symbol check is not tried"
fi
exit $status
