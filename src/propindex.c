/*-------------------------------------------------------------------------
 *
 * propindex.c
 *	  Property indexes: a btree index over the values of one property of one
 *	  Edm type, its SQL functions (create_property_index,
 *	  drop_property_index, the key function), and its use by the $filter
 *	  planner.
 *
 * The index is an ordinary PostgreSQL btree on the entity relation,
 *
 *	CREATE INDEX ... ON tablestore_data.<rel>
 *		(tablestore.property_index_key(props, '<property>', 'Edm.<Type>'))
 *		WHERE tablestore.property_index_key(props, ...) IS NOT NULL
 *
 * so that PostgreSQL maintains it on every write path, in WAL, by vacuum and
 * on standbys.  The key function is IMMUTABLE and yields a bytea whose
 * memcmp order (bytea's btree order) is the order in which the $filter
 * compares values, as src/filter/bind.c decides it (ts_filter_lookup):
 *	- no key (not in the index) when the entity lacks the property or holds
 *	  a value that counts as absent, and for a NaN (unordered: no comparison
 *	  but ne holds for it);
 *	- the one byte 0x00 when the property holds a value of a type the index's
 *	  literals do not compare with: the filter counts such a value as less
 *	  than any literal (lt and le hold), so it sorts first;
 *	- 0x01 and the value, for the types the index's literals compare with:
 *	  an Edm.Int32 literal compares with Int32, Int64 and Double properties,
 *	  an Edm.Int64 literal with Int64 and Double ones, every other literal
 *	  with its own type only.  Numbers are keyed by their value as a double
 *	  (order-preserving bits), DateTimes by ticks, Guids by their 16 bytes,
 *	  Booleans by one byte, Binary by its bytes and Strings by their UTF-8
 *	  bytes with the lead bytes 0xEE and 0xEF moved above 0xF4 (which makes
 *	  byte order UTF-16 code-unit order); Strings and Binary values are keyed
 *	  by at most their first PI_MAX_BYTES bytes, so that any value fits a
 *	  btree item.
 * The key is only monotone (two values may share a key: a long prefix, two
 * Int64 values rounding to one double), so the index yields candidates and
 * the whole filter is checked on each entity, as for every other path.
 *
 * The planner (ts_propindex_plan, called by query.c for a table or
 * key-range scan with a residual filter) finds the comparisons of the
 * filter's top-level conjuncts that an index of the table answers (eq, gt,
 * ge, lt, le with a literal of the index's type; several on one index are
 * intersected; an "or" whose every branch is one is a union of ranges),
 * counts each candidate's index entries without reading the heap, up to a
 * cap derived from work_mem, and takes the one with the fewest when it is
 * cheaper than the key-order scan.  It then reads the matching entities' keys under
 * the query's snapshot, sorts them, and the query probes them in key order
 * as a multi-point query, so that results, paging and continuations are
 * exactly those of the key path, row-level security applies as there, and
 * the bytes of the keys collected are bounded by work_mem (past it, the
 * key-order scan is used).  An index is only used after its definition
 * was checked (its table, expression, predicate, operator class): a
 * look-alike made or altered by the table's owner is ignored.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "common/base64.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/primnodes.h"
#include "parser/parse_func.h"
#include "storage/bufmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "edmvalue.h"
#include "entity.h"
#include "entityrel.h"
#include "key.h"
#include "tables.h"
#include "filter/bind.h"
#include "filter/filter.h"
#include "queryplan.h"
#include "propindex.h"

/* The first byte of a key: a value of another type, or a value. */
#define PI_TAG_OTHER		0x00
#define PI_TAG_VALUE		0x01

/* The most bytes of a String's or Binary's value a key holds. */
#define PI_MAX_BYTES		1024

/* tablestore.property_index: when the planner uses a property index. */
typedef enum PiMode
{
	PI_MODE_OFF,				/* never */
	PI_MODE_AUTO,				/* when cheaper than the key-order scan */
	PI_MODE_ON					/* whenever one applies, within the cap */
} PiMode;

static const struct config_enum_entry pi_mode_options[] = {
	{"off", PI_MODE_OFF, false},
	{"auto", PI_MODE_AUTO, false},
	{"on", PI_MODE_ON, false},
	{NULL, 0, false}
};

static int	pi_mode = PI_MODE_AUTO;

/* One range of keys of a property index; lo NULL: from the first entry. */
typedef struct PiRange
{
	bytea	   *lo;				/* inclusive */
	bytea	   *hi;				/* inclusive; NULL: to the last entry */
} PiRange;

/* A checked property index of the table being planned. */
typedef struct PiIndex
{
	Oid			indexid;
	char	   *name;
	char	   *prop;
	int			type;			/* TsEdmType */
} PiIndex;

/*
 * One way to use an index: the union of ranges, from the conjuncts in
 * "conds" (their text for explain).
 */
typedef struct PiCandidate
{
	PiIndex    *index;
	List	   *ranges;			/* PiRange */
	List	   *conds;			/* FilterNode */
	int64		count;			/* index entries, counted up to the cap + 1 */
} PiCandidate;

/*
 * What the planner decided, for explain_query: the index used (or the best
 * one considered and why it was not).
 */
typedef struct TsPropIndexUse
{
	bool		used;
	char	   *index_name;
	char	   *property;
	const char *edm_type;
	char	   *condition;
	int64		entries;		/* index entries counted (-1: over the cap) */
	int64		candidates;		/* entities whose keys were read */
	int64		cap;			/* the most entries worth counting */
	int64		cap_bytes;		/* the most bytes of keys collected: work_mem */
	BlockNumber heap_blocks;
	const char *reason;			/* why not used */
	bool		hide_counts;	/* row-level security applies: no counts */
} TsPropIndexUse;

/*
 * ts_propindex_init: define the setting tablestore.property_index (module
 * load).
 */
