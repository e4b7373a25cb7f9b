-- Stored values outside the service's ranges.  The CHECK constraint
-- entity_ts_in_range holds ts (the Timestamp) to 1601-01-01 ..
-- 9999-12-31T23:59:59.999999Z, as plain SQL writes it.  A row outside it
-- (stored before the constraint, or with it dropped) is read as defined:
-- its output is an error naming the entity (55000), a filter counts its
-- Timestamp as absent, no ETag matches it, and no write stores one.  A
-- stored DateTime property before 1601 counts as absent in filters.
\set VERBOSITY terse
SELECT tablestore.create_table('Dates');
SELECT conname, convalidated FROM pg_constraint
WHERE conrelid = 'tablestore_data.dates'::regclass AND contype = 'c' ORDER BY 1;

-- plain SQL outside the range is refused: just before 1601, 10000, infinities
INSERT INTO tablestore_data.dates VALUES ('p', 'x', '1600-12-31 23:59:59.999999+00', '{}');
INSERT INTO tablestore_data.dates VALUES ('p', 'x', '1500-01-01 00:00:00+00', '{}');
INSERT INTO tablestore_data.dates VALUES ('p', 'x', '10000-01-01 00:00:00+00', '{}');
INSERT INTO tablestore_data.dates VALUES ('p', 'x', '-infinity', '{}');
INSERT INTO tablestore_data.dates VALUES ('p', 'x', 'infinity', '{}');
-- the ends of the range are accepted, and read as the service writes them
-- (in any session time zone: the bounds carry their zone)
SET TimeZone = 'Pacific/Kiritimati';
INSERT INTO tablestore_data.dates VALUES ('p', 'first', '1601-01-01 00:00:00+00', '{}');
INSERT INTO tablestore_data.dates VALUES ('p', 'last', '9999-12-31 23:59:59.999999+00', '{}');
RESET TimeZone;
SELECT e->>'RowKey' AS rk, e->>'Timestamp' AS ts, e->>'odata.etag' AS etag
FROM tablestore.query_entities('Dates') e;
SELECT tablestore.get_entity('Dates', 'p', 'last', 'X,Timestamp')->>'Timestamp' AS last_selected;
SELECT json_agg(e->'RowKey') AS both_ends FROM tablestore.query_entities_json('Dates',
	'Timestamp le datetime''1601-01-01T00:00:00Z'' or Timestamp ge datetime''9999-12-31T23:59:59.999999Z''') e;
-- an ETag of the last microsecond matches it
SELECT tablestore.delete_entity('Dates', 'p', 'first',
	tablestore.get_entity('Dates', 'p', 'first')->>'odata.etag');

