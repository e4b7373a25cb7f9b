/*-------------------------------------------------------------------------
 *
 * ttl.c
 *	  Time to live: a table's default time to live and an entity's own
 *	  (the reserved property TimeToLive), the clock that every expiry test
 *	  reads, the test itself, the removal of an expired entity before a
 *	  write of its key, the sweep that reclaims expired rows in batches, and
 *	  the background worker that runs it (doc/ttl.md).
 *
 * A table's time to live is the catalog's tablestore.tables.default_ttl:
 * NULL (off: nothing here changes anything, TimeToLive is an ordinary
 * property), -1 (on, without a default) or seconds.  It is cached per
 * backend and relation, forgotten with the entity relation's relcache entry
 * (set_table_ttl invalidates it), and read, like a system catalog, under a
 * fresh snapshot: what a statement applies is the committed value.
 *
 * Expiry is decided by ts_ttl_expired against ts_ttl_now(): the statement's
 * start time (plus tablestore.clock_offset), so that every row of a scan,
 * every page of a query and every operation of a batch is judged at the
 * same instant, and no row costs a clock read.  Readers (query.c's scans,
 * which every read goes through, and a batch's retrieve through
 * ts_apply_op) skip an expired entity; a write first removes an expired
 * row of its key (ts_ttl_purge_key), so that the write meets no entity,
 * exactly as after the sweep.
 *
 * Expired rows are removed below the executor, as the direct write path
 * removes rows (table_tuple_lock, then table_tuple_delete): the latest
 * version of the row is locked and tested again, so a row rewritten
 * meanwhile is kept.  No trigger fires, no row-level security policy
 * applies and no privilege of the caller is used: expiry is the
 * table's rule, carried out as vacuum carries out its own, and a sweep run
 * by the superuser worker runs no code of the table's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "tablestore.h"
#include "errors.h"
#include "entity.h"
#include "entityrel.h"
#include "tables.h"
#include "ttl.h"

/* GUCs */
static int	ttl_clock_offset = 0;	/* seconds added to the clock (tests) */
static int	ts_ttl_naptime = 60;	/* seconds between the worker's rounds */
static int	ts_ttl_batch_size = 1000;	/* rows deleted per transaction */
static char *ts_ttl_databases = NULL;	/* the databases the worker serves */
static bool ts_ttl_worker_sweeps = true;	/* per database: the worker sweeps it */

/*
 * The lock on an entity relation under which its time to live changes
 * (set_table_ttl, or any update of the catalog's default_ttl): it conflicts
 * with the ROW EXCLUSIVE of sweeps and writers, so a time to live is not
 * changed under a sweep or write that applies it.
 */
#define TTL_CHANGE_LOCK		ShareRowExclusiveLock

/* The longest the worker waits for a lock (lock_timeout). */
#define TTL_WORKER_LOCK_TIMEOUT	"1s"

/* Rows a sweep batch reads, per row it may delete, before it commits. */
#define SWEEP_SCAN_FACTOR	10

/* ----------------------------------------------------------------
 * A table's time to live, cached
 * ----------------------------------------------------------------
 */

typedef struct TtlCacheEntry
{
	Oid			relid;			/* hash key: the entity relation */
	int32		ttl;			/* TS_TTL_OFF, TS_TTL_NEVER or seconds */
	RegProcedure eqproc;		/* its key index's equality, or InvalidOid */
} TtlCacheEntry;

static HTAB *ttl_cache = NULL;

/*
 * Relcache invalidations seen so far: a value read while one arrives may
 * predate the change it announces, and is not cached (ts_ttl_of_relation).
 */
static uint64 ttl_inval_count = 0;

/* Forget a relation's cached time to live (every one for InvalidOid). */
static void
ttl_cache_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	TtlCacheEntry *e;

	ttl_inval_count++;
	if (ttl_cache == NULL)
		return;
	if (OidIsValid(relid))
	{
		(void) hash_search(ttl_cache, &relid, HASH_REMOVE, NULL);
		return;
	}
	hash_seq_init(&status, ttl_cache);
	while ((e = hash_seq_search(&status)) != NULL)
		(void) hash_search(ttl_cache, &e->relid, HASH_REMOVE, NULL);
}

/*
 * The catalog tablestore.tables, if it has the column default_ttl (an
 * extension not yet updated to 0.9.0 has not: its tables have no TTL).
 */
static Oid
ttl_catalog(void)
{
	Oid			nsp = get_namespace_oid(TS_SCHEMA, true);
	Oid			catalog = OidIsValid(nsp) ? get_relname_relid("tables", nsp) : InvalidOid;

	if (!OidIsValid(catalog) || get_attnum(catalog, "default_ttl") == InvalidAttrNumber)
		return InvalidOid;
	return catalog;
}

/* Whether the catalog has time to live (see ttl_catalog). */
static bool
ttl_catalog_present(void)
{
	return OidIsValid(ttl_catalog());
}

/*
 * Read a table's time to live from the catalog, by its relation's name, as
 * the catalog's owner (whatever the caller may read of it), read-only.
 *
 * It is read under a fresh snapshot, not the caller's: like a system
 * catalog read for the relcache, the value is the committed one, whatever
 * the caller's snapshot (a READ COMMITTED statement's, taken before it
 * locked the table and so took in the invalidation, or a REPEATABLE READ
 * transaction's).  Read under that older snapshot, a time to live changed
 * since would be cached stale until the next invalidation, which may never
 * come.  (In parallel mode no new snapshot can be taken; the caller's
 * serves, and the leader has read the value already.)
 */
