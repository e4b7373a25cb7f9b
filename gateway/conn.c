/*-------------------------------------------------------------------------
 *
 * conn.c
 *	  The life of a client connection and of each request on it: what the
 *	  gateway holds for them, for how long, and how much of it.
 *
 * libmicrohttpd parses HTTP; this file decides what a client may cost.
 *
 * Ownership.  Every connection gets a context (Conn) when it is accepted
 * and loses it when it is closed; the request being served lives inside
 * it.  libmicrohttpd does not tell the application about every request it
 * drops (a request line whose query string overflows its per-connection
 * pool is closed without the completion callback), so nothing a request
 * allocates may depend on that callback alone: the connection's end frees
 * whatever its last request left.
 *
 * Deadlines.  libmicrohttpd's timeout is an idle timeout that every byte
 * resets, so a client sending a header byte every few seconds would hold
 * its connection forever.  A watchdog thread shuts down the socket of a
 * connection whose request line and headers are not complete within
 * --header-timeout of its accept or of its previous response's end (which
 * also bounds an idle kept-alive connection), and of one whose body is
 * not complete within --request-timeout of its headers.  shutdown() makes
 * libmicrohttpd see the end of the stream and close the connection in its
 * own thread; the descriptor stays valid until libmicrohttpd's close
 * notification, which takes the same lock.  Connections per client
 * address are limited by libmicrohttpd (--max-connections-per-ip).
 *
 * Refusal before the body.  A request is authenticated as soon as its
 * headers are complete (Shared Key and SAS do not sign the body); one that
 * is refused, or whose body would exceed the limits, has its body read and
 * dropped as it arrives, never buffered, and is answered at its end (at
 * once when the client waits for 100-continue).
 *
 * Memory.  Request bodies and response bodies are charged to one budget
 * (--memory-budget) shared by all connections, of which one client address
 * may hold a quarter.  A body is charged as it arrives (an announced length
 * costs nothing until its bytes come); a query charges a whole page before
 * it runs (so
 * that clients that ask for large pages and never read them are refused
 * at once, not after the database worked for them on the threads every
 * client needs); another read whose answer would take the budget over is
 * answered 503 ServerBusy instead; a write's answer is always sent (the
 * write is done) and is small.  Responses are handed to libmicrohttpd as
 * a stream over the gateway's buffer, not copied, and their charge is
 * released when libmicrohttpd lets go of them, sent or not.  When idle the
 * watchdog returns freed heap to the system.
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>
#include <openssl/rand.h>

#include "conn.h"

#include "budget.h"
#include "buf.h"
#include "config.h"
#include "dispatch.h"
#include "gwlimits.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"
#include "service.h"

/* A client connection (see the file header). */
typedef struct Conn
{
	struct Conn *prev;
	struct Conn *next;
	int			fd;
	double		phase_start;	/* accept, or the end of the last response */
	double		headers_at;		/* headers complete; 0 while awaited */
	bool		body_done;		/* the request's body is in */
	bool		cut;			/* the watchdog shut its socket */
	char		ip[64];
	AddrSlot   *addr;			/* its address's slot (addrs_lock) */
	Req			req;			/* the request being served */
} Conn;

/* A response body streamed to libmicrohttpd. */
typedef struct Stream
{
	Buf			body;
	size_t		charged;		/* bytes of the budget it holds */
	AddrSlot   *addr;			/* and of its address's share */
} Stream;

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static Conn *conns;

static pthread_t watchdog_thread;
static pthread_mutex_t watchdog_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watchdog_cond = PTHREAD_COND_INITIALIZER;
static bool watchdog_stop;

/* Response bodies at most this long are never refused for memory. */
#define SMALL_RESPONSE	(64 * 1024)

/* now: monotonic seconds. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * xml_endpoint: whether the request's errors are XML before its query is
 * parsed (a 413 refused while its body arrives): as request.c decides
 * for an unauthenticated request, by restype or comp in the query.
 */
static bool
xml_endpoint(Req *r)
{
	const char *p = r->raw_uri ? strchr(r->raw_uri, '?') : NULL;

	while (p != NULL)
	{
		p++;
		if (strncmp(p, "restype=", 8) == 0 || strncmp(p, "comp=", 5) == 0)
			return true;
		p = strchr(p, '&');
	}
	return false;
}

