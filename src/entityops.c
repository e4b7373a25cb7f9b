/*-------------------------------------------------------------------------
 *
 * entityops.c
 *	  The single-entity operations: insert, update (replace), merge,
 *	  insert-or-replace, insert-or-merge, delete and get.
 *
 * Each operation validates its input first (so that bad input changes
 * nothing), locks the table's entity relation, and runs prepared
 * statements through SPI with the caller's rights, so PostgreSQL's
 * privileges on the entity relation decide what a role may do.  The
 * statements of each relation are prepared once per backend and kept in a
 * cache keyed by relation name; they name every object and operator with
 * its schema, so no search_path can change what they do.
 *
 * Concurrency: a conditional write first locks the entity's row (SELECT
 * ... FOR UPDATE), then checks the ETag against the locked, latest version,
 * so two writers with the same ETag cannot both succeed.  An insert uses ON
 * CONFLICT DO NOTHING, which waits for a concurrent inserter of the same key
 * and then reports the conflict.  The upserts loop: lock and update if the
 * entity exists, else insert; an insert that loses a race goes round again
 * and finds the winner's row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "tablestore.h"

/* Prepared statements of one entity relation. */
typedef struct RelPlans
{
	char		relname[NAMEDATALEN];	/* hash key */
	SPIPlanPtr	get;			/* (pk, rk) -> ts, props */
	SPIPlanPtr	lock;			/* the same, FOR UPDATE */
	SPIPlanPtr	insert;			/* (pk, rk, ts, props), ON CONFLICT DO NOTHING */
	SPIPlanPtr	update;			/* (pk, rk, ts, props) */
	SPIPlanPtr	delete_any;		/* (pk, rk) */
	SPIPlanPtr	delete_if;		/* (pk, rk, ts) */
} RelPlans;

static HTAB *plan_cache = NULL;

/* The largest number of rounds an upsert makes before giving up. */
#define UPSERT_MAX_ROUNDS	100

#define KEY_MATCH "pk OPERATOR(pg_catalog.=) $1 COLLATE pg_catalog.\"C\" " \
	"AND rk OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\""

static SPIPlanPtr
prepare(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep plan for \"%s\"", sql);
	return plan;
}

/*
 * The prepared statements of an entity relation; must be called inside
 * SPI_connect.
 */
