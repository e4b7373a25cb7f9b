/*-------------------------------------------------------------------------
 *
 * db.c
 *	  The gateway's PostgreSQL side: a bounded pool of libpq connections,
 *	  the prepared statements that call the extension's SQL functions, and
 *	  the mapping of their errors to the service's codes and statuses.
 *
 * Accounts map to roles the PostgREST way: the gateway logs in once as its
 * own role (which must be a member of every account's role) and every
 * request whose account has a role runs, in one pipeline, the statement
 * set_config('role', <role>, true) and the function call in one implicit
 * transaction, so the role ends with the request, whatever happens, and a
 * pooled connection never carries one request's rights into the next.
 * One pool serves every account (per-role pools, PgBouncer's model, would
 * multiply connections by accounts and need a login per role).
 *
 * A request waits at most pool_wait_ms for a free connection and is then
 * answered 503 ServerBusy: that is the back-pressure.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Stmt
{
	const char *name;
	const char *sql;
	int			nparams;
} Stmt;

/* Every statement the gateway runs.  None holds text from a request. */
static const Stmt stmts[] = {
	{"role", "SELECT pg_catalog.set_config('role', $1, true)", 1},
	{"create_table", "SELECT tablestore.create_table($1)", 1},
	{"delete_table", "SELECT tablestore.delete_table($1)", 1},
	{"list_tables",
		"SELECT t FROM tablestore.list_tables($1) AS t "
		"WHERE $2::text IS NULL OR t COLLATE \"C\" >= $2 "
		"ORDER BY t COLLATE \"C\" LIMIT $3::int", 3},
	{"insert", "SELECT tablestore.insert_entity($1, $2::jsonb)::text", 2},
	{"update", "SELECT tablestore.update_entity($1, $2::jsonb, $3)::text", 3},
	{"merge", "SELECT tablestore.merge_entity($1, $2::jsonb, $3)::text", 3},
	{"insert_or_replace", "SELECT tablestore.insert_or_replace_entity($1, $2::jsonb)::text", 2},
	{"insert_or_merge", "SELECT tablestore.insert_or_merge_entity($1, $2::jsonb)::text", 2},
	{"delete", "SELECT tablestore.delete_entity($1, $2, $3, $4)", 4},
	{"get", "SELECT e::text, e->>'odata.etag' FROM tablestore.get_entity($1, $2, $3, $4) AS e", 4},
	{"query",
		"SELECT entities::text, next_partition_key, next_row_key "
		"FROM tablestore.query_entities_page($1, $2, $3, $4::int, $5, $6)", 6},
	{"batch",
		"SELECT (r->>'status')::int, r->>'etag', (r->'entity')::text "
		"FROM tablestore.execute_batch($1, $2::jsonb) AS r", 2},
};

#define NSTMTS (sizeof(stmts) / sizeof(stmts[0]))

/* The service's codes as tablestore.error_codes() returns them. */
typedef struct ErrInfo
{
	char	   *code;
	char		sqlstate[6];
	int			http;
	char	   *message;
} ErrInfo;

static ErrInfo *errinfo;
static int	nerrinfo;

static PGconn **pool;
static bool *pool_busy;
static int	pool_free;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;

/*
 * connect_one: a new connection with the statements prepared, a fixed
 * search_path (nothing a role or database default sets can redirect a name)
 * and the statement timeout.  NULL on failure (logged).
 */
static PGconn *
connect_one(void)
{
	PGconn	   *c = PQconnectdb(gw_config.conninfo);
	PGresult   *res;
	char		sql[128];

	if (PQstatus(c) != CONNECTION_OK)
	{
		fprintf(stderr, "tablestore-gateway: cannot connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	snprintf(sql, sizeof(sql),
			 "SET search_path = pg_catalog, pg_temp; SET statement_timeout = %d; "
			 "SET application_name = 'tablestore-gateway'",
			 gw_config.statement_timeout_ms);
	res = PQexec(c, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "tablestore-gateway: cannot set up a connection: %s", PQerrorMessage(c));
		PQclear(res);
		PQfinish(c);
		return NULL;
	}
	PQclear(res);
	for (size_t i = 0; i < NSTMTS; i++)
	{
		res = PQprepare(c, stmts[i].name, stmts[i].sql, stmts[i].nparams, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			fprintf(stderr, "tablestore-gateway: cannot prepare %s (is the tablestore extension installed?): %s",
					stmts[i].name, PQerrorMessage(c));
			PQclear(res);
			PQfinish(c);
			return NULL;
		}
		PQclear(res);
	}
	return c;
}

