/*-------------------------------------------------------------------------
 *
 * gateway.h
 *	  Declarations shared by the parts of tablestore-gateway, the HTTP
 *	  server that speaks the Azure Table service's REST protocol and serves
 *	  it from the tablestore extension.
 *
 * The gateway is a separate process: libmicrohttpd parses HTTP, OpenSSL
 * computes HMACs and base64, json-c reads and writes JSON, and libpq calls
 * the extension's SQL functions, always as prepared statements with the
 * request's values as parameters.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_GATEWAY_H
#define TSGW_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <json-c/json.h>
#include <libpq-fe.h>
#include <microhttpd.h>

/* Limits enforced before anything reaches the database. */
#define GW_MAX_BODY			(4 * 1024 * 1024)	/* any request body */
#define GW_MAX_PAGE_BYTES	(4 * 1024 * 1024)	/* entities of one query page */
#define GW_MAX_URI			16384	/* request target, path and query */
#define GW_MAX_PARAMS		32	/* query parameters of one URL */
#define GW_MAX_DISCARD		(32 * 1024 * 1024)	/* body bytes read and dropped
												 * before a refusal */
#define GW_MAX_HEADERS		24	/* response headers we add */
#define GW_MAX_BATCH_OPS	100
#define GW_DATE_SKEW		(15 * 60)	/* seconds a signed date may be off */
#define GW_VERSION			"2019-02-02"

/* buf.c: a growable byte buffer, always NUL-terminated, and allocation */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