static int32
ttl_read_catalog(const char *relname)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	int32		ttl = TS_TTL_OFF;
	bool		isnull;
	int			ret;
	Oid			catalog = ttl_catalog();
	Oid			save_userid;
	int			save_sec;
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(catalog))
		return TS_TTL_OFF;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(catalog));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", catalog);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	values[0] = CStringGetTextDatum(relname);
	SPI_connect();
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	if (!IsInParallelMode())
		PushActiveSnapshot(GetLatestSnapshot());
	ret = SPI_execute_with_args("SELECT default_ttl FROM " TS_SCHEMA ".tables "
								"WHERE relation_name OPERATOR(pg_catalog.=) $1",
								1, argtypes, values, NULL, true, 1);
	if (!IsInParallelMode())
		PopActiveSnapshot();
	SetUserIdAndSecContext(save_userid, save_sec);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the time to live of \"%s\": %s", relname, SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			ttl = DatumGetInt32(d);
	}
	SPI_finish();
	return ttl;
}

/*
 * ts_ttl_of_relation: the time to live of the table whose entity relation
 * is relid (locked by the caller): TS_TTL_OFF, TS_TTL_NEVER or seconds.
 */
int32
ts_ttl_of_relation(Oid relid)
{
	TtlCacheEntry *e;
	bool		found;
	char	   *relname;
	int32		ttl;

	if (ttl_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(TtlCacheEntry);
		ttl_cache = hash_create("tablestore ttl cache", 64, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(ttl_cache_invalidate, (Datum) 0);
	}
	e = hash_search(ttl_cache, &relid, HASH_FIND, NULL);
	if (e != NULL)
		return e->ttl;
	relname = get_rel_name(relid);
	for (int tries = 0;; tries++)
	{
		uint64		seen = ttl_inval_count;

		ttl = relname ? ttl_read_catalog(relname) : TS_TTL_OFF;

		/*
		 * An invalidation taken in during the read (its locks take them in)
		 * may announce a change committed after the read's snapshot: read
		 * again, under a newer snapshot, rather than cache what may be
		 * stale.  Under a storm of invalidations, the last value read is
		 * used, not cached.
		 */
		if (seen == ttl_inval_count)
			break;
		if (tries == 3)
			return ttl;
	}
	/* entered once read: an error above leaves nothing behind */
	e = hash_search(ttl_cache, &relid, HASH_ENTER, &found);
	e->ttl = ttl;
	e->eqproc = InvalidOid;
	return ttl;
}

/*
 * The equality procedure of the key index of relid (cached with the
 * relation's time to live, which the caller has looked up).
 */
static RegProcedure
key_eq_proc(Oid relid, Relation index)
{
	TtlCacheEntry *e = ttl_cache ? hash_search(ttl_cache, &relid, HASH_FIND, NULL) : NULL;
	Oid			opno;
	RegProcedure proc;

	if (e != NULL && OidIsValid(e->eqproc))
		return e->eqproc;
	opno = get_opfamily_member(index->rd_opfamily[0], index->rd_opcintype[0],
							   index->rd_opcintype[0], BTEqualStrategyNumber);
	if (!OidIsValid(opno))
		elog(ERROR, "key index \"%s\" has no equality operator", RelationGetRelationName(index));
	proc = get_opcode(opno);
	if (e != NULL)
		e->eqproc = proc;
	return proc;
}

/* ----------------------------------------------------------------
 * The clock and the expiry test
 * ----------------------------------------------------------------
 */

/*
 * ts_ttl_now: the instant every expiry test of the statement is made at:
 * its start, shifted by tablestore.clock_offset.
 */
TimestampTz
ts_ttl_now(void)
{
	return GetCurrentStatementStartTimestamp() + (int64) ttl_clock_offset * USECS_PER_SEC;
}

/*
 * An entity's own time to live: its TimeToLive property if that is an
 * Edm.Int32 greater than 0 or -1, else 0 (absent, or not such a value: the
 * table's default applies).  *present: whether the property is there.
 * Stored canonically, an Edm.Int32 is a JSON integer without annotation;
 * any annotation makes it another type.
 */
static int32
entity_ttl(Jsonb *props, bool *present)
{
	JsonbValue	key;
	JsonbValue *v;
	char	   *s;
	char	   *p;
	long		n;

	*present = false;
	if (props == NULL || !JB_ROOT_IS_OBJECT(props))
		return 0;
	key.type = jbvString;
	key.val.string.val = TS_TTL_PROPERTY;
	key.val.string.len = strlen(TS_TTL_PROPERTY);
	v = findJsonbValueFromContainer(&props->root, JB_FOBJECT, &key);
	if (v == NULL)
		return 0;
	*present = true;
	if (v->type != jbvNumeric)
		return 0;
	key.val.string.val = TS_TTL_PROPERTY TS_ANNOTATION_SUFFIX;
	key.val.string.len = strlen(TS_TTL_PROPERTY TS_ANNOTATION_SUFFIX);
	if (findJsonbValueFromContainer(&props->root, JB_FOBJECT, &key) != NULL)
		return 0;
	s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
	p = s + (*s == '-');
	if (*p == '\0' || strlen(p) > 10 || strspn(p, "0123456789") != strlen(p))
		return 0;
	n = strtol(s, NULL, 10);
	if (n > PG_INT32_MAX || !(n > 0 || n == -1))
		return 0;
	return (int32) n;
}

/*
 * ts_ttl_expired: whether an entity stored with Timestamp ts and props has
 * expired at now in a table whose time to live is table_ttl: at ts plus
 * its own time to live, or the table's default.
 */
bool
ts_ttl_expired(int32 table_ttl, TimestampTz ts, Jsonb *props, TimestampTz now)
{
	bool		present;
	int32		ttl;

	if (table_ttl == TS_TTL_OFF)
		return false;
	ttl = entity_ttl(props, &present);
	if (ttl == 0)
		ttl = table_ttl;
	if (ttl <= 0)
		return false;			/* -1: never */
	return ts <= now - (int64) ttl * USECS_PER_SEC;
}

/*
 * ts_ttl_check_entity: on a table with time to live, refuse an entity to
 * be written whose TimeToLive is not an Edm.Int32 greater than 0 or -1, as
 * the service refuses a bad property value (InvalidInput).
 */
void
ts_ttl_check_entity(int32 table_ttl, Jsonb *props)
{
	bool		present;

	if (table_ttl == TS_TTL_OFF)
		return;
	if (entity_ttl(props, &present) == 0 && present)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("property \"" TS_TTL_PROPERTY "\" must be an Edm.Int32 greater than 0, or -1"),
				   errhint("The table has a time to live; an entity's " TS_TTL_PROPERTY
						   " is its own, in seconds, -1 for never."));
}

