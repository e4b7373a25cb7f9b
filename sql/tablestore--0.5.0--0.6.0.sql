-- tablestore 0.5.0 -> 0.6.0

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.6.0'" to load this file. \quit

-- verify_index: the light and parent checks and heapallindexed (issue 25)
DROP FUNCTION tablestore.verify_index(regclass);
CREATE FUNCTION tablestore.verify_index(index regclass, parent_check boolean DEFAULT true,
										heapallindexed boolean DEFAULT false) RETURNS void
	AS 'MODULE_PATHNAME', 'verify_index' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tablestore.verify_index(regclass, boolean, boolean) IS 'check a tskey index: page invariants, key order, links; with parent_check (ShareLock) levels, uniqueness, one entry per live tuple; with heapallindexed every heap tuple''s entry';
