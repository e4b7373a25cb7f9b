-- tablestore_router 0.4.0 -> 0.5.0: released with tablestore 0.5.0, whose
-- change (the CHECK constraint entity_ts_in_range of entity relations) is
-- on the shards; the router's own objects are unchanged.

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.5.0'" to load this file. \quit
