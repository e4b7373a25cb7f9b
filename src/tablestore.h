/*-------------------------------------------------------------------------
 *
 * tablestore.h
 *	  Shared declarations of the tablestore extension: Azure Table service
 *	  semantics (tables of schemaless entities keyed by PartitionKey and
 *	  RowKey) on PostgreSQL.
 *
 * Module map:
 *	  module.c		module magic and _PG_init
 *	  errors.c		the service error codes, their SQLSTATEs, error reporting
 *	  edm.c			Edm types: DateTime, Guid, Binary literals, ETags, UTF-16
 *	  key.c			the key type: text ordered by UTF-16 code unit
 *	  entity.c		entities' input half: keys, property names, validation
 *					and the canonical stored form (entity.h)
 *	  edmvalue.c	the Edm types' table ts_edm_types[]: per type, the check
 *					of a value and its canonical form
 *	  entityout.c	entities' output half: as jsonb, with $select
 *	  subxact.c		a function run in a subtransaction, its error as data
 *	  entityrel.c	the entity-relation layer: opening and checking a table's
 *					relation, stored rows, the per-relation cache, If-Match
 *	  tables.c		the table catalog: create_table, delete_table
 *	  entityops.c	single-entity operations (insert, update, merge, upserts,
 *					delete, get) and the choice of write path
 *	  entityspi.c	the SPI write path: prepared statements, caller's rights
 *	  entitywrite.c	the direct write path: the table and index access methods
 *	  entityjson.c	entities as JSON text, straight from the stored row
 *	  batch.c		entity group transactions
 *	  filter/		the $filter language: parse.c, format.c (with edmtext.c)
 *					the parser in plain C (filter/filter.h, edmtext.h);
 *					bind.c parsing with the service's errors, evaluation
 *					on entities
 *	  tskey/		the tskey index access method (tskey/tskey.h)
 *	  queryplan.c	access path of a filter: point, range, scans; explain
 *	  query.c		query_entities, query_entities_page, explain_query,
 *					list_tables: scans of the key index
 *
 *-------------------------------------------------------------------------
 */
#ifndef TABLESTORE_H
#define TABLESTORE_H

#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "filter/filter.h"

#if PG_VERSION_NUM >= 160000
#define TS_FUNCTION_PREFIX
#else
#define TS_FUNCTION_PREFIX PGDLLEXPORT
#endif

/* Schemas: the extension's own objects, and one relation per table. */
#define TS_SCHEMA				"tablestore"
#define TS_DATA_SCHEMA			"tablestore_data"

/* Limits of the Table service (see README "Limits"). */
#define TS_MAX_KEY_UTF16		512		/* 1 KiB of UTF-16 per key */
#define TS_MAX_PROPERTIES		252		/* custom properties */
#define TS_MAX_NAME_CHARS		255		/* property name length */
#define TS_MAX_STRING_UTF16		32768	/* Edm.String, 64 KiB of UTF-16 */
#define TS_MAX_BINARY_BYTES		65536	/* Edm.Binary */
#define TS_MAX_ENTITY_SIZE		1048488 /* live service's observed limit */
#define TS_MAX_SELECT			(TS_MAX_PROPERTIES + 3)	/* names of a $select */
#define TS_MAX_BATCH_OPS		100
#define TS_MAX_BATCH_BYTES		(4 * 1024 * 1024)

/* Most bytes of a caller's value that an error message echoes. */
#define TS_ECHO_LIMIT			100

/* The heap attributes of an entity relation, as create_table makes them. */
#define TS_ATT_PK		1
#define TS_ATT_RK		2
#define TS_ATT_TS		3
#define TS_ATT_PROPS	4


/*
 * The service error codes.  Each has exactly one SQLSTATE; the table in
 * errors.c maps code <-> SQLSTATE <-> HTTP status, and the README's error
 * table is that table.
 */
typedef enum TsErrorCode
{
	TS_TableAlreadyExists,
	TS_TableNotFound,
	TS_ResourceNotFound,
	TS_EntityAlreadyExists,
	TS_UpdateConditionNotSatisfied,
	TS_InvalidInput,
	TS_InvalidResourceName,
	TS_OutOfRangeInput,
	TS_PropertiesNeedValue,
	TS_PropertyNameInvalid,
	TS_PropertyNameTooLong,
	TS_PropertyValueTooLarge,
	TS_EntityTooLarge,
	TS_TooManyProperties,
	TS_DuplicatePropertiesSpecified,
	TS_InvalidDuplicateRow,
	TS_CommandsInBatchActOnDifferentPartitions,
	TS_RequestBodyTooLarge,
	TS_NotImplemented,
	TS_ServerBusy,
	TS_InvalidXmlDocument,
	TS_InvalidXmlNodeValue,
	TS_NUM_ERROR_CODES
} TsErrorCode;