static RelPlans *
get_plans(const char *relname)
{
	RelPlans   *p;
	bool		found;

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = NAMEDATALEN;
		ctl.entrysize = sizeof(RelPlans);
		ctl.hcxt = AllocSetContextCreate(TopMemoryContext, "tablestore plan cache",
										 ALLOCSET_DEFAULT_SIZES);
		plan_cache = hash_create("tablestore plan cache", 64, &ctl,
								 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}

	p = hash_search(plan_cache, relname, HASH_ENTER, &found);
	if (!found)
	{
		const char *rel = quote_qualified_identifier(TS_DATA_SCHEMA, relname);
		Oid			types[4] = {TEXTOID, TEXTOID, TIMESTAMPTZOID, JSONBOID};

		/* leave no half-made entry behind if preparing fails */
		PG_TRY();
		{
			p->get = prepare(psprintf("SELECT ts, props FROM %s WHERE " KEY_MATCH, rel), 2, types);
			p->lock = prepare(psprintf("SELECT ts, props FROM %s WHERE " KEY_MATCH " FOR UPDATE", rel),
							  2, types);
			p->insert = prepare(psprintf("INSERT INTO %s (pk, rk, ts, props) VALUES ($1, $2, $3, $4) "
										 "ON CONFLICT DO NOTHING", rel), 4, types);
			p->update = prepare(psprintf("UPDATE %s SET ts = $3, props = $4 WHERE " KEY_MATCH, rel),
								4, types);
			p->delete_any = prepare(psprintf("DELETE FROM %s WHERE " KEY_MATCH, rel), 2, types);
			p->delete_if = prepare(psprintf("DELETE FROM %s WHERE " KEY_MATCH
											" AND ts OPERATOR(pg_catalog.=) $3", rel), 3, types);
		}
		PG_CATCH();
		{
			hash_search(plan_cache, relname, HASH_REMOVE, NULL);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	return p;
}

/* A stored entity as read back. */
typedef struct StoredEntity
{
	bool		found;
	TimestampTz ts;
	Jsonb	   *props;			/* in the SPI context */
} StoredEntity;

/*
 * Read the entity (pk, rk) with plan (get or lock).
 */
static StoredEntity
read_entity(SPIPlanPtr plan, text *pk, text *rk, bool read_only)
{
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
	}
	return r;
}

/*
 * Run a write statement (insert or update) with all four arguments;
 * returns the number of rows written.
 */
static uint64
write_entity(SPIPlanPtr plan, text *pk, text *rk, TimestampTz ts, Jsonb *props)
{
	Datum		args[4] = {PointerGetDatum(pk), PointerGetDatum(rk),
	TimestampTzGetDatum(ts), JsonbPGetDatum(props)};
	int			ret = SPI_execute_plan(plan, args, NULL, false, 0);

	if (ret != SPI_OK_INSERT && ret != SPI_OK_UPDATE)
		elog(ERROR, "could not write entity: %s", SPI_result_code_string(ret));
	return SPI_processed;
}

/*
 * The Timestamp of a write: the clock, but always after the entity's
 * previous Timestamp, so that it increases even within one microsecond.
 */
static TimestampTz
next_timestamp(const StoredEntity *old)
{
	TimestampTz now = GetCurrentTimestamp();

	if (old != NULL && old->found && now <= old->ts)
		now = old->ts + 1;
	return now;
}

/*
 * Parse an If-Match argument: "*" (any version: returns false) or an ETag
 * (returns true with its ticks).
 */
static bool
parse_if_match(text *if_match, int64 *ticks)
{
	char	   *s;

	if (if_match == NULL)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("if_match must not be null"),
				   errhint("Pass an ETag, or '*' to match any version."));
	s = text_to_cstring(if_match);
	if (strcmp(s, "*") == 0)
		return false;
	if (!ts_parse_etag(s, ticks))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("ETag value \"%s\" is not valid", s),
				   errhint("ETags look like W/\"datetime'2024-01-01T00%%3A00%%3A00.123456Z'\"; use the odata.etag of an entity, or '*'."));
	return true;
}

static void
entity_not_found(text *pk, text *rk)
{
	ts_ereport(ERROR, TS_ResourceNotFound,
			   errmsg("entity (\"%s\", \"%s\") does not exist", text_to_cstring(pk), text_to_cstring(rk)));
}

/*
 * Check the If-Match condition against the stored entity.
 */
static void
check_condition(const StoredEntity *old, bool conditional, int64 ticks, text *pk, text *rk)
{
	if (!old->found)
		entity_not_found(pk, rk);
	if (conditional && ts_timestamptz_to_ticks(old->ts) != ticks)
		ts_ereport(ERROR, TS_UpdateConditionNotSatisfied,
				   errmsg("entity (\"%s\", \"%s\") does not match the ETag of if_match",
						  text_to_cstring(pk), text_to_cstring(rk)),
				   errhint("The entity has changed since that ETag was read; read it again."));
}

static text *
arg_text(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n);
}

static text *
arg_table(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("table_name must not be null"));
	return PG_GETARG_TEXT_PP(0);
}

static TsEntity *
arg_entity(FunctionCallInfo fcinfo, int n)
{
	if (PG_ARGISNULL(n))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("entity must not be null"));
	return ts_entity_from_json(PG_GETARG_JSONB_P(n));
}

/* The key arguments of delete_entity and get_entity, checked. */
static void
arg_keys(FunctionCallInfo fcinfo, text **pk, text **rk)
{
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ts_ereport(ERROR, TS_PropertiesNeedValue,
				   errmsg("%s must not be null", PG_ARGISNULL(1) ? "PartitionKey" : "RowKey"));
	*pk = PG_GETARG_TEXT_PP(1);
	*rk = PG_GETARG_TEXT_PP(2);
	ts_validate_key("PartitionKey", VARDATA_ANY(*pk), VARSIZE_ANY_EXHDR(*pk));
	ts_validate_key("RowKey", VARDATA_ANY(*rk), VARSIZE_ANY_EXHDR(*rk));
}

