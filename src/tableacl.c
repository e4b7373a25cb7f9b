/*-------------------------------------------------------------------------
 *
 * tableacl.c
 *	  Stored access policies of a table (the service's Get and Set Table
 *	  ACL): up to five signed identifiers, each an Id of at most 64
 *	  UTF-16 code units without control characters and an optional Start,
 *	  Expiry and Permission (letters of "raud").  A shared access signature naming one (si) takes its window
 *	  and permissions from it, so removing it revokes every such signature.
 *
 * The policies of a table are one jsonb array in catalog table
 * tablestore.table_acl, keyed by the table's relation name, with no foreign
 * key (a parallel pg_restore loads the catalogs in any order): a trigger on
 * tablestore.tables removes them with the table's row (delete_table, the
 * event trigger of a dropped relation), and create_table removes a row left
 * for its name, so a table created again starts with none.  Setting them needs ownership
 * of the table's relation (as delete_table), reading them SELECT on it (as
 * reading its entities; the gateway reads them as the account's role to
 * check a SAS).  The catalog is written and read with its owner's rights
 * once the caller's own were checked (ts_exec_catalog).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "tablestore.h"
#include "errors.h"
#include "edm.h"
#include "entityrel.h"
#include "tables.h"
#include "edmtext.h"

#define ACL_MAX_POLICIES	5
#define ACL_MAX_ID_CHARS	64
#define ACL_PERMISSIONS		"raud"

/*
 * acl_invalid: the service's InvalidXmlDocument (400) for a policy list it
 * refuses, the error_codes() entry that service properties use too.
 */
#define acl_invalid(...) \
	ts_ereport(ERROR, TS_InvalidXmlDocument, __VA_ARGS__)

/* The relation name of a table name (valid or not): its lower-case form. */
static char *
acl_relation_name(text *table_name)
{
	char	   *rel = text_to_cstring(table_name);

	for (char *p = rel; *p; p++)
		*p = pg_ascii_tolower((unsigned char) *p);
	return rel;
}

/*
 * policy_string: member `key` of a policy object as a C string, NULL when
 * absent, JSON null or "" (each is "not given", as an empty XML element).
 * *found counts the members that were present.
 */
static char *
policy_string(JsonbContainer *obj, const char *key, int *found)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(obj, key, strlen(key), &v) == NULL)
		return NULL;
	(*found)++;
	if (v.type == jbvNull)
		return NULL;
	if (v.type != jbvString)
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("stored access policy member \"%s\" must be a string", key));
	if (v.val.string.len == 0)
		return NULL;
	return pnstrdup(v.val.string.val, v.val.string.len);
}

/*
 * time_shape_ok: s has exactly one of the forms YYYY-MM-DD,
 * YYYY-MM-DDThh:mmZ, YYYY-MM-DDThh:mm:ssZ, YYYY-MM-DDThh:mm:ss.fffffffZ (1
 * to 7 digits of fraction), upper-case T and Z: the UTC forms that the
 * service documents for a SAS's st and se and for a policy's Start and
 * Expiry (whose "TZD" must be UTC, i.e. Z), and that the gateway's SAS
 * check (gateway/auth.c, parse_iso) takes.  The values are checked after.
 */
static bool
time_shape_ok(const char *s, size_t len)
{
	static const char *const shapes[] = {"dddd-dd-dd", "dddd-dd-ddTdd:ddZ", "dddd-dd-ddTdd:dd:ddZ"};
	const char *shape = NULL;

	for (int i = 0; i < (int) lengthof(shapes); i++)
		if (len == strlen(shapes[i]))
			shape = shapes[i];
	if (shape == NULL && len >= 22 && len <= 28)
	{
		/* the fraction: dddd-dd-ddTdd:dd:dd.f...Z */
		for (size_t i = 20; i < len - 1; i++)
			if (s[i] < '0' || s[i] > '9')
				return false;
		if (s[19] != '.' || s[len - 1] != 'Z')
			return false;
		shape = "dddd-dd-ddTdd:dd:dd";
		len = 19;
	}
	if (shape == NULL)
		return false;
	for (size_t i = 0; i < len; i++)
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return false;
	return true;
}

/*
 * policy_time: a policy's Start or Expiry in one of the service's ISO 8601
 * forms (time_shape_ok), as the service writes a DateTime (trailing zeros
 * trimmed); the service's InvalidXmlDocument otherwise (so for a leap
 * second, which a SAS's st and se refuse too).
 */