/* req_reset: free everything a request holds and empty it. */
static void
req_reset(Req *r)
{
	free(r->raw_uri);
	buf_free(&r->body);
	if (r->body_reserved)
		addr_release(r->addr, r->body_reserved);
	free_resp(&r->refusal);
	free(r->raw_path);
	free(r->rest);
	free(r->target.table);
	free(r->target.pk);
	free(r->target.rk);
	free(r->if_match_buf);
	free(r->base);
	for (int i = 0; i < r->nparams; i++)
	{
		free(r->params[i].name);
		free(r->params[i].value);
	}
	if (r->unknown_acct && r->acct != NULL)
		free(r->acct->name);
	free(r->unknown_acct ? r->acct : NULL);
	{
		AddrSlot   *addr = r->addr;

		memset(r, 0, sizeof(*r));
		r->addr = addr;
	}
}

/* conn_of: the context of a libmicrohttpd connection, or NULL. */
static Conn *
conn_of(struct MHD_Connection *connection)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? (Conn *) ci->socket_context : NULL;
}

/*
 * on_connection: a connection accepted (its context created and
 * registered with the watchdog) or closed (its context and whatever its
 * request left freed).
 */
static void
on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	Conn	   *c;

	if (code == MHD_CONNECTION_NOTIFY_STARTED)
	{
		const union MHD_ConnectionInfo *fdi =
			MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
			MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		c = calloc(1, sizeof(Conn));
		if (c == NULL)
		{
			*socket_context = NULL;
			return;
		}
		c->fd = fdi ? fdi->connect_fd : -1;
		c->phase_start = now();
		if (ai && ai->client_addr)
		{
			if (ai->client_addr->sa_family == AF_INET)
				inet_ntop(AF_INET, &((struct sockaddr_in *) ai->client_addr)->sin_addr, c->ip, sizeof(c->ip));
			else if (ai->client_addr->sa_family == AF_INET6)
				inet_ntop(AF_INET6, &((struct sockaddr_in6 *) ai->client_addr)->sin6_addr, c->ip, sizeof(c->ip));
		}
		c->addr = addr_join(c->ip);
		c->req.addr = c->addr;
		pthread_mutex_lock(&conns_lock);
		c->next = conns;
		if (conns)
			conns->prev = c;
		conns = c;
		pthread_mutex_unlock(&conns_lock);
		*socket_context = c;
		return;
	}
	c = *socket_context;
	if (c == NULL)
		return;
	pthread_mutex_lock(&conns_lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&conns_lock);
	req_reset(&c->req);
	addr_leave(c->addr);
	free(c);
	*socket_context = NULL;
}

/*
 * on_uri: libmicrohttpd hands us the request target exactly as sent,
 * before any decoding; Shared Key signs that form, so keep it.  The
 * request's context is the connection's (any leftover of a request that
 * libmicrohttpd dropped is freed here).
 *
 * The gateway parses the query string itself, from this copy.
 * libmicrohttpd 0.9 parses it as well, right after this callback, into
 * its per-connection pool; a query of a thousand arguments exhausts the
 * pool and the request is dropped without an answer.  So the string
 * libmicrohttpd is about to parse (it lies in its read buffer, which it
 * rewrites itself) is ended here, and the gateway answers over-long
 * targets and too many arguments itself.
 */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *connection)
{
	Conn	   *c = conn_of(connection);
	char	   *q;

	if (c == NULL)
		return NULL;
	req_reset(&c->req);
	c->req.raw_uri = xstrdup(uri);
	q = strchr(uri, '?');
	if (q != NULL && q[1] != '\0' && strncmp(MHD_get_version(), "0.9.", 4) == 0)
		q[1] = '\0';
	return &c->req;
}

/*
 * on_completed: a request ended, whatever its end: free what it held and
 * start the clock of the next request's headers.
 */
static void
on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	Conn	   *c = conn_of(connection);

	if (*req_cls != NULL)
		req_reset((Req *) *req_cls);
	*req_cls = NULL;
	if (c != NULL)
	{
		pthread_mutex_lock(&conns_lock);
		c->phase_start = now();
		c->headers_at = 0;
		c->body_done = false;
		pthread_mutex_unlock(&conns_lock);
	}
}