/* How an existing entity is changed by a write. */
typedef enum WriteKind
{
	WRITE_REPLACE,
	WRITE_MERGE
} WriteKind;

/*
 * The common body of update_entity and merge_entity: change an existing
 * entity under an If-Match condition.
 */
static Datum
update_existing(FunctionCallInfo fcinfo, WriteKind kind)
{
	text	   *table = arg_table(fcinfo);
	TsEntity   *e = arg_entity(fcinfo, 1);
	int64		ticks = 0;
	bool		conditional = parse_if_match(arg_text(fcinfo, 2), &ticks);
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *relname;
	RelPlans   *plans;
	StoredEntity old;
	TimestampTz ts;
	Jsonb	   *props;
	Jsonb	   *result;

	ts_table_open(table, RowExclusiveLock, &relname);
	SPI_connect();
	plans = get_plans(relname);
	old = read_entity(plans->lock, e->partition_key, e->row_key, false);
	check_condition(&old, conditional, ticks, e->partition_key, e->row_key);
	props = (kind == WRITE_MERGE)
		? ts_entity_merge(old.props, e->props, ts_entity_key_size(e->partition_key, e->row_key))
		: e->props;
	ts = next_timestamp(&old);
	write_entity(plans->update, e->partition_key, e->row_key, ts, props);

	MemoryContextSwitchTo(callerctx);
	result = ts_entity_output(e->partition_key, e->row_key, ts, props, NULL);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}

/*
 * The common body of the upserts: change the entity if it exists, insert
 * it if not, without a race: if another session inserts the key between
 * our read and our insert, the insert does nothing and we go round again
 * (and then find, and lock, that session's row).
 */