static char *
policy_time(const char *id, const char *what, const char *s)
{
	size_t		len = strlen(s);
	char		full[64];
	int64_t		ticks;

	if (!time_shape_ok(s, len))
		full[0] = '\0';
	else if (len == 10)
		snprintf(full, sizeof(full), "%sT00:00:00Z", s);
	else if (len == 17 && s[10] == 'T' && s[16] == 'Z')
		snprintf(full, sizeof(full), "%.16s:00Z", s);
	else if (len < sizeof(full))
		snprintf(full, sizeof(full), "%s", s);
	else
		full[0] = '\0';
	if (edm_parse_datetime(full, strlen(full), &ticks) != EDM_TEXT_OK)
		acl_invalid(errmsg("%s \"%s\" of stored access policy \"%s\" is not a valid UTC date and time",
						   what, ts_clip(s, strlen(s)), id));
	return ts_format_datetime(ticks);
}

/*
 * check_id: an Id as the service takes it: at most 64 characters counted
 * as the service counts them (UTF-16 code units: a character beyond the
 * BMP counts two), and only characters that XML 1.0 allows and that are not
 * control characters (C0, DEL, C1; U+FFFE and U+FFFF are not XML
 * characters), so that Get Table ACL writes every Id as well-formed XML
 * that reads back as the same Id; InvalidXmlDocument otherwise.
 */
static void
check_id(const char *id)
{
	int			units = 0;
	const unsigned char *p = (const unsigned char *) id;

	while (*p)
	{
		pg_wchar	c;
		int			len = pg_utf_mblen(p);

		if (GetDatabaseEncoding() == PG_UTF8)
			c = utf8_to_unicode(p);
		else
		{
			/* other encodings: their ASCII controls, one unit a character */
			c = *p < 0x80 ? *p : 0x100;
			len = pg_mblen((const char *) p);
		}
		if (c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0xFFFE || c == 0xFFFF)
			acl_invalid(errmsg("stored access policy Id \"%s\" holds a control character or one that XML does not allow (U+%04X)",
							   ts_clip(id, strlen(id)), (unsigned int) c));
		units += c >= 0x10000 ? 2 : 1;
		p += len;
	}
	if (units > ACL_MAX_ID_CHARS)
		acl_invalid(errmsg("stored access policy Id \"%s\" is longer than %d characters (UTF-16 code units)",
						   ts_clip(id, strlen(id)), ACL_MAX_ID_CHARS));
}

/*
 * canonical_acl: the policies of acl (NULL: none) checked as the service
 * checks them and written as the catalog keeps them: a JSON array of
 * {"Id", "Start", "Expiry", "Permission"} objects in the order given,
 * members not given left out, dates in the service's form.  NULL for an
 * empty list.
 */
static char *
canonical_acl(Jsonb *acl)
{
	StringInfoData out;
	int			n;
	char	   *ids[ACL_MAX_POLICIES];

	if (acl == NULL)
		return NULL;
	if (!JB_ROOT_IS_ARRAY(acl) || JB_ROOT_IS_SCALAR(acl))
		ts_ereport(ERROR, TS_InvalidInput,
				   errmsg("stored access policies must be a JSON array of objects"));
	n = JB_ROOT_COUNT(acl);
	if (n == 0)
		return NULL;
	if (n > ACL_MAX_POLICIES)
		acl_invalid(errmsg("a table has at most %d stored access policies, %d were given",
						   ACL_MAX_POLICIES, n));

	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	for (int i = 0; i < n; i++)
	{
		JsonbValue *elem = getIthJsonbValueFromContainer(&acl->root, i);
		JsonbContainer *obj;
		int			found = 0;
		char	   *id,
				   *start,
				   *expiry,
				   *perm;

		if (elem == NULL || elem->type != jbvBinary || !JsonContainerIsObject(elem->val.binary.data))
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("stored access policies must be a JSON array of objects"));
		obj = elem->val.binary.data;
		id = policy_string(obj, "Id", &found);
		start = policy_string(obj, "Start", &found);
		expiry = policy_string(obj, "Expiry", &found);
		perm = policy_string(obj, "Permission", &found);
		if (found != (int) JsonContainerSize(obj))
			ts_ereport(ERROR, TS_InvalidInput,
					   errmsg("a stored access policy has members other than Id, Start, Expiry and Permission"));
		if (id == NULL)
			acl_invalid(errmsg("stored access policy %d has no Id", i + 1));
		check_id(id);
		for (int j = 0; j < i; j++)
			if (strcmp(ids[j], id) == 0)
				acl_invalid(errmsg("stored access policy Id \"%s\" is given twice", ts_clip(id, strlen(id))));
		ids[i] = id;
		if (perm != NULL)
			for (const char *p = perm; *p; p++)
				if (strchr(ACL_PERMISSIONS, *p) == NULL || strchr(p + 1, *p) != NULL)
					acl_invalid(errmsg("Permission \"%s\" of stored access policy \"%s\" is not a set of the letters r, a, u, d",
									   ts_clip(perm, strlen(perm)), ts_clip(id, strlen(id))));
		if (start != NULL)
			start = policy_time(id, "Start", start);
		if (expiry != NULL)
			expiry = policy_time(id, "Expiry", expiry);

		appendStringInfoString(&out, i > 0 ? ", {\"Id\": " : "{\"Id\": ");
		escape_json(&out, id);
		if (start != NULL)
		{
			appendStringInfoString(&out, ", \"Start\": ");
			escape_json(&out, start);
		}
		if (expiry != NULL)
		{
			appendStringInfoString(&out, ", \"Expiry\": ");
			escape_json(&out, expiry);
		}
		if (perm != NULL)
		{
			appendStringInfoString(&out, ", \"Permission\": ");
			escape_json(&out, perm);
		}
		appendStringInfoChar(&out, '}');
	}
	appendStringInfoChar(&out, ']');
	return out.data;
}

