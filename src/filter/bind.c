/*-------------------------------------------------------------------------
 *
 * bind.c
 *	  The $filter language bound to PostgreSQL: parsing with the service's
 *	  error codes, and evaluating a parsed filter against a stored entity
 *	  with the service's comparison semantics.
 *
 * The parser (parse.c) is plain C; here its tree meets the stored
 * form of entities (README "Stored form").  A filter is parsed once per
 * query; evaluation walks the tree per entity and looks up only the
 * properties the filter names.
 *
 * Comparison semantics, as the live service behaves:
 *	- a comparison with a property the entity lacks is false, whatever the
 *	  operator ("not" of it is true: two-valued logic, not SQL's NULL);
 *	- numbers widen only Int32 -> Int64 -> Double: an Int32 literal compares
 *	  with Int32, Int64 and Double properties, an Int64 literal with Int64 and
 *	  Double properties, a Double literal with Double properties;
 *	- any other mismatch of types counts the property as less than the
 *	  literal (ne, lt, le true; eq, gt, ge false);
 *	- strings compare by UTF-16 code unit, DateTimes by tick, Guids by value,
 *	  Binary by bytes, Booleans false < true; a NaN is unordered (only ne is
 *	  true), as in IEEE 754.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "common/base64.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entity.h"
#include "edmvalue.h"
#include "filter/bind.h"
#include "filter/filter.h"
#include "edmtext.h"
#include "utf16.h"


StaticAssertDecl(FILTER_ECHO_LIMIT == TS_ECHO_LIMIT,
				 "the filter parser echoes as much of a filter as other errors echo of a value");

/* The filter parser's allocator: palloc in the current memory context. */
static void *
filter_palloc(void *ctx, size_t size)
{
	return palloc(size);
}

/*
 * ts_filter_parse: parse a $filter (NULL: no filter, the constant true),
 * raising the service's error for a filter it does not accept.
 */
FilterNode *
ts_filter_parse(const char *text, int len)
{
	FilterAllocator alloc = {filter_palloc, NULL};
	FilterNode *tree;
	FilterError err;
	TsErrorCode code;

	if (text == NULL)
	{
		text = "";
		len = 0;
	}
	if (filter_parse(text, len, &alloc, &tree, &err))
		return tree;

	switch (err.kind)
	{
		case FERR_NOT_IMPLEMENTED:
			code = TS_NotImplemented;
			break;
		case FERR_OUT_OF_RANGE:
			code = TS_OutOfRangeInput;
			break;
		default:
			code = TS_InvalidInput;
			break;
	}
	ts_ereport(ERROR, code,
			   errmsg("invalid filter at character %d: %s", err.position, err.message),
			   errhint("Filters compare one property with one literal, e.g. PartitionKey eq 'Sales' and Age gt 30."));
	return NULL;				/* keep the compiler quiet */
}

/* A property value with its Edm type, decoded (bind.h). */
typedef TsFilterValue Value;

static bool decode_value(const JsonbValue *jv, Value *v);

/*
 * Look up property name in the row; false if the row lacks it (or holds a
 * value that is not of its type).
 */
static bool
lookup(const TsFilterRow *row, const char *name, int namelen, Value *v)
{
	JsonbValue *jv;
	JsonbValue *ann;
	char		buf[TS_MAX_NAME_CHARS * 4 + sizeof(TS_ANNOTATION_SUFFIX)];

	memset(v, 0, sizeof(Value));

	/* the system properties, and the table name of a table row */
	if (row->table_name != NULL)
	{
		if (namelen == 9 && memcmp(name, "TableName", 9) == 0)
		{
			v->type = EDM_STRING;
			v->str = row->table_name;
			v->len = row->table_name_len;
			return true;
		}
		return false;
	}
	if (namelen == 12 && memcmp(name, "PartitionKey", 12) == 0)
	{
		v->type = EDM_STRING;
		v->str = row->pk;
		v->len = row->pklen;
		return true;
	}
	if (namelen == 6 && memcmp(name, "RowKey", 6) == 0)
	{
		v->type = EDM_STRING;
		v->str = row->rk;
		v->len = row->rklen;
		return true;
	}
	if (namelen == 9 && memcmp(name, "Timestamp", 9) == 0)
	{
		/* a ts outside the DateTime range (written with SQL) is no DateTime */
		if (!ts_timestamptz_in_range(row->ts))
			return false;
		v->type = EDM_DATETIME;
		v->i64 = ts_timestamptz_to_ticks(row->ts);
		return true;
	}

	/* a custom property: a name longer than any property cannot match */
	if (namelen > TS_MAX_NAME_CHARS * 4)
		return false;
	jv = getKeyJsonValueFromContainer(&row->props->root, name, namelen, NULL);
	if (jv == NULL)
		return false;
	memcpy(buf, name, namelen);
	memcpy(buf + namelen, TS_ANNOTATION_SUFFIX, sizeof(TS_ANNOTATION_SUFFIX) - 1);
	ann = getKeyJsonValueFromContainer(&row->props->root, buf,
									   namelen + sizeof(TS_ANNOTATION_SUFFIX) - 1, NULL);

	if (jv->type != jbvString && jv->type != jbvNumeric && jv->type != jbvBool)
		return false;			/* the stored form holds nothing else */
	/* unannotated: a string, a Boolean, an Int32 if integral, else a Double */
	v->type = ts_edm_type_of_json(jv);
	if (ann != NULL && ann->type == jbvString)
	{
		int			type = ts_edm_type_by_name(ann->val.string.val, ann->val.string.len);

		if (type < 0)
			return false;
		v->type = (TsEdmType) type;
	}
	return decode_value(jv, v);
}