/* stream_read: libmicrohttpd's reader over a response body. */
static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	Stream	   *s = cls;
	size_t		n;

	if (pos >= s->body.len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	n = s->body.len - pos;
	if (n > max)
		n = max;
	memcpy(buf, s->body.data + pos, n);
	return (ssize_t) n;
}

/* stream_free: libmicrohttpd is done with a response body. */
static void
stream_free(void *cls)
{
	Stream	   *s = cls;

	addr_release(s->addr, s->charged);
	buf_free(&s->body);
	free(s);
}

/*
 * send_response: queue a response with the headers the service sends on
 * every response: x-ms-request-id, x-ms-version, the client request id
 * echoed, Cache-Control and nosniff.  (libmicrohttpd adds Date.)  The body
 * moves out of resp into a stream charged to the memory budget; a read
 * whose large answer does not fit the budget is answered 503 instead.
 */
static enum MHD_Result
send_response(Req *r, Resp *resp)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	const char *v;
	Stream	   *s;
	bool		is_read = strcmp(r->method ? r->method : "", "GET") == 0 ||
		strcmp(r->method ? r->method : "", "HEAD") == 0;

	AddrSlot   *addr = r->addr;

	/* resp->charged was taken by the handler (entity_query) */
	if (resp->charged >= resp->body.len)
		addr_release(addr, resp->charged - resp->body.len);
	else if (!addr_charge(addr, resp->body.len - resp->charged,
						  is_read && resp->charged == 0 && resp->body.len > SMALL_RESPONSE))
	{
		addr_release(addr, resp->charged);
		resp->charged = 0;
		free_resp(resp);
		resp->ctype = NULL;
		resp_error(r, resp, 503, "ServerBusy",
				   "The server is currently unable to receive requests. Please retry your request.",
				   "the gateway's memory budget is in use");
		addr_charge(addr, resp->body.len, false);
	}
	resp->charged = 0;
	s = calloc(1, sizeof(Stream));
	if (s == NULL)
	{
		addr_release(addr, resp->body.len);
		return MHD_NO;
	}
	s->body = resp->body;
	s->charged = s->body.len;
	s->addr = addr;
	memset(&resp->body, 0, sizeof(resp->body));
	mr = MHD_create_response_from_callback(s->body.len, 32 * 1024, stream_read, s, stream_free);
	if (mr == NULL)
	{
		stream_free(s);
		return MHD_NO;
	}
	/* Access-Control-* of a cross-origin request, errors included (service.c) */
	cors_response_headers(r, resp);
	MHD_add_response_header(mr, "x-ms-request-id", r->request_id[0] ? r->request_id : "-");
	v = r->conn ? req_header(r, "x-ms-version") : NULL;
	if (v == NULL || strlen(v) != 10 || strspn(v, "0123456789-") != 10)
		v = GW_VERSION;
	MHD_add_response_header(mr, "x-ms-version", v);
	v = r->conn ? req_header(r, "x-ms-client-request-id") : NULL;
	if (v != NULL && strlen(v) <= 1024)
	{
		bool		clean = true;

		for (const unsigned char *p = (const unsigned char *) v; *p; p++)
			if (*p < 0x20 || *p >= 0x7f)
				clean = false;
		if (clean)
			MHD_add_response_header(mr, "x-ms-client-request-id", v);
	}
	MHD_add_response_header(mr, "Cache-Control", "no-cache");
	MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(mr, "Server", "tablestore-gateway");
	if (resp->ctype)
	{
		MHD_add_response_header(mr, "Content-Type", resp->ctype);
		if (strncmp(resp->ctype, "application/json", 16) == 0)
			MHD_add_response_header(mr, "DataServiceVersion", "3.0;");
	}
	for (int i = 0; i < resp->nhdr; i++)
		MHD_add_response_header(mr, resp->hname[i], resp->hval[i]);
	if (resp->close)
		MHD_add_response_header(mr, "Connection", "close");
	ret = MHD_queue_response(r->conn, resp->status ? resp->status : 500, mr);
	MHD_destroy_response(mr);
	if (gw_config.verbose)
		fprintf(stderr, "%s %s %s -> %d\n", r->client_ip ? r->client_ip : "-", r->method ? r->method : "-",
				r->raw_uri ? r->raw_uri : "", resp->status);
	free_resp(resp);
	resp->status = 0;			/* answered */
	return ret;
}