void
ts_propindex_init(void)
{
	DefineCustomEnumVariable("tablestore.property_index",
							 "When $filter queries use property indexes.",
							 "auto: when cheaper than the key-order scan; on: whenever one applies "
							 "and its matches fit the memory cap; off: never.",
							 &pi_mode, PI_MODE_AUTO, pi_mode_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/* ----------------------------------------------------------------
 * Keys
 * ----------------------------------------------------------------
 */

/*
 * Whether the literals an index of type itype serves compare with a
 * property value of type vtype (otherwise the value counts as less than
 * every such literal).
 */
static bool
index_orders(int itype, int vtype)
{
	if (itype == EDM_INT32)
		return vtype == EDM_INT32 || vtype == EDM_INT64 || vtype == EDM_DOUBLE;
	if (itype == EDM_INT64)
		return vtype == EDM_INT64 || vtype == EDM_DOUBLE;
	return vtype == itype;
}

/* Append u big-endian. */
static void
put_u64(StringInfo buf, uint64 u)
{
	char		b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (char) ((u >> (8 * (7 - i))) & 0xFF);
	appendBinaryStringInfo(buf, b, 8);
}

/*
 * Append a double in an order-preserving form (-0 as 0); false for a NaN,
 * which no comparison but ne matches.
 */
static bool
put_double(StringInfo buf, double d)
{
	uint64		u;

	if (isnan(d))
		return false;
	if (d == 0)
		d = 0.0;
	memcpy(&u, &d, sizeof(u));
	if (u & (UINT64CONST(1) << 63))
		u = ~u;
	else
		u ^= UINT64CONST(1) << 63;
	put_u64(buf, u);
	return true;
}

/*
 * Append at most PI_MAX_BYTES of a UTF-8 string so that byte order is the
 * service's UTF-16 code-unit order: the lead bytes of U+E000..U+FFFF (0xEE,
 * 0xEF) move above those of the supplementary planes (0xF0..0xF4), whose
 * surrogates sort below U+E000 in UTF-16.  0xEE and 0xEF never continue a
 * character, so every occurrence is a lead byte.
 */
static void
put_string(StringInfo buf, const char *s, size_t len)
{
	len = Min(len, PI_MAX_BYTES);
	enlargeStringInfo(buf, (int) len);
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c == 0xEE)
			c = 0xF5;
		else if (c == 0xEF)
			c = 0xF6;
		buf->data[buf->len++] = (char) c;
	}
	buf->data[buf->len] = '\0';
}

/*
 * Append the key of a property value for an index of type itype; false if
 * the value is not in the index.
 */
static bool
value_key(StringInfo buf, const TsFilterValue *v, int itype)
{
	if (!index_orders(itype, v->type))
	{
		appendStringInfoChar(buf, PI_TAG_OTHER);
		return true;
	}
	appendStringInfoChar(buf, PI_TAG_VALUE);
	switch (v->type)
	{
		case EDM_STRING:
			put_string(buf, v->str, v->len);
			return true;
		case EDM_INT32:
		case EDM_INT64:
			return put_double(buf, (double) v->i64);
		case EDM_DOUBLE:
			return put_double(buf, v->d);
		case EDM_BOOLEAN:
			appendStringInfoChar(buf, v->b ? 1 : 0);
			return true;
		case EDM_DATETIME:
			put_u64(buf, ((uint64) v->i64) ^ (UINT64CONST(1) << 63));
			return true;
		case EDM_GUID:
			appendBinaryStringInfo(buf, (const char *) v->guid, 16);
			return true;
		case EDM_BINARY:
			{
				int			max = pg_b64_dec_len(v->len) + 1;
				char	   *bytes = palloc(max);
				int			n = pg_b64_decode(v->str, v->len, bytes, max);

				/* not base64: the filter counts it as absent */
				if (n < 0)
					return false;
				appendBinaryStringInfo(buf, bytes, Min(n, PI_MAX_BYTES));
				pfree(bytes);
				return true;
			}
	}
	return false;
}

/*
 * The key of a filter literal for an index of type itype, or NULL if the
 * index does not serve literals of its type.
 */
static bytea *
literal_key(const FilterLiteral *lit, int itype)
{
	StringInfoData buf;

	if ((int) lit->type != itype)
		return NULL;
	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	appendStringInfoChar(&buf, PI_TAG_VALUE);
	switch (lit->type)
	{
		case FLIT_STRING:
			put_string(&buf, lit->v.bytes.data, lit->v.bytes.len);
			break;
		case FLIT_INT32:
			put_double(&buf, (double) lit->v.i32);
			break;
		case FLIT_INT64:
			put_double(&buf, (double) lit->v.i64);
			break;
		case FLIT_DOUBLE:
			if (!put_double(&buf, lit->v.d))
				return NULL;
			break;
		case FLIT_BOOLEAN:
			appendStringInfoChar(&buf, lit->v.b ? 1 : 0);
			break;
		case FLIT_DATETIME:
			put_u64(&buf, ((uint64) lit->v.ticks) ^ (UINT64CONST(1) << 63));
			break;
		case FLIT_GUID:
			appendBinaryStringInfo(&buf, (const char *) lit->v.guid, 16);
			break;
		case FLIT_BINARY:
			appendBinaryStringInfo(&buf, lit->v.bytes.data, (int) Min(lit->v.bytes.len, PI_MAX_BYTES));
			break;
	}
	SET_VARSIZE(buf.data, buf.len);
	return (bytea *) buf.data;
}

/* Whether a property name is one of the system properties. */
static bool
is_system_property(const char *name, int len)
{
	return (len == 12 && memcmp(name, "PartitionKey", 12) == 0) ||
		(len == 6 && memcmp(name, "RowKey", 6) == 0) ||
		(len == 9 && memcmp(name, "Timestamp", 9) == 0);
}

/*
 * The Edm type of an index from its stored name ("Edm.Int32"), exactly; -1
 * if it is none.
 */
static int
index_type_by_name(const char *s, int len)
{
	for (int t = 0; t < TS_NUM_EDM_TYPES; t++)
		if (ts_edm_types[t].len == len && memcmp(ts_edm_types[t].name, s, len) == 0)
			return t;
	return -1;
}