/*
 * ts_filter_lookup: property name of stored properties props, typed and
 * decoded exactly as a filter's comparison sees it; false if it counts as
 * absent.  The property indexes (propindex.c) key entities by this, so that
 * an index agrees with the filter on every stored byte.
 */
bool
ts_filter_lookup(Jsonb *props, const char *name, int namelen, TsFilterValue *v)
{
	TsFilterRow row = {0};

	row.props = props;
	return lookup(&row, name, namelen, v);
}

/*
 * Parse a whole decimal Int64 text without raising an error; false if it
 * is not one.
 */
static bool
parse_int64(const char *s, int len, int64 *out)
{
	char		buf[24];
	char	   *end;

	if (len == 0 || len >= (int) sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!(isdigit((unsigned char) buf[0]) || (buf[0] == '-' && isdigit((unsigned char) buf[1]))))
		return false;
	errno = 0;
	*out = strtoi64(buf, &end, 10);
	return errno == 0 && *end == '\0';
}

/*
 * Decode the JSON value jv as a value of v->type, as the stored form holds
 * it (see README "Stored form"); false if it is not one.
 */
static bool
decode_value(const JsonbValue *jv, Value *v)
{
	bool		error = false;

	switch (v->type)
	{
		case EDM_STRING:
		case EDM_BINARY:
			if (jv->type != jbvString)
				return false;
			v->str = jv->val.string.val;
			v->len = jv->val.string.len;
			return true;
		case EDM_BOOLEAN:
			if (jv->type != jbvBool)
				return false;
			v->b = jv->val.boolean;
			return true;
		case EDM_INT32:
			if (jv->type != jbvNumeric)
				return false;
			if (DatumGetInt32(DirectFunctionCall1(numeric_scale, NumericGetDatum(jv->val.numeric))) != 0)
				return false;
			v->i64 = numeric_int4_opt_error(jv->val.numeric, &error);
			return !error;
		case EDM_INT64:
			return jv->type == jbvString && parse_int64(jv->val.string.val, jv->val.string.len, &v->i64);
		case EDM_DOUBLE:
			if (jv->type == jbvNumeric)
			{
				v->d = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
														  NumericGetDatum(jv->val.numeric)));
				return isfinite(v->d);
			}
			if (jv->type != jbvString)
				return false;
			if (jv->val.string.len == 3 && memcmp(jv->val.string.val, "NaN", 3) == 0)
				v->d = get_float8_nan();
			else if (jv->val.string.len == 8 && memcmp(jv->val.string.val, "Infinity", 8) == 0)
				v->d = get_float8_infinity();
			else if (jv->val.string.len == 9 && memcmp(jv->val.string.val, "-Infinity", 9) == 0)
				v->d = -get_float8_infinity();
			else if (jv->val.string.len == 2 && memcmp(jv->val.string.val, "-0", 2) == 0)
				v->d = -0.0;
			else
				return false;
			return true;
		case EDM_DATETIME:
			{
				int64_t		ticks;

				/* a well-formed one before 1601 is no DateTime either: not an error */
				if (jv->type != jbvString ||
					edm_parse_datetime(jv->val.string.val, jv->val.string.len, &ticks) != EDM_TEXT_OK)
					return false;
				v->i64 = ticks;
				return true;
			}
		case EDM_GUID:
			return jv->type == jbvString &&
				ts_parse_guid(jv->val.string.val, jv->val.string.len, v->guid);
	}
	return false;
}