/* ----------------------------------------------------------------
 * Removing expired rows
 * ----------------------------------------------------------------
 */

/*
 * Delete the row version at *tid if it, or (READ COMMITTED) the latest
 * version of its row, is expired once locked: the lock (waiting for its
 * writers, or with LockWaitSkip giving up on a locked row) makes the test
 * and the delete one step, so a row rewritten meanwhile is kept.  slot is
 * the relation's, for the locked version.  Returns whether a row was
 * deleted.
 */
static bool
delete_if_expired(Relation heap, ItemPointer tid, int32 table_ttl, TimestampTz now,
				  LockWaitPolicy wait, TupleTableSlot *slot)
{
	TM_FailureData tmfd;
	TM_Result	res;
	CommandId	cid = GetCurrentCommandId(true);
	Snapshot	snapshot = GetActiveSnapshot();
	ItemPointerData locked;

	res = table_tuple_lock(heap, tid, snapshot, slot, cid, LockTupleExclusive, wait,
						   IsolationUsesXactSnapshot() ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
	if (res != TM_Ok)
		return false;			/* gone, changed (REPEATABLE READ), or locked */
	slot_getallattrs(slot);
	if (!ts_stored_row_valid(slot->tts_values, slot->tts_isnull) ||
		!ts_ttl_expired(table_ttl, DatumGetTimestampTz(slot->tts_values[TS_ATT_TS - 1]),
						DatumGetJsonbP(slot->tts_values[TS_ATT_PROPS - 1]), now))
		return false;			/* rewritten meanwhile: kept */
	locked = slot->tts_tid;
	res = table_tuple_delete(heap, &locked, cid, snapshot, InvalidSnapshot, true, &tmfd, false);
	if (res != TM_Ok)
		elog(ERROR, "unexpected result %d deleting a locked expired entity row", (int) res);
	return true;
}

/*
 * ts_ttl_purge_key: before a write of (pk, rk) to a table with time to
 * live, remove its row if the entity has expired, so that the write meets
 * no entity: an insert succeeds, an insert-or-merge inserts (nothing of the
 * expired entity is kept), a replace, merge or delete finds none.  The
 * relation is locked by the caller; keyindex is its key index.  In a
 * read-only transaction nothing is removed (the write is refused anyway).
 */
void
ts_ttl_purge_key(Oid relid, Oid keyindex, int32 table_ttl, text *pk, text *rk)
{
	Relation	heap;
	Relation	index;
	TupleTableSlot *slot;
	ScanKeyData keys[2];
	IndexScanDesc scan;
	bool		found;
	ItemPointerData tid;

	if (table_ttl == TS_TTL_OFF || XactReadOnly || RecoveryInProgress() || IsInParallelMode())
		return;
	heap = table_open(relid, NoLock);
	index = index_open(keyindex, AccessShareLock);
	slot = table_slot_create(heap, NULL);

	/*
	 * The version the statement's snapshot sees (the operation's own view);
	 * if it has expired, the latest version is locked and tested again
	 * before it goes.  Nothing else is paid for a write that meets a live
	 * entity or none.
	 */
	ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], key_eq_proc(relid, index), PointerGetDatum(pk));
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[1], key_eq_proc(relid, index), PointerGetDatum(rk));
	scan = index_beginscan(heap, index, GetActiveSnapshot(), 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	if (found)
	{
		tid = slot->tts_tid;
		slot_getallattrs(slot);
		found = ts_stored_row_valid(slot->tts_values, slot->tts_isnull) &&
			ts_ttl_expired(table_ttl, DatumGetTimestampTz(slot->tts_values[TS_ATT_TS - 1]),
						   DatumGetJsonbP(slot->tts_values[TS_ATT_PROPS - 1]), ts_ttl_now());
	}
	index_endscan(scan);
	if (found)
	{
		CheckCmdReplicaIdentity(heap, CMD_DELETE);
		/* the write that follows sees the row gone (both paths take new snapshots) */
		if (delete_if_expired(heap, &tid, table_ttl, ts_ttl_now(), LockWaitBlock, slot))
			CommandCounterIncrement();
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
}

/* What one batch of a sweep did. */
typedef struct SweepBatch
{
	int64		deleted;		/* rows deleted */
	ItemPointerData next;		/* where the next batch starts */
	bool		done;			/* the scan reached the end of the relation */
} SweepBatch;

/*
 * One batch of a sweep of an entity relation (locked by the caller): from
 * *start, read rows until max_delete expired ones were found (or
 * SWEEP_SCAN_FACTOR times as many were read), then delete each that is
 * still expired once locked, skipping rows another transaction holds
 * locked (a writer never waits for the sweep; the next pass gets the row).
 */
static void
sweep_batch(Relation heap, int32 table_ttl, TimestampTz now, ItemPointer start, int64 max_delete,
			SweepBatch *out)
{
	Snapshot	snapshot;
	ItemPointerData maxtid;
	TableScanDesc scan;
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	ItemPointerData *tids;
	int64		n = 0;
	int64		scanned = 0;
	int64		max_scan = max_delete * SWEEP_SCAN_FACTOR;

	tids = palloc(sizeof(ItemPointerData) * max_delete);
	out->deleted = 0;
	out->next = *start;
	out->done = false;

	CommandCounterIncrement();
	snapshot = GetTransactionSnapshot();
	PushActiveSnapshot(snapshot);
	ItemPointerSet(&maxtid, MaxBlockNumber, MaxOffsetNumber);
	scan = table_beginscan_tidrange(heap, GetActiveSnapshot(), start, &maxtid);
	for (;;)
	{
		if (n >= max_delete || scanned >= max_scan)
			break;
		if (!table_scan_getnextslot_tidrange(scan, ForwardScanDirection, slot))
		{
			out->done = true;
			break;
		}
		CHECK_FOR_INTERRUPTS();
		scanned++;
		out->next = slot->tts_tid;
		ItemPointerSetOffsetNumber(&out->next, ItemPointerGetOffsetNumber(&slot->tts_tid) + 1);
		slot_getallattrs(slot);
		if (ts_stored_row_valid(slot->tts_values, slot->tts_isnull) &&
			ts_ttl_expired(table_ttl, DatumGetTimestampTz(slot->tts_values[TS_ATT_TS - 1]),
						   DatumGetJsonbP(slot->tts_values[TS_ATT_PROPS - 1]), now))
			tids[n++] = slot->tts_tid;
	}
	table_endscan(scan);
	if (n > 0)
		CheckCmdReplicaIdentity(heap, CMD_DELETE);
	for (int64 i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (delete_if_expired(heap, &tids[i], table_ttl, now, LockWaitSkip, slot))
			out->deleted++;
	}
	PopActiveSnapshot();
	CommandCounterIncrement();
	ExecDropSingleTupleTableSlot(slot);
	pfree(tids);
}

/* ----------------------------------------------------------------
 * The progress of sweeps: tablestore.ttl_sweep_state
 * ----------------------------------------------------------------
 */

/* Run a statement on the sweep state as the catalog's owner (inside SPI). */
static void
state_exec(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	int			ret = ts_exec_catalog(sql, nargs, argtypes, values);

	if (ret < 0)
		elog(ERROR, "could not record the sweep's progress: %s", SPI_result_code_string(ret));
}

/*
 * Where a sweep of relname resumes: the position of a pass under way, or
 * false to start a new one (inside SPI; the caller holds the sweep lock,
 * so the row, locked here, is not contended).
 */
static bool
state_position(const char *relname, ItemPointer pos)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(relname)};
	bool		isnull = true;
	int			ret;

	ret = ts_exec_catalog("SELECT position FROM " TS_SCHEMA ".ttl_sweep_state "
						  "WHERE relation_name OPERATOR(pg_catalog.=) $1 FOR UPDATE", 1, argtypes, values);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the sweep's progress: %s", SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			*pos = *(ItemPointer) DatumGetPointer(d);
	}
	return !isnull;
}