/* errors.c */
extern int	ts_errcode(TsErrorCode code);
extern const char *ts_error_name(TsErrorCode code);
extern const char *ts_service_message(TsErrorCode code);
extern int	ts_error_from_sqlstate(int sqlerrcode);
extern char *ts_clip(const char *s, int len);
extern char *ts_clip_text(const text *t);

/*
 * ts_ereport(ERROR, code, errmsg(...), ...): an ereport whose SQLSTATE is
 * the code's and whose detail names the service code, so that a client can
 * read it from the SQLSTATE or from the detail.
 */
#define ts_ereport(elevel, code, ...) \
	ereport((elevel), \
			(errcode(ts_errcode(code)), \
			 errdetail("Table service error code: %s.", ts_error_name(code)), \
			 __VA_ARGS__))

/* edm.c */

/*
 * ts_timestamptz_to_ticks of a timestamptz before or after the service's
 * DateTime range: -1, and the ticks of 10000-01-01 (3,067,671 days after
 * 1601-01-01), one more than those of the largest DateTime.
 */
#define TS_TICKS_BEFORE_RANGE	INT64CONST(-1)
#define TS_TICKS_AFTER_RANGE	(INT64CONST(3067671) * INT64CONST(864000000000))
/* the ticks of an If-Match entity tag that is not one of ours: match none */
#define TS_TICKS_NO_MATCH		INT64CONST(-2)
extern int	ts_utf16_length(const char *s, int len);
extern int	ts_utf16_cmp(const char *a, int alen, const char *b, int blen);
extern bool ts_parse_datetime(const char *s, int len, int64 *ticks);
extern char *ts_format_datetime(int64 ticks);
extern bool ts_timestamptz_in_range(TimestampTz ts);
extern char *ts_format_stored_timestamp(TimestampTz ts, text *pk, text *rk);
extern TimestampTz ts_write_timestamp(TimestampTz previous, text *pk, text *rk);
extern void ts_check_write_timestamp(TimestampTz ts, text *pk, text *rk);
extern int64 ts_timestamptz_to_ticks(TimestampTz ts);
extern TimestampTz ts_ticks_to_timestamptz(int64 ticks);
extern bool ts_parse_guid(const char *s, int len, uint8 *out);
extern char *ts_format_guid(const uint8 *g);
extern bool ts_check_base64(const char *s, int len, int *nbytes);
extern char *ts_format_etag(TimestampTz ts);
extern char *ts_etag_from_datetime(const char *dt);
extern bool ts_parse_etag(const char *etag, int64 *ticks);

/* key.c */
extern int	ts_key_cmp(const text *a, const text *b);
extern int	ts_key_pair_cmp(const text *apk, const text *ark, const text *bpk, const text *brk);

#include "entity.h"

/* subxact.c */
extern ErrorData *ts_run_in_subtransaction(void (*fn) (void *arg), void *arg);

/* entityrel.c: the entity-relation layer beneath the operations */

/* The cache entry of an entity relation (pinned while a call uses it). */
typedef struct TsEntityRel TsEntityRel;

/* The prepared statements the SPI path keeps per relation. */
#define TS_REL_STATEMENTS		6

/* The most rounds a write makes while concurrent writes change its key. */
#define TS_WRITE_MAX_ROUNDS		100

extern bool ts_table_name_chars_valid(const char *name, int len);
extern bool ts_table_name_is_valid(const char *name, int len);
extern char *ts_relation_name(const char *name, int len);
extern Oid	ts_key_type_oid(void);
extern Oid	ts_table_open(text *table_name, AclMode required, LOCKMODE lockmode, char **relname,
						  Oid *keyindex);
extern Oid	ts_check_entity_relation(Relation heap, bool need_index);
extern void ts_check_stored_row(const char *relname, const Datum *values, const bool *isnull);
extern text *ts_arg_table_name(FunctionCallInfo fcinfo);
extern TsEntityRel *ts_rel_pin(Oid relid, const char *relname, Oid keyindex);
extern void ts_rel_unpin(TsEntityRel *rel);
extern Oid	ts_rel_relid(TsEntityRel *rel);
extern const char *ts_rel_relname(TsEntityRel *rel);
extern Oid	ts_rel_keyindex(TsEntityRel *rel);
extern struct _SPI_plan **ts_rel_statements(TsEntityRel *rel);
extern void ts_rel_drop_statements(TsEntityRel *rel);
extern int	ts_rel_check_exprs(TsEntityRel *rel, Relation heap, struct Expr ***exprs, char ***names);
extern char *ts_rel_key_index_name(TsEntityRel *rel);
extern bool ts_rel_is_key_violation(const char *keyname, ErrorData *edata);
extern void ts_rel_raise_if_key_violation(TsEntityRel *rel, const char *keyname, text *pk, text *rk);
extern bool ts_parse_if_match(const char *s, int64 *ticks);
extern TimestampTz ts_if_match_timestamp(int64 ticks);
extern void ts_check_if_match(TimestampTz stored_ts, bool conditional, int64 ticks, text *pk, text *rk);
extern void ts_entity_not_found(text *pk, text *rk) pg_attribute_noreturn();

