/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Entity group transactions: execute_batch, up to 100 operations on one
 *	  partition of one table, all or nothing.
 *
 * A batch is checked whole before anything runs: its size, each element's
 * form and entity, one PartitionKey, each entity at most once, a retrieve
 * only alone.  It then takes the partition's batch lock, so that two
 * batches on one partition serialize (the second waits for the first's
 * transaction to end) while batches on other partitions go on in parallel,
 * and runs the operations in order in a subtransaction, through the same
 * ts_apply_op as the single-entity functions.  If one fails the
 * subtransaction is rolled back and the error raised again with the
 * operation's index, keeping its SQLSTATE (so its service code).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/resowner.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entity.h"
#include "writepath.h"
#include "subxact.h"
#include "entityrel.h"
#include "entityops.h"

/*
 * field4 of the advisory lock tag of a partition's batch lock; PostgreSQL's
 * own advisory locks use 1 and 2.
 */
#define BATCH_LOCK_TAG_KIND 3

/* One checked operation of a batch. */
typedef struct BatchOp
{
	TsOpKind	kind;
	TsEntity   *entity;
	bool		conditional;	/* If-Match is an ETag */
	int64		ticks;			/* ... standing for this Timestamp */
	bool		no_entity;		/* an insert's result row without its entity */
} BatchOp;

static const struct
{
	const char *name;
	TsOpKind	kind;
	bool		takes_if_match;
	int			status;			/* the service's status on success */
}			op_names[] = {
	{"insert", TS_OP_INSERT, false, 201},
	{"update", TS_OP_UPDATE, true, 204},
	{"merge", TS_OP_MERGE, true, 204},
	{"insert_or_replace", TS_OP_INSERT_OR_REPLACE, false, 204},
	{"insert_or_merge", TS_OP_INSERT_OR_MERGE, false, 204},
	{"delete", TS_OP_DELETE, true, 204},
	{"retrieve", TS_OP_RETRIEVE, false, 200},
};

static int
op_index(TsOpKind kind)
{
	for (int i = 0; i < (int) lengthof(op_names); i++)
		if (op_names[i].kind == kind)
			return i;
	elog(ERROR, "unrecognized batch operation kind %d", (int) kind);
	return -1;					/* keep the compiler quiet */
}

/*
 * Raise the error being handled (already copied into edata) again as the
 * error of batch operation `index`: the same SQLSTATE, the index in the
 * message, and the service's "<index>:<message>" text in the detail.
 */
static void
raise_for_operation(ErrorData *edata, int index) pg_attribute_noreturn();

static void
raise_for_operation(ErrorData *edata, int index)
{
	int			code = ts_error_from_sqlstate(edata->sqlerrcode);

	if (code < 0)
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("batch operation %d failed: %s", index, edata->message),
				 edata->detail ? errdetail("%s", edata->detail) : 0,
				 edata->hint ? errhint("%s", edata->hint) : 0));
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("batch operation %d failed: %s", index, edata->message),
			 errdetail("Table service error code: %s. Service message: \"%d:%s\"",
					   ts_error_name((TsErrorCode) code), index,
					   ts_service_message((TsErrorCode) code)),
			 edata->hint ? errhint("%s", edata->hint) : 0));
	pg_unreachable();
}

/*
 * Raise a batch-level error of operation `index`.
 */
static void
batch_error(TsErrorCode code, int index, const char *msg) pg_attribute_noreturn();

static void
batch_error(TsErrorCode code, int index, const char *msg)
{
	ereport(ERROR,
			(errcode(ts_errcode(code)),
			 errmsg("batch operation %d failed: %s", index, msg),
			 errdetail("Table service error code: %s. Service message: \"%d:%s\"",
					   ts_error_name(code), index, ts_service_message(code))));
	pg_unreachable();
}

/*
 * Check one element of the operations array and fill *op.  Errors are
 * raised without the index; the caller adds it.
 */
