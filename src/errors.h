/*-------------------------------------------------------------------------
 *
 * errors.h
 *	  The service error codes, their SQLSTATEs and HTTP statuses (the table
 *	  in errors.c), and ts_ereport, which raises one.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_ERRORS_H
#define TS_ERRORS_H

/*
 * The service error codes.  Each has exactly one SQLSTATE; the table in
 * errors.c maps code <-> SQLSTATE <-> HTTP status, and doc/errors.md's
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

#endif							/* TS_ERRORS_H */
