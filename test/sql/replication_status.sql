-- tablestore.replication_status(): on a server that is no standby (this
-- one) the secondary is unavailable and no LastSyncTime is known; any role
-- may call it (SECURITY DEFINER: pg_stat_wal_receiver's columns need
-- pg_read_all_stats), and it exposes only its own columns.  On a standby:
-- test/t/012_secondary.pl.
SELECT * FROM tablestore.replication_status();
CREATE ROLE rs_nobody;
SET ROLE rs_nobody;
SELECT status, last_sync_time IS NULL AS no_sync FROM tablestore.replication_status();
RESET ROLE;
DROP ROLE rs_nobody;
SELECT p.prosecdef, p.provolatile, p.proconfig
FROM pg_proc p WHERE p.oid = 'tablestore.replication_status()'::regprocedure;