/*
 * db_init: load the error table and check that the database answers.  The
 * pool's connections are opened on first use.
 */
bool
db_init(void)
{
	PGconn	   *c = connect_one();
	PGresult   *res;

	if (c == NULL)
		return false;
	res = PQexec(c, "SELECT code, sqlstate, http_status, service_message FROM tablestore.error_codes()");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "tablestore-gateway: cannot read tablestore.error_codes(): %s", PQerrorMessage(c));
		PQclear(res);
		PQfinish(c);
		return false;
	}
	nerrinfo = PQntuples(res);
	errinfo = xmalloc(sizeof(ErrInfo) * (nerrinfo ? nerrinfo : 1));
	for (int i = 0; i < nerrinfo; i++)
	{
		errinfo[i].code = xstrdup(PQgetvalue(res, i, 0));
		snprintf(errinfo[i].sqlstate, sizeof(errinfo[i].sqlstate), "%s", PQgetvalue(res, i, 1));
		errinfo[i].http = atoi(PQgetvalue(res, i, 2));
		errinfo[i].message = xstrdup(PQgetvalue(res, i, 3));
	}
	PQclear(res);

	pool = calloc(gw_config.pool_size, sizeof(PGconn *));
	pool_busy = calloc(gw_config.pool_size, sizeof(bool));
	if (pool == NULL || pool_busy == NULL)
		return false;
	pool[0] = c;
	pool_free = gw_config.pool_size;
	return true;
}

/*
 * pool_get: a free slot of the pool, waiting at most pool_wait_ms; -1 when
 * none became free (the caller answers 503).
 */
static int
pool_get(void)
{
	struct timespec until;
	int			slot = -1;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += gw_config.pool_wait_ms / 1000;
	until.tv_nsec += (long) (gw_config.pool_wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L)
	{
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&pool_lock);
	while (pool_free == 0)
	{
		if (pthread_cond_timedwait(&pool_cond, &pool_lock, &until) == ETIMEDOUT && pool_free == 0)
		{
			pthread_mutex_unlock(&pool_lock);
			return -1;
		}
	}
	/* prefer a slot with an open connection */
	for (int i = 0; i < gw_config.pool_size; i++)
		if (!pool_busy[i] && (slot < 0 || (pool[i] != NULL && pool[slot] == NULL)))
			slot = i;
	pool_busy[slot] = true;
	pool_free--;
	pthread_mutex_unlock(&pool_lock);
	return slot;
}

