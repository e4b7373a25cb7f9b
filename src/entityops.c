/*-------------------------------------------------------------------------
 *
 * entityops.c
 *	  The single-entity operations: insert, update (replace), merge,
 *	  insert-or-replace, insert-or-merge, delete and get, and the choice of
 *	  write path for them and for each operation of a batch.
 *
 * Each operation validates its input first (so that bad input changes
 * nothing), opens and locks the table's entity relation through the
 * entity-relation layer (entityrel.c), pins the relation's cache entry and
 * hands the operation to one of two peer write paths: the direct one
 * (entitywrite.c) where nothing but the executor's own work is in play,
 * else the SPI one (entityspi.c), which runs SQL statements with the
 * caller's rights.  Both give the same results and the same errors.  A get
 * is a point read of the key index (query.c), or through SPI where
 * row-level security applies.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"

#include "tablestore.h"
#include "errors.h"
#include "entity.h"
#include "writepath.h"
#include "entityrel.h"
#include "entityops.h"
#include "query.h"
#include "ttl.h"

/*
 * ts_apply_op: carry out one entity operation on the entity relation of
 * rel, which the caller has locked; call inside SPI_connect.  For a write,
 * e is the validated entity; for delete and retrieve only its keys are
 * used.  conditional and ticks are the If-Match condition of update, merge
 * and delete.  Returns the entity as stored now in *result (props in the
 * SPI context, or the caller's), except after a delete.  A write goes
 * without SPI where nothing but the executor's own work is in play.
 * direct is NULL for an operation on its own; a batch passes the address
 * of its direct-write state (NULL at first), which the first direct write
 * sets up (ts_direct_begin) and the next ones share; the batch ends it
 * (ts_direct_end).  Whether a write may go direct is decided for each.
 */
void
ts_apply_op(TsEntityRel *rel, TsDirectWrite **direct, TsOpKind kind, TsEntity *e,
			bool conditional, int64 ticks, TsOpResult *result)
{
	int32		ttl = ts_ttl_of_relation(ts_rel_relid(rel));

	/*
	 * Time to live (ttl.c): a write's TimeToLive must be valid, and an
	 * expired entity of its key is removed first, so that the write meets
	 * none; a retrieve does not see an expired entity.
	 */
	if (ttl != TS_TTL_OFF && kind != TS_OP_RETRIEVE)
	{
		if (kind != TS_OP_DELETE && e->props != NULL)
			ts_ttl_check_entity(ttl, e->props);
		ts_ttl_purge_key(ts_rel_relid(rel), ts_rel_keyindex(rel), ttl, e->partition_key, e->row_key);
	}

	if (kind != TS_OP_RETRIEVE && ts_direct_usable(ts_rel_relid(rel), kind))
	{
		if (direct != NULL && *direct == NULL)
			*direct = ts_direct_begin(rel);
		ts_direct_apply(rel, direct ? *direct : NULL, kind, e, conditional, ticks, result);
	}
	else
		ts_spi_apply(rel, kind, e, conditional, ticks, result);

	if (kind == TS_OP_RETRIEVE && ttl != TS_TTL_OFF && result->props != NULL &&
		ts_ttl_expired(ttl, result->ts, result->props, ts_ttl_now()))
		ts_entity_not_found(e->partition_key, e->row_key);
}

/*
 * ts_op_privileges: the privileges on the entity relation of which an
 * operation needs at least one (it needs them all; the statements check
 * that): a role with none may not even lock the relation.
 */
AclMode
ts_op_privileges(TsOpKind kind)
{
	switch (kind)
	{
		case TS_OP_INSERT:
			return ACL_INSERT;
		case TS_OP_UPDATE:
		case TS_OP_MERGE:
			return ACL_UPDATE;
		case TS_OP_INSERT_OR_REPLACE:
		case TS_OP_INSERT_OR_MERGE:
			return ACL_INSERT | ACL_UPDATE;
		case TS_OP_DELETE:
			return ACL_DELETE;
		case TS_OP_RETRIEVE:
			return ACL_SELECT;
	}
	return ACL_SELECT;			/* keep the compiler quiet */
}

/*
 * ts_pin_relation: the cache entry of a relation that ts_table_open opened,
 * pinned (ts_rel_pin), with the SPI path's statements prepared; call inside
 * SPI_connect.  They are prepared up front whichever path serves the
 * operations, as they always have been, so that a relation's first
 * operation costs the same on both paths and the cache's bound and its
 * forgetting of dropped relations show in the backend's memory contexts
 * (test/sql/hardening.sql).  If preparing fails the entry is unpinned.
 */
TsEntityRel *
ts_pin_relation(Oid relid, const char *relname, Oid keyindex)
{
	TsEntityRel *rel = ts_rel_pin(relid, relname, keyindex);

	PG_TRY();
	{
		ts_spi_prepare(rel);
	}
	PG_CATCH();
	{
		ts_rel_unpin(rel);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return rel;
}

/*
 * ts_apply_op with the relation's entry pinned by the caller, unpinned when it ends,
 * also after an error, which a savepoint may catch.
 */
static void
apply_pinned(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
			 TsOpResult *result)
{
	PG_TRY();
	{
		ts_apply_op(rel, NULL, kind, e, conditional, ticks, result);
	}
	PG_CATCH();
	{
		ts_rel_unpin(rel);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ts_rel_unpin(rel);
}

/*
 * The body of the SQL functions: run one operation on the table named by
 * argument 0 and return the entity as now stored (NULL after a delete).
 */
static Jsonb *
run_single(text *table, TsOpKind kind, TsEntity *e, bool conditional, int64 ticks,
		   const char *select_list)
{
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *relname;
	Oid			relid;
	Oid			keyindex;
	TsOpResult	r;
	Jsonb	   *result = NULL;
	TsEntityRel *rel;

	relid = ts_table_open(table, ts_op_privileges(kind),
						  kind == TS_OP_RETRIEVE ? AccessShareLock : RowExclusiveLock, &relname, &keyindex);
	SPI_connect();
	rel = ts_pin_relation(relid, relname, keyindex);
	apply_pinned(rel, kind, e, conditional, ticks, &r);

	/* build the result where it outlives SPI_finish */
	MemoryContextSwitchTo(callerctx);
	if (r.props != NULL)
		result = ts_entity_output(e->partition_key, e->row_key, r.ts, r.props, select_list);
	SPI_finish();
	return result;
}

/* Text argument n, or NULL. */
static text *
arg_text(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n);
}

/* The entity argument n, validated and in the stored form. */
static TsEntity *
arg_entity(FunctionCallInfo fcinfo, int n)
{
	if (PG_ARGISNULL(n))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("entity must not be null"));
	return ts_entity_from_json(PG_GETARG_JSONB_P(n));
}

