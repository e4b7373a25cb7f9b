-- Stored access policies through the router (issue 22 item 8): set
-- replaces them on every node, get answers them when the nodes agree,
-- a node's refusal is raised as the node raised it, and delete_table
-- (on every node) removes them.
\set VERBOSITY terse
SELECT tablestore.create_table('RouterAcl');
SELECT tablestore.get_table_acl('RouterAcl');
SELECT tablestore.set_table_acl('RouterAcl', '[{"Id": "r", "Expiry": "2099-01-01", "Permission": "r"}, {"Id": "bare"}]');
SELECT tablestore.get_table_acl('routeracl');
-- the service's refusals, from the nodes
SELECT tablestore.set_table_acl('RouterAcl', '[{"Id": "a"}, {"Id": "b"}, {"Id": "c"}, {"Id": "d"}, {"Id": "e"}, {"Id": "f"}]');
SELECT tablestore.set_table_acl('RouterAcl', '[{"Id": "a", "Permission": "x"}]');
SELECT tablestore.get_table_acl('NoSuchTable');
SELECT tablestore.set_table_acl('NoSuchTable', '[]');
-- nothing changed
SELECT jsonb_array_length(tablestore.get_table_acl('RouterAcl'));
-- [] removes them; delete_table removes them, the name created again has none
SELECT tablestore.set_table_acl('RouterAcl', '[]');
SELECT tablestore.get_table_acl('RouterAcl');
SELECT tablestore.set_table_acl('RouterAcl', '[{"Id": "old"}]');
SELECT tablestore.delete_table('RouterAcl');
SELECT tablestore.create_table('RouterAcl');
SELECT tablestore.get_table_acl('RouterAcl');
SELECT tablestore.delete_table('RouterAcl');