static void
parse_element(JsonbValue *elem, BatchOp *op)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	JsonbValue *opname = NULL;
	JsonbValue *entity = NULL;
	JsonbValue *if_match = NULL;
	JsonbValue *return_entity = NULL;
	int			k;

	if (elem->type != jbvBinary || !JsonContainerIsObject(elem->val.binary.data))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("batch operation is not a JSON object"));

	it = JsonbIteratorInit(elem->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue **slot;
		char	   *key;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		if (strcmp(key, "op") == 0)
			slot = &opname;
		else if (strcmp(key, "entity") == 0)
			slot = &entity;
		else if (strcmp(key, "if_match") == 0)
			slot = &if_match;
		else if (strcmp(key, "return_entity") == 0)
			slot = &return_entity;
		else
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("batch operation has unrecognized member \"%s\"", ts_clip(key, strlen(key))),
					   errhint("A batch operation has the members \"op\", \"entity\", \"if_match\" and \"return_entity\"."));
		tok = JsonbIteratorNext(&it, &v, true);
		*slot = palloc(sizeof(JsonbValue));
		**slot = v;
	}

	if (opname == NULL || opname->type != jbvString)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("batch operation needs a string member \"op\""));
	for (k = 0; k < (int) lengthof(op_names); k++)
		if ((int) strlen(op_names[k].name) == opname->val.string.len &&
			memcmp(op_names[k].name, opname->val.string.val, opname->val.string.len) == 0)
			break;
	if (k == (int) lengthof(op_names))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("unrecognized batch operation \"%s\"",
						  ts_clip(opname->val.string.val, opname->val.string.len)),
				   errhint("The operations are insert, update, merge, insert_or_replace, insert_or_merge, delete and retrieve."));
	op->kind = op_names[k].kind;

	if (entity == NULL || entity->type != jbvBinary ||
		!JsonContainerIsObject(entity->val.binary.data))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("batch operation needs an object member \"entity\""));
	if (op->kind == TS_OP_DELETE || op->kind == TS_OP_RETRIEVE)
		op->entity = ts_entity_keys_from_json(JsonbValueToJsonb(entity));
	else
		op->entity = ts_entity_from_json(JsonbValueToJsonb(entity));

	/*
	 * return_entity false: an insert's result row leaves out the entity (a
	 * client that asked for no content, as the gateway's Prefer:
	 * return-no-content, would only have it built and dropped)
	 */
	op->no_entity = false;
	if (return_entity != NULL)
	{
		if (return_entity->type != jbvBool)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("\"return_entity\" must be a boolean"));
		if (op->kind != TS_OP_INSERT)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("batch operation \"%s\" takes no \"return_entity\"", op_names[k].name));
		op->no_entity = !return_entity->val.boolean;
	}

	op->conditional = false;
	if (if_match != NULL)
	{
		if (!op_names[k].takes_if_match)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("batch operation \"%s\" takes no \"if_match\"", op_names[k].name));
		if (if_match->type != jbvString)
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("\"if_match\" must be a string"));
		op->conditional = ts_parse_if_match(pnstrdup(if_match->val.string.val,
													 if_match->val.string.len),
											&op->ticks);
	}
}