/*
 * tablestore.set_table_acl(table_name text, acl jsonb) RETURNS void
 *
 * Replaces the table's stored access policies with acl (NULL or [] removes
 * them all), as the service's Set Table ACL does.  Needs ownership of the
 * table's relation, checked before its lock is taken; the lock (ACCESS
 * SHARE) keeps a concurrent delete_table out until the transaction ends.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(set_table_acl);

Datum
set_table_acl(PG_FUNCTION_ARGS)
{
	text	   *table_name = ts_arg_table_name(fcinfo);
	const char *name = VARDATA_ANY(table_name);
	int			len = VARSIZE_ANY_EXHDR(table_name);
	char	   *acl = canonical_acl(PG_ARGISNULL(1) ? NULL : PG_GETARG_JSONB_P(1));
	char	   *rel;
	Oid			relid = InvalidOid;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	int			ret;

	PreventCommandIfReadOnly("set_table_acl");
	PreventCommandDuringRecovery("set_table_acl");
	rel = acl_relation_name(table_name);
	if (ts_table_name_is_valid(name, len))
		relid = RangeVarGetRelidExtended(makeRangeVar(TS_DATA_SCHEMA, rel, -1),
										 AccessShareLock, RVR_MISSING_OK,
										 RangeVarCallbackOwnsRelation, NULL);
	if (!OidIsValid(relid))
		ts_ereport(ERROR, TS_TableNotFound,
				   errmsg("table \"%s\" does not exist", ts_clip(name, len)));

	SPI_connect();
	values[0] = CStringGetTextDatum(rel);
	if (acl == NULL)
		ret = ts_exec_catalog("DELETE FROM " TS_SCHEMA ".table_acl WHERE relation_name OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values);
	else
	{
		values[1] = CStringGetTextDatum(acl);
		ret = ts_exec_catalog("INSERT INTO " TS_SCHEMA ".table_acl (relation_name, acl) "
							  "VALUES ($1, $2::pg_catalog.jsonb) "
							  "ON CONFLICT (relation_name) DO UPDATE SET acl = EXCLUDED.acl",
							  2, argtypes, values);
	}
	if (ret != SPI_OK_DELETE && ret != SPI_OK_INSERT)
		elog(ERROR, "could not write the stored access policies: %s", SPI_result_code_string(ret));
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * tablestore.get_table_acl(table_name text) RETURNS jsonb
 *
 * The table's stored access policies as set_table_acl keeps them (an empty
 * array when it has none).  Needs SELECT on the table's relation, checked
 * before its lock is taken; TableNotFound for a table that does not exist.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(get_table_acl);

Datum
get_table_acl(PG_FUNCTION_ARGS)
{
	text	   *table_name = ts_arg_table_name(fcinfo);
	char	   *rel;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	Datum		result;
	int			ret;

	(void) ts_table_open(table_name, ACL_SELECT, AccessShareLock, &rel, NULL);
	SPI_connect();
	values[0] = CStringGetTextDatum(rel);
	ret = ts_exec_catalog("SELECT acl FROM " TS_SCHEMA ".table_acl WHERE relation_name OPERATOR(pg_catalog.=) $1",
						  1, argtypes, values);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the stored access policies: %s", SPI_result_code_string(ret));
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		result = isnull ? (Datum) 0 : SPI_datumTransfer(d, false, -1);
	}
	else
		result = (Datum) 0;
	SPI_finish();
	if (result == (Datum) 0)
		result = DirectFunctionCall1(jsonb_in, CStringGetDatum("[]"));
	PG_RETURN_DATUM(result);
}