/* The entity operations, single or in a batch. */
typedef enum TsOpKind
{
	TS_OP_INSERT,
	TS_OP_UPDATE,
	TS_OP_MERGE,
	TS_OP_INSERT_OR_REPLACE,
	TS_OP_INSERT_OR_MERGE,
	TS_OP_DELETE,
	TS_OP_RETRIEVE
} TsOpKind;

/* The entity after an operation: its Timestamp and stored properties. */
typedef struct TsOpResult
{
	TimestampTz ts;
	Jsonb	   *props;			/* NULL after a delete */
} TsOpResult;

/* entityops.c: the operations, and the choice of write path */
extern AclMode ts_op_privileges(TsOpKind kind);
extern TsEntityRel *ts_pin_relation(Oid relid, const char *relname, Oid keyindex);
extern void ts_apply_op(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional,
						int64 ticks, TsOpResult *result);

/* entityspi.c: the SPI write path */
extern void ts_spi_prepare(TsEntityRel *rel);
extern void ts_spi_apply(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional,
						 int64 ticks, TsOpResult *result);

/* entitywrite.c: the direct write path, without SPI */
extern bool ts_direct_usable(Oid relid, TsOpKind kind);
extern void ts_direct_apply(TsEntityRel *rel, TsOpKind kind, TsEntity *e, bool conditional,
							int64 ticks, TsOpResult *result);

/* filter/bind.c: the $filter language bound to PostgreSQL */

/*
 * What a filter is evaluated against: an entity (keys, Timestamp, stored
 * properties), or, when table_name is set, a row of the table list with the
 * one property TableName.
 */
typedef struct TsFilterRow
{
	const char *pk;
	int			pklen;
	const char *rk;
	int			rklen;
	TimestampTz ts;
	Jsonb	   *props;
	const char *table_name;
	int			table_name_len;
} TsFilterRow;

extern FilterNode *ts_filter_parse(const char *text, int len);
extern bool ts_filter_eval(const FilterNode *n, const TsFilterRow *row);

/* queryplan.c: from a filter to the cheapest scan of the key index */

/* The access kinds, cheapest first (README "Queries"). */
typedef enum TsAccessKind
{
	TS_ACCESS_POINT,			/* PartitionKey eq and RowKey eq: one probe */
	TS_ACCESS_MULTI_POINT,		/* a disjunction of points: one probe each */
	TS_ACCESS_RANGE,			/* PartitionKey eq and RowKey bounds */
	TS_ACCESS_PARTITION,		/* PartitionKey eq */
	TS_ACCESS_KEY_RANGE,		/* PartitionKey bounds */
	TS_ACCESS_TABLE				/* everything, in key order */
} TsAccessKind;

/* One end of a key range; value NULL: unbounded. */
typedef struct TsKeyBound
{
	text	   *value;
	bool		inclusive;
} TsKeyBound;

typedef struct TsKeyRange
{
	TsKeyBound	lo;
	TsKeyBound	hi;
} TsKeyRange;

/*
 * A contiguous stretch of the key index: PartitionKey in pk and RowKey in
 * rk.  A query runs a list of segments in key order.
 */
typedef struct TsScanSegment
{
	TsKeyRange	pk;
	TsKeyRange	rk;
} TsScanSegment;

typedef struct TsQueryPlan
{
	TsAccessKind kind;
	TsKeyRange	pk;				/* bounds of PartitionKey */
	TsKeyRange	rk;				/* bounds of RowKey */
	List	   *points;			/* TsScanSegment per point, in key order */
	FilterNode *residual;		/* what the scan leaves to check, or NULL */
	bool		empty;			/* the bounds contradict: nothing matches */
} TsQueryPlan;

extern TsQueryPlan *ts_plan_query(FilterNode *filter);
extern List *ts_plan_segments(const TsQueryPlan *plan, text *next_pk, text *next_rk);
extern Jsonb *ts_explain_plan(const TsQueryPlan *plan);
extern bool ts_key_range_is_point(const TsKeyRange *r);
extern TsScanSegment *ts_point_segment(text *pk, text *rk);

/* query.c */
extern bool ts_key_exists_raw(Oid relid, text *pk, text *rk, Snapshot snapshot);
extern bool ts_point_read(text *table_name, text *pk, text *rk, const char *select_list,
						  Jsonb **result);

/* tables.c */
extern int	ts_exec_catalog(const char *sql, int nargs, Oid *argtypes, Datum *values);

#endif							/* TABLESTORE_H */