/*
 * Take the sweep lock of an entity relation for the rest of the
 * transaction: sweeps of a table take it before anything else of the sweep
 * (its progress row, any entity row), so they run one at a time and never
 * deadlock with each other or with the writes of a sweeping transaction.
 * sweep_expired waits for it; the worker does not (wait false): a table
 * whose lock another transaction holds (a sweep_expired not yet committed)
 * is left to its next round.  An advisory lock of the database on the
 * relation's OID, with a fourth field of tablestore's own
 * (TS_TTL_SWEEP_LOCK), apart from those of pg_advisory_lock (1 and 2).
 */
#define TS_TTL_SWEEP_LOCK	0x7454

static bool
sweep_lock(Oid relid, bool wait)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, relid, 0, TS_TTL_SWEEP_LOCK);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

/* A pass over relname starts (inside SPI). */
static void
state_start(const char *relname)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(relname)};

	state_exec("INSERT INTO " TS_SCHEMA ".ttl_sweep_state AS s (relation_name, last_start, rows_deleted, position) "
			   "VALUES ($1, pg_catalog.clock_timestamp(), 0, '(0,1)') "
			   "ON CONFLICT (relation_name) DO UPDATE SET last_start = EXCLUDED.last_start, "
			   "rows_deleted = 0, position = EXCLUDED.position",
			   1, argtypes, values);
}

/* A batch of a pass over relname deleted rows; next, or NULL: it ended. */
static void
state_progress(const char *relname, int64 deleted, ItemPointer next)
{
	Oid			argtypes[3] = {TEXTOID, INT8OID, TIDOID};
	Datum		values[3] = {CStringGetTextDatum(relname), Int64GetDatum(deleted), (Datum) 0};

	if (next != NULL)
	{
		values[2] = PointerGetDatum(next);
		state_exec("UPDATE " TS_SCHEMA ".ttl_sweep_state SET rows_deleted = rows_deleted OPERATOR(pg_catalog.+) $2, "
				   "total_deleted = total_deleted OPERATOR(pg_catalog.+) $2, position = $3 "
				   "WHERE relation_name OPERATOR(pg_catalog.=) $1", 3, argtypes, values);
	}
	else
		state_exec("UPDATE " TS_SCHEMA ".ttl_sweep_state SET rows_deleted = rows_deleted OPERATOR(pg_catalog.+) $2, "
				   "total_deleted = total_deleted OPERATOR(pg_catalog.+) $2, position = NULL, "
				   "last_end = pg_catalog.clock_timestamp() "
				   "WHERE relation_name OPERATOR(pg_catalog.=) $1", 2, argtypes, values);
}

