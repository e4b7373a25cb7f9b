/*-------------------------------------------------------------------------
 *
 * entityspi.c
 *	  The SPI write path: entity operations as prepared SQL statements run
 *	  with the caller's rights.
 *
 * The operations (entityops.c) take this path whenever something only the
 * executor applies is in play (triggers, row-level security, column
 * privileges: see ts_direct_usable), and for a retrieve under row-level
 * security; it is the peer of the direct path (entitywrite.c), and both
 * stand on the entity-relation layer (entityrel.c).  Its statements are
 * prepared on first use per backend and relation and kept in the layer's
 * per-relation cache; they name every object and operator with its schema,
 * so no search_path can change what they do, and PostgreSQL's privileges
 * on the entity relation decide what a role may do.
 *
 * Concurrency: Replace and Merge are one UPDATE each, with the If-Match
 * condition in its WHERE clause and the merge done by jsonb operators, so the
 * row lock and PostgreSQL's recheck of the latest row version decide: two
 * writers holding the same ETag cannot both succeed.  When no row matched, a
 * read tells a missing entity from a changed one, and a write that waited
 * for a row deleted and re-inserted meanwhile goes round.  An insert just
 * inserts: the relation's unique tskey index waits for a concurrent inserter
 * of the same key and raises EntityAlreadyExists if that one commits (ON
 * CONFLICT is not available, PostgreSQL 15 allows it only with btree
 * indexes).  The upserts loop: update if the entity exists, else insert in a
 * subtransaction; an insert that loses a race is rolled back and goes round
 * again to update the winner's row.  Timestamps are computed in the UPDATE
 * from the clock and the previous Timestamp, so they increase per entity
 * even within a microsecond.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entity.h"
#include "writepath.h"
#include "subxact.h"
#include "entityrel.h"
#include "query.h"

/* The statements of a relation, in the slots of its cache entry. */
typedef enum SpiStatement
{
	STMT_GET,					/* (pk, rk) -> ts, props */
	STMT_INSERT,				/* (pk, rk, ts, props) */
	STMT_REPLACE,				/* (pk, rk, clock, props, etag ts or NULL) ->
								 * ts, props */
	STMT_MERGE,					/* (pk, rk, clock, props, etag ts or NULL,
								 * names) -> ts, props */
	STMT_DELETE_ANY,			/* (pk, rk) */
	STMT_DELETE_IF,				/* (pk, rk, ts) */
	NUM_STATEMENTS
} SpiStatement;

StaticAssertDecl(NUM_STATEMENTS == TS_REL_STATEMENTS,
				 "the relation cache keeps a slot per statement");

/*
 * The Timestamp of a write: the clock ($3), but always after the entity's
 * previous Timestamp, so that it increases even within one microsecond.
 */
#define NEXT_TS "GREATEST($3, ts OPERATOR(pg_catalog.+) '1 microsecond'::pg_catalog.interval)"
/* If-Match: $5 is the ETag's Timestamp, or NULL for '*' */
#define ETAG_MATCH "($5 IS NULL OR ts OPERATOR(pg_catalog.=) $5)"

/* keys are passed as text and compared as tablestore.key (a free cast) */
#define KEY_MATCH "pk OPERATOR(" TS_SCHEMA ".=) $1::" TS_SCHEMA ".key " \
	"AND rk OPERATOR(" TS_SCHEMA ".=) $2::" TS_SCHEMA ".key"

/* Prepare a statement and keep it beyond the SPI call. */
static SPIPlanPtr
prepare_kept(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep plan for \"%s\"", sql);
	return plan;
}

/*
 * The prepared statements of the relation, prepared on first use (call
 * inside SPI_connect).  If preparing fails none are left behind.  ONLY: an
 * inheritance child is not part of the table.
 */
