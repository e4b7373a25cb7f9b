#!/usr/bin/env bash
# test/cluster/move_whitelist.sh: a moved table may hold nothing but what
# create_table made (issue 23; the outside attack on the move's target
# lock, its findings A1, A1b, A4, A4b and A5, each of which made a table's
# owner a superuser or let the copy write other partitions before).
#
# A cluster of 2 shards (8 partitions); role app (no superuser) owns table
# Evil (1,000 entities).  Checked:
#   - the whitelist (_move_owner_code_sql) names each thing an owner can add:
#     a trigger, a rule, a default, a second index, an expression index, a
#     CHECK calling query_to_xml or ts_rewrite (PostgreSQL's functions that
#     run SQL given as text, which record no dependency), a CHECK casting to
#     the owner's domain, a CHECK of an allowed name redefined; and names
#     nothing on a table as create_table made it (a child table and a
#     foreign key need DDL the extension's event trigger or the whitelist
#     refuses first);
#   - A4/A4b: such a CHECK on the target refuses the move, app stays no
#     superuser;
#   - A1: a trigger that does RESET ROLE, added on the source during the
#     copy, never runs: the cleanup after the switch leaves the source's
#     rows (recorded in tablestore_router.leftovers), the move ends, app
#     stays no superuser, no entity lost; clean_leftovers deletes the rows
#     once the trigger is gone;
#   - A1b: the same trigger added on the target of an interrupted move:
#     abort_move ends the move leaving the partial copy (recorded), app
#     stays no superuser;
#   - A5: the move's filter disabled on the target before the lock refuses
#     the move, and the target gets no other partition's rows.
set -u
cd "$(dirname "$0")/../.."
. tools/lib.sh
DIR=$(ts_cluster_dir tsmwl)
status=0
trap 'kill $(jobs -p) 2>/dev/null; ts_stop_cluster "$DIR"; ts_rm_cluster_dir "$DIR"' EXIT
ts_start_cluster "$DIR" 2 8 >/dev/null || exit 1
export PGUSER=postgres
r() { psql -X -q -At -d "host=$DIR/router dbname=tablestore" "$@"; }
n() { local h=$1; shift; psql -X -q -At -d "host=$DIR/$h dbname=tablestore" "$@"; }
app() { local h=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -d "host=$DIR/$h dbname=tablestore user=app" "$@"; }
S() { echo "host=$DIR/shard$1 dbname=tablestore"; }
ok() { echo "ok: $1"; }
bad() { echo "not ok: $1"; status=1; }
is() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1 (got '$2', want '$3')"; fi; }
super() { n "$1" -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'app'"; }
total() { r -c "SELECT count(*) FROM tablestore.query_entities('Evil')"; }
step_is() { ts_until -t 60 bash -c "[ \"\$(psql -X -q -At -d 'host=$DIR/router dbname=tablestore' -c 'SELECT step FROM tablestore_router._moves WHERE finished_at IS NULL')\" = '$1' ]"; }
# what the whitelist names on node $1, as the mover's connections see it
found() { n "$1" -c "SET search_path = pg_catalog, pg_temp" -c "$(r -c "SELECT tablestore_router._move_owner_code_sql()")"; }

for d in router shard0 shard1; do
	psql -X -q -d "host=$DIR/$d dbname=tablestore" -c "CREATE ROLE app LOGIN" \
		-c "DO \$\$BEGIN IF to_regnamespace('tablestore_data') IS NOT NULL THEN GRANT CREATE, USAGE ON SCHEMA tablestore_data TO app; END IF; END\$\$;" || exit 1
done
psql -X -q -At -d "host=$DIR/router dbname=tablestore user=app" -c "SELECT tablestore.create_table('Evil')" \
	-c "SELECT count(tablestore.insert_entity('Evil', jsonb_build_object('PartitionKey', 'k' || i, 'RowKey', 'r'))) FROM generate_series(0, 999) i" >/dev/null || exit 1
app shard1 <<'SQL' >/dev/null
CREATE FUNCTION tablestore_data.pwn() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE app SUPERUSER'; END IF;
	RETURN 'x';
END $$;
CREATE FUNCTION tablestore_data.pwn_b(text) RETURNS boolean LANGUAGE sql AS 'SELECT tablestore_data.pwn() IS NOT NULL';
CREATE DOMAIN tablestore_data.d AS text CHECK (tablestore_data.pwn_b(VALUE));
CREATE FUNCTION tablestore_data.pwn_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RESET ROLE;	-- the session's role: a superuser's, if the mover's
	PERFORM tablestore_data.pwn();
	RETURN NULL;
END $$;
SQL

# the whitelist, object by object
is "a table as create_table made it: nothing named" "$(found shard1)" ""
while IFS='|' read -r what add drop; do
	app shard1 -c "$add" >/dev/null 2>&1 || { bad "$what: could not add it"; continue; }
	f=$(found shard1)
	if [ -n "$f" ]; then ok "the whitelist names $what ($f)"; else bad "the whitelist misses $what"; fi
	app shard1 -c "$drop" >/dev/null 2>&1 || bad "$what: could not drop it"
done <<'EOF'
a trigger|CREATE TRIGGER t BEFORE INSERT ON tablestore_data.evil FOR EACH ROW EXECUTE FUNCTION tablestore_data.pwn_trigger()|DROP TRIGGER t ON tablestore_data.evil
a rule|CREATE RULE ru AS ON INSERT TO tablestore_data.evil DO ALSO NOTHING|DROP RULE ru ON tablestore_data.evil
a default|ALTER TABLE tablestore_data.evil ALTER COLUMN props SET DEFAULT '{}'|ALTER TABLE tablestore_data.evil ALTER COLUMN props DROP DEFAULT
a second index|CREATE INDEX i2 ON tablestore_data.evil (ts)|DROP INDEX tablestore_data.i2
an expression index|CREATE INDEX i3 ON tablestore_data.evil ((props->>'x'))|DROP INDEX tablestore_data.i3
a CHECK calling query_to_xml|ALTER TABLE tablestore_data.evil ADD CONSTRAINT innocent CHECK (pg_catalog.query_to_xml('SELECT tablestore_data.pwn()', true, false, '') IS NOT NULL) NOT VALID|ALTER TABLE tablestore_data.evil DROP CONSTRAINT innocent
a CHECK calling ts_rewrite|ALTER TABLE tablestore_data.evil ADD CONSTRAINT innocent CHECK (pg_catalog.ts_rewrite('a'::pg_catalog.tsquery, 'SELECT pg_catalog.to_tsquery(tablestore_data.pwn()), pg_catalog.to_tsquery(''b'')') IS NOT NULL) NOT VALID|ALTER TABLE tablestore_data.evil DROP CONSTRAINT innocent
a CHECK casting to the owner's domain|ALTER TABLE tablestore_data.evil ADD CONSTRAINT innocent CHECK ((jsonb_typeof(props))::tablestore_data.d IS NOT NULL) NOT VALID|ALTER TABLE tablestore_data.evil DROP CONSTRAINT innocent
a CHECK of an allowed name redefined|ALTER TABLE tablestore_data.evil DROP CONSTRAINT entity_props_object, ADD CONSTRAINT entity_props_object CHECK (pg_catalog.query_to_xml('SELECT tablestore_data.pwn()', true, false, '') IS NOT NULL) NOT VALID|ALTER TABLE tablestore_data.evil DROP CONSTRAINT entity_props_object, ADD CONSTRAINT entity_props_object CHECK (jsonb_typeof(props) = 'object') NOT VALID
EOF
is "every addition dropped again: nothing named" "$(found shard1)" ""

# A4/A4b: a CHECK the whitelist refuses, on the target before the move
app shard1 -c "ALTER TABLE tablestore_data.evil ADD CONSTRAINT innocent CHECK (pg_catalog.query_to_xml('SELECT tablestore_data.pwn()', true, false, '') IS NOT NULL) NOT VALID" >/dev/null
if r -c "CALL tablestore_router.move_partition(0, '$(S 1)')" >"$DIR/a4.log" 2>&1; then
	bad "A4: the move went through"
else
	grep -q "innocent" "$DIR/a4.log" && ok "A4: the move is refused, naming the constraint" || bad "A4: $(cat "$DIR/a4.log")"
fi
is "A4: app is no superuser on the target" "$(super shard1)" f
app shard1 -c "ALTER TABLE tablestore_data.evil DROP CONSTRAINT innocent" >/dev/null
is "A4: no entity lost" "$(total)" 1000

# A1: RESET ROLE in a trigger added on the source while the move copies
app shard0 <<'SQL' >/dev/null
CREATE FUNCTION tablestore_data.pwn_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RESET ROLE;
	IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE app SUPERUSER'; END IF;
	RETURN OLD;
END $$;
SQL
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=copying -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition(0, '$(S 1)')" >"$DIR/a1.log" 2>&1 &
a=$!
step_is copying || bad "A1: the move did not reach copying"
app shard0 -c "CREATE TRIGGER pwn BEFORE DELETE ON tablestore_data.evil FOR EACH STATEMENT EXECUTE FUNCTION tablestore_data.pwn_trigger()" >/dev/null
rm -f "$DIR/hold"
wait $a || bad "A1: the move failed: $(cat "$DIR/a1.log")"
is "A1: the cleanup leaves the source's rows, naming the trigger" \
	"$(r -c "SELECT count(*) FROM tablestore_router.leftovers WHERE partition = 0 AND reason LIKE '%trigger pwn%'")" 1
is "A1: app is no superuser on the source" "$(super shard0)" f
is "A1: no entity lost or doubled" "$(total)" 1000
app shard0 -c "DROP TRIGGER pwn ON tablestore_data.evil" >/dev/null
is "A1: clean_leftovers deletes them once the trigger is gone" "$(r -c "SELECT result FROM tablestore_router.clean_leftovers()")" deleted
is "A1: partition 0 on shard1" "$(r -c "SELECT node = '$(S 1)' FROM tablestore_router.partitions() WHERE partition = 0")" t
is "A1: the source holds no row of partition 0" "$(n shard0 -c "SELECT count(*) FROM tablestore_data.evil WHERE (tablestore.partition_hash(pk) & 7) = 0")" 0
is "A1: still no entity lost" "$(total)" 1000

# A1b: the same trigger on the target of an interrupted move, then abort_move
# (partitions p1 and p2: two of shard0's)
p1=$(r -c "SELECT min(partition) FROM tablestore_router.partitions() WHERE node = '$(S 0)' AND partition <> 0")
p2=$(r -c "SELECT max(partition) FROM tablestore_router.partitions() WHERE node = '$(S 0)' AND partition <> 0")
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=copying -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition($p1, '$(S 1)')" >"$DIR/a1b.log" 2>&1 &
a=$!
step_is copying || { bad "A1b: the move did not reach copying"; cat "$DIR/a1b.log"; }
pid=$(r -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'CALL tablestore_router.move_partition%' AND pid <> pg_backend_pid()")
r -c "SELECT pg_terminate_backend($pid)" >/dev/null
wait $a
rm -f "$DIR/hold"
ts_until -t 30 bash -c "[ \"\$(psql -X -q -At -d 'host=$DIR/shard1 dbname=tablestore' -c \"SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'evil' AND l.mode = 'ShareUpdateExclusiveLock'\")\" = 0 ]" ||
	bad "A1b: the lock stayed"
app shard1 -c "CREATE TRIGGER pwn BEFORE DELETE ON tablestore_data.evil FOR EACH STATEMENT EXECUTE FUNCTION tablestore_data.pwn_trigger()" >/dev/null
r -c "SELECT tablestore_router.abort_move()" >"$DIR/a1b2.log" 2>&1 || bad "A1b: abort_move failed: $(cat "$DIR/a1b2.log")"
grep -q "partial copy there is left" "$DIR/a1b2.log" && ok "A1b: abort_move leaves the partial copy" || bad "A1b: $(cat "$DIR/a1b2.log")"
# the reason is in the superuser's view only (moves.detail is public)
is "A1b: the leftover names the trigger" "$(r -c "SELECT count(*) FROM tablestore_router.leftovers WHERE partition = 2 AND reason LIKE '%trigger pwn%'")" 1
is "A1b: the public detail names no table" "$(r -c "SELECT count(*) FROM tablestore_router.moves WHERE detail LIKE '%pwn%' OR detail LIKE '%evil%'")" 0
is "A1b: app is no superuser on the target" "$(super shard1)" f
app shard1 -c "DROP TRIGGER pwn ON tablestore_data.evil" >/dev/null
is "A1b: clean_leftovers deletes the partial copy once the trigger is gone" "$(r -c "SELECT result FROM tablestore_router.clean_leftovers()")" deleted
is "A1b: no entity lost or doubled" "$(total)" 1000

# A5: the move's filter on the target disabled before the lock
touch "$DIR/hold"
PGOPTIONS="-c tablestore_router.move_pause_at=prepared -c tablestore_router.move_pause_file=$DIR/hold" \
	r -c "CALL tablestore_router.move_partition($p2, '$(S 1)')" >"$DIR/a5.log" 2>&1 &
a=$!
step_is prepare || bad "A5: the move did not reach prepare"
ts_until -t 30 bash -c "[ \"\$(psql -X -q -At -d 'host=$DIR/shard1 dbname=tablestore' -c \"SELECT count(*) FROM pg_trigger WHERE tgname ~ '^ts_move_'\")\" = 1 ]" ||
	bad "A5: no filter made"
app shard1 -c "ALTER TABLE tablestore_data.evil DISABLE TRIGGER USER" >/dev/null 2>&1 || bad "A5: could not disable the filter"
rm -f "$DIR/hold"
if wait $a; then bad "A5: the move went through with its filter disabled"; else ok "A5: the move is refused"; fi
is "A5: the target holds no row of partitions it does not serve" \
	"$(n shard1 -c "SELECT count(*) FROM tablestore_data.evil WHERE (tablestore.partition_hash(pk) & 7) IN ($p1, $p2)")" 0
is "A5: no entity lost or doubled" "$(total)" 1000

[ $status -eq 0 ] && echo "move_whitelist: all ok" || echo "move_whitelist: FAILED"
exit $status