extern void buf_append(Buf *b, const char *s, size_t n);
extern void buf_puts(Buf *b, const char *s);
extern void buf_printf(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void buf_free(Buf *b);
extern void *xmalloc(size_t n);
extern char *xstrdup(const char *s);
extern char *xstrndup(const char *s, size_t n);

struct DbPool;

/*
 * One configured account: name, HMAC key, PostgreSQL role and database.
 * An account is the unit of isolation: its tables live in its own
 * database, served by its own pool (db.c).
 */
typedef struct Account
{
	char	   *name;
	unsigned char key[128];
	int			keylen;
	char	   *role;			/* NULL: the gateway's own login role */
	char	   *database;		/* NULL: the database of --db */
	struct DbPool *pool;
} Account;

/* Gateway configuration (main.c). */
typedef struct GwConfig
{
	const char *listen_addr;
	int			port;
	const char *conninfo;
	int			pool_size;
	int			threads;
	int			pool_wait_ms;
	int			conn_timeout;	/* seconds a client may stay idle */
	int			header_timeout; /* seconds to send a request's line and
								 * headers */
	int			request_timeout;	/* seconds to send a request's body */
	int			max_connections;
	int			max_per_ip;		/* connections of one client address */
	size_t		memory_budget;	/* bytes of bodies and responses held */
	int			statement_timeout_ms;
	bool		verbose;
	bool		tls;			/* HTTPS (--tls-cert, --tls-key) */
	Account    *accounts;
	int			naccounts;
} GwConfig;

extern GwConfig gw_config;

/* account.c */
extern Account *find_account(const char *name, size_t len);
extern Account *unknown_account(const char *name, size_t len);

/* Metadata levels of a JSON response. */
typedef enum Level
{
	LEVEL_NONE,
	LEVEL_MINIMAL,
	LEVEL_FULL
} Level;

typedef struct Param
{
	char	   *name;
	char	   *value;
} Param;

/* A shared access signature found in the query string (auth.c). */
typedef struct Sas
{
	bool		present;
	bool		account_sas;	/* else a table SAS */
	const char *perms;			/* sp */
	const char *srt;			/* account SAS resource types */
	const char *tn;				/* table SAS table */
	const char *spk,
			   *srk,
			   *epk,
			   *erk;			/* table SAS key range; NULL when absent */
	char		policy_perms[8];	/* sp from a stored access policy (si) */
	char		url_table[64];	/* tn when the SAS has none: the URL's table */
} Sas;

/*
 * What a request's path (after the account, decoded) addresses: decided
 * once by the request parser (parse_resource), for the SAS precheck and
 * for the routing alike.
 */
typedef enum Resource
{
	RES_BAD,					/* none of the forms below */
	RES_SERVICE,				/* the account root: "" */
	RES_TABLES,					/* "Tables" or "Tables()" */
	RES_TABLE,					/* "Tables('name')" */
	RES_TABLE_BAD,				/* starts "Tables('" but is not that form */
	RES_BATCH,					/* "$batch" */
	RES_ENTITIES,				/* "table" or "table()" */
	RES_ENTITY					/* "table(PartitionKey='pk',RowKey='rk')" */
} Resource;

/* A request's resource and the names its path carries (parse_resource). */
typedef struct Target
{
	Resource	kind;
	char	   *table;			/* RES_TABLE, RES_ENTITIES, RES_ENTITY */
	char	   *pk;				/* RES_ENTITY; all three malloc'd */
	char	   *rk;
	bool		bare;			/* RES_ENTITIES as "table", not "table()" */
} Target;

/* What a Prefer header asks for. */
typedef enum Prefer
{
	PREFER_NONE,
	PREFER_NO_CONTENT,			/* return-no-content */
	PREFER_CONTENT				/* return-content */
} Prefer;

/* A query's options, as the URL gives them (NULL: absent). */
typedef struct QueryOpts
{
	const char *filter;			/* $filter */
	const char *select;			/* $select */
	int			top;			/* $top: 1000 if absent, -1 if not valid */
	const char *next_table;		/* NextTableName, as sent */
	const char *next_pk;		/* NextPartitionKey, as sent */
	const char *next_rk;		/* NextRowKey, as sent */
} QueryOpts;

/* A response being built. */
typedef struct Resp
{
	int			status;
	Buf			body;
	const char *ctype;			/* static string or NULL */
	int			nhdr;
	char	   *hname[GW_MAX_HEADERS];
	char	   *hval[GW_MAX_HEADERS];
	bool		close;			/* close the connection after it */
	size_t		charged;		/* bytes of the memory budget already
								 * taken for the body (mem_reserve) */
} Resp;

typedef struct AddrSlot AddrSlot;	/* budget.c */

/*
 * One HTTP request, from its first byte to its response.  It lives in its
 * connection's context (conn.c), so whatever way libmicrohttpd ends a
 * request, the connection's end frees it.
 */
typedef struct Req
{
	char	   *raw_uri;		/* as sent, from the URI log callback */
	Buf			body;
	size_t		body_reserved;	/* bytes of the memory budget it holds */
	size_t		discarded;		/* body bytes read and dropped */
	bool		too_large;
	bool		dispatched;
	bool		refused;		/* answered from the headers: body dropped */
	Resp		refusal;		/* that answer */

	struct MHD_Connection *conn;
	const char *method;			/* after X-HTTP-Method */
	const char *wire_method;	/* as sent, what Shared Key signs */
	Account    *acct;
	bool		unknown_acct;	/* acct is a stand-in that never
								 * authenticates */
	AddrSlot   *addr;			/* its client address's share of the memory
								 * budget (budget.c) */
	bool		secondary;		/* addressed as <account>-secondary */
	bool		stats_repeats_account;	/* /<account>-secondary/<account>/
										 * ?restype=service&comp=stats */
	char	   *raw_path;		/* path as sent, still percent-encoded */
	char	   *rest;			/* decoded path after the account */
	Target		target;			/* what rest addresses */
	Prefer		prefer;			/* the Prefer header */
	const char *if_match;		/* the If-Match header without the blanks
								 * around it (RFC 7230's OWS), NULL if none */
	char	   *if_match_buf;	/* its trimmed copy, when it had blanks */
	QueryOpts	query;			/* $filter, $select, $top, continuation */
	Param		params[GW_MAX_PARAMS];
	int			nparams;
	Level		level;
	bool		xml;			/* an XML endpoint: errors as XML */
	char		request_id[40];
	char	   *base;			/* http://host[/account] */
	Sas			sas;
	bool		bearer;			/* authenticated by an OAuth bearer token */
	const char *role;			/* with bearer: the role its principal acts
								 * as (NULL: the login role) */
	const char *client_ip;		/* textual client address */
	char		ipbuf[64];
} Req;

/* request.c: the request parser */
extern const char *req_header(Req *r, const char *name);
extern void req_header_list(Req *r, const char *name, Buf *out);
extern const char *req_param(Req *r, const char *name);
extern bool request_parse(Req *r, Resp *resp);
extern const char *query_split(char *q, Param *params, int *nparams, bool *sas_twice);
extern Level accept_level(const char *format, const char *accept, bool *atom_only);
extern bool negotiate(Req *r, Resp *resp);
extern bool check_x_method(Req *r, Resp *resp, const char *xm);
extern bool parse_entity_path(const char *rest, char **table, char **pk, char **rk, bool *has_keys);
extern void parse_resource(const char *rest, Target *t);
extern Prefer parse_prefer(const char *value);
extern const char *entity_op(const char *method, bool has_keys, bool if_match);
extern char *normalize_etag(const char *v);
extern bool check_top(Req *r, Resp *resp);
extern json_object *parse_body_object(Req *r, Resp *resp);
extern bool body_md5_matches(Req *r);

/* response.c: the response writer */
extern void resp_header(Resp *resp, const char *name, const char *value);
extern void resp_json(Req *r, Resp *resp, int status, json_object *obj);
extern void resp_error(Req *r, Resp *resp, int status, const char *code, const char *message, const char *extra);
extern const char *status_text(int status);
extern const char *json_ctype(Level level);
extern const char *json_text(json_object *obj);
extern void free_resp(Resp *resp);
extern void bad_request(Req *r, Resp *resp, const char *code, const char *why);
extern void not_allowed(Req *r, Resp *resp);
extern void resp_internal(Req *r, Resp *resp, const char *detail);
extern void refuse_secondary_write(Req *r, Resp *resp);

/* odata.c: OData JSON payloads */
extern json_object *shape_entity(Req *r, Level level, const char *table, json_object *e, bool single);
extern json_object *shape_entity_keyed(Req *r, Level level, const char *table, json_object *e, bool single,
									   const char *pk, const char *rk);
extern void etag_header(Resp *resp, json_object *e);
extern json_object *table_item(Req *r, const char *name, bool single);
extern void metadata_prefix(Req *r, Buf *b, const char *table, const char *suffix);
extern void continuation_headers(Req *r, Resp *resp, const char *table, const char *npk, const char *nrk);

/* encode.c: percent-encoding, base64, UUIDs */
extern bool pct_decode(char *s);
extern int	utf8_seq_len(const unsigned char *p, const unsigned char *end);
extern void url_encode_key(Buf *b, const char *key);
extern void entity_path(Buf *b, const char *table, const char *pk, const char *rk);
extern char *b64_encode(const unsigned char *data, size_t len);
extern int	b64_decode(const char *in, unsigned char *out, size_t outcap);
extern void new_uuid(char *out);

/* token.c: continuation tokens */
extern char *token_encode(Req *r, char kind, const char *table, const char *key);
extern char *token_decode(Req *r, char kind, const char *table, const char *token);

/* budget.c: the memory budget */
extern bool budget_init(void);
extern bool mem_reserve(size_t n, bool may_refuse);
extern void mem_release(size_t n);
extern bool addr_charge(AddrSlot *addr, size_t n, bool may_refuse);
extern void addr_release(AddrSlot *addr, size_t n);
extern AddrSlot *addr_join(const char *ip);
extern void addr_leave(AddrSlot *addr);
extern bool req_charge(Req *r, size_t n);
extern void req_release(Req *r, size_t n);

/* auth.c */
extern bool hmac_sha256(const unsigned char *key, size_t keylen, const void *data, size_t len,
						unsigned char *out);
extern bool authenticate(Req *r, Resp *resp);
extern int	key_cmp(const char *a, const char *b);
extern bool key_in_range(Req *r, const char *pk, const char *rk);
extern bool auth_refuse_sas(Req *r, Resp *resp, const char *why);
extern bool sas_allows(Req *r, Resp *resp, const char *op, const char *table,
					   const char *pk, const char *rk);

/* oauth.c: OAuth bearer tokens (--oauth-*) */
extern bool oauth_add_key(const char *path);
extern bool oauth_add_issuer(const char *iss);
extern bool oauth_add_tenant(const char *tid);
extern bool oauth_add_audience(const char *aud);
extern bool oauth_add_principal(const char *spec);
extern bool oauth_check_config(void);
extern bool oauth_enabled(void);
extern bool oauth_authenticate(Req *r, Resp *resp, const char *token);

/* db.c: the connection pool and the calls of the extension's functions */
typedef struct DbErr
{
	int			http;
	char		code[64];
	char	   *message;		/* service message (malloc'd) */
	char	   *reason;			/* PostgreSQL's message (malloc'd) */
	int			batch_index;	/* -1 when not a batch operation */
	bool		retry;			/* the server ended the session: nothing applied */
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

/* tables.c: the table handlers */
extern void table_query(Req *r, Resp *resp);
extern void table_get(Req *r, Resp *resp, const char *name);
extern void table_create(Req *r, Resp *resp);
extern void table_delete(Req *r, Resp *resp, const char *name);

/* entities.c: the entity handlers */
extern void entity_query(Req *r, Resp *resp, const char *table);
extern void entity_get(Req *r, Resp *resp, const char *table, const char *pk, const char *rk);
extern void entity_insert(Req *r, Resp *resp, const char *table);
extern void entity_write(Req *r, Resp *resp, const char *table, const char *pk, const char *rk);
extern void entity_delete(Req *r, Resp *resp, const char *table, const char *pk, const char *rk);

/* dispatch.c: a request from its headers to its handler */
extern bool prepare_request(Req *r, Resp *resp);
extern void handle_request(Req *r, Resp *resp);

/* conn.c: connections and their deadlines */
extern bool conn_start(struct MHD_Daemon **daemon, unsigned int flags, struct sockaddr *sa,
					   struct MHD_OptionItem *tls_opts);
extern void conn_stop(struct MHD_Daemon *daemon);

/* acl.c, aclxml.c: Get/Set Table ACL (stored access policies) */
extern void table_acl(Req *r, Resp *resp, const char *table);
extern char *aclxml_to_json(const char *body, size_t len, const char **why);
extern bool aclxml_from_json(const char *json, Buf *b);

/* batch.c */
extern void handle_batch(Req *r, Resp *resp);

/*
 * batchparse.c: a $batch body taken apart into its sub-requests, each
 * read with the request parser's functions
 */
typedef struct SubReq
{
	char	   *method;
	char	   *table;
	char	   *pk;
	char	   *rk;
	bool		has_keys;
	char	   *if_match;
	Prefer		prefer;
	Level		level;			/* its Accept or $format; else the batch's */
	bool		atom_only;		/* its Accept offers only Atom (a 415) */
	char	   *select;			/* its URL's $select (a GET), or NULL */
	const char *body;
	size_t		body_len;
} SubReq;

extern const char *batch_parse(Req *r, const char *ctype, const char *start, size_t len,
							   SubReq *subs, int *nsubs, bool *too_many, bool *query);
extern void free_sub(SubReq *s);
extern const char *sub_to_op(SubReq *s, json_object **out, const char **opname, const char **code);

/*
 * json.c: the strict reader of request JSON (json_parse_strict is its
 * NULL-on-any-failure form).
 */
#define GW_JSON_MAX_DEPTH	32	/* nested objects and arrays */
#define GW_JSON_MAX_VALUES	65536	/* values in one JSON text */
#define GW_JSON_DUPLICATE_MESSAGE "A property is specified more than one time."

typedef enum JsonResult
{
	JSON_OK,
	JSON_INVALID,				/* not RFC 8259 JSON, bad UTF-8, too deep or big */
	JSON_DUPLICATE				/* an object names a member twice */
} JsonResult;

extern JsonResult json_parse_request(const char *text, size_t len, json_object **out, const char **why);
extern json_object *json_request_object(Req *r, Resp *resp, const char *text, size_t len);
extern json_object *json_parse_strict(const char *text, size_t len);

/*
 * xml.c: the strict reader of request XML (no DTD, no entity definitions,
 * bounded) and XML escaping.
 */
#define GW_XML_MAX_DEPTH	8	/* nested elements */
#define GW_XML_MAX_NODES	1024	/* elements in one document */
#define GW_XML_MAX_BYTES	(256 * 1024)	/* a document's size */

typedef struct XmlNode
{
	char	   *name;
	char	   *text;			/* decoded character data ("" if none) */
	struct XmlNode *child;		/* first child element */
	struct XmlNode *next;		/* next sibling */
	int			nchild;
} XmlNode;

extern XmlNode *xml_parse(const char *text, size_t len, const char **why);
extern void xml_free(XmlNode *n);
extern void xml_escape(Buf *b, const char *s);

/* service.c: Get/Set Service Properties and CORS */
extern void service_properties(Req *r, Resp *resp);
extern void cors_preflight(Req *r, Resp *resp);
extern void cors_response_headers(Req *r, Resp *resp);

#endif							/* TSGW_GATEWAY_H */