static bool
text_equal(text *a, text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/*
 * Check the whole batch: returns its operations.
 */
static BatchOp *
parse_batch(Jsonb *ops, int *nops)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	BatchOp    *batch;
	int			n;
	volatile int i = 0;
	MemoryContext cxt = CurrentMemoryContext;

	if (!JB_ROOT_IS_ARRAY(ops) || JB_ROOT_IS_SCALAR(ops))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("operations must be a JSON array"));
	n = JB_ROOT_COUNT(ops);
	if (n == 0)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("a batch needs at least one operation"));
	if (n > TS_MAX_BATCH_OPS)
		batch_error(TS_InvalidInput, TS_MAX_BATCH_OPS - 1,
					psprintf("a batch has at most %d operations, this one has %d",
							 TS_MAX_BATCH_OPS, n));

	/*
	 * The payload is the batch's JSON text.  Its text is at most six times
	 * its jsonb size (escaped control characters), so print it only if it
	 * could be too large.
	 */
	if ((Size) VARSIZE(ops) * 6 > TS_MAX_BATCH_BYTES)
	{
		size_t		len = strlen(JsonbToCString(NULL, &ops->root, VARSIZE(ops)));

		if (len > TS_MAX_BATCH_BYTES)
			ts_ereport(ERROR, TS_RequestBodyTooLarge,
					   errmsg("batch of %zu bytes exceeds the limit of %d bytes",
							  len, TS_MAX_BATCH_BYTES));
	}

	batch = palloc0(sizeof(BatchOp) * n);
	it = JsonbIteratorInit(&ops->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		BatchOp    *op;

		if (tok != WJB_ELEM)
			continue;
		op = &batch[i];
		PG_TRY();
		{
			parse_element(&v, op);
		}
		PG_CATCH();
		{
			/* validation holds no resources: flush the error and raise ours */
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			raise_for_operation(edata, i);
		}
		PG_END_TRY();

		if (i > 0 && !text_equal(op->entity->partition_key, batch[0].entity->partition_key))
			batch_error(TS_CommandsInBatchActOnDifferentPartitions, i,
						"all operations of a batch must have the same PartitionKey");
		for (int j = 0; j < i; j++)
			if (text_equal(op->entity->row_key, batch[j].entity->row_key))
				batch_error(TS_InvalidDuplicateRow, i,
							psprintf("entity (\"%s\", \"%s\") appears in the batch more than once",
									 text_to_cstring(op->entity->partition_key),
									 text_to_cstring(op->entity->row_key)));
		if (op->kind == TS_OP_RETRIEVE && n > 1)
			batch_error(TS_InvalidInput, i, "a retrieve must be the only operation of its batch");
		i++;
	}
	*nops = n;
	return batch;
}

/*
 * Take the batch lock of partition pk of relation relid, until the end of
 * the transaction.  Hash collisions only serialize more than needed.  A lock
 * plain SQL does not take: a transaction that holds a row lock of the
 * partition (a single-entity write) and then waits here for a batch that
 * waits for that row is a deadlock plain SQL would not have (40P01); the
 * README's Concurrency section says when, and why the lock stays.
 */
static void
lock_batch_partition(Oid relid, text *pk)
{
	LOCKTAG		tag;
	uint32		h = DatumGetUInt32(hash_any((const unsigned char *) VARDATA_ANY(pk),
											VARSIZE_ANY_EXHDR(pk)));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) relid, h, BATCH_LOCK_TAG_KIND);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * The result row of a successful operation.
 */
