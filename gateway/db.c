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
 * An account is the unit of isolation, as in the service: each account has
 * its own database (its tables are invisible to other accounts, and two
 * accounts may each have a table Orders), so each has its own pool of
 * --pool connections, opened on first use; the gateway checks at start-up
 * that no two accounts reach the same database.
 *
 * A request waits at most pool_wait_ms for a free connection and is then
 * answered 503 ServerBusy: that is the back-pressure.
 *
 * With --secondary-db each account also has a pool on the hot standby
 * (--secondary-pool connections, the same login role, role mapping and
 * database names): every call of a request addressed to
 * <account>-secondary runs there, and no other call does.  The standby may
 * be down at start-up and come and go later: its pool then answers 503 and
 * the primary's pools are untouched (secondary.c has the rest).  At start-up
 * and on each new connection the gateway checks that the standby's database
 * is the copy of the account's own (same system identifier, name and oid).
 *
 * A server that does not answer (frozen, its host cut off) must not hold
 * the HTTP threads: every call has a client-side deadline,
 * --db-timeout-ms, enforced here with non-blocking libpq (PQcancel cannot
 * reach a frozen server, so the connection is dropped and the request
 * answered 503 ServerBusy); connections are made with a connect_timeout
 * and TCP keepalives and tcp_user_timeout, so that a cut network is
 * noticed (a conninfo may override them).  A call that ran out of time, or
 * the standby's failed connection attempt, opens its pool's breaker: for
 * DB_REST_MS its requests are answered 503 at once, then one request at a
 * time probes the server until one succeeds (pool_admit, pool_verdict).
 * So one dead server holds at most its pool's size of threads, for one
 * deadline, and then one.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "db.h"

#include "account.h"
#include "buf.h"
#include "config.h"
#include "reqtypes.h"
#include "response.h"

/* the standby's connection attempts at most (seconds; its conninfo may say otherwise) */
#define SECONDARY_CONNECT_TIMEOUT 5
/* once a pool's breaker is open, how long its pool answers 503 without trying */
#define DB_REST_MS 1000

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
	/* with each entity's keys: a $select need not name them */
	{"query",
		"SELECT entity::text, next_partition_key, next_row_key, partition_key, row_key "
		"FROM tablestore._query_page_keyed($1, $2, $3, $4::int, $5, $6)", 6},
	{"get_table_acl", "SELECT tablestore.get_table_acl($1)::text", 1},
	{"set_table_acl", "SELECT tablestore.set_table_acl($1, $2::jsonb)", 2},
	/* a SAS's stored access policy (auth.c): at most one row */
	{"sas_policy",
		"SELECT p->>'Start', p->>'Expiry', p->>'Permission' "
		"FROM pg_catalog.jsonb_array_elements(tablestore.get_table_acl($1)) AS p "
		"WHERE p->>'Id' = $2 LIMIT 1", 2},
	{"batch",
		"SELECT (r->>'status')::int, r->>'etag', (r->'entity')::text "
		"FROM tablestore.execute_batch($1, $2::jsonb) AS r", 2},
	/* service properties (service.c) */
	{"service_props_get", "SELECT tablestore.get_service_properties()::text", 0},
	{"service_props_set", "SELECT tablestore.set_service_properties($1::jsonb)::text", 1},
	/* the CORS rules' read (service.c): gives up on a lock after 250 ms */
	{"service_props_cors",
		"SELECT CASE WHEN pg_catalog.set_config('lock_timeout', '250ms', true) IS NOT NULL "
		"THEN tablestore.get_service_properties()::text END", 0},
	/* Get Service Stats at the secondary (secondary.c): whole seconds */
	{"replication_status",
		"SELECT status, pg_catalog.floor(pg_catalog.date_part('epoch', last_sync_time))::int8 "
		"FROM tablestore.replication_status()", 0},
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

/* The connections of one account's database. */
typedef struct DbPool
{
	const char *conninfo;		/* --db, or --secondary-db */
	int			size;			/* connections at most */
	const char *database;		/* NULL: the database of the conninfo */
	bool		optional;		/* the standby's: may be down (db.c header) */
	const char *expect;			/* the standby's: the copy_identity() its
								 * database must have; NULL: unchecked */
	bool		mismatch;		/* the last connection reached another
								 * database than expect */
	bool		down;			/* breaker open: the server failed to answer */
	struct timespec rest_until; /* down: no attempt before */
	bool		connecting;		/* down: a probe is under way */
	PGconn	  **conn;
	bool	   *busy;
	int			nfree;
	pthread_mutex_t lock;
	pthread_cond_t cond;
} DbPool;

