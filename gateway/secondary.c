/*-------------------------------------------------------------------------
 *
 * secondary.c
 *	  Get Service Stats (GET /?restype=service&comp=stats at
 *	  <account>-secondary): the secondary's geo-replication status and
 *	  LastSyncTime.
 *
 * With --secondary-db the secondary is a hot standby of the primary's
 * server and every read at <account>-secondary runs there (db.c picks the
 * pool).  Its status and LastSyncTime come from the standby itself, from
 * tablestore.replication_status() (which says what each status means and
 * how LastSyncTime is bounded); a standby that cannot be reached is
 * "unavailable" with an empty LastSyncTime, as the service answers when it
 * does not know one.
 *
 * LastSyncTime is a time such that every write on the primary before it
 * is readable at the secondary.  Such a time, once true, stays true while
 * the standby replays forward, but what replication_status() can compute
 * is not monotonic (fully caught up it is the primary's last message's
 * time, a moment later behind by one transaction it is that transaction's
 * predecessor's commit time), so the gateway never reports an earlier
 * LastSyncTime than it reported before for the account: a client polling
 * it sees it advance or stay, never go back.
 *
 * Without --secondary-db the secondary reads the primary itself, which is
 * always in sync: "live" and now, as before there was a standby.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "secondary.h"

#include "account.h"
#include "buf.h"
#include "db.h"
#include "reqtypes.h"
#include "response.h"

/* guards every account's last_sync */
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * monotonic_sync: the LastSyncTime to report for an account given the one
 * just computed (seconds since the epoch, 0 when unknown): never earlier
 * than one reported before.  An unknown one stays unknown (the standby
 * cannot say, e.g. it was promoted).
 */
static long long
monotonic_sync(Account *a, long long sync)
{
	if (sync <= 0)
		return 0;
	pthread_mutex_lock(&sync_lock);
	if (sync < a->last_sync)
		sync = a->last_sync;
	else
		a->last_sync = sync;
	pthread_mutex_unlock(&sync_lock);
	return sync;
}

/*
 * service_stats: the answer to Get Service Stats at the secondary (the
 * caller checked the method, the SAS and that the request addresses the
 * secondary).
 */
void
service_stats(Req *r, Resp *resp)
{
	char		status[16] = "live";
	long long	sync = (long long) time(NULL);
	char		when[64] = "";

	if (r->acct->secondary != NULL)
	{
		DbErr		err;
		PGresult   *res = db_call(r, "replication_status", 0, NULL, &err);

		if (res == NULL && !err.unreachable && !err.timed_out)
		{
			db_error_response(r, resp, &err);
			return;
		}
		if (res == NULL)
		{
			/* the standby is down, refuses connections or does not answer */
			db_err_free(&err);
			snprintf(status, sizeof(status), "unavailable");
			sync = 0;
		}
		else
		{
			if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
				snprintf(status, sizeof(status), "unavailable");
			else
				snprintf(status, sizeof(status), "%s", PQgetvalue(res, 0, 0));
			sync = PQntuples(res) != 1 || PQgetisnull(res, 0, 1) ? 0 : atoll(PQgetvalue(res, 0, 1));
			PQclear(res);
			sync = monotonic_sync(r->acct, sync);
		}
	}
	if (sync > 0)
	{
		time_t		t = (time_t) sync;
		struct tm	tm;

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	}
	buf_puts(&resp->body, "<?xml version=\"1.0\" encoding=\"utf-8\"?>");
	buf_printf(&resp->body,
			   "<StorageServiceStats><GeoReplication><Status>%s</Status>"
			   "<LastSyncTime>%s</LastSyncTime></GeoReplication></StorageServiceStats>", status, when);
	resp->status = 200;
	resp->ctype = "application/xml";
}
