-- tablestore_router 0.8.0 -> 0.9.0

\echo Use "ALTER EXTENSION tablestore_router UPDATE TO '0.9.0'" to load this file. \quit

-- read-access secondary (issue 26 part 3): begin
-- replication_status: as in tablestore.sql ("router: as is"): the router's own
-- server's replication status (doc/scale-out.md says what a standby of the router gives)
CREATE FUNCTION tablestore.replication_status(OUT status text, OUT last_sync_time timestamptz,
	OUT replay_lsn pg_lsn, OUT primary_lsn pg_lsn, OUT replay_paused boolean)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	rcv_status text;
	rcv_sent timestamptz;
	rcv_received timestamptz;
BEGIN
	IF NOT pg_is_in_recovery() THEN
		status := 'unavailable';
		RETURN;
	END IF;
	-- the receiver first: the replay only advances, so a replay position
	-- read after it is at least where it was when the primary's was sent
	SELECT r.status, r.latest_end_lsn, r.last_msg_send_time, r.last_msg_receipt_time
		INTO rcv_status, primary_lsn, rcv_sent, rcv_received
		FROM pg_stat_wal_receiver r;
	replay_lsn := pg_last_wal_replay_lsn();
	replay_paused := pg_get_wal_replay_pause_state() <> 'not paused';
	last_sync_time := pg_last_xact_replay_timestamp();
	IF replay_lsn >= primary_lsn AND rcv_sent <> rcv_received THEN
		last_sync_time := greatest(last_sync_time, rcv_sent);
	END IF;
	status := CASE WHEN rcv_status IS NULL THEN 'unavailable'
		WHEN rcv_status = 'streaming' AND last_sync_time IS NOT NULL THEN 'live'
		ELSE 'bootstrap' END;
END $$;
COMMENT ON FUNCTION tablestore.replication_status() IS 'this standby''s replication status and last sync time, as the read-access secondary';
-- read-access secondary: end
