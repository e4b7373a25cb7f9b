/*-------------------------------------------------------------------------
 *
 * db.h
 *	  The connection pools and the calls of the extension's functions
 *	  (db.c), with the service's errors mapped from the SQLSTATEs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_DB_H
#define TSGW_DB_H

#include <stdbool.h>
#include <libpq-fe.h>

#include "reqtypes.h"

typedef struct DbErr
{
	int			http;
	char		code[64];
	char	   *message;		/* service message (malloc'd) */
	char	   *reason;			/* PostgreSQL's message (malloc'd) */
	int			batch_index;	/* -1 when not a batch operation */
	bool		retry;			/* the server ended the session: nothing applied */
	char		sqlstate[6];	/* the failed statement's, "" if none */
	bool		unreachable;	/* no connection could be opened */
	bool		timed_out;		/* the server did not answer within
								 * --db-timeout-ms */
} DbErr;

/* one row of a streamed result; false stops the reading (the rest is discarded) */
typedef bool (*DbRowFn) (void *arg, PGresult *row);

extern int	db_init(void);
extern PGresult *db_call(Req *r, const char *stmt, int nparams, const char *const *values, DbErr *err);
extern bool db_call_rows(Req *r, const char *stmt, int nparams, const char *const *values,
						 DbRowFn fn, void *arg, DbErr *err);
extern void db_err_free(DbErr *err);
extern void db_error_response(Req *r, Resp *resp, DbErr *err);
extern void call_for_204(Req *r, Resp *resp, const char *stmt, int nparams, const char *const *vals);

#endif							/* TSGW_DB_H */