/*
 * tablestore.property_index_key(props jsonb, property text, edm_type text)
 * RETURNS bytea
 *
 * The key of an entity's property in a property index of type edm_type (see
 * the file comment), NULL if it is not in the index.  IMMUTABLE: it reads
 * nothing but its arguments.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(property_index_key);

Datum
property_index_key(PG_FUNCTION_ARGS)
{
	Jsonb	   *props = PG_GETARG_JSONB_P(0);
	text	   *prop = PG_GETARG_TEXT_PP(1);
	text	   *type = PG_GETARG_TEXT_PP(2);
	int			itype = index_type_by_name(VARDATA_ANY(type), VARSIZE_ANY_EXHDR(type));
	TsFilterValue v;
	StringInfoData buf;

	if (itype < 0)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("\"%.*s\" is not an Edm type",
						  pg_mbcliplen(VARDATA_ANY(type), VARSIZE_ANY_EXHDR(type), TS_ECHO_LIMIT),
						  VARDATA_ANY(type)));
	if (is_system_property(VARDATA_ANY(prop), VARSIZE_ANY_EXHDR(prop)) ||
		!JB_ROOT_IS_OBJECT(props) ||
		!ts_filter_lookup(props, VARDATA_ANY(prop), VARSIZE_ANY_EXHDR(prop), &v))
		PG_RETURN_NULL();
	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	if (!value_key(&buf, &v, itype))
		PG_RETURN_NULL();
	SET_VARSIZE(buf.data, buf.len);
	PG_RETURN_BYTEA_P((bytea *) buf.data);
}

/* ----------------------------------------------------------------
 * Checking an index's definition
 * ----------------------------------------------------------------
 */

/* The OID of tablestore.property_index_key(jsonb, text, text), or InvalidOid. */
static Oid
key_function(void)
{
	Oid			argtypes[3] = {JSONBOID, TEXTOID, TEXTOID};

	return LookupFuncName(list_make2(makeString(TS_SCHEMA), makeString("property_index_key")),
						  3, argtypes, true);
}

/*
 * Whether index is a property index as create_property_index makes it, on
 * its table's props: a valid btree with bytea's default operator class on
 * the one expression property_index_key(props, '<property>', '<type>') and
 * the predicate that the same expression is not null.  Sets *prop and *type.
 * Anything else (an index the table's owner replaced, altered or made to
 * look alike) is no property index.  for_query: also whether the current
 * transaction's snapshots may read it (indcheckxmin, below).
 */
static bool
check_index(Relation index, Oid keyfn, bool for_query, char **prop, int *type)
{
	Form_pg_index ix = index->rd_index;
	List	   *exprs;
	List	   *pred;
	FuncExpr   *f;
	Var		   *var;
	Const	   *cprop;
	Const	   *ctype;
	NullTest   *nt;
	text	   *t;

	if (!OidIsValid(keyfn) || index->rd_rel->relam != BTREE_AM_OID)
		return false;
	if (ix->indnatts != 1 || ix->indnkeyatts != 1 || ix->indkey.values[0] != 0)
		return false;
	if (!ix->indisvalid || !ix->indisready || !ix->indislive)
		return false;

	/*
	 * An index built over broken HOT chains serves only snapshots that
	 * cannot see the tuples it left out, as the planner decides it
	 * (get_relation_info).
	 */
	if (for_query && ix->indcheckxmin &&
		!TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data), TransactionXmin))
		return false;
	if (index->rd_indoption[0] != 0 || index->rd_opcintype[0] != BYTEAOID ||
		index->rd_opfamily[0] != get_opclass_family(GetDefaultOpClass(BYTEAOID, BTREE_AM_OID)))
		return false;

	exprs = RelationGetIndexExpressions(index);
	if (list_length(exprs) != 1 || !IsA(linitial(exprs), FuncExpr))
		return false;
	f = linitial(exprs);
	if (f->funcid != keyfn || f->funcretset || list_length(f->args) != 3)
		return false;
	var = linitial(f->args);
	cprop = lsecond(f->args);
	ctype = lthird(f->args);
	if (!IsA(var, Var) || var->varno != 1 || var->varattno != TS_ATT_PROPS ||
		var->varlevelsup != 0 || var->vartype != JSONBOID)
		return false;
	if (!IsA(cprop, Const) || cprop->consttype != TEXTOID || cprop->constisnull ||
		!IsA(ctype, Const) || ctype->consttype != TEXTOID || ctype->constisnull)
		return false;

	pred = RelationGetIndexPredicate(index);
	if (list_length(pred) != 1 || !IsA(linitial(pred), NullTest))
		return false;
	nt = linitial(pred);
	if (nt->nulltesttype != IS_NOT_NULL || nt->argisrow || !equal(nt->arg, f))
		return false;

	t = DatumGetTextPP(ctype->constvalue);
	*type = index_type_by_name(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	if (*type < 0)
		return false;
	t = DatumGetTextPP(cprop->constvalue);
	if (!ts_is_valid_property_name(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) ||
		is_system_property(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)))
		return false;
	*prop = text_to_cstring(t);
	return true;
}

/*
 * The property indexes of an entity relation (locked by the caller), each
 * checked; the others are left out.  Each index's lock is released once it
 * is checked: the caller's lock on the table keeps them from being dropped
 * or changed, and explain_query, which unlocks the table at once, leaves no
 * lock behind (attack finding 4).
 */
static List *
table_property_indexes(Relation heap, bool for_query)
{
	Oid			keyfn = InvalidOid;
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(heap))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		char	   *prop;
		int			type;

		/* the key function is looked up once there is a btree to check */
		if (!OidIsValid(keyfn) && index->rd_rel->relam == BTREE_AM_OID)
			keyfn = key_function();
		if (check_index(index, keyfn, for_query, &prop, &type))
		{
			PiIndex    *pi = palloc0(sizeof(PiIndex));

			pi->indexid = RelationGetRelid(index);
			pi->name = pstrdup(RelationGetRelationName(index));
			pi->prop = prop;
			pi->type = type;
			result = lappend(result, pi);
		}
		index_close(index, AccessShareLock);
	}
	return result;
}

/* ----------------------------------------------------------------
 * Planning
 * ----------------------------------------------------------------
 */

/* Append the operands of nested kind nodes (AND or OR) to list. */
static List *
flatten(FilterNode *n, FilterNodeKind kind, List *list)
{
	check_stack_depth();
	if (n->kind == kind)
	{
		list = flatten(n->left, kind, list);
		return flatten(n->right, kind, list);
	}
	return lappend(list, n);
}

