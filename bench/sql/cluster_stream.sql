-- bench/cluster.sh (profile): every entity of 'Bench' streamed by
-- query_entities, no PartitionKey, so from every node.
SELECT count(*) FROM tablestore.query_entities('Bench');