/* pool_put: give a slot back; a broken connection is closed first. */
static void
pool_put(int slot)
{
	if (pool[slot] != NULL && PQstatus(pool[slot]) != CONNECTION_OK)
	{
		PQfinish(pool[slot]);
		pool[slot] = NULL;
	}
	pthread_mutex_lock(&pool_lock);
	pool_busy[slot] = false;
	pool_free++;
	pthread_cond_signal(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
}

/*
 * conn_dead: whether an idle pooled connection was closed by the server
 * (restart, terminated backend).  An idle connection of the gateway
 * receives nothing (it neither listens nor changes settings), so a
 * readable socket means a FATAL message or EOF: the connection is dropped
 * before a request goes out on it, and no request's outcome is ever
 * unknown for this reason.
 */
static bool
conn_dead(PGconn *c)
{
	struct pollfd pfd = {.fd = PQsocket(c), .events = POLLIN};

	if (PQstatus(c) != CONNECTION_OK || pfd.fd < 0)
		return true;
	return poll(&pfd, 1, 0) != 0;
}

/* set_err: fill an error with a code from the extension's table. */
static void
set_err(DbErr *err, const char *code, int http, const char *message, const char *reason)
{
	snprintf(err->code, sizeof(err->code), "%s", code);
	err->http = http;
	err->message = xstrdup(message);
	err->reason = reason ? xstrdup(reason) : NULL;
}

/*
 * map_error: the service code, status and message of a failed call.  The
 * extension names the code in its detail ("Table service error code: X.");
 * a batch operation's detail also carries the service's "<i>:<message>"
 * text and its message starts "batch operation <i> failed:".  Errors that
 * do not come from the extension (privileges, timeouts, a jsonb that does
 * not parse) map by SQLSTATE.
 */
static void
map_error(PGresult *res, PGconn *c, DbErr *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	const char *p;
	char		code[64] = "";

	err->batch_index = -1;
	/* administrator shutdown or crash recovery: the transaction was rolled back */
	err->retry = state != NULL && strncmp(state, "57P0", 4) == 0;
	if (primary == NULL)
		primary = PQerrorMessage(c);
	if (primary && strncmp(primary, "batch operation ", 16) == 0)
		err->batch_index = atoi(primary + 16);
	if (detail && (p = strstr(detail, "Table service error code: ")) != NULL)
	{
		size_t		n = 0;

		p += strlen("Table service error code: ");
		while (p[n] && p[n] != '.' && n < sizeof(code) - 1)
			n++;
		memcpy(code, p, n);
		code[n] = '\0';
	}
	for (int i = 0; i < nerrinfo; i++)
	{
		if ((code[0] && strcmp(errinfo[i].code, code) == 0) ||
			(!code[0] && state && strcmp(errinfo[i].sqlstate, state) == 0))
		{
			const char *sm = NULL;

			if (detail && (sm = strstr(detail, "Service message: \"")) != NULL)
			{
				const char *end;

				sm += strlen("Service message: \"");
				end = strrchr(sm, '"');
				if (end != NULL && end > sm)
				{
					char	   *m = xstrndup(sm, end - sm);

					set_err(err, errinfo[i].code, errinfo[i].http, m, primary);
					free(m);
					return;
				}
			}
			/*
			 * The service's own text for a table name's length, whatever the
			 * operation (the Python SDK matches it)
			 */
			if (strcmp(errinfo[i].code, "OutOfRangeInput") == 0 && primary &&
				strncmp(primary, "table name ", 11) == 0)
				set_err(err, errinfo[i].code, errinfo[i].http,
						"The specified resource name length is not within the permissible limits.", primary);
			else
				set_err(err, errinfo[i].code, errinfo[i].http, errinfo[i].message, primary);
			return;
		}
	}
	if (state == NULL)
		set_err(err, "InternalError", 500,
				"Server encountered an internal error. Please try again after some time.", NULL);
	else if (strcmp(state, "42501") == 0)
		set_err(err, "AuthorizationPermissionMismatch", 403,
				"This request is not authorized to perform this operation using this permission.", primary);
	else if (strncmp(state, "22", 2) == 0)
		set_err(err, "InvalidInput", 400, "One of the request inputs is not valid.", primary);
	else if (strcmp(state, "57014") == 0)
		set_err(err, "OperationTimedOut", 500,
				"Operation could not be completed within the specified time.", NULL);
	else if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0 ||
			 strncmp(state, "53", 2) == 0 || strncmp(state, "57P0", 4) == 0 || strncmp(state, "08", 2) == 0)
		set_err(err, "ServerBusy", 503, "The server is currently unable to receive requests. Please retry your request.", NULL);
	else
	{
		fprintf(stderr, "tablestore-gateway: unexpected error %s: %s\n", state, primary ? primary : "");
		set_err(err, "InternalError", 500,
				"Server encountered an internal error. Please try again after some time.", NULL);
	}
}

/*
 * run_pipeline: on connection c, set the role (if any) and run the
 * prepared statement, both before one Sync, so they share one implicit
 * transaction.  Returns the statement's result or NULL with err filled.
 */
