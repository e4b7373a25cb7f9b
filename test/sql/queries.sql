-- Queries: the $filter language, its comparison semantics, $select, $top,
-- paging, the access paths (explain_query) and list_tables with a filter.
SELECT tablestore.create_table('Types');
-- one entity per Edm type, each with the property P; "none" lacks it
SELECT count(tablestore.insert_entity('Types', e::jsonb)) AS inserted FROM (VALUES
	('{"PartitionKey": "p", "RowKey": "s", "P": "abc"}'),
	('{"PartitionKey": "p", "RowKey": "i", "P": 5}'),
	('{"PartitionKey": "p", "RowKey": "l", "P": "5", "P@odata.type": "Edm.Int64"}'),
	('{"PartitionKey": "p", "RowKey": "d", "P": 5.5}'),
	('{"PartitionKey": "p", "RowKey": "di", "P": 5.0, "P@odata.type": "Edm.Double"}'),
	('{"PartitionKey": "p", "RowKey": "b", "P": true}'),
	('{"PartitionKey": "p", "RowKey": "t", "P": "2020-01-01T00:00:00Z", "P@odata.type": "Edm.DateTime"}'),
	('{"PartitionKey": "p", "RowKey": "g", "P": "c9da6455-213d-42c9-9a79-3e9149a57833", "P@odata.type": "Edm.Guid"}'),
	('{"PartitionKey": "p", "RowKey": "x", "P": "AQID", "P@odata.type": "Edm.Binary"}'),
	('{"PartitionKey": "p", "RowKey": "none", "Q": 1}')) v(e);

-- the RowKeys a filter returns, in the order returned
CREATE FUNCTION rks(tbl text, f text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(e->>'RowKey', ','), '-') FROM tablestore.query_entities(tbl, f) e
$$;

-- Every cell of the type rule: which entities satisfy "P op literal" for a
-- literal of each type.  Numbers widen Int32 -> Int64 -> Double only; any
-- other mismatch counts the property as less than the literal (ne, lt, le
-- true); a missing property is false for every operator.
SELECT lit, rks('Types', 'P eq ' || lit) AS eq, rks('Types', 'P ne ' || lit) AS ne,
	rks('Types', 'P lt ' || lit) AS lt, rks('Types', 'P gt ' || lit) AS gt
FROM (VALUES ('''abc'''), ('5'), ('5L'), ('5.5'), ('true'), ('datetime''2020-01-01T00:00:00Z'''),
	('guid''C9DA6455-213D-42C9-9A79-3E9149A57833'''), ('X''010203''')) v(lit);
SELECT lit, rks('Types', 'P ge ' || lit) AS ge, rks('Types', 'P le ' || lit) AS le
FROM (VALUES ('''abc'''), ('5'), ('5L'), ('5.5'), ('true'), ('datetime''2020-01-01T00:00:00Z'''),
	('guid''C9DA6455-213D-42C9-9A79-3E9149A57833'''), ('X''010203''')) v(lit);

-- the missing-property rule: false for every operator, "not" of it true
SELECT rks('Types', 'Q eq 1') AS q_eq, rks('Types', 'Q ne 1') AS q_ne,
	rks('Types', 'not (Q eq 1)') AS not_q_eq, rks('Types', 'not Q ne 1') AS not_q_ne;

-- literals: each form, on either side, doubled quotes, Binary both ways
SELECT rks('Types', '5 eq P') AS left_int, rks('Types', '''abc'' eq P') AS left_string,
	rks('Types', 'P eq binary''010203''') AS binary_prefix, rks('Types', 'P lt X''0104''') AS binary_order,
	rks('Types', 'P gt datetime''2019-12-31T23:59:59.9999999Z''') AS datetime_ticks,
	rks('Types', 'P eq 5.0') AS double_literal, rks('Types', 'P gt 4.99e0') AS exponent;
SELECT rks('Types', 'P eq ''O''''Brien''') AS doubled_quote;
SELECT tablestore.insert_entity('Types', '{"PartitionKey": "q", "RowKey": "quote", "Name": "O''Brien", "Active": true, "Off": false}')->>'Name' AS name;
SELECT rks('Types', 'Name eq ''O''''Brien''') AS doubled_quote, rks('Types', 'Active') AS bare,
	rks('Types', 'not Active') AS not_bare, rks('Types', 'Off eq false') AS off,
	rks('Types', 'true') IS NOT NULL AS all_true, rks('Types', 'false') AS none;

-- keywords in any case; precedence: not > and > or
SELECT rks('Types', 'RowKey EQ ''i'' OR RowKey Eq ''l''') AS any_case;
SELECT rks('Types', 'RowKey eq ''i'' or RowKey eq ''l'' and P eq 6') AS and_first,
	rks('Types', '(RowKey eq ''i'' or RowKey eq ''l'') and P eq 6') AS parenthesized,
	rks('Types', 'not RowKey eq ''i'' and PartitionKey eq ''p'' and P eq 5') AS not_first,
	rks('Types', 'not (RowKey eq ''i'' and P eq 5) and PartitionKey eq ''p''') AS not_group;