/*
 * The range of index keys holding every entity that satisfies comparison n,
 * if index pi serves it: the comparison's property and a literal of the
 * index's type, an operator other than ne.  Bounds are inclusive (the key is
 * only monotone); lt and le start at the first entry, values of other types
 * included, which they match.
 */
static bool
comparison_range(const FilterNode *n, const PiIndex *pi, PiRange *r)
{
	bytea	   *k;

	if (n->kind != FN_COMPARE || n->op == FOP_NE ||
		strlen(pi->prop) != n->proplen || memcmp(pi->prop, n->prop, n->proplen) != 0)
		return false;
	k = literal_key(&n->lit, pi->type);
	if (k == NULL)
		return false;
	r->lo = r->hi = NULL;
	switch (n->op)
	{
		case FOP_EQ:
			r->lo = r->hi = k;
			break;
		case FOP_GT:
		case FOP_GE:
			r->lo = k;
			break;
		case FOP_LT:
		case FOP_LE:
			r->hi = k;
			break;
		case FOP_NE:
			return false;
	}
	return true;
}

/* Compare two keys as the index does (bytea order). */
static int
key_cmp(const bytea *a, const bytea *b)
{
	int			alen = VARSIZE_ANY_EXHDR(a);
	int			blen = VARSIZE_ANY_EXHDR(b);
	int			c = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), Min(alen, blen));

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

/* Narrow range r to its intersection with s. */
static void
intersect(PiRange *r, const PiRange *s)
{
	if (s->lo != NULL && (r->lo == NULL || key_cmp(s->lo, r->lo) > 0))
		r->lo = s->lo;
	if (s->hi != NULL && (r->hi == NULL || key_cmp(s->hi, r->hi) < 0))
		r->hi = s->hi;
}

/* Set up the scan keys of range r; returns their number. */
static int
range_scankeys(const PiRange *r, ScanKey keys)
{
	int			n = 0;

	if (r->lo != NULL && r->hi != NULL && key_cmp(r->lo, r->hi) == 0)
	{
		ScanKeyInit(&keys[n++], 1, BTEqualStrategyNumber, F_BYTEAEQ, PointerGetDatum(r->lo));
		return n;
	}
	if (r->lo != NULL)
		ScanKeyInit(&keys[n++], 1, BTGreaterEqualStrategyNumber, F_BYTEAGE, PointerGetDatum(r->lo));
	if (r->hi != NULL)
		ScanKeyInit(&keys[n++], 1, BTLessEqualStrategyNumber, F_BYTEALE, PointerGetDatum(r->hi));
	return n;
}

/* Whether range r holds no key. */
static bool
range_is_empty(const PiRange *r)
{
	return r->lo != NULL && r->hi != NULL && key_cmp(r->lo, r->hi) > 0;
}

/*
 * The index entries of a candidate's ranges, counted up to limit + 1
 * without reading the heap (dead entries count: an estimate from above).
 */
static int64
count_entries(Relation heap, PiCandidate *c, int64 limit)
{
	Relation	index = index_open(c->index->indexid, AccessShareLock);
	int64		n = 0;
	ListCell   *lc;

	foreach(lc, c->ranges)
	{
		PiRange    *r = lfirst(lc);
		ScanKeyData keys[2];
		int			nkeys = range_scankeys(r, keys);
		IndexScanDesc scan;

		if (range_is_empty(r))
			continue;
		scan = index_beginscan(heap, index, GetActiveSnapshot(), nkeys, 0);
		index_rescan(scan, keys, nkeys, NULL, 0);
		while (n <= limit && index_getnext_tid(scan, ForwardScanDirection) != NULL)
		{
			CHECK_FOR_INTERRUPTS();
			n++;
		}
		index_endscan(scan);
		if (n > limit)
			break;
	}
	/* the table's lock protects the index; explain_query keeps no lock */
	index_close(index, AccessShareLock);
	return n;
}

/* Order points (one key each) by key. */
static int
point_cmp(const ListCell *a, const ListCell *b)
{
	const TsScanSegment *pa = lfirst(a);
	const TsScanSegment *pb = lfirst(b);

	return ts_key_pair_cmp(pa->pk.lo.value, pa->rk.lo.value, pb->pk.lo.value, pb->rk.lo.value);
}

/*
 * The least memory a collected point takes: its segment and its cells in
 * the two lists of collect_points, keys not counted.  Dividing the byte
 * cap by it gives a bound on the entries worth counting.
 */
#define PI_MIN_POINT_BYTES ((int64) (sizeof(TsScanSegment) + 2 * sizeof(ListCell)))

/*
 * The keys of the entities visible to the active snapshot in a candidate's
 * ranges and inside the plan's key bounds, as points in key order without
 * duplicates; false (nothing returned) if they take more than max_bytes.
 *
 * The bytes counted are those really allocated (GetMemoryChunkSpace of the
 * segment and of both key copies, with their allocator's rounding) and two
 * list cells of each of the two lists (a list's array grows by doubling),
 * so that long keys (up to 1,536 bytes of UTF-8 each) are not
 * underestimated (attack finding 5).  A key read compressed is detoasted
 * in a per-entity context, reset each time, so the copies are all that
 * stays.
 */
