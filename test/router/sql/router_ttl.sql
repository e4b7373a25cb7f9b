-- Time to live through the router (issue 26 part 2): set_table_ttl sets it
-- on every node, get_table_ttl answers it, a node's refusal is raised as
-- the node raised it, and delete_table (on every node) removes it.  The
-- expiry itself, with the nodes' clocks moved, is test/router_regress.sh's.
\set VERBOSITY terse
SELECT tablestore.create_table('RouterTtl');
SELECT tablestore.get_table_ttl('RouterTtl');
SELECT tablestore.set_table_ttl('RouterTtl', 3600);
SELECT tablestore.get_table_ttl('routerttl');
SELECT tablestore.set_table_ttl('RouterTtl', -1);
SELECT tablestore.get_table_ttl('RouterTtl');
-- the service's refusals, from the nodes
SELECT tablestore.set_table_ttl('RouterTtl', 0);
SELECT tablestore.set_table_ttl('NoSuchTable', 5);
SELECT tablestore.get_table_ttl('NoSuchTable');
SELECT tablestore.get_table_ttl('RouterTtl');
-- an entity's TimeToLive is checked by the node that stores it
SELECT tablestore.insert_entity('RouterTtl', '{"PartitionKey": "a", "RowKey": "1", "TimeToLive": 0}');
SELECT tablestore.insert_entity('RouterTtl', '{"PartitionKey": "a", "RowKey": "1", "TimeToLive": 60}') - 'Timestamp' - 'odata.etag';
-- NULL turns it off; delete_table removes it, the name created again has none
SELECT tablestore.set_table_ttl('RouterTtl', NULL);
SELECT tablestore.get_table_ttl('RouterTtl');
SELECT tablestore.set_table_ttl('RouterTtl', 10);
SELECT tablestore.delete_table('RouterTtl');
SELECT tablestore.create_table('RouterTtl');
SELECT tablestore.get_table_ttl('RouterTtl');
SELECT tablestore.delete_table('RouterTtl');