static Datum
upsert(FunctionCallInfo fcinfo, WriteKind kind)
{
	text	   *table = arg_table(fcinfo);
	TsEntity   *e = arg_entity(fcinfo, 1);
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *relname;
	RelPlans   *plans;
	TimestampTz ts = 0;
	Jsonb	   *props = e->props;
	Jsonb	   *result;
	int			round;

	ts_table_open(table, RowExclusiveLock, &relname);
	SPI_connect();
	plans = get_plans(relname);
	for (round = 0; round < UPSERT_MAX_ROUNDS; round++)
	{
		StoredEntity old = read_entity(plans->lock, e->partition_key, e->row_key, false);

		ts = next_timestamp(&old);
		if (old.found)
		{
			if (kind == WRITE_MERGE)
				props = ts_entity_merge(old.props, e->props,
										ts_entity_key_size(e->partition_key, e->row_key));
			write_entity(plans->update, e->partition_key, e->row_key, ts, props);
			break;
		}
		if (write_entity(plans->insert, e->partition_key, e->row_key, ts, props) == 1)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	if (round == UPSERT_MAX_ROUNDS)
		elog(ERROR, "upsert of entity did not settle after %d rounds", UPSERT_MAX_ROUNDS);

	MemoryContextSwitchTo(callerctx);
	result = ts_entity_output(e->partition_key, e->row_key, ts, props, NULL);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}

/*
 * tablestore.insert_entity(table_name text, entity jsonb) RETURNS jsonb
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_entity);

Datum
insert_entity(PG_FUNCTION_ARGS)
{
	text	   *table = arg_table(fcinfo);
	TsEntity   *e = arg_entity(fcinfo, 1);
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *relname;
	RelPlans   *plans;
	TimestampTz ts = next_timestamp(NULL);
	Jsonb	   *result;

	ts_table_open(table, RowExclusiveLock, &relname);
	SPI_connect();
	plans = get_plans(relname);
	if (write_entity(plans->insert, e->partition_key, e->row_key, ts, e->props) == 0)
		ts_ereport(ERROR, TS_EntityAlreadyExists,
				   errmsg("entity (\"%s\", \"%s\") already exists",
						  text_to_cstring(e->partition_key), text_to_cstring(e->row_key)));

	MemoryContextSwitchTo(callerctx);
	result = ts_entity_output(e->partition_key, e->row_key, ts, e->props, NULL);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}

/*
 * tablestore.update_entity(table_name text, entity jsonb, if_match text
 * DEFAULT '*') RETURNS jsonb: replace the whole entity.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(update_entity);

Datum
update_entity(PG_FUNCTION_ARGS)
{
	return update_existing(fcinfo, WRITE_REPLACE);
}

/*
 * tablestore.merge_entity(table_name text, entity jsonb, if_match text
 * DEFAULT '*') RETURNS jsonb: overwrite the given properties, keep others.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(merge_entity);

Datum
merge_entity(PG_FUNCTION_ARGS)
{
	return update_existing(fcinfo, WRITE_MERGE);
}

/*
 * tablestore.insert_or_replace_entity(table_name text, entity jsonb)
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_or_replace_entity);

Datum
insert_or_replace_entity(PG_FUNCTION_ARGS)
{
	return upsert(fcinfo, WRITE_REPLACE);
}

/*
 * tablestore.insert_or_merge_entity(table_name text, entity jsonb)
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(insert_or_merge_entity);

Datum
insert_or_merge_entity(PG_FUNCTION_ARGS)
{
	return upsert(fcinfo, WRITE_MERGE);
}

/*
 * tablestore.delete_entity(table_name text, partition_key text, row_key
 * text, if_match text DEFAULT '*') RETURNS void
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(delete_entity);

Datum
delete_entity(PG_FUNCTION_ARGS)
{
	text	   *table = arg_table(fcinfo);
	text	   *pk;
	text	   *rk;
	int64		ticks = 0;
	bool		conditional;
	char	   *relname;
	RelPlans   *plans;
	int			ret;

	arg_keys(fcinfo, &pk, &rk);
	conditional = parse_if_match(arg_text(fcinfo, 3), &ticks);

	ts_table_open(table, RowExclusiveLock, &relname);
	SPI_connect();
	plans = get_plans(relname);
	if (conditional)
	{
		Datum		args[3] = {PointerGetDatum(pk), PointerGetDatum(rk),
		TimestampTzGetDatum(ts_ticks_to_timestamptz(ticks))};

		/* an ETag finer than a microsecond matches no Timestamp of ours */
		if (ts_timestamptz_to_ticks(ts_ticks_to_timestamptz(ticks)) != ticks)
			args[2] = TimestampTzGetDatum(DT_NOBEGIN);
		ret = SPI_execute_plan(plans->delete_if, args, NULL, false, 0);
	}
	else
	{
		Datum		args[2] = {PointerGetDatum(pk), PointerGetDatum(rk)};

		ret = SPI_execute_plan(plans->delete_any, args, NULL, false, 0);
	}
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete entity: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
	{
		/* tell a missing entity from a changed one */
		StoredEntity old = read_entity(plans->get, pk, rk, false);

		check_condition(&old, conditional, ticks, pk, rk);
		/* it exists and matches now: it was written after our delete's snapshot */
		ts_ereport(ERROR, TS_UpdateConditionNotSatisfied,
				   errmsg("entity (\"%s\", \"%s\") changed while it was being deleted",
						  text_to_cstring(pk), text_to_cstring(rk)));
	}
	SPI_finish();
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
	text	   *table = arg_table(fcinfo);
	text	   *select = arg_text(fcinfo, 3);
	MemoryContext callerctx = CurrentMemoryContext;
	text	   *pk;
	text	   *rk;
	char	   *relname;
	RelPlans   *plans;
	StoredEntity e;
	Jsonb	   *result;

	arg_keys(fcinfo, &pk, &rk);
	ts_table_open(table, AccessShareLock, &relname);
	SPI_connect();
	plans = get_plans(relname);
	e = read_entity(plans->get, pk, rk, true);
	if (!e.found)
		entity_not_found(pk, rk);

	MemoryContextSwitchTo(callerctx);
	result = ts_entity_output(pk, rk, e.ts, e.props,
							  select ? text_to_cstring(select) : NULL);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}