static bool
collect_points(Relation heap, PiCandidate *c, const TsQueryPlan *plan, int64 max_bytes,
			   List **points)
{
	Relation	index = index_open(c->index->indexid, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext percontext = AllocSetContextCreate(CurrentMemoryContext,
													 "property index keys",
													 ALLOCSET_SMALL_SIZES);
	List	   *all = NIL;
	int64		bytes = 0;
	bool		ok = true;
	ListCell   *lc;

	*points = NIL;
	foreach(lc, c->ranges)
	{
		PiRange    *r = lfirst(lc);
		ScanKeyData keys[2];
		int			nkeys = range_scankeys(r, keys);
		IndexScanDesc scan;

		if (range_is_empty(r))
			continue;
		scan = index_beginscan(heap, index, GetActiveSnapshot(), nkeys, 0);
		index_rescan(scan, keys, nkeys, NULL, 0);
		while (index_getnext_slot(scan, ForwardScanDirection, slot))
		{
			bool		isnull;
			Datum		pkd;
			Datum		rkd;
			text	   *pk;
			text	   *rk;
			TsScanSegment *seg;

			CHECK_FOR_INTERRUPTS();
			pkd = slot_getattr(slot, TS_ATT_PK, &isnull);
			if (isnull)
				continue;
			rkd = slot_getattr(slot, TS_ATT_RK, &isnull);
			if (isnull)
				continue;
			MemoryContextReset(percontext);
			MemoryContextSwitchTo(percontext);
			pk = DatumGetTextPP(pkd);
			rk = DatumGetTextPP(rkd);
			MemoryContextSwitchTo(outer);
			if (!ts_key_in_range(&plan->pk, pk) || !ts_key_in_range(&plan->rk, rk))
				continue;
			seg = ts_point_segment(DatumGetTextPCopy(PointerGetDatum(pk)),
								   DatumGetTextPCopy(PointerGetDatum(rk)));
			bytes += GetMemoryChunkSpace(seg) +
				GetMemoryChunkSpace(seg->pk.lo.value) +
				GetMemoryChunkSpace(seg->rk.lo.value) +
				4 * sizeof(ListCell);
			all = lappend(all, seg);
			if (bytes > max_bytes)
			{
				ok = false;
				break;
			}
		}
		index_endscan(scan);
		if (!ok)
			break;
	}
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(percontext);
	/* the table's lock protects the index; explain_query keeps no lock */
	index_close(index, AccessShareLock);
	if (!ok)
	{
		foreach(lc, all)
		{
			TsScanSegment *seg = lfirst(lc);

			pfree(seg->pk.lo.value);
			pfree(seg->rk.lo.value);
			pfree(seg);
		}
		list_free(all);
		return false;
	}
	list_sort(all, point_cmp);
	foreach(lc, all)
		if (*points == NIL || point_cmp(list_last_cell(*points), lc) != 0)
			*points = lappend(*points, lfirst(lc));
	return true;
}

/* The conditions of a candidate as filter text, for explain. */
static char *
candidate_text(const PiCandidate *c)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, c->conds)
	{
		FilterNode *n = lfirst(lc);
		size_t		len = filter_format(n, NULL, 0);
		char	   *s = palloc(len + 1);

		filter_format(n, s, len + 1);
		if (buf.len > 0)
			appendStringInfoString(&buf, " and ");
		appendStringInfoString(&buf, s);
	}
	return buf.data;
}

/*
 * The candidates of the filter's conjuncts: per index, the intersection of
 * the single comparisons it serves, and each "or" all of whose branches it
 * serves.
 */
static List *
find_candidates(List *indexes, List *conjuncts)
{
	List	   *result = NIL;
	ListCell   *li;

	foreach(li, indexes)
	{
		PiIndex    *pi = lfirst(li);
		PiCandidate *and_c = NULL;
		ListCell   *lc;

		foreach(lc, conjuncts)
		{
			FilterNode *n = lfirst(lc);
			PiRange		r;

			if (comparison_range(n, pi, &r))
			{
				if (and_c == NULL)
				{
					and_c = palloc0(sizeof(PiCandidate));
					and_c->index = pi;
					and_c->ranges = list_make1(palloc(sizeof(PiRange)));
					*(PiRange *) linitial(and_c->ranges) = r;
					result = lappend(result, and_c);
				}
				else
					intersect(linitial(and_c->ranges), &r);
				and_c->conds = lappend(and_c->conds, n);
			}
			else if (n->kind == FN_OR)
			{
				List	   *branches = flatten(n, FN_OR, NIL);
				List	   *ranges = NIL;
				ListCell   *lb;

				foreach(lb, branches)
				{
					PiRange    *br = palloc(sizeof(PiRange));

					if (!comparison_range(lfirst(lb), pi, br))
					{
						ranges = NIL;
						break;
					}
					ranges = lappend(ranges, br);
				}
				if (ranges != NIL)
				{
					PiCandidate *c = palloc0(sizeof(PiCandidate));

					c->index = pi;
					c->ranges = ranges;
					c->conds = list_make1(n);
					result = lappend(result, c);
				}
			}
		}
	}
	return result;
}

/*
 * Whether some conjunct could be served by a property index at all: a
 * comparison of a custom property other than ne, or an "or" of them.  A
 * query without one costs no look at the table's indexes.
 */
static bool
may_use_index(List *conjuncts)
{
	ListCell   *lc;

	foreach(lc, conjuncts)
	{
		FilterNode *n = lfirst(lc);

		if (n->kind == FN_COMPARE && n->op != FOP_NE &&
			!is_system_property(n->prop, (int) n->proplen))
			return true;
		if (n->kind == FN_OR)
			return true;
	}
	return false;
}

/*
 * The most memory a property-index query's collected keys take: work_mem
 * (collect_points counts the bytes it allocates).
 */
static int64
key_cap_bytes(void)
{
	return (int64) work_mem * 1024;
}

/*
 * ts_propindex_plan: use a property index of table relid (locked by the
 * caller) for plan, a table or key-range scan, if one serves the filter and
 * is cheaper (see the file comment): the plan becomes a multi-point query of
 * the matching entities' keys (kind TS_ACCESS_PROPERTY_INDEX), the residual
 * filter unchanged.  top is the most entities the query reads (-1: all).
 *
 * The cost: the key-order scan reads the table's pages, nblocks, or the part
 * of them that top needs if matches are spread evenly (nblocks * top /
 * entries); the index path about two random page reads per candidate (its
 * heap tuple, then its probe in key order).  The index is used when its
 * entries are within the cap and 2 * entries is less than that, or at most
 * 100 (a tiny table costs nothing either way).  Setting
 * tablestore.property_index to on uses any index within the cap, off none.
 */