/* A sweep of relname failed with message (inside SPI). */
static void
state_error(const char *relname, const char *message)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(relname), CStringGetTextDatum(message)};

	state_exec("INSERT INTO " TS_SCHEMA ".ttl_sweep_state AS s (relation_name, errors, last_error, last_error_at) "
			   "VALUES ($1, 1, $2, pg_catalog.clock_timestamp()) "
			   "ON CONFLICT (relation_name) DO UPDATE SET errors = s.errors OPERATOR(pg_catalog.+) 1, "
			   "last_error = EXCLUDED.last_error, last_error_at = EXCLUDED.last_error_at",
			   2, argtypes, values);
}

/*
 * Sweep the entity relation relname (locked by the caller) in batches of at
 * most batch rows, deleting at most max_rows, resuming a pass under way;
 * one transaction (the caller's), progress recorded after each batch.
 * Returns the rows deleted.  Inside SPI.
 *
 * Each batch applies the time to live in force when it starts (the
 * caller's lock keeps it from changing under the batch; a change made
 * earlier in the caller's transaction counts), and runs in a memory context
 * of its own, reset after it: the memory a sweep uses does not grow with
 * the rows it deletes.
 */
static int64
sweep_relation(Relation heap, const char *relname, int64 max_rows)
{
	ItemPointerData pos;
	SweepBatch	b;
	int64		total = 0;
	TimestampTz now = ts_ttl_now();
	MemoryContext batchcxt;

	if (!state_position(relname, &pos))
	{
		state_start(relname);
		ItemPointerSet(&pos, 0, FirstOffsetNumber);
	}
	batchcxt = AllocSetContextCreate(CurrentMemoryContext, "tablestore sweep batch", ALLOCSET_DEFAULT_SIZES);
	while (total < max_rows)
	{
		int32		table_ttl = ts_ttl_of_relation(RelationGetRelid(heap));
		MemoryContext old;

		if (table_ttl == TS_TTL_OFF)
			break;
		old = MemoryContextSwitchTo(batchcxt);
		sweep_batch(heap, table_ttl, now, &pos, Min(max_rows - total, (int64) ts_ttl_batch_size), &b);
		MemoryContextSwitchTo(old);
		MemoryContextReset(batchcxt);
		total += b.deleted;
		state_progress(relname, b.deleted, b.done ? NULL : &b.next);
		if (b.done)
			break;
		pos = b.next;
	}
	MemoryContextDelete(batchcxt);
	return total;
}

/* ----------------------------------------------------------------
 * SQL functions
 * ----------------------------------------------------------------
 */

/* The entity relation of table_name, locked, its owner checked. */
static Oid
owned_table(text *table_name, LOCKMODE lockmode, char **relname)
{
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	Oid			relid = InvalidOid;

	if (ts_table_name_is_valid(name, len))
	{
		*relname = ts_relation_name(name, len);
		relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, *relname, -1),
										 lockmode, RVR_MISSING_OK, RangeVarCallbackOwnsRelation, NULL);
	}
	if (!OidIsValid(relid))
		ts_ereport(ERROR, TS_TableNotFound,
				   errmsg("table \"%s\" does not exist", ts_clip(name, len)));
	return relid;
}

/*
 * tablestore.set_table_ttl(table_name text, seconds integer) RETURNS void
 *
 * Set a table's time to live: NULL off, -1 on without a default, n > 0 the
 * default in seconds.  Only the table's owner.  It applies at once, to
 * every entity (an expired one is gone from the next statement on).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(set_table_ttl);

Datum
set_table_ttl(PG_FUNCTION_ARGS)
{
	char	   *relname = NULL;
	Oid			relid;
	Oid			argtypes[2] = {TEXTOID, INT4OID};
	Datum		values[2];
	int			ret;

	if (!PG_ARGISNULL(1) && PG_GETARG_INT32(1) <= 0 && PG_GETARG_INT32(1) != TS_TTL_NEVER)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("time to live must be greater than 0 seconds, -1 or null"));
	PreventCommandIfReadOnly("set_table_ttl");
	PreventCommandDuringRecovery("set_table_ttl");

	/*
	 * SHARE ROW EXCLUSIVE: the change waits for every sweep and writer of
	 * the table under way (they hold ROW EXCLUSIVE, and removed expired rows
	 * under the time to live they read), and each that comes after waits
	 * for it and reads the new value: no row is deleted under a time to
	 * live no longer in force.  Readers do not wait.
	 */
	relid = owned_table(ts_arg_table_name(fcinfo), TTL_CHANGE_LOCK, &relname);

	values[0] = CStringGetTextDatum(relname);
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : Int32GetDatum(PG_GETARG_INT32(1));
	SPI_connect();
	if (PG_ARGISNULL(1))
		ret = ts_exec_catalog("UPDATE " TS_SCHEMA ".tables SET default_ttl = NULL "
							  "WHERE relation_name OPERATOR(pg_catalog.=) $1", 1, argtypes, values);
	else
		ret = ts_exec_catalog("UPDATE " TS_SCHEMA ".tables SET default_ttl = $2 "
							  "WHERE relation_name OPERATOR(pg_catalog.=) $1", 2, argtypes, values);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "could not set the time to live: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		ts_ereport(ERROR, TS_TableNotFound,
				   errmsg("table \"%s\" is not in the catalog", relname));
	SPI_finish();
	/* every backend reads it again (the catalog's trigger says so too) */
	CacheInvalidateRelcacheByRelid(relid);
	CommandCounterIncrement();
	PG_RETURN_VOID();
}