-- system properties: PartitionKey and RowKey are strings, Timestamp a DateTime
SELECT rks('Types', 'Timestamp gt datetime''2000-01-01T00:00:00Z'' and RowKey lt ''c''') AS timestamp,
	rks('Types', 'RowKey eq 5') AS key_vs_int, rks('Types', 'RowKey lt 5 and RowKey lt ''c''') AS key_lt_int;

-- $select: exactly the named properties and odata.etag (the system properties
-- only when named: issue 22), a missing property as null
SELECT e - 'odata.etag' AS e, e ? 'Timestamp' AS stamped, e ? 'odata.etag' AS etag
FROM tablestore.query_entities('Types', 'RowKey eq ''i'' or RowKey eq ''none''', 'P,Q, Missing') e;
SELECT jsonb_object_keys(e) AS key FROM tablestore.query_entities('Types', 'RowKey eq ''l''', 'P') e;

-- $top caps the total; the caller's LIMIT stops the scan
SELECT count(*) FROM tablestore.query_entities('Types', NULL, NULL, 3);
SELECT e->>'RowKey' AS rk FROM tablestore.query_entities('Types') e LIMIT 2;

-- key order: ordinal by UTF-16 code unit, across partitions
SELECT tablestore.create_table('Ordered');
SELECT count(tablestore.insert_entity('Ordered', jsonb_build_object('PartitionKey', p, 'RowKey', r))) AS inserted
FROM (VALUES ('a', 'ｚ'), ('a', '😀'), ('a', 'Z'), ('a', 'é'), ('a', ''), ('a', '123'), ('a', '2'),
	('ｚ', '1'), ('😀', '1'), ('B', '1'), ('é', '1')) v(p, r);
SELECT e->>'PartitionKey' AS pk, e->>'RowKey' AS rk FROM tablestore.query_entities('Ordered') e;
SELECT rks('Ordered', 'PartitionKey eq ''a'' and RowKey gt ''z''') AS above_z,
	rks('Ordered', 'PartitionKey ge ''é''') AS from_e_acute;

-- access paths
SELECT f, tablestore.explain_query('Types', f) AS plan FROM (VALUES
	('PartitionKey eq ''p'' and RowKey eq ''i'''),
	('PartitionKey eq ''p'' and (RowKey eq ''l'' or RowKey eq ''i'' or RowKey eq ''l'')'),
	('(PartitionKey eq ''p'' and RowKey eq ''x'') or (RowKey eq ''a'' and PartitionKey eq ''o'')'),
	('PartitionKey eq ''p'' and RowKey ge ''d'' and RowKey lt ''i'' and P gt 1'),
	('PartitionKey eq ''p'' and P gt 1'),
	('PartitionKey gt ''a'' and PartitionKey le ''q'''),
	('P gt 1 or RowKey eq ''i'''),
	(''),
	('PartitionKey eq ''p'' and PartitionKey eq ''q'''),
	('PartitionKey ne ''p'''),
	('RowKey eq ''i'' or RowKey eq ''l''')) v(f);
-- and they return what the filter says
SELECT rks('Types', 'PartitionKey eq ''p'' and (RowKey eq ''l'' or RowKey eq ''i'' or RowKey eq ''l'')') AS multi_point,
	rks('Types', 'PartitionKey eq ''p'' and RowKey ge ''d'' and RowKey lt ''i'' and P gt 1') AS range,
	rks('Types', 'PartitionKey eq ''p'' and PartitionKey eq ''q''') AS contradiction,
	rks('Types', 'RowKey eq ''i'' or RowKey eq ''l''') AS table_scan;

-- paging: 25 entities, pages of 10, each continuation feeding the next
SELECT tablestore.create_table('Paged');
SELECT count(tablestore.insert_entity('Paged', jsonb_build_object('PartitionKey', 'p' || (i % 3), 'RowKey', lpad(i::text, 3, '0'), 'N', i)))
FROM generate_series(1, 25) i;
SELECT jsonb_array_length(entities) AS n, entities->0->>'RowKey' AS first, next_partition_key AS npk, next_row_key AS nrk
FROM tablestore.query_entities_page('Paged', 'N gt 2', 'RowKey,N', 10) \gset
SELECT :n AS n, :'first' AS first, :'npk' AS npk, :'nrk' AS nrk;
SELECT jsonb_array_length(entities) AS n, entities->0->>'RowKey' AS first, next_partition_key AS npk, next_row_key AS nrk
FROM tablestore.query_entities_page('Paged', 'N gt 2', 'RowKey,N', 10, :'npk', :'nrk') \gset
SELECT :n AS n, :'first' AS first, :'npk' AS npk, :'nrk' AS nrk;
SELECT jsonb_array_length(entities) AS n, entities->0->>'RowKey' AS first, next_partition_key, next_row_key
FROM tablestore.query_entities_page('Paged', 'N gt 2', 'RowKey,N', 10, :'npk', :'nrk');
-- a continuation from anywhere: the rest of its partition, then the others
SELECT jsonb_array_length(entities) AS n, entities->0->>'RowKey' AS first, next_partition_key, next_row_key
FROM tablestore.query_entities_page('Paged', 'N gt 2', 'RowKey,N', 10, 'p1', '016');
-- within a point list and a range too
SELECT (SELECT jsonb_agg(x - 'Timestamp' - 'odata.etag') FROM jsonb_array_elements(entities) x) AS entities,
	next_partition_key, next_row_key