-- A write moves the Timestamp past the entity's; past the last microsecond
-- there is none: every write of it is refused (23514), on the direct path
-- and through SQL (a trigger), and the entity is unchanged.  (The SQLSTATE
-- only: the constraint or the write path's own check may say so first.)
\set VERBOSITY sqlstate
SELECT tablestore.merge_entity('Dates', '{"PartitionKey": "p", "RowKey": "last", "X": 1}');
SELECT tablestore.update_entity('Dates', '{"PartitionKey": "p", "RowKey": "last", "X": 1}');
SELECT tablestore.insert_or_merge_entity('Dates', '{"PartitionKey": "p", "RowKey": "last", "X": 1}');
SELECT tablestore.insert_or_replace_entity('Dates', '{"PartitionKey": "p", "RowKey": "last", "X": 1}');
SELECT tablestore.execute_batch('Dates', '[{"op": "merge", "entity": {"PartitionKey": "p", "RowKey": "last", "X": 1}}]');
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER noop BEFORE UPDATE ON tablestore_data.dates FOR EACH ROW EXECUTE FUNCTION pg_temp.noop();
SELECT tablestore.merge_entity('Dates', '{"PartitionKey": "p", "RowKey": "last", "X": 1}');
SELECT tablestore.insert_or_replace_entity('Dates', '{"PartitionKey": "p", "RowKey": "last", "X": 1}');
DROP TRIGGER noop ON tablestore_data.dates;
\set VERBOSITY terse
SELECT ts = '9999-12-31 23:59:59.999999+00' AS unchanged, props FROM tablestore_data.dates WHERE rk = 'last';
SELECT tablestore.delete_entity('Dates', 'p', 'last');

-- Rows outside the range, as an owner who dropped the constraint stores them
ALTER TABLE tablestore_data.dates DROP CONSTRAINT entity_ts_in_range;
INSERT INTO tablestore_data.dates VALUES
	('p', 'before', '1600-12-31 23:59:59.999999+00', '{"N": 1}'),
	('p', 'old', '1500-01-01 00:00:00+00', '{"N": 2}'),
	('p', 'future', '10000-01-01 00:00:00+00', '{"N": 3}'),
	('p', 'neginf', '-infinity', '{"N": 4}'),
	('p', 'posinf', 'infinity', '{"N": 5}');
SELECT tablestore.insert_entity('Dates', '{"PartitionKey": "p", "RowKey": "ok", "N": 6}')->>'N' AS n;
-- reading one is an error naming the entity, on every output path (the
-- first of these aborted the backend on an assertion; the others printed
-- 0000-01-01 and 2000-01-01)
SELECT tablestore.get_entity('Dates', 'p', 'old');
SELECT tablestore.get_entity('Dates', 'p', 'before', 'N');
SELECT tablestore.query_entities_json('Dates', 'RowKey eq ''future''');
SELECT tablestore.query_entities('Dates', 'RowKey eq ''neginf''', 'N');
SELECT entities FROM tablestore.query_entities_page('Dates', 'RowKey eq ''posinf''');
SELECT entities FROM tablestore.query_entities_page_json('Dates', 'RowKey eq ''old''');
SELECT entity FROM tablestore.query_page('Dates', 'RowKey eq ''old''');
SELECT tablestore.execute_batch('Dates', '[{"op": "retrieve", "entity": {"PartitionKey": "p", "RowKey": "neginf"}}]');
\set VERBOSITY default
SELECT tablestore.get_entity('Dates', 'p', 'future');
\set VERBOSITY terse
-- a filter counts such a Timestamp as absent: no comparison holds, so
-- these return only the entity in range; "not" of one holds, so the last
-- query returns one outside (and its output is the error naming it)
SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('Dates', 'Timestamp lt datetime''9999-12-31T23:59:59Z''') e;
SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('Dates', 'Timestamp gt datetime''1601-01-01T00:00:00Z''') e;
SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('Dates', 'Timestamp ne datetime''2000-01-01T00:00:00Z''') e;
SELECT count(*) FROM tablestore.query_entities('Dates', 'not (Timestamp ge datetime''1601-01-01T00:00:00Z'') and N gt 0', 'N') e;
-- no ETag matches one: -infinity's ticks wrapped to 2000-01-01's, whose ETag
-- the update below carries, and which updated the entity
SELECT tablestore.update_entity('Dates', '{"PartitionKey": "p", "RowKey": "neginf", "N": 7}',
	'W/"datetime''2000-01-01T00%3A00%3A00Z''"');
SELECT tablestore.delete_entity('Dates', 'p', 'old', 'W/"datetime''1601-01-01T00%3A00%3A00Z''"');
-- an unconditional write of one before the range gives it the time of the
-- write; past the range it is refused and undone (the constraint is gone:
-- the write path's own check refuses it, 23514, or failing that the
-- output's, 55000)
SELECT (tablestore.merge_entity('Dates', '{"PartitionKey": "p", "RowKey": "old", "M": 1}')->>'Timestamp')::timestamptz > '2020-01-01' AS now_stamped;
SELECT (tablestore.update_entity('Dates', '{"PartitionKey": "p", "RowKey": "neginf", "N": 8}')->>'Timestamp')::timestamptz > '2020-01-01' AS now_stamped;
CREATE FUNCTION pg_temp.refused(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE statement;
	RETURN 'written';
EXCEPTION WHEN check_violation OR object_not_in_prerequisite_state THEN
	RETURN 'refused';
END $$;
SELECT pg_temp.refused($$SELECT tablestore.merge_entity('Dates', '{"PartitionKey": "p", "RowKey": "future", "M": 1}')$$);
SELECT pg_temp.refused($$SELECT tablestore.insert_or_merge_entity('Dates', '{"PartitionKey": "p", "RowKey": "future", "M": 1}')$$);
SELECT pg_temp.refused($$SELECT tablestore.execute_batch('Dates', '[{"op": "update", "entity": {"PartitionKey": "p", "RowKey": "future"}}]')$$);
SELECT rk, ts = '10000-01-01 00:00:00+00' AS unchanged, props FROM tablestore_data.dates WHERE rk = 'future';
-- an upsert-merge of an entity at infinity: its next Timestamp would be
-- past the range (old_ts + 1 overflowed and stamped the current time)
\set VERBOSITY sqlstate
SELECT tablestore.insert_or_merge_entity('Dates', '{"PartitionKey": "p", "RowKey": "posinf", "M": 1}');
\set VERBOSITY terse
SELECT rk, ts = 'infinity' AS unchanged, props FROM tablestore_data.dates WHERE rk = 'posinf';
-- a delete needs no Timestamp
SELECT tablestore.delete_entity('Dates', 'p', 'future');
SELECT tablestore.delete_entity('Dates', 'p', 'posinf');
SELECT tablestore.delete_entity('Dates', 'p', 'before');
SELECT e->>'RowKey' AS rk, e->>'N' AS n FROM tablestore.query_entities('Dates') e;
-- VALIDATE checks the rows; the constraint back, as create_table makes it
ALTER TABLE tablestore_data.dates ADD CONSTRAINT entity_ts_in_range
	CHECK (ts >= '1601-01-01 00:00:00+00' AND ts < '10000-01-01 00:00:00+00') NOT VALID;
ALTER TABLE tablestore_data.dates VALIDATE CONSTRAINT entity_ts_in_range;
SELECT tablestore.delete_table('Dates');

-- A stored DateTime property before 1601 (plain SQL: the constraints do not
-- look into props) counts as absent in a filter, for every reader, and is
-- returned as stored.
SELECT tablestore.create_table('OldDates');
SELECT tablestore.insert_entity('OldDates', '{"PartitionKey": "p", "RowKey": "new",
	"D@odata.type": "Edm.DateTime", "D": "2020-01-01T00:00:00Z"}')->>'D' AS d;
INSERT INTO tablestore_data.olddates VALUES
	('p', 'old', now(), '{"D@odata.type": "Edm.DateTime", "D": "1500-01-01T00:00:00Z"}'),
	('p', 'zero', now(), '{"D@odata.type": "Edm.DateTime", "D": "0000-01-01T00:00:00Z"}');
SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('OldDates', 'D gt datetime''1601-01-01T00:00:00Z''') e;
SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('OldDates', 'D lt datetime''2100-01-01T00:00:00Z''') e;
SELECT e->>'RowKey' AS rk, e->>'D' AS d FROM tablestore.query_entities('OldDates', 'not (D ge datetime''1601-01-01T00:00:00Z'')') e;
SELECT json_array_length(entities) AS n, next_partition_key
FROM tablestore.query_entities_page_json('OldDates', 'D ge datetime''2020-01-01T00:00:00Z'' or D lt datetime''2020-01-01T00:00:00Z''', 'D');
SELECT tablestore.delete_table('OldDates');