/*
 * header_count: how many times the request carries a header (any case).
 */
typedef struct HdrCount
{
	const char *name;
	int			n;
} HdrCount;

static enum MHD_Result
count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	HdrCount   *h = cls;

	if (strcasecmp(key, h->name) == 0)
		h->n++;
	return MHD_YES;
}

static int
header_count(struct MHD_Connection *conn, const char *name)
{
	HdrCount	h = {name, 0};

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &h);
	return h.n;
}

/*
 * bad_header: the first header whose name is not an RFC 7230 token (say
 * "Content-Length " with a blank before the colon, which libmicrohttpd
 * keeps as a header of another name while a proxy may read it as the
 * length) or whose value holds a NUL byte (cut short in what the gateway
 * reads, whole in what a proxy reads).
 */
static enum MHD_Result
check_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
			 const char *value, size_t value_size)
{
	const char **bad = cls;
	static const char tchar[] = "!#$%&'*+-.^_`|~0123456789"
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

	if (key_size == 0 || strspn(key, tchar) != key_size || strlen(key) != key_size ||
		(value != NULL && strlen(value) != value_size))
	{
		*bad = key;
		return MHD_NO;
	}
	return MHD_YES;
}

/*
 * check_framing: the headers that frame the request or that the gateway
 * reads as one value must each have one meaning: each at most once (Accept
 * and Prefer are lists, which HTTP lets a client split over several
 * headers: they are read whole, req_header_list), Content-Length
 * plain digits and not beside Transfer-Encoding (a proxy in front could
 * read the other one: request smuggling).  Sets *length to the announced
 * body length (-1: none announced).  False with a 400 in resp.
 */
static bool
check_framing(Req *r, Resp *resp, long long *length)
{
	static const char *const single[] = {
		"Authorization", "x-ms-date", "Date", "Host", "Content-Type", "Content-MD5",
		"Content-Length", "Transfer-Encoding", "If-Match", "X-HTTP-Method",
		"x-ms-version", "x-ms-client-request-id", "Expect", "DataServiceVersion",
		"MaxDataServiceVersion",
	};
	const char *cl = req_header(r, "Content-Length");
	const char *te = req_header(r, "Transfer-Encoding");
	const char *bad = NULL;

	*length = -1;
	MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, check_header, &bad);
	if (bad != NULL)
	{
		resp_error(r, resp, 400, "InvalidHeaderValue",
				   "The value for one of the HTTP headers is not in the correct format.",
				   "a header name is not a token, or a header value holds a NUL byte");
		return false;
	}
	if (te != NULL && strcasecmp(te, "chunked") != 0)
	{
		resp_error(r, resp, 501, "NotImplemented",
				   "The requested operation is not implemented on the specified resource.",
				   "the only Transfer-Encoding served is chunked");
		return false;
	}
	for (size_t i = 0; i < sizeof(single) / sizeof(single[0]); i++)
		if (header_count(r->conn, single[i]) > 1)
		{
			Buf			why = {0};

			buf_printf(&why, "the header %s is given more than once", single[i]);
			resp_error(r, resp, 400, "InvalidHeaderValue",
					   "The value for one of the HTTP headers is not in the correct format.", why.data);
			buf_free(&why);
			return false;
		}
	if (cl != NULL)
	{
		size_t		n = strlen(cl);

		if (n == 0 || n > 18 || strspn(cl, "0123456789") != n)
		{
			resp_error(r, resp, 400, "InvalidHeaderValue",
					   "The value for one of the HTTP headers is not in the correct format.",
					   "Content-Length must be a decimal number");
			return false;
		}
		if (req_header(r, "Transfer-Encoding") != NULL)
		{
			resp_error(r, resp, 400, "InvalidHeaderValue",
					   "The value for one of the HTTP headers is not in the correct format.",
					   "Content-Length and Transfer-Encoding exclude each other");
			return false;
		}
		*length = strtoll(cl, NULL, 10);
	}
	return true;
}

/*
 * refuse: answer the request from its headers with r->refusal.  When its
 * body is still to come, the answer waits for it (dropping it unread)
 * unless the client waits for 100-continue and will then send nothing.
 */