static PGresult *
run_pipeline(PGconn *c, const char *role, const char *stmt, int nparams,
			 const char *const *values, DbErr *err)
{
	PGresult   *res;
	PGresult   *out = NULL;
	PGresult   *failed = NULL;
	bool		synced = false;

	if (role == NULL)
	{
		res = PQexecPrepared(c, stmt, nparams, values, NULL, NULL, 0);
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
			return res;
		map_error(res, c, err);
		PQclear(res);
		return NULL;
	}

	if (!PQenterPipelineMode(c) ||
		!PQsendQueryPrepared(c, "role", 1, &role, NULL, NULL, 0) ||
		!PQsendQueryPrepared(c, stmt, nparams, values, NULL, NULL, 0) ||
		!PQpipelineSync(c))
	{
		map_error(NULL, c, err);
		PQexitPipelineMode(c);
		return NULL;
	}
	/* results: role, NULL, statement, NULL, sync */
	for (int step = 0, k = 0; !synced && step < 64; step++)
	{
		res = PQgetResult(c);
		if (res == NULL)
		{
			if (PQstatus(c) != CONNECTION_OK)
				break;
			continue;
		}
		switch (PQresultStatus(res))
		{
			case PGRES_PIPELINE_SYNC:
				synced = true;
				PQclear(res);
				break;
			case PGRES_TUPLES_OK:
				if (k++ == 1 && out == NULL)
					out = res;
				else
					PQclear(res);
				break;
			case PGRES_PIPELINE_ABORTED:
				k++;
				PQclear(res);
				break;
			default:
				k++;
				if (failed == NULL)
					failed = res;
				else
					PQclear(res);
				break;
		}
	}
	PQexitPipelineMode(c);
	if (failed != NULL || !synced)
	{
		map_error(failed, c, err);
		if (failed)
			PQclear(failed);
		if (out)
			PQclear(out);
		return NULL;
	}
	return out;
}

/*
 * db_call: run one of the prepared statements for a request, as its
 * account's role, on a pooled connection.  Returns the result (caller
 * PQclear()s it) or NULL with err filled in (503 when no connection was
 * free in time, or none could be opened).
 */
PGresult *
db_call(Req *r, const char *stmt, int nparams, const char *const *values, DbErr *err)
{
	PGresult   *res = NULL;

	/*
	 * A pooled connection whose session the server ended (a restart, a
	 * terminated backend) fails with 57P0x, and nothing was applied: the
	 * request gets one more try on a new connection.
	 */
	for (int attempt = 0; attempt < 2; attempt++)
	{
		int			slot = pool_get();

		if (attempt > 0)
			db_err_free(err);
		memset(err, 0, sizeof(*err));
		err->batch_index = -1;
		if (slot < 0)
		{
			set_err(err, "ServerBusy", 503,
					"The server is currently unable to receive requests. Please retry your request.",
					"no database connection became free in time");
			return NULL;
		}
		if (pool[slot] != NULL && conn_dead(pool[slot]))
		{
			PQfinish(pool[slot]);
			pool[slot] = NULL;
		}
		if (pool[slot] == NULL)
			pool[slot] = connect_one();
		if (pool[slot] == NULL)
		{
			pool_put(slot);
			set_err(err, "ServerBusy", 503,
					"The server is currently unable to receive requests. Please retry your request.",
					"cannot connect to the database");
			return NULL;
		}
		res = run_pipeline(pool[slot], r->acct->role, stmt, nparams, values, err);
		if (res == NULL && err->retry && pool[slot] != NULL)
		{
			/* the session is over even if libpq has not noticed yet */
			PQfinish(pool[slot]);
			pool[slot] = NULL;
		}
		pool_put(slot);
		if (res != NULL || !err->retry)
			break;
	}
	return res;
}

/* db_err_free: release an error's strings. */
void
db_err_free(DbErr *err)
{
	free(err->message);
	free(err->reason);
	err->message = err->reason = NULL;
}

/* db_error_response: the service's error response for a failed call. */
void
db_error_response(Req *r, Resp *resp, DbErr *err)
{
	resp_error(r, resp, err->http, err->code, err->message, err->reason);
	db_err_free(err);
}