void
ts_propindex_plan(Oid relid, TsQueryPlan *plan, int64 top)
{
	List	   *conjuncts;
	List	   *indexes;
	List	   *candidates;
	PiCandidate *best = NULL;
	TsPropIndexUse *use;
	Relation	heap;
	int64		cap_bytes = key_cap_bytes();
	int64		cap = cap_bytes / PI_MIN_POINT_BYTES;
	double		scan_cost;
	ListCell   *lc;
	List	   *points;

	if (pi_mode == PI_MODE_OFF || plan->empty || plan->residual == NULL ||
		(plan->kind != TS_ACCESS_TABLE && plan->kind != TS_ACCESS_KEY_RANGE))
		return;
	conjuncts = flatten(plan->residual, FN_AND, NIL);
	if (!may_use_index(conjuncts))
		return;

	heap = table_open(relid, NoLock);
	indexes = table_property_indexes(heap, true);
	candidates = find_candidates(indexes, conjuncts);
	if (candidates == NIL)
	{
		table_close(heap, NoLock);
		return;
	}

	/* the candidate with the fewest entries */
	foreach(lc, candidates)
	{
		PiCandidate *c = lfirst(lc);

		c->count = count_entries(heap, c, best != NULL ? Min(best->count, cap) : cap);
		if (best == NULL || c->count < best->count)
			best = c;
	}

	use = palloc0(sizeof(TsPropIndexUse));
	plan->propindex = use;
	use->index_name = best->index->name;
	use->property = best->index->prop;
	use->edm_type = ts_edm_types[best->index->type].name;
	use->condition = candidate_text(best);
	use->entries = best->count > cap ? -1 : best->count;
	use->candidates = -1;
	use->cap = cap;
	use->cap_bytes = cap_bytes;
	use->heap_blocks = RelationGetNumberOfBlocks(heap);
	use->hide_counts = check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED;
	scan_cost = (double) use->heap_blocks;
	if (top >= 0 && best->count > 0 && top < best->count)
		scan_cost = scan_cost * (double) top / (double) best->count;

	if (best->count > cap)
		use->reason = "more index entries than the memory cap";
	else if (pi_mode == PI_MODE_AUTO && best->count > 100 && 2.0 * (double) best->count >= scan_cost)
		use->reason = "the key-order scan is cheaper";
	else if (!collect_points(heap, best, plan, cap_bytes, &points))
		use->reason = "more matching entities than the memory cap";
	else
	{
		use->used = true;
		use->candidates = list_length(points);
		plan->kind = TS_ACCESS_PROPERTY_INDEX;
		plan->points = points;
		if (points == NIL)
			plan->empty = true;
	}
	table_close(heap, NoLock);
}

static void
push_string(JsonbParseState **st, const char *key, const char *val)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) key;
	v.val.string.len = strlen(key);
	pushJsonbValue(st, WJB_KEY, &v);
	v.val.string.val = (char *) val;
	v.val.string.len = strlen(val);
	pushJsonbValue(st, WJB_VALUE, &v);
}

static void
push_int(JsonbParseState **st, const char *key, int64 val)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) key;
	v.val.string.len = strlen(key);
	pushJsonbValue(st, WJB_KEY, &v);
	if (val < 0)
		v.type = jbvNull;
	else
	{
		v.type = jbvNumeric;
		v.val.numeric = int64_to_numeric(val);
	}
	pushJsonbValue(st, WJB_VALUE, &v);
}

/*
 * ts_propindex_explain: the "property_index" member of explain_query's
 * object, when the planner considered one: the index used or considered,
 * its property, type and condition, its entries counted, the entities
 * read, the cap, and why it was not used.  Where row-level security applies
 * to the caller, the counts (and the reason, which tells them apart) are
 * left out: they count entities the policies hide.
 */
void
ts_propindex_explain(JsonbParseState **st, const TsQueryPlan *plan)
{
	const TsPropIndexUse *use = plan->propindex;
	JsonbValue	v;

	if (use == NULL)
		return;
	v.type = jbvString;
	v.val.string.val = "property_index";
	v.val.string.len = strlen("property_index");
	pushJsonbValue(st, WJB_KEY, &v);
	pushJsonbValue(st, WJB_BEGIN_OBJECT, NULL);
	push_string(st, "index", use->index_name);
	push_string(st, "property", use->property);
	push_string(st, "edm_type", use->edm_type);
	push_string(st, "condition", use->condition);
	v.type = jbvString;
	v.val.string.val = "used";
	v.val.string.len = 4;
	pushJsonbValue(st, WJB_KEY, &v);
	v.type = jbvBool;
	v.val.boolean = use->used;
	pushJsonbValue(st, WJB_VALUE, &v);
	/* counts under row-level security would count rows the policies hide */
	push_int(st, "index_entries", use->hide_counts ? -1 : use->entries);
	push_int(st, "entities", use->hide_counts ? -1 : use->candidates);
	push_int(st, "cap", use->cap);
	push_int(st, "cap_bytes", use->cap_bytes);
	push_int(st, "table_pages", use->heap_blocks);
	if (use->reason != NULL && !use->hide_counts)
		push_string(st, "reason", use->reason);
	pushJsonbValue(st, WJB_END_OBJECT, NULL);
}

/* ----------------------------------------------------------------
 * SQL functions
 * ----------------------------------------------------------------
 */

/*
 * The property argument n: a valid custom property name (not a system
 * property), with the service's errors.
 */
static char *
arg_property(FunctionCallInfo fcinfo, int n)
{
	text	   *t;
	const char *s;
	int			len;

	if (PG_ARGISNULL(n))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("property must not be null"));
	t = PG_GETARG_TEXT_PP(n);
	s = VARDATA_ANY(t);
	len = VARSIZE_ANY_EXHDR(t);
	if (is_system_property(s, len))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("system property \"%.*s\" cannot have a property index", len, s),
				   errhint("PartitionKey and RowKey are indexed by the key index."));
	if (ts_utf16_length(s, len) > TS_MAX_NAME_CHARS)
		ts_ereport(ERROR, TS_PropertyNameTooLong,
				   errmsg("property name \"%.*s...\" is longer than %d characters",
						  pg_mbcliplen(s, len, TS_ECHO_LIMIT), s, TS_MAX_NAME_CHARS));
	if (!ts_is_valid_property_name(s, len))
		ts_ereport(ERROR, TS_PropertyNameInvalid,
				   errmsg("property name \"%.*s\" is invalid", pg_mbcliplen(s, len, TS_ECHO_LIMIT), s));
	return text_to_cstring(t);
}

/*
 * The edm_type argument n: an Edm type by its name, "Edm.Int32" or
 * "Int32"; its canonical name is returned.
 */
