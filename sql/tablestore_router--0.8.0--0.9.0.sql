-- tablestore_router 0.8.0 -> 0.9.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.9.0'" to load this file. \quit