static enum MHD_Result
refuse(Req *r, bool body_to_come)
{
	const char *expect = req_header(r, "Expect");

	r->refused = true;
	if (!body_to_come || (expect != NULL && strcasecmp(expect, "100-continue") == 0))
	{
		/* a body the client may still send would be read as a request */
		if (body_to_come)
			r->refusal.close = true;
		return send_response(r, &r->refusal);
	}
	return MHD_YES;
}

/*
 * new_request_id: a request's x-ms-request-id, a version-4 UUID in text form
 * (37 bytes with NUL).  It names a request in logs and answers and is no
 * secret, so it comes from a per-thread splitmix64 generator seeded once
 * from OpenSSL: drawing it from OpenSSL's DRBG per request (locks, a
 * reseed check, AES-CTR) cost more than a tenth of the gateway's CPU for
 * single-entity requests.
 */
static void
new_request_id(char *out)
{
	static __thread uint64_t state;
	static const char hex[] = "0123456789abcdef";
	unsigned char u[16];
	int			o = 0;

	if (state == 0 && RAND_bytes((unsigned char *) &state, sizeof(state)) != 1)
		state = (uint64_t) time(NULL) ^ (uint64_t) (uintptr_t) &state;
	for (int half = 0; half < 2; half++)
	{
		uint64_t	z = (state += UINT64_C(0x9e3779b97f4a7c15));

		z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
		z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
		z ^= z >> 31;
		memcpy(u + 8 * half, &z, 8);
	}
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 15];
	}
	out[o] = '\0';
}

/*
 * on_request: libmicrohttpd's access handler, called once with the
 * headers, then per chunk of body, then once more at the end.
 */
static enum MHD_Result
on_request(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
		   const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	Req		   *r = *req_cls;
	Conn	   *c = conn_of(connection);
	Resp		resp = {0};

	if (r == NULL || c == NULL)
		return MHD_NO;
	if (!r->dispatched)
	{
		long long	length;
		bool		chunked;

		r->dispatched = true;
		r->conn = connection;
		r->method = r->wire_method = method;
		r->client_ip = c->ip;
		new_request_id(r->request_id);
		pthread_mutex_lock(&conns_lock);
		c->headers_at = now();
		pthread_mutex_unlock(&conns_lock);

		if (!check_framing(r, &r->refusal, &length))
		{
			r->refusal.close = true;
			return refuse(r, false);
		}
		chunked = req_header(r, "Transfer-Encoding") != NULL;
		if (length > GW_MAX_BODY)
		{
			/*
			 * Larger than anything the gateway reads.  A client that writes
			 * its whole body before reading would see a broken pipe, not
			 * the 413, if the connection closed now: the body is read and
			 * dropped, up to GW_MAX_DISCARD, and the 413 sent after it.
			 */
			r->xml = xml_endpoint(r);
			resp_error(r, &r->refusal, 413, "RequestBodyTooLarge",
					   "The request body is too large and exceeds the maximum permissible limit.", "at most 4 MiB");
			if (length > GW_MAX_DISCARD)
			{
				r->refusal.close = true;
				return refuse(r, false);
			}
			return refuse(r, true);
		}
		if (!prepare_request(r, &r->refusal))
			return refuse(r, length > 0 || chunked);
		/* the body is charged as it arrives, not as announced */
		return MHD_YES;
	}
	if (*upload_data_size != 0)
	{
		size_t		n = *upload_data_size;

		*upload_data_size = 0;
		if (r->refused || r->too_large)
		{
			r->discarded += n;
			return r->discarded > GW_MAX_DISCARD ? MHD_NO : MHD_YES;
		}
		if (r->body.len + n > GW_MAX_BODY)
		{
			r->too_large = true;
			buf_free(&r->body);
			r->discarded += n;
			return MHD_YES;
		}
		if (r->body.len + n > r->body_reserved)
		{
			/* charged as it grows, to the budget and the address's share */
			size_t		more = r->body.len + n - r->body_reserved;

			if (!addr_charge(c->addr, more, true))
			{
				resp_error(r, &r->refusal, 503, "ServerBusy",
						   "The server is currently unable to receive requests. Please retry your request.",
						   "the gateway's memory budget is in use");
				r->refused = true;
				buf_free(&r->body);
				r->discarded += n;
				return MHD_YES;
			}
			r->body_reserved += more;
		}
		buf_append(&r->body, upload_data, n);
		return MHD_YES;
	}

	/* the end of the request */
	pthread_mutex_lock(&conns_lock);
	c->body_done = true;
	pthread_mutex_unlock(&conns_lock);
	if (r->refused)
	{
		if (r->refusal.status == 0)
			return MHD_YES;		/* already answered */
		return send_response(r, &r->refusal);
	}
	if (r->too_large)
	{
		r->xml = xml_endpoint(r);
		resp_error(r, &resp, 413, "RequestBodyTooLarge",
				   "The request body is too large and exceeds the maximum permissible limit.", "at most 4 MiB");
		resp.close = true;
	}
	else
	{
		if (r->body.data == NULL)
			buf_append(&r->body, "", 0);
		handle_request(r, &resp);
	}
	return send_response(r, &resp);
}