/*
 * tablestore._ttl_catalog_changed(), the trigger AFTER UPDATE OF
 * default_ttl ON tablestore.tables FOR EACH ROW: every backend forgets the
 * table's cached time to live, however the catalog was changed (a direct
 * UPDATE by its owner, a data-only restore over an existing row).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(ttl_catalog_changed);

Datum
ttl_catalog_changed(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Oid			nsp;
	int			att;
	HeapTuple	tuples[2];

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("_ttl_catalog_changed must be fired as an AFTER ... FOR EACH ROW trigger")));
	nsp = get_namespace_oid(TS_DATA_SCHEMA, true);
	att = SPI_fnumber(RelationGetDescr(td->tg_relation), "relation_name");
	if (att <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("_ttl_catalog_changed must be a trigger of tablestore.tables")));
	tuples[0] = td->tg_trigtuple;
	tuples[1] = td->tg_newtuple;
	for (int i = 0; i < 2 && OidIsValid(nsp); i++)
	{
		bool		isnull;
		Datum		name;
		Oid			relid;

		if (tuples[i] == NULL)
			continue;
		name = heap_getattr(tuples[i], att, RelationGetDescr(td->tg_relation), &isnull);
		if (isnull)
			continue;
		relid = get_relname_relid(TextDatumGetCString(name), nsp);
		if (OidIsValid(relid))
		{
			/* a direct update waits for sweeps and writers, as set_table_ttl */
			LockRelationOid(relid, TTL_CHANGE_LOCK);
			CacheInvalidateRelcacheByRelid(relid);
		}
	}
	return PointerGetDatum(NULL);
}

/*
 * tablestore.get_table_ttl(table_name text) RETURNS integer
 *
 * A table's time to live (NULL: off).  Needs SELECT on the table.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(get_table_ttl);

Datum
get_table_ttl(PG_FUNCTION_ARGS)
{
	Oid			relid = ts_table_open(ts_arg_table_name(fcinfo), ACL_SELECT, AccessShareLock, NULL, NULL);
	int32		ttl = ts_ttl_of_relation(relid);

	if (ttl == TS_TTL_OFF)
		PG_RETURN_NULL();
	PG_RETURN_INT32(ttl);
}

/*
 * tablestore.sweep_expired(table_name text DEFAULT NULL, max_rows bigint
 * DEFAULT NULL) RETURNS bigint
 *
 * One bounded sweep, in the caller's transaction: delete the expired
 * entities of a table (NULL: of every table with time to live that the
 * caller owns), at most max_rows (NULL: no limit) in all, resuming where
 * the last sweep of each table stopped.  Returns the rows deleted.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(sweep_expired);

Datum
sweep_expired(PG_FUNCTION_ARGS)
{
	int64		max_rows = PG_ARGISNULL(1) ? PG_INT64_MAX : PG_GETARG_INT64(1);
	int64		total = 0;
	List	   *names = NIL;
	ListCell   *lc;

	if (max_rows < 0)
		ts_ereport(ERROR, TS_InvalidInput, errmsg("max_rows must not be negative"));
	PreventCommandIfReadOnly("sweep_expired");
	PreventCommandDuringRecovery("sweep_expired");
	if (!PG_ARGISNULL(0))
		names = list_make1(PG_GETARG_TEXT_PP(0));
	else
	{
		MemoryContext callerctx = CurrentMemoryContext;
		int			ret;

		SPI_connect();
		ret = SPI_execute("SELECT table_name FROM " TS_SCHEMA ".tables WHERE default_ttl IS NOT NULL "
						  "ORDER BY relation_name", true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "could not list the tables with time to live: %s", SPI_result_code_string(ret));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
			MemoryContext old = MemoryContextSwitchTo(callerctx);

			names = lappend(names, DatumGetTextPCopy(d));
			MemoryContextSwitchTo(old);
		}
		SPI_finish();
	}
	foreach(lc, names)
	{
		text	   *name = lfirst(lc);
		char	   *relname;
		Oid			relid;
		int32		ttl;
		Relation	heap;

		if (total >= max_rows)
			break;
		if (PG_ARGISNULL(0))
		{
			/* every table: those the caller owns, and that still exist */
			relid = RangeVarGetRelid(makeRangeVar(TS_DATA_SCHEMA,
												  ts_relation_name(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name)), -1),
									 NoLock, true);
			if (!OidIsValid(relid) || !pg_class_ownercheck(relid, GetUserId()))
				continue;
		}
		relid = owned_table(name, RowExclusiveLock, &relname);
		ttl = ts_ttl_of_relation(relid);
		if (ttl == TS_TTL_OFF)
			continue;
		heap = table_open(relid, NoLock);
		(void) ts_check_entity_relation(heap, true);
		(void) sweep_lock(relid, true);
		SPI_connect();
		total += sweep_relation(heap, relname, max_rows - total);
		SPI_finish();
		table_close(heap, NoLock);
	}
	PG_RETURN_INT64(total);
}

/* ----------------------------------------------------------------
 * The background worker
 *
 * A launcher, connected to no database, wakes every
 * tablestore.ttl_naptime, lists the databases to serve
 * (tablestore.ttl_databases: names, or * for every database that allows
 * connections and is not a template) and starts, one after the other, a
 * sweep worker for each, waiting for it to end.  A sweep worker connects
 * to its database, sweeps every table with time to live in batches (each
 * batch its own transaction and snapshot, at most ttl_batch_size rows
 * deleted), records progress and errors in tablestore.ttl_sweep_state and
 * exits: between rounds no process holds the database, so DROP DATABASE
 * meets none, and a dropped table, a dropped extension or a dropped
 * database ends the table's, or the round's, work at the next batch.  Its
 * waits are bounded (lock_timeout): a table it cannot lock is recorded and
 * skipped, and a DROP DATABASE waiting for its sessions makes it leave.
 * ----------------------------------------------------------------
 */

