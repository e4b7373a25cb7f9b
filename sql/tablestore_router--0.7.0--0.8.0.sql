-- tablestore_router 0.7.0 -> 0.8.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.8.0'" to load this file. \quit