/* deadline_in: the monotonic time ms milliseconds from now. */
static struct timespec
deadline_in(int ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long) (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L)
	{
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* ms_left: milliseconds until the deadline (0 when past). */
static int
ms_left(const struct timespec *deadline)
{
	struct timespec now;
	long		ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000L + (deadline->tv_nsec - now.tv_nsec) / 1000000L;
	return ms <= 0 ? 0 : ms > 3600000 ? 3600000 : (int) ms;
}

/*
 * wait_ready: send what is queued on a non-blocking connection and wait
 * until PQgetResult would not block, at most until the deadline.  False
 * when the deadline passed first (the server did not answer: the caller
 * drops the connection, whose protocol state is then unknown).  A broken
 * connection is "ready": PQgetResult reports it.
 */
static bool
wait_ready(PGconn *c, const struct timespec *deadline)
{
	for (;;)
	{
		int			flush = PQflush(c);
		struct pollfd pfd;
		int			ms;
		int			n;

		if (flush < 0 || PQstatus(c) != CONNECTION_OK)
			return true;
		if (flush == 0 && !PQisBusy(c))
			return true;
		if ((ms = ms_left(deadline)) == 0)
			return false;
		pfd.fd = PQsocket(c);
		pfd.events = POLLIN | (flush > 0 ? POLLOUT : 0);
		pfd.revents = 0;
		if (pfd.fd < 0)
			return true;
		n = poll(&pfd, 1, ms);
		if (n < 0 && errno != EINTR)
			return true;
		if (n > 0 && (pfd.revents & (POLLIN | POLLERR | POLLHUP)) != 0 && !PQconsumeInput(c))
			return true;
	}
}

/*
 * exec_timed: run sql (sent by the caller: send is the result of its
 * PQsend... call) and read all its results by the deadline.  The last
 * result's first value (malloc'd, "" when none) or NULL when a result
 * failed, the sending failed or the deadline passed (logged as what).
 */
static char *
exec_timed(PGconn *c, int send, const struct timespec *deadline, const char *what)
{
	PGresult   *res;
	char	   *val = NULL;
	bool		ok = send != 0;

	if (!ok)
	{
		fprintf(stderr, "tablestore-gateway: cannot %s: %s", what, PQerrorMessage(c));
		return NULL;
	}
	for (;;)
	{
		if (!wait_ready(c, deadline))
		{
			fprintf(stderr, "tablestore-gateway: cannot %s: the server did not answer within %d ms\n",
					what, gw_config.db_timeout_ms);
			free(val);
			return NULL;
		}
		if ((res = PQgetResult(c)) == NULL)
			break;
		if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
		{
			free(val);
			val = xstrdup(PQntuples(res) > 0 && PQnfields(res) > 0 ? PQgetvalue(res, 0, 0) : "");
		}
		else
		{
			if (ok)
				fprintf(stderr, "tablestore-gateway: cannot %s: %s", what, PQerrorMessage(c));
			ok = false;
		}
		PQclear(res);
	}
	if (!ok)
	{
		free(val);
		return NULL;
	}
	return val;
}

/*
 * copy_identity: what a database and its physical copies (a streaming
 * standby) share, and no other database does: the cluster's system
 * identifier, the database's oid and name, as text (malloc'd), or NULL
 * (logged).
 */
static char *
copy_identity(PGconn *c, const struct timespec *deadline)
{
	return exec_timed(c, PQsendQuery(c,
									 "SELECT s.system_identifier::pg_catalog.text || ' / ' || d.oid::pg_catalog.text "
									 "|| ' / ' || pg_catalog.quote_ident(d.datname) "
									 "FROM pg_catalog.pg_control_system() AS s, pg_catalog.pg_database AS d "
									 "WHERE d.datname = pg_catalog.current_database()"),
					  deadline, "identify the database");
}

/*
 * connect_one: a new connection with the statements prepared, a fixed
 * search_path (nothing a role or database default sets can redirect a name)
 * and the statement timeout, in non-blocking mode; for a standby's pool
 * with expect set, only if it reached the copy of the primary's database
 * (else mismatch is set).  Every step is bounded by --db-timeout-ms.  NULL
 * on failure (logged).
 */
static PGconn *
connect_one(DbPool *p)
{
	char		ctimeout[16];
	char		utimeout[16];
	struct timespec deadline = deadline_in(gw_config.db_timeout_ms);

	/*
	 * --db's (--secondary-db's) options, its database replaced by the
	 * account's; before them a connect_timeout and TCP keepalives, which
	 * the conninfo (later) may override
	 */
	const char *keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
	"keepalives_count", "tcp_user_timeout", "dbname", p->database ? "dbname" : NULL, NULL};
	const char *vals[] = {ctimeout, "1", "10", "5", "3", utimeout, p->conninfo, p->database, NULL};
	PGconn	   *c;
	char		sql[128];
	char	   *v;
	int			cs = (gw_config.db_timeout_ms + 999) / 1000;

	/* libpq takes 2 s at least; the standby's attempts at most SECONDARY_CONNECT_TIMEOUT */
	if (p->optional && cs > SECONDARY_CONNECT_TIMEOUT)
		cs = SECONDARY_CONNECT_TIMEOUT;
	snprintf(ctimeout, sizeof(ctimeout), "%d", cs < 2 ? 2 : cs);
	snprintf(utimeout, sizeof(utimeout), "%d", gw_config.db_timeout_ms);
	c = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(c) != CONNECTION_OK)
	{
		fprintf(stderr, "tablestore-gateway: cannot connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	if (PQsetnonblocking(c, 1) != 0)
	{
		fprintf(stderr, "tablestore-gateway: cannot set up a connection: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	deadline = deadline_in(gw_config.db_timeout_ms);
	if (p->expect != NULL)
	{
		if ((v = copy_identity(c, &deadline)) == NULL)
		{
			PQfinish(c);
			return NULL;
		}
		p->mismatch = strcmp(v, p->expect) != 0;
		if (p->mismatch)
		{
			fprintf(stderr, "tablestore-gateway: --secondary-db reached database %s, which is not a standby's "
					"copy of the account's database %s: refused\n", v, p->expect);
			free(v);
			PQfinish(c);
			return NULL;
		}
		free(v);
	}
	snprintf(sql, sizeof(sql),
			 "SET search_path = pg_catalog, pg_temp; SET statement_timeout = %d; "
			 "SET application_name = 'tablestore-gateway'",
			 gw_config.statement_timeout_ms);
	if ((v = exec_timed(c, PQsendQuery(c, sql), &deadline, "set up a connection")) == NULL)
	{
		PQfinish(c);
		return NULL;
	}
	free(v);
	for (size_t i = 0; i < NSTMTS; i++)
	{
		if ((v = exec_timed(c, PQsendPrepare(c, stmts[i].name, stmts[i].sql, stmts[i].nparams, NULL),
							&deadline, "prepare the statements (is the tablestore extension installed?)")) == NULL)
		{
			PQfinish(c);
			return NULL;
		}
		free(v);
	}
	return c;
}

/*
 * pool_admit: whether a request may use the pool now.  While its breaker
 * is open (down) none may until DB_REST_MS after it opened, and then one
 * at a time (*probe set) until one succeeds: the others are answered 503
 * at once, so a server that does not answer holds no more threads.
 */
static bool
pool_admit(DbPool *p, bool *probe)
{
	struct timespec now;
	bool		ok = true;

	*probe = false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&p->lock);
	if (p->down)
	{
		if (p->connecting || now.tv_sec < p->rest_until.tv_sec ||
			(now.tv_sec == p->rest_until.tv_sec && now.tv_nsec < p->rest_until.tv_nsec))
			ok = false;
		else
			p->connecting = *probe = true;
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

/*
 * pool_verdict: after a request's use of the pool, open its breaker when
 * the server failed to answer (failed), close it when it answered.
 */
static void
pool_verdict(DbPool *p, bool probe, bool failed)
{
	struct timespec rest = deadline_in(DB_REST_MS);

	pthread_mutex_lock(&p->lock);
	if (probe)
		p->connecting = false;
	p->down = failed;
	if (failed)
		p->rest_until = rest;
	pthread_mutex_unlock(&p->lock);
}

/*
 * pool_new: a pool of size connections to an account's database on the
 * server of conninfo, its first connection open.  For the primary
 * (required) a database that cannot be reached or lacks the extension
 * stops the start-up: NULL (logged).  The secondary's pool is made
 * whatever the standby's state, which is only logged: a standby that is
 * down must not keep the primary from being served, and its pool connects
 * when it is next used.
 */
static DbPool *
pool_new(Account *a, const char *conninfo, int size, bool required, const char *expect)
{
	DbPool	   *p = xmalloc(sizeof(DbPool));

	memset(p, 0, sizeof(*p));
	p->conninfo = conninfo;
	p->size = size;
	p->optional = !required;
	p->database = a->database;
	p->expect = expect;
	p->conn = calloc(size, sizeof(PGconn *));
	p->busy = calloc(size, sizeof(bool));
	if (p->conn == NULL || p->busy == NULL)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->nfree = size;
	p->conn[0] = connect_one(p);
	if (p->conn[0] == NULL && (required || p->mismatch))
	{
		fprintf(stderr, "tablestore-gateway: cannot serve account \"%s\"\n", a->name);
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
		free(p->conn);
		free(p->busy);
		free(p);
		return NULL;
	}
	/* the first request probes, the others wait for it (pool_admit) */
	p->down = p->conn[0] == NULL;
	if (p->conn[0] == NULL)
		fprintf(stderr, "tablestore-gateway: the secondary of account \"%s\" cannot be reached now; "
				"its reads are answered 503 until it can\n", a->name);
	return p;
}

/*
 * identity: which database of which server a connection reached, as text
 * (malloc'd): the database's name and the server's start time, which tell
 * two servers apart however their addresses are spelled.
 */
static char *
identity(PGconn *c)
{
	struct timespec deadline = deadline_in(gw_config.db_timeout_ms);

	return exec_timed(c, PQsendQuery(c, "SELECT pg_catalog.current_database() || ' @ ' || "
									 "pg_catalog.pg_postmaster_start_time()::pg_catalog.text"),
					  &deadline, "identify the database");
}

/*
 * db_init: open each account's pool, check that no two accounts share a
 * database and that each account's secondary (when the standby can be
 * reached now; its later connections are checked too, connect_one) is the
 * copy of the account's own database on another server than the primary,
 * and load the error table.  0 when
 * ready, 1 if a database cannot be served, 2 if the configuration is
 * refused.
 */
int
db_init(void)
{
	char	  **ids = calloc(gw_config.naccounts, sizeof(char *));
	PGresult   *res;
	PGconn	   *c;
	int			rc = 0;

	if (ids == NULL)
		return 1;
	for (int i = 0; i < gw_config.naccounts && rc == 0; i++)
	{
		Account    *a = &gw_config.accounts[i];
		char	   *copy = NULL;
		struct timespec deadline = deadline_in(gw_config.db_timeout_ms);

		if ((a->pool = pool_new(a, gw_config.conninfo, gw_config.pool_size, true, NULL)) == NULL)
			rc = 1;
		else if ((ids[i] = identity(a->pool->conn[0])) == NULL ||
				 (gw_config.secondary_conninfo != NULL &&
				  (copy = copy_identity(a->pool->conn[0], &deadline)) == NULL))
		{
			fprintf(stderr, "tablestore-gateway: cannot identify the database of account \"%s\"\n", a->name);
			rc = 1;
		}
		else if (gw_config.secondary_conninfo != NULL &&
				 (a->secondary = pool_new(a, gw_config.secondary_conninfo,
										  gw_config.secondary_pool_size, false, copy)) == NULL)
		{
			fprintf(stderr, "tablestore-gateway: the secondary of account \"%s\" must be a hot standby of "
					"its database (--secondary-db: a standby of --db's server, the same database)\n", a->name);
			rc = 2;
		}
		else if (a->secondary != NULL && a->secondary->conn[0] != NULL)
		{
			/* the same database as replicated, but a standby, not the primary itself? */
			char	   *sid = identity(a->secondary->conn[0]);

			if (sid == NULL || strcmp(sid, ids[i]) == 0)
			{
				fprintf(stderr, "tablestore-gateway: the secondary of account \"%s\" (--secondary-db) is "
						"the primary itself, not a hot standby of it\n", a->name);
				rc = 2;
			}
			free(sid);
		}
		/* copy lives on as the secondary's expect */
		if (a->secondary == NULL)
			free(copy);
		for (int j = 0; j < i && rc == 0; j++)
			if (strcmp(ids[i], ids[j]) == 0)
			{
				fprintf(stderr, "tablestore-gateway: accounts \"%s\" and \"%s\" would share database %s; "
						"an account is the unit of isolation, so each needs a database of its own "
						"(the fourth field of an accounts file line, or --account NAME:KEY:ROLE:DATABASE)\n",
						gw_config.accounts[j].name, a->name, ids[i]);
				rc = 2;
			}
	}
	for (int i = 0; i < gw_config.naccounts; i++)
		free(ids[i]);
	free(ids);
	if (rc != 0)
		return rc;

	c = gw_config.accounts[0].pool->conn[0];
	res = PQexec(c, "SELECT code, sqlstate, http_status, service_message FROM tablestore.error_codes()");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		fprintf(stderr, "tablestore-gateway: cannot read tablestore.error_codes(): %s", PQerrorMessage(c));
		PQclear(res);
		return 1;
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
	return 0;
}

/*
 * pool_get: a free slot of the pool, waiting at most pool_wait_ms; -1 when
 * none became free (the caller answers 503).
 */
static int
pool_get(DbPool *p)
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
	pthread_mutex_lock(&p->lock);
	while (p->nfree == 0)
	{
		if (pthread_cond_timedwait(&p->cond, &p->lock, &until) == ETIMEDOUT && p->nfree == 0)
		{
			pthread_mutex_unlock(&p->lock);
			return -1;
		}
	}
	/* prefer a slot with an open connection */
	for (int i = 0; i < p->size; i++)
		if (!p->busy[i] && (slot < 0 || (p->conn[i] != NULL && p->conn[slot] == NULL)))
			slot = i;
	p->busy[slot] = true;
	p->nfree--;
	pthread_mutex_unlock(&p->lock);
	return slot;
}

/* pool_put: give a slot back; a broken connection is closed first. */
static void
pool_put(DbPool *p, int slot)
{
	if (p->conn[slot] != NULL && PQstatus(p->conn[slot]) != CONNECTION_OK)
	{
		PQfinish(p->conn[slot]);
		p->conn[slot] = NULL;
	}
	pthread_mutex_lock(&p->lock);
	p->busy[slot] = false;
	p->nfree++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
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
	if (state != NULL)
		snprintf(err->sqlstate, sizeof(err->sqlstate), "%s", state);
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
 * A call in progress: what the statement's rows go to.  Without fn the
 * whole result is kept in out; with fn the rows are read one at a time
 * (libpq's single-row mode, so a large result is never held whole) and
 * handed to fn until it says stop, the rest being read and dropped.
 */
typedef struct Call
{
	DbRowFn		fn;
	void	   *arg;
	PGresult   *out;
	int			delivered;		/* rows handed to fn */
	bool		stopped;
} Call;

/* deliver: hand the rows of res to the call's function. */
static void
deliver(Call *call, PGresult *res)
{
	for (int i = 0; i < PQntuples(res) && !call->stopped; i++)
	{
		PGresult   *row = res;

		call->delivered++;
		if (PQntuples(res) > 1)
		{
			/* a whole result (single-row mode refused): one row at a time */
			row = PQcopyResult(res, PG_COPYRES_ATTRS);
			if (row == NULL)
			{
				call->stopped = true;
				return;
			}
			for (int f = 0; f < PQnfields(res); f++)
				PQsetvalue(row, 0, f, PQgetisnull(res, i, f) ? NULL : PQgetvalue(res, i, f),
						   PQgetisnull(res, i, f) ? -1 : PQgetlength(res, i, f));
		}
		call->stopped = !call->fn(call->arg, row);
		if (row != res)
			PQclear(row);
	}
}

/*
 * run_call: on connection c, set the role (if any) and run the prepared
 * statement, both pipelined before one Sync, so they share one implicit
 * transaction and the role ends with it.  False with err filled when the
 * call failed; err->timed_out when the server did not answer within
 * --db-timeout-ms (the caller must drop the connection: it is left in the
 * middle of the protocol).
 */
static bool
run_call(PGconn *c, const char *role, const char *stmt, int nparams,
		 const char *const *values, Call *call, DbErr *err)
{
	PGresult   *res;
	PGresult   *failed = NULL;
	bool		synced = false;
	int			stmt_q = role ? 1 : 0;	/* the statement's place in the pipeline */
	int			q = 0;
	struct timespec deadline = deadline_in(gw_config.db_timeout_ms);

	if (!PQenterPipelineMode(c) ||
		(role && !PQsendQueryPrepared(c, "role", 1, &role, NULL, NULL, 0)) ||
		!PQsendQueryPrepared(c, stmt, nparams, values, NULL, NULL, 0) ||
		!PQpipelineSync(c))
	{
		map_error(NULL, c, err);
		PQexitPipelineMode(c);
		return false;
	}
	if (call->fn && stmt_q == 0)
		PQsetSingleRowMode(c);
	/* results: [role, NULL,] statement (rows), NULL, sync */
	for (int guard = 0; !synced && guard < 64;)
	{
		if (!wait_ready(c, &deadline))
		{
			fprintf(stderr, "tablestore-gateway: the database did not answer within %d ms: "
					"its connection is dropped\n", gw_config.db_timeout_ms);
			if (failed)
				PQclear(failed);
			if (call->out)
				PQclear(call->out);
			call->out = NULL;
			err->batch_index = -1;
			err->timed_out = true;
			set_err(err, "ServerBusy", 503,
					"The server is currently unable to receive requests. Please retry your request.",
					"the database did not answer in time");
			return false;
		}
		res = PQgetResult(c);
		if (res == NULL)
		{
			if (PQstatus(c) != CONNECTION_OK)
				break;
			guard++;
			if (++q == stmt_q && call->fn)
				PQsetSingleRowMode(c);
			continue;
		}
		switch (PQresultStatus(res))
		{
			case PGRES_PIPELINE_SYNC:
				synced = true;
				PQclear(res);
				break;
			case PGRES_SINGLE_TUPLE:
				if (q == stmt_q && failed == NULL && !call->stopped)
					deliver(call, res);
				PQclear(res);
				break;
			case PGRES_TUPLES_OK:
				guard++;
				if (q == stmt_q && call->fn == NULL && call->out == NULL)
					call->out = res;
				else
				{
					if (q == stmt_q && call->fn && failed == NULL && !call->stopped)
						deliver(call, res);
					PQclear(res);
				}
				break;
			case PGRES_PIPELINE_ABORTED:
				guard++;
				PQclear(res);
				break;
			default:
				guard++;
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
		if (call->out)
			PQclear(call->out);
		call->out = NULL;
		return false;
	}
	return true;
}

/*
 * pool_call: run a call for a request, as its account's role (or the role
 * its bearer token's principal maps to, oauth.c), on a
 * connection of its account's pool.  False with err filled (503 when no
 * connection was free in time, or none could be opened).
 */
static bool
pool_call(Req *r, const char *stmt, int nparams, const char *const *values, Call *call, DbErr *err)
{
	/* a request at <account>-secondary reads the standby, when there is one */
	DbPool	   *p = r->secondary && r->acct->secondary ? r->acct->secondary : r->acct->pool;
	bool		ok = false;
	bool		probe = false;
	bool		tripped;

	/*
	 * A pooled connection whose session the server ended (a restart, a
	 * terminated backend) fails with 57P0x, and nothing was applied: the
	 * request gets one more try on a new connection, unless rows of the
	 * answer were already passed on.
	 */
	for (int attempt = 0; attempt < 2; attempt++)
	{
		int			slot;

		if (attempt > 0)
			db_err_free(err);
		memset(err, 0, sizeof(*err));
		err->batch_index = -1;
		if (p != NULL && !pool_admit(p, &probe))
		{
			err->unreachable = true;
			set_err(err, "ServerBusy", 503,
					"The server is currently unable to receive requests. Please retry your request.",
					"the database did not answer lately");
			return false;
		}
		if (p == NULL || (slot = pool_get(p)) < 0)
		{
			if (p != NULL && probe)
				pool_verdict(p, true, true);
			set_err(err, "ServerBusy", 503,
					"The server is currently unable to receive requests. Please retry your request.",
					"no database connection became free in time");
			return false;
		}
		/* the breaker opened while this request waited for the slot */
		pthread_mutex_lock(&p->lock);
		tripped = !probe && p->down;
		pthread_mutex_unlock(&p->lock);
		if (tripped)
		{
			pool_put(p, slot);
			err->unreachable = true;
			set_err(err, "ServerBusy", 503,
					"The server is currently unable to receive requests. Please retry your request.",
					"the database did not answer lately");
			return false;
		}
		if (p->conn[slot] != NULL && conn_dead(p->conn[slot]))
		{
			PQfinish(p->conn[slot]);
			p->conn[slot] = NULL;
		}
		if (p->conn[slot] == NULL)
			p->conn[slot] = connect_one(p);
		if (p->conn[slot] == NULL)
		{
			/*
			 * the standby's failed attempt opens its breaker (or keeps it
			 * open); the primary's only keeps it open after a probe
			 */
			if (p->optional || probe)
				pool_verdict(p, probe, true);
			pool_put(p, slot);
			err->unreachable = true;
			set_err(err, "ServerBusy", 503,
					"The server is currently unable to receive requests. Please retry your request.",
					"cannot connect to the database");
			return false;
		}
		ok = run_call(p->conn[slot], r->bearer ? r->role : r->acct->role, stmt, nparams, values, call, err);
		pool_verdict(p, probe, err->timed_out);
		if (err->timed_out)
		{
			/* a server that does not answer cannot be cancelled: the connection goes */
			PQfinish(p->conn[slot]);
			p->conn[slot] = NULL;
		}

		/*
		 * On the standby a statement that held back the replay longer than
		 * max_standby_streaming_delay is cancelled (40001, conflict with
		 * recovery; 40P01 when it was a deadlock with the replay): nothing
		 * was applied and the session goes on, so the request gets one more
		 * try there with a new snapshot; a second conflict is 503
		 * ServerBusy (map_error).
		 */
		if (!ok && p == r->acct->secondary && attempt == 0 && call->delivered == 0 &&
			(strcmp(err->sqlstate, "40001") == 0 || strcmp(err->sqlstate, "40P01") == 0))
		{
			pool_put(p, slot);
			continue;
		}
		if (!ok && err->retry && p->conn[slot] != NULL)
		{
			/* the session is over even if libpq has not noticed yet */
			PQfinish(p->conn[slot]);
			p->conn[slot] = NULL;
		}
		pool_put(p, slot);
		if (ok || !err->retry || call->delivered > 0)
			break;
	}
	return ok;
}

/*
 * db_call: run one of the prepared statements for a request.  Returns the
 * result (caller PQclear()s it) or NULL with err filled in.
 */
PGresult *
db_call(Req *r, const char *stmt, int nparams, const char *const *values, DbErr *err)
{
	Call		call = {0};

	return pool_call(r, stmt, nparams, values, &call, err) ? call.out : NULL;
}

/*
 * db_call_rows: run a statement for a request and hand its rows one at a
 * time to fn (each a one-row result, valid during the call), which may
 * stop the reading; the memory held is one row, whatever the result's
 * size.  False with err filled when the call failed (fn may have seen
 * rows).
 */
bool
db_call_rows(Req *r, const char *stmt, int nparams, const char *const *values,
			 DbRowFn fn, void *arg, DbErr *err)
{
	Call		call = {0};

	call.fn = fn;
	call.arg = arg;
	return pool_call(r, stmt, nparams, values, &call, err);
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

/*
 * call_for_204: run a statement whose result is void; 204 on success,
 * else the service's error.
 */
void
call_for_204(Req *r, Resp *resp, const char *stmt, int nparams, const char *const *vals)
{
	DbErr		err;
	PGresult   *res = db_call(r, stmt, nparams, vals, &err);

	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	PQclear(res);
	resp->status = 204;
}