FROM tablestore.query_entities_page('Paged', 'PartitionKey eq ''p1'' and (RowKey eq ''004'' or RowKey eq ''007'' or RowKey eq ''010'')', 'PartitionKey,RowKey,N', 2);
SELECT jsonb_array_length(entities) AS n, next_partition_key, next_row_key
FROM tablestore.query_entities_page('Paged', 'PartitionKey eq ''p1'' and (RowKey eq ''004'' or RowKey eq ''007'' or RowKey eq ''010'')', 'N', 2, 'p1', '010');
SELECT jsonb_array_length(entities) AS n, next_partition_key
FROM tablestore.query_entities_page('Paged', NULL, NULL, NULL);

-- list_tables with a filter on TableName (prefix search)
SELECT tablestore.list_tables('TableName ge ''P'' and TableName lt ''Q''') AS prefix_p;
SELECT tablestore.list_tables('TableName eq ''Types'' or Missing eq 1') AS one;

-- errors: each with its code
\set VERBOSITY default
SELECT tablestore.query_entities('Types', 'P eq');
SELECT tablestore.query_entities('Types', 'P eq 1 and');
SELECT tablestore.query_entities('Types', 'P eq null');
SELECT tablestore.query_entities('Types', 'startswith(P, ''a'')');
SELECT tablestore.query_entities('Types', 'P eq 2147483648');
SELECT count(*) AS int_range_ok FROM tablestore.query_entities('Types', 'P eq 2147483647 and P eq 2147483648L');
SELECT tablestore.query_entities('Types', 'P eq foo''1''');
SELECT tablestore.query_entities('Types', 'P eq datetime''1600-12-31T00:00:00Z''');
SELECT tablestore.query_entities('Types', 'P eq Q');
SELECT tablestore.query_entities('Types', 'P eq 1 or P eq 2 or P eq 3 or P eq 4 or P eq 5 or P eq 6 or P eq 7 or P eq 8 or P eq 9 or P eq 10 or P eq 11 or P eq 12 or P eq 13 or P eq 14 or P eq 15 or P eq 16');
SELECT tablestore.query_entities('Missing');
SELECT tablestore.query_entities('Types', NULL, 'P,,Q');
SELECT tablestore.query_entities('Types', NULL, NULL, -1);
SELECT * FROM tablestore.query_entities_page('Types', NULL, NULL, 1001);
SELECT * FROM tablestore.query_entities_page('Types', NULL, NULL, 10, 'p', NULL);
-- a continuation is a position, whatever key it holds: paging never gets stuck
SELECT jsonb_array_length(entities) AS n, next_partition_key, next_row_key
FROM tablestore.query_entities_page('Types', NULL, NULL, 10, 'p', 'a/b');
SELECT tablestore.explain_query('Missing', '');
SELECT tablestore.list_tables('TableName eq');
-- an entity relation changed behind the extension's back is refused, not
-- misread: the event trigger refuses the change, and with event triggers
-- disabled every function refuses the relation
SELECT tablestore.create_table('Altered');
ALTER TABLE tablestore_data.altered ADD COLUMN extra int;
ALTER EVENT TRIGGER tablestore_ddl_command_end DISABLE;
ALTER TABLE tablestore_data.altered ADD COLUMN extra int;
ALTER EVENT TRIGGER tablestore_ddl_command_end ENABLE;
SELECT tablestore.query_entities('Altered');
SELECT tablestore.insert_entity('Altered', '{"PartitionKey": "p", "RowKey": "r"}');
SELECT tablestore.create_table('Unindexed');
DO $$ BEGIN
	EXECUTE format('DROP INDEX %s', (SELECT indexrelid::regclass FROM pg_index
		WHERE indrelid = 'tablestore_data.unindexed'::regclass));
END $$;
SELECT tablestore.query_entities('Unindexed');
SELECT tablestore.get_entity('Unindexed', 'p', 'r');
\set VERBOSITY terse
SELECT tablestore.delete_table(t) FROM unnest(ARRAY['Altered', 'Unindexed']) t;

SELECT tablestore.delete_table(t) FROM unnest(ARRAY['Types', 'Ordered', 'Paged']) t;