static SPIPlanPtr *
statements(TsEntityRel *rel)
{
	SPIPlanPtr *stmts = ts_rel_statements(rel);
	const char *r;
	Oid			types[6] = {TEXTOID, TEXTOID, TIMESTAMPTZOID, JSONBOID, TIMESTAMPTZOID, TEXTARRAYOID};

	if (stmts[NUM_STATEMENTS - 1] != NULL)
		return stmts;
	r = quote_qualified_identifier(TS_DATA_SCHEMA, ts_rel_relname(rel));
	PG_TRY();
	{
		stmts[STMT_GET] = prepare_kept(psprintf("SELECT ts, props FROM ONLY %s WHERE " KEY_MATCH, r),
									   2, types);
		stmts[STMT_INSERT] = prepare_kept(psprintf("INSERT INTO %s (pk, rk, ts, props) VALUES ($1, $2, $3, $4)",
												   r), 4, types);
		stmts[STMT_REPLACE] = prepare_kept(psprintf("UPDATE ONLY %s SET ts = " NEXT_TS ", props = $4 WHERE "
													KEY_MATCH " AND " ETAG_MATCH " RETURNING ts, props", r),
										   5, types);
		stmts[STMT_MERGE] = prepare_kept(psprintf("UPDATE ONLY %s SET ts = " NEXT_TS ", "
												  "props = (props OPERATOR(pg_catalog.-) $6) OPERATOR(pg_catalog.||) $4 "
												  "WHERE " KEY_MATCH " AND " ETAG_MATCH " RETURNING ts, props", r),
										 6, types);
		stmts[STMT_DELETE_ANY] = prepare_kept(psprintf("DELETE FROM ONLY %s WHERE " KEY_MATCH, r), 2, types);
		stmts[STMT_DELETE_IF] = prepare_kept(psprintf("DELETE FROM ONLY %s WHERE " KEY_MATCH
													  " AND ts OPERATOR(pg_catalog.=) $3", r), 3, types);
	}
	PG_CATCH();
	{
		ts_rel_drop_statements(rel);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return stmts;
}

/*
 * ts_spi_prepare: prepare the relation's statements unless they are (call
 * inside SPI_connect).
 */
void
ts_spi_prepare(TsEntityRel *rel)
{
	(void) statements(rel);
}

/* A stored entity as read back. */
typedef struct StoredEntity
{
	bool		found;
	TimestampTz ts;
	Jsonb	   *props;			/* in the SPI context */
} StoredEntity;

/* Check the props a statement read or wrote (see ts_check_stored_row). */
static void
check_returned_props(TsEntityRel *rel, Jsonb *props)
{
	Datum		values[4] = {0, 0, 0, JsonbPGetDatum(props)};

	ts_check_stored_row(ts_rel_relname(rel), values, NULL);
}

/*
 * Read the entity (pk, rk) with the relation's get statement.
 */
static StoredEntity
read_entity(TsEntityRel *rel, text *pk, text *rk, bool read_only)
{
	SPIPlanPtr	plan = statements(rel)[STMT_GET];
	Datum		args[2] = {PointerGetDatum(pk), PointerGetDatum(rk)};
	StoredEntity r = {false, 0, NULL};
	bool		isnull;
	int			ret;

	ret = SPI_execute_plan(plan, args, NULL, read_only, 2);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read entity: %s", SPI_result_code_string(ret));
	if (SPI_processed > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		r.found = true;
		r.ts = DatumGetTimestampTz(SPI_getbinval(tup, desc, 1, &isnull));
		r.props = DatumGetJsonbP(SPI_getbinval(tup, desc, 2, &isnull));
		check_returned_props(rel, r.props);
	}
	return r;
}

/*
 * Run a write statement (insert or update) with all four arguments;
 * returns the number of rows written.
 */
static uint64
exec_write(SPIPlanPtr plan, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	Datum		args[4] = {PointerGetDatum(pk), PointerGetDatum(rk),
	TimestampTzGetDatum(ts), JsonbPGetDatum(props)};
	int			ret = SPI_execute_plan(plan, args, NULL, false, 0);

	if (ret != SPI_OK_INSERT && ret != SPI_OK_UPDATE)
		elog(ERROR, "could not write entity: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
				 errmsg("entity (\"%s\", \"%s\") was not stored", ts_clip_text(pk), ts_clip_text(rk)),
				 errdetail("A trigger of the entity relation skipped the write."),
				 errhint("An entity relation's BEFORE triggers must return the row.")));
	return SPI_processed;
}