static Jsonb *
result_row(int index, const BatchOp *op, const TsOpResult *r)
{
	JsonbParseState *st = NULL;
	JsonbValue	v;
	JsonbValue *res;
	int			k = op_index(op->kind);

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	v.type = jbvString;
	v.val.string.val = "index";
	v.val.string.len = 5;
	pushJsonbValue(&st, WJB_KEY, &v);
	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(index);
	pushJsonbValue(&st, WJB_VALUE, &v);

	v.type = jbvString;
	v.val.string.val = "status";
	v.val.string.len = 6;
	pushJsonbValue(&st, WJB_KEY, &v);
	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(op_names[k].status);
	pushJsonbValue(&st, WJB_VALUE, &v);

	if (op->kind != TS_OP_DELETE)
	{
		char	   *etag = ts_format_etag(r->ts);

		v.type = jbvString;
		v.val.string.val = "etag";
		v.val.string.len = 4;
		pushJsonbValue(&st, WJB_KEY, &v);
		v.val.string.val = etag;
		v.val.string.len = strlen(etag);
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	if ((op->kind == TS_OP_INSERT && !op->no_entity) || op->kind == TS_OP_RETRIEVE)
	{
		Jsonb	   *e = ts_entity_output(op->entity->partition_key, op->entity->row_key,
										 r->ts, r->props, NULL);

		v.type = jbvString;
		v.val.string.val = "entity";
		v.val.string.len = 6;
		pushJsonbValue(&st, WJB_KEY, &v);
		v.type = jbvBinary;
		v.val.binary.data = &e->root;
		v.val.binary.len = VARSIZE(e) - VARHDRSZ;
		pushJsonbValue(&st, WJB_VALUE, &v);
	}
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

/* A batch being run: its operations, and the one under way. */
typedef struct BatchRun
{
	TsEntityRel *rel;
	BatchOp    *batch;
	TsOpResult *results;
	int			nops;
	int			current;
} BatchRun;

/*
 * run_operations: apply a batch's operations in order (in a
 * subtransaction).  The direct writes among them share one direct-write
 * state (the relation, its indexes and the executor state opened once); an
 * error leaves it to the subtransaction's abort.  Each operation finds the
 * relation as a new call would (ts_rel_recheck): one may have changed it.
 * The check itself runs again only after an invalidation of the relation or
 * its key index, as a new call's does.
 */
static void
run_operations(void *arg)
{
	BatchRun   *run = (BatchRun *) arg;
	TsDirectWrite *direct = NULL;

	for (run->current = 0; run->current < run->nops; run->current++)
	{
		BatchOp    *op = &run->batch[run->current];

		/* an earlier operation may have changed the relation: as a new call */
		if (run->current > 0)
			ts_rel_recheck(run->rel);
		ts_apply_op(run->rel, &direct, op->kind, op->entity, op->conditional, op->ticks,
					&run->results[run->current]);
	}
	if (direct != NULL)
		ts_direct_end(direct);
}

/*
 * tablestore.execute_batch(table_name text, operations jsonb) RETURNS SETOF
 * jsonb
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(execute_batch);

Datum
execute_batch(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *table;
	BatchOp    *batch;
	TsOpResult *results;
	int			nops;
	int			i;
	bool		read_only;
	char	   *relname;
	Oid			relid;
	Oid			keyindex;
	TsEntityRel *rel;
	BatchRun	run;
	ErrorData  *edata;

	table = ts_arg_table_name(fcinfo);
	if (PG_ARGISNULL(1))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("operations must not be null"));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	batch = parse_batch(PG_GETARG_JSONB_P(1), &nops);
	results = palloc0(sizeof(TsOpResult) * nops);
	read_only = (nops == 1 && batch[0].kind == TS_OP_RETRIEVE);

	/* a role that may not write the table may not lock it or its partitions */
	relid = ts_table_open(table, read_only ? ACL_SELECT : ACL_INSERT | ACL_UPDATE | ACL_DELETE,
						  read_only ? AccessShareLock : RowExclusiveLock, &relname, &keyindex);
	if (!read_only)
		lock_batch_partition(relid, batch[0].entity->partition_key);

	SPI_connect();
	rel = ts_pin_relation(relid, relname, keyindex);

	/* unpinned also after an error, which a savepoint may catch */
	PG_TRY();
	{
		/* run the operations in a subtransaction of their own */
		run.rel = rel;
		run.batch = batch;
		run.results = results;
		run.nops = nops;
		run.current = 0;
		edata = ts_run_in_subtransaction(run_operations, &run);
		if (edata != NULL)
			raise_for_operation(edata, run.current);

		for (i = 0; i < nops; i++)
		{
			Datum		value = JsonbPGetDatum(result_row(i, &batch[i], &results[i]));
			bool		isnull = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
		}
	}
	PG_CATCH();
	{
		ts_rel_unpin(rel);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ts_rel_unpin(rel);
	SPI_finish();
	return (Datum) 0;
}
