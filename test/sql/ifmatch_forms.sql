-- If-Match values as the service reads them (issue 22, item 4): an entity
-- tag that is not the entity's is a failed condition (412
-- UpdateConditionNotSatisfied), whatever its form (W/"wrong", lower-case
-- w/, a strong tag, one of our ETags for another time), and a missing
-- entity stays ResourceNotFound; only a value that is not an entity tag at
-- all is InvalidInput.
\set VERBOSITY terse
SELECT tablestore.create_table('IfMatch');
SELECT tablestore.insert_entity('IfMatch', '{"PartitionKey": "p", "RowKey": "r", "N": 1}') IS NOT NULL AS inserted;
CREATE FUNCTION pg_temp.code(statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	d text;
BEGIN
	EXECUTE statement;
	RETURN 'applied';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN substring(d from 'Table service error code: ([A-Za-z]+)');
END $$;
SELECT v AS if_match,
	pg_temp.code(format('SELECT tablestore.update_entity(%L, %L, %L)', 'IfMatch', '{"PartitionKey": "p", "RowKey": "r", "N": 2}', v)) AS update_,
	pg_temp.code(format('SELECT tablestore.merge_entity(%L, %L, %L)', 'IfMatch', '{"PartitionKey": "p", "RowKey": "r", "N": 2}', v)) AS merge_,
	pg_temp.code(format('SELECT tablestore.delete_entity(%L, %L, %L, %L)', 'IfMatch', 'p', 'r', v)) AS delete_,
	pg_temp.code(format('SELECT tablestore.merge_entity(%L, %L, %L)', 'IfMatch', '{"PartitionKey": "p", "RowKey": "missing"}', v)) AS merge_missing,
	pg_temp.code(format('SELECT tablestore.execute_batch(%L, %L)', 'IfMatch',
		json_build_array(json_build_object('op', 'merge', 'entity', json_build_object('PartitionKey', 'p', 'RowKey', 'r'), 'if_match', v)))) AS batch_
FROM (VALUES ('W/"wrong"'), ('w/"datetime''2024-01-01T00%3A00%3A00Z''"'), ('"strong"'),
	('W/"datetime''2024-01-01T00%3A00%3A00Z''"'), ('W/""'),
	('wrong'), ('W/wrong'), ('W/"a b"'), ('"unterminated'), ('')) AS t(v);
-- nothing was changed by any of them
SELECT tablestore.get_entity('IfMatch', 'p', 'r')->>'N' AS n;
SELECT tablestore.delete_table('IfMatch');