/* The operator's result for a three-way comparison result c. */
static bool
op_result(FilterOp op, int c)
{
	switch (op)
	{
		case FOP_EQ:
			return c == 0;
		case FOP_NE:
			return c != 0;
		case FOP_GT:
			return c > 0;
		case FOP_GE:
			return c >= 0;
		case FOP_LT:
			return c < 0;
		case FOP_LE:
			return c <= 0;
	}
	return false;
}

/* A type mismatch: the property counts as less than the literal. */
static bool
mismatch(FilterOp op)
{
	return op_result(op, -1);
}

static bool
compare_int64(FilterOp op, int64 a, int64 b)
{
	return op_result(op, (a > b) - (a < b));
}

/* Doubles: NaN is unordered, so only "ne" holds for it. */
static bool
compare_double(FilterOp op, double a, double b)
{
	if (isnan(a) || isnan(b))
		return op == FOP_NE;
	return op_result(op, (a > b) - (a < b));
}

/* Compare byte strings: memcmp order, a prefix first. */
static int
bytes_cmp(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

/*
 * Evaluate one comparison "property op literal" against a row.
 */
static bool
eval_compare(const FilterNode *n, const TsFilterRow *row)
{
	const FilterLiteral *lit = &n->lit;
	FilterOp	op = n->op;
	Value		v;

	if (!lookup(row, n->prop, (int) n->proplen, &v))
		return false;

	switch (lit->type)
	{
		case FLIT_STRING:
			if (v.type != EDM_STRING)
				return mismatch(op);
			return op_result(op, ts_utf16_cmp(v.str, v.len, lit->v.bytes.data, (int) lit->v.bytes.len));

		case FLIT_INT32:
		case FLIT_INT64:
			{
				int64		l = lit->type == FLIT_INT32 ? lit->v.i32 : lit->v.i64;

				if ((v.type == EDM_INT32 && lit->type == FLIT_INT32) || v.type == EDM_INT64)
					return compare_int64(op, v.i64, l);
				if (v.type == EDM_DOUBLE)
					return compare_double(op, v.d, (double) l);
				return mismatch(op);
			}

		case FLIT_DOUBLE:
			if (v.type != EDM_DOUBLE)
				return mismatch(op);
			return compare_double(op, v.d, lit->v.d);

		case FLIT_BOOLEAN:
			if (v.type != EDM_BOOLEAN)
				return mismatch(op);
			return op_result(op, (int) v.b - (int) lit->v.b);

		case FLIT_DATETIME:
			if (v.type != EDM_DATETIME)
				return mismatch(op);
			return compare_int64(op, v.i64, lit->v.ticks);

		case FLIT_GUID:
			if (v.type != EDM_GUID)
				return mismatch(op);
			return op_result(op, memcmp(v.guid, lit->v.guid, 16));

		case FLIT_BINARY:
			{
				char	   *bytes;
				int			nbytes;
				bool		r;

				if (v.type != EDM_BINARY)
					return mismatch(op);
				bytes = palloc(pg_b64_dec_len(v.len) + 1);
				nbytes = pg_b64_decode(v.str, v.len, bytes, pg_b64_dec_len(v.len) + 1);
				if (nbytes < 0)
					return false;	/* not base64: counts as absent */
				r = op_result(op, bytes_cmp(bytes, nbytes, lit->v.bytes.data, (int) lit->v.bytes.len));
				pfree(bytes);
				return r;
			}
	}
	return false;
}

/*
 * ts_filter_eval: whether a row satisfies a parsed filter.
 */
bool
ts_filter_eval(const FilterNode *n, const TsFilterRow *row)
{
	check_stack_depth();
	switch (n->kind)
	{
		case FN_AND:
			return ts_filter_eval(n->left, row) && ts_filter_eval(n->right, row);
		case FN_OR:
			return ts_filter_eval(n->left, row) || ts_filter_eval(n->right, row);
		case FN_NOT:
			return !ts_filter_eval(n->left, row);
		case FN_CONST:
			return n->value;
		case FN_COMPARE:
			return eval_compare(n, row);
	}
	elog(ERROR, "unrecognized filter node kind %d", (int) n->kind);
	return false;
}
