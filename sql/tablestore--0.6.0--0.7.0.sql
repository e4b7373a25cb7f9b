-- tablestore 0.6.0 -> 0.7.0

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.7.0'" to load this file. \quit

-- ---- issue 25 item 4: one definition of the SQL API (sqlgen) ----
-- The router's API is now copied from this script with its comments; this
-- one names both of its users.
COMMENT ON FUNCTION tablestore._query_page_keyed(text, text, text, integer, text, text) IS 'internal: query_page with each entity''s keys, for the HTTP gateway and a scale-out router';
-- ---- end of issue 25 item 4 (sqlgen) ----