static int
arg_edm_type(FunctionCallInfo fcinfo, int n)
{
	text	   *t;
	const char *s;
	int			len;

	if (PG_ARGISNULL(n))
		ts_ereport(ERROR, TS_InvalidInput, errmsg("edm_type must not be null"));
	t = PG_GETARG_TEXT_PP(n);
	s = VARDATA_ANY(t);
	len = VARSIZE_ANY_EXHDR(t);
	for (int type = 0; type < TS_NUM_EDM_TYPES; type++)
	{
		const char *name = ts_edm_types[type].name;
		int			nlen = ts_edm_types[type].len;

		if ((len == nlen && memcmp(s, name, len) == 0) ||
			(len == nlen - 4 && memcmp(s, name + 4, len) == 0))
			return type;
	}
	ts_ereport(ERROR, TS_InvalidInput,
			   errmsg("\"%.*s\" is not an Edm type", pg_mbcliplen(s, len, TS_ECHO_LIMIT), s),
			   errhint("The types are Edm.String, Edm.Int32, Edm.Int64, Edm.Double, Edm.Boolean, "
					   "Edm.DateTime, Edm.Guid and Edm.Binary."));
	return -1;
}

/*
 * Lock a table's entity relation for a change of its property indexes: the
 * caller must own it (as CREATE INDEX requires), checked before the lock.
 * lockmode is the strongest lock the change needs (ShareLock to create,
 * AccessExclusiveLock to drop), taken at once: upgrading a weaker lock
 * later could deadlock two such calls on one table (attack finding 6).
 */
static Oid
owned_table(text *table_name, char **relname, LOCKMODE lockmode)
{
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	Oid			relid = InvalidOid;
	Relation	heap;

	if (ts_table_name_is_valid(name, len))
	{
		*relname = ts_relation_name(name, len);
		relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, *relname, -1),
										 lockmode, RVR_MISSING_OK,
										 RangeVarCallbackOwnsRelation, NULL);
	}
	if (!OidIsValid(relid))
		ts_ereport(ERROR, TS_TableNotFound,
				   errmsg("table \"%.*s\" does not exist", pg_mbcliplen(name, len, TS_ECHO_LIMIT), name));
	heap = table_open(relid, NoLock);
	ts_check_entity_relation(heap, true);
	table_close(heap, NoLock);
	return relid;
}

/*
 * The property index of (relid, prop, type) that the catalog names, if it
 * exists and checks out; InvalidOid otherwise.
 */
static Oid
catalog_index(Oid relid, const char *index_name, const char *prop, int type)
{
	Oid			indexid = get_relname_relid(index_name, get_namespace_oid(TS_DATA_SCHEMA, false));
	Relation	index;
	char	   *iprop;
	int			itype;
	bool		ok;

	if (!OidIsValid(indexid) || get_rel_relkind(indexid) != RELKIND_INDEX)
		return InvalidOid;
	index = index_open(indexid, AccessShareLock);
	ok = index->rd_index->indrelid == relid &&
		check_index(index, key_function(), false, &iprop, &itype) &&
		itype == type && strcmp(iprop, prop) == 0;
	index_close(index, NoLock);
	return ok ? indexid : InvalidOid;
}

/* The catalog row's index name of (relname, prop, type), or NULL. */
static char *
catalog_row(const char *relname, const char *prop, int type)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	int			ret;

	values[0] = CStringGetTextDatum(relname);
	values[1] = CStringGetTextDatum(prop);
	values[2] = CStringGetTextDatum(ts_edm_types[type].name);
	ret = ts_exec_catalog("SELECT index_name FROM " TS_SCHEMA ".property_indexes "
						  "WHERE relation_name OPERATOR(pg_catalog.=) $1 AND property OPERATOR(pg_catalog.=) $2 "
						  "AND edm_type OPERATOR(pg_catalog.=) $3 FOR UPDATE",
						  3, argtypes, values);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the property index catalog: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* Delete the catalog row of (relname, prop, type). */
static void
catalog_delete(const char *relname, const char *prop, int type)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	int			ret;

	values[0] = CStringGetTextDatum(relname);
	values[1] = CStringGetTextDatum(prop);
	values[2] = CStringGetTextDatum(ts_edm_types[type].name);
	ret = ts_exec_catalog("DELETE FROM " TS_SCHEMA ".property_indexes "
						  "WHERE relation_name OPERATOR(pg_catalog.=) $1 AND property OPERATOR(pg_catalog.=) $2 "
						  "AND edm_type OPERATOR(pg_catalog.=) $3",
						  3, argtypes, values);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete from the property index catalog: %s", SPI_result_code_string(ret));
}

/* Refuse DDL where PostgreSQL refuses it (a read-only transaction, a standby). */
static void
prevent_if_read_only(const char *cmdname)
{
	PreventCommandIfReadOnly(cmdname);
	PreventCommandIfParallelMode(cmdname);
	PreventCommandDuringRecovery(cmdname);
}