/*
 * Insert an entity; EntityAlreadyExists if its key exists.  The key index
 * detects the conflict (after waiting for a concurrent inserter of the key);
 * its unique violation is reported as the service's error, without the
 * internal statement as context (and the same for a relation still indexed
 * by a btree primary key, before ALTER EXTENSION UPDATE converts it).
 */
static void
insert_one(TsEntityRel *rel, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	char	   *keyname = ts_rel_key_index_name(rel);

	PG_TRY();
	{
		exec_write(statements(rel)[STMT_INSERT], pk, rk, ts, props);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		ts_rel_raise_if_key_violation(rel, keyname, pk, rk);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* The arguments of an insert run by try_insert. */
typedef struct InsertArgs
{
	TsEntityRel *rel;
	text	   *pk;
	text	   *rk;
	TimestampTz ts;
	Jsonb	   *props;
} InsertArgs;

/* The body of try_insert's subtransaction: the insert. */
static void
insert_args(void *arg)
{
	InsertArgs *a = (InsertArgs *) arg;

	exec_write(statements(a->rel)[STMT_INSERT], a->pk, a->rk, a->ts, a->props);
}

/*
 * Insert an entity unless its key exists: the insert in an internal
 * subtransaction, rolled back on a unique violation of the key index (which
 * raises it after waiting for a concurrent inserter that then commits; no
 * lock of ours is held meanwhile).  A violation of another unique index is
 * raised as it is.  Returns whether the entity was inserted.
 */
static bool
try_insert(TsEntityRel *rel, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	InsertArgs	args = {rel, pk, rk, ts, props};
	ErrorData  *edata;

	edata = ts_run_in_subtransaction(insert_args, &args);
	if (edata == NULL)
		return true;
	if (!ts_rel_is_key_violation(ts_rel_key_index_name(rel), edata))
		ReThrowError(edata);
	FreeErrorData(edata);
	return false;
}

/*
 * After an upsert's insert found its key taken: whether the key exists but
 * row-level security hides it from the caller's update (rather than a
 * concurrent session having inserted it).  Under REPEATABLE READ and
 * SERIALIZABLE the update saw what the transaction's snapshot sees, so the
 * key is hidden if that snapshot sees it; under READ COMMITTED each
 * statement sees the latest committed rows, so the key is hidden if it
 * exists and the update of a second round did not find it either.
 */
static bool
key_hidden(Oid relid, text *pk, text *rk, int round)
{
	if (check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED)
		return false;
	if (IsolationUsesXactSnapshot())
		return ts_key_exists_raw(relid, pk, rk, GetTransactionSnapshot());
	return round > 0 && ts_key_exists_raw(relid, pk, rk, GetLatestSnapshot());
}

/* The If-Match condition against the stored entity, which must exist. */
static void
check_condition(const StoredEntity *old, bool conditional, int64 ticks, text *pk, text *rk)
{
	if (!old->found)
		ts_entity_not_found(pk, rk);
	ts_check_if_match(old->ts, conditional, ticks, pk, rk);
}

/*
 * After a conditional write statement matched no row: tell a missing entity
 * (ResourceNotFound) from a changed one (UpdateConditionNotSatisfied).  If
 * it exists and matches now, the row the statement waited for was deleted
 * and the key inserted again meanwhile (READ COMMITTED): return, for the
 * caller to go round and write the entity that exists now, at most
 * TS_WRITE_MAX_ROUNDS times.  what: "written" or "deleted".
 */
static void
recheck_after_miss(TsEntityRel *rel, text *pk, text *rk, bool conditional, int64 ticks, int round,
				   const char *what)
{
	StoredEntity old = read_entity(rel, pk, rk, false);

	check_condition(&old, conditional, ticks, pk, rk);
	if (round == TS_WRITE_MAX_ROUNDS)
		ts_ereport(ERROR, TS_UpdateConditionNotSatisfied,
				   errmsg("entity (\"%s\", \"%s\") changed while it was being %s",
						  ts_clip_text(pk), ts_clip_text(rk), what));
	CHECK_FOR_INTERRUPTS();
}

/*
 * The names a merge of new_props removes from the stored properties before
 * adding new_props: each new property and its annotation, so that a merged
 * property takes the new value and type.
 */
static Datum
merge_removals(Jsonb *new_props)
{
	JsonbIterator *it = JsonbIteratorInit(&new_props->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n = 0;
	Datum	   *names = palloc(sizeof(Datum) * (2 * JB_ROOT_COUNT(new_props) + 1));

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		names[n++] = PointerGetDatum(cstring_to_text_with_len(v.val.string.val, v.val.string.len));
		names[n++] = CStringGetTextDatum(psprintf("%.*s@odata.type",
												  v.val.string.len, v.val.string.val));
	}
	return PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Replace or merge the existing entity e in one UPDATE, under an If-Match
 * condition (etag_ticks, if conditional).  Returns false if no row matched
 * (missing, or changed); else fills *result with the stored entity.
 */
static bool
update_one(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional, int64 etag_ticks,
		   TsOpResult *result)
{
	bool		merge = (kind == TS_OP_MERGE || kind == TS_OP_INSERT_OR_MERGE);
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	int			ret;

	args[0] = PointerGetDatum(e->partition_key);
	args[1] = PointerGetDatum(e->row_key);
	args[2] = TimestampTzGetDatum(GetCurrentTimestamp());
	args[3] = JsonbPGetDatum(e->props);
	if (conditional)
		args[4] = TimestampTzGetDatum(ts_if_match_timestamp(etag_ticks));
	else
	{
		args[4] = (Datum) 0;
		nulls[4] = 'n';
	}
	if (merge)
		args[5] = merge_removals(e->props);

	ret = SPI_execute_plan(statements(rel)[merge ? STMT_MERGE : STMT_REPLACE], args, nulls, false, 0);
	if (ret != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update entity: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return false;
	result->ts = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	ts_check_write_timestamp(result->ts, e->partition_key, e->row_key);
	result->props = DatumGetJsonbP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	check_returned_props(rel, result->props);

	/* a merge can take the entity over the limits; the error undoes it */
	if (merge)
		ts_entity_check_limits(result->props, ts_entity_key_size(e->partition_key, e->row_key));
	return true;
}

/*
 * Delete the entity (pk, rk), under an If-Match condition.
 */
static void
delete_one(TsEntityRel *rel, text *pk, text *rk, bool conditional, int64 ticks)
{
	Datum		args[3] = {PointerGetDatum(pk), PointerGetDatum(rk), (Datum) 0};

	if (conditional)
		args[2] = TimestampTzGetDatum(ts_if_match_timestamp(ticks));

	for (int round = 0;; round++)
	{
		int			ret = SPI_execute_plan(statements(rel)[conditional ? STMT_DELETE_IF : STMT_DELETE_ANY],
										   args, NULL, false, 0);

		if (ret != SPI_OK_DELETE)
			elog(ERROR, "could not delete entity: %s", SPI_result_code_string(ret));
		if (SPI_processed > 0)
			return;

		/* go round to delete the entity that exists now */
		recheck_after_miss(rel, pk, rk, conditional, ticks, round, "deleted");
	}
}

/*
 * Raise the error of INSERT's privilege check unless the role may insert
 * entity rows into the relation: INSERT on it, or on each of its columns.
 */
static void
check_insert_privilege(TsEntityRel *rel)
{
	Oid			userid = GetUserId();

	Oid			relid = ts_rel_relid(rel);

	if (pg_class_aclcheck(relid, userid, ACL_INSERT) == ACLCHECK_OK)
		return;
	for (AttrNumber att = TS_ATT_PK; att <= TS_ATT_PROPS; att++)
		if (pg_attribute_aclcheck(relid, att, userid, ACL_INSERT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, ts_rel_relname(rel));
}

/*
 * ts_spi_apply: carry out one entity operation on the entity relation of
 * rel (locked by the caller) through SPI; call inside SPI_connect.  The
 * arguments and results are ts_apply_op's; props are in the SPI context.
 */
void
ts_spi_apply(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
			TsOpResult *result)
{
	text	   *pk = e->partition_key;
	text	   *rk = e->row_key;
	StoredEntity old;
	int			round;

	result->props = e->props;
	result->ts = 0;

	/*
	 * An upsert needs INSERT as much as UPDATE (and SELECT) whether or not
	 * the entity exists, as on the direct path; here the INSERT statement
	 * (whose executor would check it) runs only for a new entity: check it
	 * as that executor would, on the table or on every column it writes.
	 */
	if (kind == TS_OP_INSERT_OR_REPLACE || kind == TS_OP_INSERT_OR_MERGE)
		check_insert_privilege(rel);

	switch (kind)
	{
		case TS_OP_INSERT:
			result->ts = GetCurrentTimestamp();
			insert_one(rel, pk, rk, result->ts, e->props);
			break;

		case TS_OP_UPDATE:
		case TS_OP_MERGE:

			/*
			 * No row matched: tell a missing entity from a changed one.  If
			 * it exists and matches now, the row our UPDATE waited for was
			 * deleted and the key inserted again meanwhile (READ COMMITTED):
			 * go round and write the entity that exists now.
			 */
			for (round = 0; !update_one(rel, kind, e, conditional, ticks, result); round++)
				recheck_after_miss(rel, pk, rk, conditional, ticks, round, "written");
			break;

		case TS_OP_INSERT_OR_REPLACE:
		case TS_OP_INSERT_OR_MERGE:

			/*
			 * Change the entity if it exists, insert it if not.  If another
			 * session inserts the key between our update and our insert, the
			 * insert fails (after waiting for that session) and is rolled
			 * back, and we go round again and update that session's row
			 * (READ COMMITTED: the next statement sees it).  Under REPEATABLE
			 * READ or SERIALIZABLE our snapshot never will: that is a
			 * serialization failure, for the caller to retry.  A key that
			 * exists but that row-level security hides from the caller can
			 * be neither updated nor inserted.
			 */
			for (round = 0;; round++)
			{
				if (update_one(rel, kind, e, false, 0, result))
					break;
				result->ts = GetCurrentTimestamp();
				result->props = e->props;
				if (try_insert(rel, pk, rk, result->ts, e->props))
					break;
				if (key_hidden(ts_rel_relid(rel), pk, rk, round))
					ts_ereport(ERROR, TS_EntityAlreadyExists,
							   errmsg("entity (\"%s\", \"%s\") exists but row-level security does not let the caller change it",
									  ts_clip_text(pk), ts_clip_text(rk)));
				if (IsolationUsesXactSnapshot())
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not serialize access due to a concurrent insert of entity (\"%s\", \"%s\")",
									ts_clip_text(pk), ts_clip_text(rk)),
							 errhint("Retry the transaction.")));
				if (round == TS_WRITE_MAX_ROUNDS)
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not write entity (\"%s\", \"%s\") because of concurrent inserts and deletes of its key",
									ts_clip_text(pk), ts_clip_text(rk)),
							 errhint("Retry the operation.")));
				CHECK_FOR_INTERRUPTS();
			}
			break;

		case TS_OP_DELETE:
			delete_one(rel, pk, rk, conditional, ticks);
			result->props = NULL;
			break;

		case TS_OP_RETRIEVE:
			old = read_entity(rel, pk, rk, true);
			if (!old.found)
				ts_entity_not_found(pk, rk);
			result->ts = old.ts;
			result->props = old.props;
			break;
	}
}
