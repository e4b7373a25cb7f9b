-- Property indexes through the router (issue 26 part 1): create and drop
-- run on every node, list shows every node's, and queries through the
-- router (each node's own query) return the same entities and pages with
-- the indexes as without them.
\set VERBOSITY terse
SELECT tablestore.create_table('RouterPidx');
SELECT count(tablestore.insert_entity('RouterPidx', jsonb_build_object('PartitionKey', 'p' || (i % 7),
	'RowKey', lpad(i::text, 4, '0'), 'N', i % 50, 'S', 's' || (i % 13))))
FROM generate_series(1, 400) i;
CREATE TEMP TABLE before AS
SELECT f, (SELECT coalesce(jsonb_agg(e->'RowKey'), '[]') FROM tablestore.query_entities('RouterPidx', f) e) AS rows,
	(SELECT jsonb_agg(jsonb_build_array(p.entities, p.next_partition_key, p.next_row_key))
	 FROM tablestore.query_entities_page('RouterPidx', f, 'RowKey', 5) p) AS page1
FROM unnest(ARRAY['N eq 7', 'N lt 3', 'N ge 48 or N eq 0', 'S eq ''s3'' and N gt 20', 'S lt ''s10''']) f;
SELECT tablestore.create_property_index('RouterPidx', 'N', 'Int32') IS NOT NULL AS created;
SELECT tablestore.create_property_index('RouterPidx', 'S', 'String') IS NOT NULL AS created;
SELECT table_name, property, edm_type, size > 0 AS has_size, valid FROM tablestore.list_property_indexes('RouterPidx');
-- the node's errors, as the node raised them
SELECT tablestore.create_property_index('RouterPidx', 'N', 'Int32');
SELECT tablestore.create_property_index('NoSuchTable', 'N', 'Int32');
SELECT tablestore.create_property_index('RouterPidx', 'RowKey', 'String');
SELECT f, rows = (SELECT coalesce(jsonb_agg(e->'RowKey'), '[]') FROM tablestore.query_entities('RouterPidx', f) e) AS same_rows,
	page1 = (SELECT jsonb_agg(jsonb_build_array(p.entities, p.next_partition_key, p.next_row_key))
			 FROM tablestore.query_entities_page('RouterPidx', f, 'RowKey', 5) p) AS same_page,
	jsonb_array_length(rows) AS n
FROM before ORDER BY f;
SELECT tablestore.drop_property_index('RouterPidx', 'N', 'Int32');
SELECT tablestore.drop_property_index('RouterPidx', 'N', 'Int32');
SELECT tablestore.drop_property_index('RouterPidx', 'N', 'Int32', if_exists => true);
SELECT property FROM tablestore.list_property_indexes('RouterPidx');
SELECT tablestore.delete_table('RouterPidx');
SELECT count(*) AS left_after_delete FROM tablestore.list_property_indexes('RouterPidx');