/*
 * tablestore.create_property_index(table_name text, property text,
 * edm_type text) RETURNS text
 *
 * Create the property index of a table's property for one Edm type and
 * return its name.  The caller must own the table.  The catalog row is
 * claimed first, so that a concurrent create of the same index waits and
 * then finds it; a row whose index is gone or fails its check is replaced.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(create_property_index);

Datum
create_property_index(PG_FUNCTION_ARGS)
{
	text	   *table_name = ts_arg_table_name(fcinfo);
	char	   *prop = arg_property(fcinfo, 1);
	int			type = arg_edm_type(fcinfo, 2);
	const char *typename = ts_edm_types[type].name;
	char	   *relname;
	Oid			relid;
	Oid			nsp = get_namespace_oid(TS_DATA_SCHEMA, false);
	char	   *existing;
	char	   *index_name = NULL;
	Oid			argtypes[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char	   *expr;
	uint32		hash;
	int			ret;
	MemoryContext caller = CurrentMemoryContext;

	prevent_if_read_only("CREATE INDEX");
	/* CREATE INDEX's lock, taken first */
	relid = owned_table(table_name, &relname, ShareLock);

	SPI_connect();
	existing = catalog_row(relname, prop, type);
	if (existing != NULL)
	{
		if (OidIsValid(catalog_index(relid, existing, prop, type)))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("table \"%s\" already has a property index on \"%s\" of type %s",
							text_to_cstring(table_name), prop, typename),
					 errdetail("The index is \"%s\".", existing)));
		catalog_delete(relname, prop, type);
	}

	/* a name of our own: the table's, a hash of property and type */
	hash = hash_bytes((const unsigned char *) prop, strlen(prop)) ^ ((uint32) type * 0x9E3779B9U);
	for (int attempt = 0; attempt < 100; attempt++)
	{
		index_name = attempt == 0 ? psprintf("%.40s_pidx_%08x", relname, hash) :
			psprintf("%.40s_pidx_%08x_%d", relname, hash, attempt);
		if (!OidIsValid(get_relname_relid(index_name, nsp)))
			break;
		index_name = NULL;
	}
	if (index_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("no free name for a property index of table \"%s\"", text_to_cstring(table_name))));

	values[0] = CStringGetTextDatum(relname);
	values[1] = CStringGetTextDatum(prop);
	values[2] = CStringGetTextDatum(typename);
	values[3] = CStringGetTextDatum(index_name);
	ret = ts_exec_catalog("INSERT INTO " TS_SCHEMA ".property_indexes "
						  "(relation_name, property, edm_type, index_name) VALUES ($1, $2, $3, $4) "
						  "ON CONFLICT DO NOTHING",
						  4, argtypes, values);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not insert into the property index catalog: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" already has a property index on \"%s\" of type %s",
						text_to_cstring(table_name), prop, typename)));

	/* the index, with the caller's rights */
	expr = psprintf(TS_SCHEMA ".property_index_key(props, %s, %s)",
					quote_literal_cstr(prop), quote_literal_cstr(typename));
	ret = SPI_execute(psprintf("CREATE INDEX %s ON " TS_DATA_SCHEMA ".%s (%s) WHERE %s IS NOT NULL",
							   quote_identifier(index_name), quote_identifier(relname), expr, expr),
					  false, 0);
	if (ret != SPI_OK_UTILITY)
		elog(ERROR, "could not create property index: %s", SPI_result_code_string(ret));
	index_name = MemoryContextStrdup(caller, index_name);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(index_name));
}

/*
 * tablestore.drop_property_index(table_name text, property text, edm_type
 * text, if_exists boolean DEFAULT false) RETURNS boolean
 *
 * Drop a table's property index of (property, edm_type) and its catalog
 * row; returns whether there was one.  The caller must own the table.
 * Without either, an error (ResourceNotFound), or with if_exists a notice
 * and false.  What is dropped is every index of the table that checks out
 * as the property index of (property, edm_type), whatever its name (the
 * owner may have renamed it), and nothing else: the name in the catalog row
 * is not trusted (it may name another index, even the key index).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(drop_property_index);

Datum
drop_property_index(PG_FUNCTION_ARGS)
{
	text	   *table_name = ts_arg_table_name(fcinfo);
	char	   *prop = arg_property(fcinfo, 1);
	int			type = arg_edm_type(fcinfo, 2);
	bool		if_exists = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	char	   *relname;
	Oid			relid;
	Relation	heap;
	List	   *indexes;
	bool		found;
	ListCell   *lc;

	prevent_if_read_only("DROP INDEX");
	/* DROP INDEX's lock on the table, taken first */
	relid = owned_table(table_name, &relname, AccessExclusiveLock);
	heap = table_open(relid, NoLock);
	indexes = table_property_indexes(heap, false);
	table_close(heap, NoLock);

	SPI_connect();
	found = catalog_row(relname, prop, type) != NULL;
	foreach(lc, indexes)
	{
		PiIndex    *pi = lfirst(lc);
		int			ret;

		if (pi->type != type || strcmp(pi->prop, prop) != 0)
			continue;
		ret = SPI_execute(psprintf("DROP INDEX " TS_DATA_SCHEMA ".%s", quote_identifier(pi->name)), false, 0);
		if (ret != SPI_OK_UTILITY)
			elog(ERROR, "could not drop property index: %s", SPI_result_code_string(ret));
		found = true;
	}
	if (found)
		catalog_delete(relname, prop, type);
	SPI_finish();
	if (found)
		PG_RETURN_BOOL(true);
	if (if_exists)
	{
		ereport(NOTICE,
				(errmsg("table \"%s\" has no property index on \"%s\" of type %s, skipping",
						text_to_cstring(table_name), prop, ts_edm_types[type].name)));
		PG_RETURN_BOOL(false);
	}
	ts_ereport(ERROR, TS_ResourceNotFound,
			   errmsg("table \"%s\" has no property index on \"%s\" of type %s",
					  text_to_cstring(table_name), prop, ts_edm_types[type].name));
	PG_RETURN_BOOL(false);		/* keep the compiler quiet */
}

/*
 * tablestore._property_index_valid(index oid, relation_name text, property
 * text, edm_type text) RETURNS boolean
 *
 * Whether index is the property index of the catalog row (relation_name,
 * property, edm_type): on that table, with the definition queries use.
 * list_property_indexes shows it.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(property_index_valid);

Datum
property_index_valid(PG_FUNCTION_ARGS)
{
	Oid			indexid = PG_GETARG_OID(0);
	char	   *relname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	text	   *prop = PG_GETARG_TEXT_PP(2);
	text	   *typename = PG_GETARG_TEXT_PP(3);
	int			type = index_type_by_name(VARDATA_ANY(typename), VARSIZE_ANY_EXHDR(typename));
	Oid			relid = get_relname_relid(relname, get_namespace_oid(TS_DATA_SCHEMA, false));
	Relation	index;
	char	   *iprop;
	int			itype;
	bool		ok;

	/* only an index of schema tablestore_data is opened (and locked) */
	if (type < 0 || !OidIsValid(relid) || get_rel_relkind(indexid) != RELKIND_INDEX ||
		get_rel_namespace(indexid) != get_namespace_oid(TS_DATA_SCHEMA, false))
		PG_RETURN_BOOL(false);
	index = try_relation_open(indexid, AccessShareLock);
	if (index == NULL)
		PG_RETURN_BOOL(false);
	ok = index->rd_rel->relkind == RELKIND_INDEX && index->rd_index->indrelid == relid &&
		check_index(index, key_function(), false, &iprop, &itype) && itype == type &&
		strcmp(iprop, text_to_cstring(prop)) == 0;
	relation_close(index, AccessShareLock);
	PG_RETURN_BOOL(ok);
}
