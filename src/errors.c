/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  The Table service's error codes and the SQLSTATE each one is raised
 *	  with.
 *
 * Every error a caller can cause is raised with ts_ereport(), which sets the
 * code's SQLSTATE and names the service code in the error detail.  Standard
 * SQLSTATEs are used where one fits; the others are in the class "TS", which
 * SQL reserves for implementations (classes starting with I-Z).  The table
 * below is the single source of truth: tablestore.error_codes() returns it
 * and the README reproduces it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "tablestore.h"
#include "errors.h"

typedef struct TsErrorInfo
{
	const char *name;			/* the service's code */
	const char *sqlstate;		/* five characters */
	int			http_status;
	const char *description;
	const char *service_message;	/* the service's own text */
} TsErrorInfo;

/* Indexed by TsErrorCode; keep in the enum's order. */
static const TsErrorInfo ts_errors[TS_NUM_ERROR_CODES] = {
	{"TableAlreadyExists", "42P07", 409, "create_table of a name that exists (case-insensitively)",
		"The table specified already exists."},
	{"TableNotFound", "42P01", 404, "entity operation on a table that does not exist",
		"The table specified does not exist."},
	{"ResourceNotFound", "P0002", 404, "the entity does not exist (get, update, merge, delete); delete_table of a missing table",
		"The specified resource does not exist."},
	{"EntityAlreadyExists", "23505", 409, "insert of a key that exists",
		"The specified entity already exists."},
	{"UpdateConditionNotSatisfied", "TS412", 412, "if_match differs from the entity's current ETag",
		"The update condition specified in the request was not satisfied."},
	{"InvalidInput", "22023", 400, "malformed input: entity not an object, bad type annotation or value, bad ETag, reserved table name",
		"One of the request inputs is not valid."},
	{"InvalidResourceName", "42602", 400, "table name with characters other than ASCII letters and digits, or not starting with a letter",
		"The specifed resource name contains invalid characters."},
	{"OutOfRangeInput", "22003", 400, "forbidden key character, DateTime out of range, table name length",
		"One of the request inputs is out of range."},
	{"PropertiesNeedValue", "23502", 400, "PartitionKey or RowKey missing or null",
		"The values are not specified for all properties in the entity."},
	{"PropertyNameInvalid", "42601", 400, "property name that is not an identifier, or reserved",
		"The property name is invalid."},
	{"PropertyNameTooLong", "42622", 400, "property name longer than 255 characters",
		"The property name exceeds the maximum allowed length."},
	{"PropertyValueTooLarge", "22001", 400, "String over 32,768 UTF-16 code units, Binary over 65,536 bytes, key over 512 UTF-16 code units",
		"The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."},
	{"EntityTooLarge", "54000", 400, "entity over 1,048,488 bytes by the service's size formula",
		"The entity is larger than the maximum size permitted."},
	{"TooManyProperties", "54011", 400, "more than 252 custom properties",
		"The entity contains more properties than allowed."},
	{"DuplicatePropertiesSpecified", "42701", 400, "the same property twice (jsonb keeps only the last of duplicate keys, see README)",
		"A property is specified more than one time."},
	{"InvalidDuplicateRow", "21000", 400, "the same entity twice in one batch",
		"The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."},
	{"CommandsInBatchActOnDifferentPartitions", "TS400", 400, "a batch with more than one PartitionKey",
		"All commands in a batch must operate on same entity group."},
	{"RequestBodyTooLarge", "TS413", 413, "a batch over 4 MiB",
		"The request body is too large and exceeds the maximum permissible limit."},
	{"NotImplemented", "0A000", 501, "filter functions such as startswith",
		"The requested operation is not implemented on the specified resource."},
	{"ServerBusy", "TS503", 503, "a scale-out router cannot reach the shard that holds the partition",
		"The server is currently unable to receive requests. Please retry your request."},
	{"InvalidXmlDocument", "TSX00", 400, "service properties or access policies the service refuses: elements, their number, Ids, dates",
		"XML specified is not syntactically valid."},
	{"InvalidXmlNodeValue", "TSX01", 400, "a service property's value out of its range (a CORS method, a header list, retention days)",
		"The value for one of the XML nodes is not in the correct format."},
};

/*
 * ts_errcode: the SQLSTATE (as an errcode() value) of a service code.
 */
int
ts_errcode(TsErrorCode code)
{
	const char *s;

	Assert(code >= 0 && code < TS_NUM_ERROR_CODES);
	s = ts_errors[code].sqlstate;
	return MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]);
}

/*
 * ts_error_name: the service's name of a code, e.g. "EntityAlreadyExists".
 */
const char *
ts_error_name(TsErrorCode code)
{
	Assert(code >= 0 && code < TS_NUM_ERROR_CODES);
	return ts_errors[code].name;
}

/*
 * ts_service_message: the service's own message text of a code.
 */
const char *
ts_service_message(TsErrorCode code)
{
	Assert(code >= 0 && code < TS_NUM_ERROR_CODES);
	return ts_errors[code].service_message;
}

/*
 * ts_error_from_sqlstate: the service code raised with a SQLSTATE, or -1
 * if none is (the SQLSTATE of each code is distinct).
 */
int
ts_error_from_sqlstate(int sqlerrcode)
{
	for (int i = 0; i < TS_NUM_ERROR_CODES; i++)
		if (ts_errcode((TsErrorCode) i) == sqlerrcode)
			return i;
	return -1;
}

/*
 * tablestore.error_codes(): the code -> SQLSTATE -> HTTP status table, so
 * that clients can map a SQLSTATE back to the service's code.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(error_codes);

#define ERROR_CODES_COLS 5

Datum
error_codes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < TS_NUM_ERROR_CODES; i++)
	{
		Datum		values[ERROR_CODES_COLS];
		bool		nulls[ERROR_CODES_COLS] = {false};

		values[0] = CStringGetTextDatum(ts_errors[i].name);
		values[1] = CStringGetTextDatum(ts_errors[i].sqlstate);
		values[2] = Int32GetDatum(ts_errors[i].http_status);
		values[3] = CStringGetTextDatum(ts_errors[i].description);
		values[4] = CStringGetTextDatum(ts_errors[i].service_message);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * ts_clip: a caller's value as an error message echoes it: at most
 * TS_ECHO_LIMIT bytes (whole characters), "..." marking a cut, so that no
 * error or log line grows with the input.
 */
char *
ts_clip(const char *s, int len)
{
	int			cut;

	if (len <= TS_ECHO_LIMIT)
		return pnstrdup(s, len);
	cut = pg_mbcliplen(s, len, TS_ECHO_LIMIT);
	return psprintf("%.*s...", cut, s);
}

/* ts_clip of a text value. */
char *
ts_clip_text(const text *t)
{
	return ts_clip(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}