/*
 * watchdog: every half second, cut the connections past their header or
 * body deadline (see the file header); return freed heap to the system
 * every few seconds.
 */
static void *
watchdog(void *arg)
{
	double		last_trim = now();

	pthread_mutex_lock(&watchdog_lock);
	while (!watchdog_stop)
	{
		struct timespec until;
		double		t;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 500 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L)
		{
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&watchdog_cond, &watchdog_lock, &until);
		if (watchdog_stop)
			break;
		t = now();
		pthread_mutex_lock(&conns_lock);
		for (Conn *c = conns; c != NULL; c = c->next)
		{
			bool		late;

			if (c->cut || c->fd < 0)
				continue;
			if (c->headers_at == 0)
				late = t - c->phase_start > gw_config.header_timeout;
			else
				late = !c->body_done && t - c->headers_at > gw_config.request_timeout;
			if (late)
			{
				shutdown(c->fd, SHUT_RDWR);
				c->cut = true;
				if (gw_config.verbose)
					fprintf(stderr, "%s: connection closed, its request took too long\n", c->ip);
			}
		}
		pthread_mutex_unlock(&conns_lock);
		if (t - last_trim > 2.0)
		{
			malloc_trim(0);
			last_trim = t;
		}
	}
	pthread_mutex_unlock(&watchdog_lock);
	return NULL;
}

/*
 * conn_start: start the watchdog and the daemon on address sa with the
 * given flags and TLS options.  False (logged) if either fails.
 */
bool
conn_start(struct MHD_Daemon **daemon, unsigned int flags, struct sockaddr *sa,
		   struct MHD_OptionItem *tls_opts)
{
	if (!budget_init())
		return false;
	if (pthread_create(&watchdog_thread, NULL, watchdog, NULL) != 0)
	{
		fprintf(stderr, "tablestore-gateway: cannot start the watchdog thread\n");
		return false;
	}
	*daemon = MHD_start_daemon(flags, (uint16_t) gw_config.port, NULL, NULL, &on_request, NULL,
							   MHD_OPTION_SOCK_ADDR, sa,
							   MHD_OPTION_THREAD_POOL_SIZE, (unsigned int) gw_config.threads,
							   MHD_OPTION_CONNECTION_LIMIT, (unsigned int) gw_config.max_connections,
							   MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int) gw_config.max_per_ip,
							   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) gw_config.conn_timeout,
	/* request line and headers: 64 KiB per connection */
							   MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) (64 * 1024),
							   MHD_OPTION_NOTIFY_CONNECTION, &on_connection, NULL,
							   MHD_OPTION_URI_LOG_CALLBACK, &on_uri, NULL,
							   MHD_OPTION_NOTIFY_COMPLETED, &on_completed, NULL,
							   MHD_OPTION_ARRAY, tls_opts,
							   MHD_OPTION_END);
	if (*daemon == NULL)
	{
		conn_stop(NULL);
		return false;
	}
	return true;
}

/* conn_stop: stop the daemon (closing every connection) and the watchdog. */
void
conn_stop(struct MHD_Daemon *daemon)
{
	if (daemon != NULL)
		MHD_stop_daemon(daemon);
	pthread_mutex_lock(&watchdog_lock);
	watchdog_stop = true;
	pthread_cond_signal(&watchdog_cond);
	pthread_mutex_unlock(&watchdog_lock);
	pthread_join(watchdog_thread, NULL);
}