TS_FUNCTION_PREFIX void ts_ttl_launcher_main(Datum arg);
TS_FUNCTION_PREFIX void ts_ttl_sweep_main(Datum arg);

/* Start a transaction of the worker, with a statement's clock and snapshot. */
static void
worker_xact_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* End it. */
static void
worker_xact_end(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/*
 * The tables with time to live of the worker's database (in cxt), none if
 * the extension is not there (or not updated to 0.9.0).
 */
static pg_noinline List *
round_tables(MemoryContext cxt)
{
	List	   *tables = NIL;
	int			ret;

	worker_xact_begin();
	if (OidIsValid(get_extension_oid("tablestore", true)) && ttl_catalog_present())
	{
		SPI_connect();
		ret = SPI_execute("SELECT relation_name FROM " TS_SCHEMA ".tables "
						  "WHERE default_ttl IS NOT NULL ORDER BY relation_name", true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "could not list the tables with time to live: %s", SPI_result_code_string(ret));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			tables = lappend(tables, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
			MemoryContextSwitchTo(old);
		}
		SPI_finish();
	}
	worker_xact_end();
	return tables;
}

/*
 * Whether a DROP DATABASE of the worker's database waits for it: dropdb
 * holds the database's lock (ACCESS EXCLUSIVE) while it waits for the
 * database's sessions to end, and a new session's lock (ROW EXCLUSIVE, as
 * InitPostgres takes it) would conflict.  The worker then leaves at once,
 * rather than make the drop fail.  Inside a transaction (the lock taken is
 * the transaction's).
 */
static bool
database_being_dropped(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, MyDatabaseId, 0);
	if (LockAcquire(&tag, RowExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	return false;
}

/*
 * One batch of the worker's sweep of relname, in its own transaction:
 * returns false when the table's pass is over (or the table, its time to
 * live or the extension is gone).
 */
static bool
worker_batch(const char *relname)
{
	Oid			relid;
	Relation	heap;
	int32		ttl;
	ItemPointerData pos;
	SweepBatch	b;

	worker_xact_begin();
	if (!OidIsValid(get_extension_oid("tablestore", true)) || !ttl_catalog_present())
	{
		worker_xact_end();
		return false;
	}
	if (database_being_dropped())
	{
		worker_xact_end();
		proc_exit(0);
	}
	relid = RangeVarGetRelid(makeRangeVar(TS_DATA_SCHEMA, pstrdup(relname), -1), RowExclusiveLock, true);
	if (!OidIsValid(relid) || (ttl = ts_ttl_of_relation(relid)) == TS_TTL_OFF)
	{
		worker_xact_end();
		return false;
	}
	heap = table_open(relid, NoLock);
	(void) ts_check_entity_relation(heap, true);
	pgstat_report_activity(STATE_RUNNING, psprintf("sweeping expired entities of %s", relname));
	if (!sweep_lock(relid, false))
	{
		/* a sweep_expired holds the table: next round */
		table_close(heap, NoLock);
		worker_xact_end();
		pgstat_report_activity(STATE_IDLE, NULL);
		return false;
	}
	SPI_connect();
	if (!state_position(relname, &pos))
	{
		state_start(relname);
		ItemPointerSet(&pos, 0, FirstOffsetNumber);
	}
	sweep_batch(heap, ttl, ts_ttl_now(), &pos, ts_ttl_batch_size, &b);
	state_progress(relname, b.deleted, b.done ? NULL : &b.next);
	SPI_finish();
	table_close(heap, NoLock);
	worker_xact_end();
	pgstat_report_activity(STATE_IDLE, NULL);
	return !b.done;
}

/*
 * Record a batch's error for relname in a transaction of its own; false if
 * that fails too (the extension went away: the round ends).
 */
static bool
worker_record_error(const char *relname, const char *message)
{
	volatile bool ok = true;

	PG_TRY();
	{
		worker_xact_begin();
		if (OidIsValid(get_extension_oid("tablestore", true)) && ttl_catalog_present())
		{
			SPI_connect();
			state_error(relname, message);
			SPI_finish();
		}
		else
			ok = false;
		worker_xact_end();
	}
	PG_CATCH();
	{
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * ts_ttl_sweep_main: a sweep worker's round in one database (arg: its
 * OID), as the bootstrap superuser with search_path pg_catalog: only
 * tablestore's own statements run, and the deletes fire no triggers.
 */
void
ts_ttl_sweep_main(Datum arg)
{
	MemoryContext roundcxt;
	List	   *tables;
	ListCell   *lc;

	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	SetConfigOption("search_path", "pg_catalog", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", "tablestore ttl sweep", PGC_USERSET, PGC_S_SESSION);

	/*
	 * Every wait of the worker is bounded: a lock held by anyone (a LOCK
	 * TABLE, an open sweep_expired holding the progress row) costs it at
	 * most this, then the batch fails, is recorded as the table's error in
	 * tablestore.ttl_sweeps and the worker goes on with the next table (the
	 * next round tries this one again), and the launcher with the next
	 * database.
	 */
	SetConfigOption("lock_timeout", TTL_WORKER_LOCK_TIMEOUT, PGC_SUSET, PGC_S_OVERRIDE);
	/* a database can opt out (ALTER DATABASE ... SET tablestore.ttl_worker = off) */
	if (!ts_ttl_worker_sweeps)
		proc_exit(0);
	roundcxt = AllocSetContextCreate(TopMemoryContext, "tablestore ttl round", ALLOCSET_DEFAULT_SIZES);
	tables = round_tables(roundcxt);
	foreach(lc, tables)
	{
		const char *relname = lfirst(lc);

		for (;;)
		{
			volatile bool more = false;
			char	   *volatile message = NULL;

			CHECK_FOR_INTERRUPTS();
			PG_TRY();
			{
				more = worker_batch(relname);
			}
			PG_CATCH();
			{
				ErrorData  *edata;

				MemoryContextSwitchTo(roundcxt);
				edata = CopyErrorData();
				EmitErrorReport();
				FlushErrorState();
				AbortCurrentTransaction();
				message = pstrdup(edata->message);
				FreeErrorData(edata);
			}
			PG_END_TRY();
			if (message != NULL)
			{
				if (!worker_record_error(relname, message))
					proc_exit(0);
				break;			/* the next table; this one next round */
			}
			if (!more)
				break;
		}
	}
	proc_exit(0);
}

/*
 * The databases the launcher serves now: their OIDs, in the current memory
 * context.
 */
static List *
launcher_databases(void)
{
	List	   *dbs = NIL;
	List	   *names = NIL;
	bool		all = false;
	char	   *raw = pstrdup(ts_ttl_databases ? ts_ttl_databases : "");
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext cxt = CurrentMemoryContext;

	if (!SplitIdentifierString(raw, ',', &names))
	{
		ereport(LOG,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid list syntax in parameter \"tablestore.ttl_databases\"")));
		return NIL;
	}
	for (ListCell *lc = list_head(names); lc != NULL; lc = lnext(names, lc))
		if (strcmp(lfirst(lc), "*") == 0)
			all = true;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		bool		wanted = false;

		if (!db->datallowconn || db->datistemplate)
			continue;
		if (all)
			wanted = true;
		else
			for (ListCell *lc = list_head(names); lc != NULL; lc = lnext(names, lc))
				if (strcmp(lfirst(lc), NameStr(db->datname)) == 0)
					wanted = true;
		if (wanted)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			dbs = lappend_oid(dbs, db->oid);
			MemoryContextSwitchTo(old);
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return dbs;
}

/*
 * ts_ttl_launcher_main: the launcher (see above).
 */
void
ts_ttl_launcher_main(Datum arg)
{
	MemoryContext cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	cxt = AllocSetContextCreate(TopMemoryContext, "tablestore ttl launcher", ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		List	   *dbs;
		ListCell   *lc;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		MemoryContextReset(cxt);
		MemoryContextSwitchTo(cxt);
		dbs = launcher_databases();
		foreach(lc, dbs)
		{
			BackgroundWorker worker;
			BackgroundWorkerHandle *handle;

			memset(&worker, 0, sizeof(worker));
			worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
			worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
			worker.bgw_restart_time = BGW_NEVER_RESTART;
			snprintf(worker.bgw_library_name, BGW_MAXLEN, "tablestore");
			snprintf(worker.bgw_function_name, BGW_MAXLEN, "ts_ttl_sweep_main");
			snprintf(worker.bgw_name, BGW_MAXLEN, "tablestore ttl sweep of database %u", lfirst_oid(lc));
			snprintf(worker.bgw_type, BGW_MAXLEN, "tablestore ttl sweep");
			worker.bgw_main_arg = ObjectIdGetDatum(lfirst_oid(lc));
			worker.bgw_notify_pid = MyProcPid;
			if (!RegisterDynamicBackgroundWorker(&worker, &handle))
			{
				ereport(LOG,
						(errmsg("tablestore ttl launcher could not start a sweep worker"),
						 errhint("Raise max_worker_processes.")));
				break;
			}
			if (WaitForBackgroundWorkerShutdown(handle) == BGWH_POSTMASTER_DIED)
				proc_exit(1);
			CHECK_FOR_INTERRUPTS();
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (long) ts_ttl_naptime * 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* ----------------------------------------------------------------
 * Settings
 * ----------------------------------------------------------------
 */

/*
 * ts_ttl_init: define time to live's settings (from _PG_init).
 */
void
ts_ttl_init(void)
{
	DefineCustomIntVariable("tablestore.clock_offset",
							"Shifts the clock that decides whether an entity has expired.",
							"For tests: an entity expires when its Timestamp plus its time to live is "
							"at most the statement's start time plus this offset.",
							&ttl_clock_offset, 0, -INT_MAX, INT_MAX,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("tablestore.ttl_naptime",
							"Time between two rounds of the time to live worker.",
							NULL, &ts_ttl_naptime, 60, 1, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("tablestore.ttl_batch_size",
							"Expired entities a sweep deletes per transaction.",
							NULL, &ts_ttl_batch_size, 1000, 1, 1000000,
							PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("tablestore.ttl_databases",
							   "The databases the time to live worker sweeps: a comma-separated list, or * for all.",
							   NULL, &ts_ttl_databases, "*",
							   PGC_SIGHUP, GUC_LIST_INPUT, NULL, NULL, NULL);
	DefineCustomBoolVariable("tablestore.ttl_worker",
							 "Whether the time to live worker sweeps this database.",
							 "Set per database (ALTER DATABASE ... SET) to leave a database to sweep_expired.",
							 &ts_ttl_worker_sweeps, true,
							 PGC_SUSET, 0, NULL, NULL, NULL);

	/* the launcher, when preloaded (the only time a static worker can be) */
	if (process_shared_preload_libraries_in_progress)
	{
		BackgroundWorker worker;

		memset(&worker, 0, sizeof(worker));
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
		worker.bgw_restart_time = 10;
		snprintf(worker.bgw_library_name, BGW_MAXLEN, "tablestore");
		snprintf(worker.bgw_function_name, BGW_MAXLEN, "ts_ttl_launcher_main");
		snprintf(worker.bgw_name, BGW_MAXLEN, "tablestore ttl launcher");
		snprintf(worker.bgw_type, BGW_MAXLEN, "tablestore ttl launcher");
		RegisterBackgroundWorker(&worker);
	}
}