/* The If-Match argument n: returns whether it is a condition. */
static bool
arg_if_match(FunctionCallInfo fcinfo, int n, int64 *ticks)
{
	return ts_parse_if_match(PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n)),
							 ticks);
}

/* The key arguments of delete_entity and get_entity, checked. */
static TsEntity *
arg_keys(FunctionCallInfo fcinfo)
{
	TsEntity   *e = palloc0(sizeof(TsEntity));

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ts_ereport(ERROR, TS_PropertiesNeedValue,
				   errmsg("%s must not be null", PG_ARGISNULL(1) ? "PartitionKey" : "RowKey"));
	e->partition_key = PG_GETARG_TEXT_PP(1);
	e->row_key = PG_GETARG_TEXT_PP(2);
	ts_validate_key("PartitionKey", VARDATA_ANY(e->partition_key), VARSIZE_ANY_EXHDR(e->partition_key));
	ts_validate_key("RowKey", VARDATA_ANY(e->row_key), VARSIZE_ANY_EXHDR(e->row_key));
	return e;
}

/*
 * A write function of signature (table_name text, entity jsonb[, if_match
 * text]).
 */
static Datum
write_function(FunctionCallInfo fcinfo, TsOpKind kind, bool has_if_match)
{
	text	   *table = ts_arg_table_name(fcinfo);
	TsEntity   *e = arg_entity(fcinfo, 1);
	int64		ticks = 0;
	bool		conditional = has_if_match && arg_if_match(fcinfo, 2, &ticks);

	PG_RETURN_JSONB_P(run_single(table, kind, e, conditional, ticks, NULL));
}

/*
 * tablestore.insert_entity(table_name text, entity jsonb) RETURNS jsonb
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_entity);

Datum
insert_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_INSERT, false);
}

/*
 * tablestore.update_entity(table_name text, entity jsonb, if_match text
 * DEFAULT '*') RETURNS jsonb: replace the whole entity.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(update_entity);

Datum
update_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_UPDATE, true);
}

/*
 * tablestore.merge_entity(table_name text, entity jsonb, if_match text
 * DEFAULT '*') RETURNS jsonb: overwrite the given properties, keep others.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(merge_entity);

Datum
merge_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_MERGE, true);
}

/*
 * tablestore.insert_or_replace_entity(table_name text, entity jsonb)
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_or_replace_entity);

Datum
insert_or_replace_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_INSERT_OR_REPLACE, false);
}

/*
 * tablestore.insert_or_merge_entity(table_name text, entity jsonb)
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_or_merge_entity);

Datum
insert_or_merge_entity(PG_FUNCTION_ARGS)
{
	return write_function(fcinfo, TS_OP_INSERT_OR_MERGE, false);
}

/*
 * tablestore.delete_entity(table_name text, partition_key text, row_key
 * text, if_match text DEFAULT '*') RETURNS void
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(delete_entity);

Datum
delete_entity(PG_FUNCTION_ARGS)
{
	text	   *table = ts_arg_table_name(fcinfo);
	TsEntity   *e = arg_keys(fcinfo);
	int64		ticks = 0;
	bool		conditional = arg_if_match(fcinfo, 3, &ticks);

	run_single(table, TS_OP_DELETE, e, conditional, ticks, NULL);
	PG_RETURN_VOID();
}

/*
 * tablestore.get_entity(table_name text, partition_key text, row_key text,
 * select_list text DEFAULT NULL) RETURNS jsonb
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(get_entity);

Datum
get_entity(PG_FUNCTION_ARGS)
{
	text	   *table = ts_arg_table_name(fcinfo);
	TsEntity   *e = arg_keys(fcinfo);
	text	   *select = arg_text(fcinfo, 3);
	char	   *select_list = select ? text_to_cstring(select) : NULL;
	Jsonb	   *result;

	/* one probe of the key index; through SQL where row-level security applies */
	if (ts_point_read(table, e->partition_key, e->row_key, select_list, &result))
	{
		if (result == NULL)
			ts_entity_not_found(e->partition_key, e->row_key);
		PG_RETURN_JSONB_P(result);
	}
	PG_RETURN_JSONB_P(run_single(table, TS_OP_RETRIEVE, e, false, 0, select_list));
}

/*
 * tablestore.validate_entity(entity jsonb) RETURNS jsonb
 *
 * Validate an entity as a write would, without writing it: the service's
 * error if it is not valid, else its properties in the stored form (see
 * README "Stored form").  For clients that check input before sending it,
 * and the validation micro-benchmark (bench/validate.sh).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(validate_entity);

Datum
validate_entity(PG_FUNCTION_ARGS)
{
	PG_RETURN_JSONB_P(arg_entity(fcinfo, 0)->props);
}
