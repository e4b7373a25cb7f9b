-- tablestore 0.8.0 -> 0.9.0

\echo Use "ALTER EXTENSION tablestore UPDATE TO '0.9.0'" to load this file. \quit

-- read-access secondary (issue 26 part 3): begin
-- replication_status: this server as the read-access secondary of its
-- primary, for Get Service Stats (the gateway's --secondary-db) and for
-- anyone who asks a standby by SQL.
--   status: 'live' (its WAL receiver streams from the primary and
--     last_sync_time is known), 'bootstrap' (a receiver is connected but
--     not streaming, e.g. switching to the primary's new timeline, or it
--     streams but since this server started it has not replayed far
--     enough to know a last_sync_time: the secondary is being brought up
--     to date), 'unavailable' (no WAL receiver: the primary cannot be
--     reached, or this server is no standby, e.g. a promoted one).
--   last_sync_time: every transaction the primary committed before it is
--     visible here.  When the replay has reached the end of WAL that the
--     primary reported in its last message (pg_stat_wal_receiver's
--     latest_end_lsn, overwritten by every message), it is that message's
--     send time (last_msg_send_time; while the primary is idle its
--     keepalives advance it); else (behind, or the replay paused) the
--     commit time of the last transaction replayed
--     (pg_last_xact_replay_timestamp(), which stops while the replay is
--     paused); NULL when neither is known or on a server that is no
--     standby.  Both times are the primary's clock.  A WAL receiver that
--     has just started sets last_msg_send_time (and the receipt time) to
--     its own start and keeps the previous receiver's latest_end_lsn until
--     the primary's first message: until then (send and receipt times
--     equal) the message time is not used.
--   replay_lsn, primary_lsn (latest_end_lsn), replay_paused: what it was
--     computed from.
-- SECURITY DEFINER: pg_stat_wal_receiver shows its columns to members of
-- pg_read_all_stats only; this shows these few to any role, so the
-- gateway's roles need no grant.
-- router: as is: the router's own server's replication (doc/scale-out.md)
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
