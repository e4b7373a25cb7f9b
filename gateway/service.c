/*-------------------------------------------------------------------------
 *
 * service.c
 *	  Get/Set Table Service Properties and CORS: the XML of the properties
 *	  read and written through the extension's get_service_properties()
 *	  and set_service_properties(jsonb), which validate and store them in
 *	  the account's database; preflight OPTIONS requests answered from the
 *	  stored CORS rules; the Access-Control-* headers of cross-origin
 *	  requests.
 *
 * The CORS rules of each configured account are cached here: a preflight
 * is unauthenticated, so it must not cost a database call each.  The cache
 * of an account is refreshed at most every GW_CORS_TTL seconds, by one
 * request at a time (the others use the rules they had meanwhile, or wait
 * at most GW_CORS_WAIT_MS for the first read, then answer as if there were
 * no rules), whether the read succeeds or not; the read gives up on a lock
 * after GW_CORS_LOCK_TIMEOUT (a lock on the table held by another session
 * parks no HTTP thread longer); a Set through this gateway replaces it at
 * once.  A Set through another gateway or in SQL is seen within
 * GW_CORS_TTL seconds.  With --secondary-db the requests at
 * <account>-secondary have a cache of their own, read from the standby
 * (db.c sends their calls there): the standby's rules, which lag, must
 * never replace the primary's, nor the primary's answer for the
 * secondary.  A name that is no account has no rules and costs
 * nothing, so its preflights answer exactly as an account's whose rules do
 * not match.  Origins and methods are
 * matched case-sensitively (the service: "exact case-sensitive match"),
 * header names not.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>
#include <libpq-fe.h>

#include "service.h"

#include "auth.h"
#include "buf.h"
#include "config.h"
#include "db.h"
#include "json.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"
#include "xml.h"

#define GW_CORS_TTL		5		/* seconds a cached rule set is used */
#define GW_CORS_MAX_RULES	5
#define GW_CORS_WAIT_MS		1000	/* longest wait for another's first read */

typedef struct CorsRule
{
	char	   *origins;
	char	   *methods;
	char	   *headers;
	char	   *exposed;
	long		max_age;
} CorsRule;

typedef struct CorsCache
{
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* signalled when a load ends */
	bool		loaded;			/* rules were read once */
	bool		loading;		/* a request is reading them now */
	unsigned long gen;			/* bumped by each Set through this gateway */
	time_t		loaded_at;
	int			nrules;
	CorsRule	rules[GW_CORS_MAX_RULES];
} CorsCache;

static CorsCache *caches;		/* per configured account, the primary's
								 * then the secondary's */
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

static void
caches_init(void)
{
	int			n = 2 * (gw_config.naccounts > 0 ? gw_config.naccounts : 1);

	caches = xmalloc(sizeof(CorsCache) * n);
	memset(caches, 0, sizeof(CorsCache) * n);
	for (int i = 0; i < n; i++)
	{
		pthread_mutex_init(&caches[i].lock, NULL);
		pthread_cond_init(&caches[i].cond, NULL);
	}
}

/*
 * cache_of: the cache of the request's account, its secondary's when the
 * request is at a secondary served by a standby; NULL for a stand-in.
 */
static CorsCache *
cache_of(Req *r)
{
	ptrdiff_t	i;

	if (r->acct == NULL || r->unknown_acct || gw_config.accounts == NULL)
		return NULL;
	i = r->acct - gw_config.accounts;
	if (i < 0 || i >= gw_config.naccounts)
		return NULL;
	pthread_once(&caches_once, caches_init);
	if (r->secondary && r->acct->secondary != NULL)
		i += gw_config.naccounts;
	return &caches[i];
}

static void
rules_free(CorsCache *c)
{
	for (int i = 0; i < c->nrules; i++)
	{
		free(c->rules[i].origins);
		free(c->rules[i].methods);
		free(c->rules[i].headers);
		free(c->rules[i].exposed);
	}
	c->nrules = 0;
}

/* member: a string member of a json object, "" when absent. */
static const char *
member(json_object *o, const char *name)
{
	json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, name, &v) || v == NULL)
		return "";
	return json_object_get_string(v);
}

/* rules_set: the cache's rules from the properties the extension returned. */
static void
rules_set(CorsCache *c, json_object *props)
{
	json_object *cors;

	rules_free(c);
	if (props == NULL || !json_object_object_get_ex(props, "Cors", &cors) ||
		!json_object_is_type(cors, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(cors) && c->nrules < GW_CORS_MAX_RULES; i++)
	{
		json_object *rule = json_object_array_get_idx(cors, i);
		json_object *age;
		CorsRule   *cr = &c->rules[c->nrules++];

		cr->origins = xstrdup(member(rule, "AllowedOrigins"));
		cr->methods = xstrdup(member(rule, "AllowedMethods"));
		cr->headers = xstrdup(member(rule, "AllowedHeaders"));
		cr->exposed = xstrdup(member(rule, "ExposedHeaders"));
		/* the extension keeps MaxAgeInSeconds to 10 digits: exact in int64 */
		cr->max_age = json_object_object_get_ex(rule, "MaxAgeInSeconds", &age) ? json_object_get_int64(age) : 0;
	}
}

/*
 * cors_lock: the account's cache, locked; NULL for a name that is no
 * account.  The caller unlocks it.  When the rules are older than
 * GW_CORS_TTL, one request reads them again (outside the lock), while the
 * others go on with the rules they had, or, before the first read, wait
 * for it at most GW_CORS_WAIT_MS and then go on with none (a lock on the
 * table must not park HTTP threads: the read itself gives up on a lock
 * after its lock_timeout, db.c's service_props_cors).  A read that fails
 * keeps the rules until the next TTL; a read that a Set overtook is
 * dropped (the Set's rules are newer).
 */
static CorsCache *
cors_lock(Req *r)
{
	CorsCache  *c = cache_of(r);
	time_t		now = time(NULL);

	if (c == NULL)
		return NULL;
	pthread_mutex_lock(&c->lock);
	if (!c->loading && (!c->loaded || now - c->loaded_at >= GW_CORS_TTL || now < c->loaded_at))
	{
		unsigned long gen = c->gen;
		DbErr		err;
		PGresult   *res;
		json_object *props = NULL;

		c->loading = true;
		pthread_mutex_unlock(&c->lock);
		res = db_call(r, "service_props_cors", 0, NULL, &err);
		if (res != NULL && !PQgetisnull(res, 0, 0))
			props = json_parse_db(PQgetvalue(res, 0, 0));
		if (res != NULL)
			PQclear(res);
		else
			db_err_free(&err);
		pthread_mutex_lock(&c->lock);
		if (props != NULL && gen == c->gen)
			rules_set(c, props);
		if (props)
			json_object_put(props);
		c->loading = false;
		c->loaded = true;
		c->loaded_at = now;
		pthread_cond_broadcast(&c->cond);
	}
	if (!c->loaded)
	{
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += GW_CORS_WAIT_MS / 1000;
		until.tv_nsec += (GW_CORS_WAIT_MS % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L)
			until.tv_sec++, until.tv_nsec -= 1000000000L;
		while (!c->loaded)
			if (pthread_cond_timedwait(&c->cond, &c->lock, &until) == ETIMEDOUT)
				break;			/* not loaded: no rules (nrules is 0) */
	}
	return c;
}

/*
 * list_has: whether the comma-separated list holds the item, compared
 * after trimming blanks, case-insensitively when icase (header names) and
 * exactly otherwise (origins, methods); an entry ending in '*' matches as
 * a prefix when prefix is true ("*" alone matches everything).
 */
static bool
list_has(const char *list, const char *item, size_t itemlen, bool prefix, bool icase)
{
	const char *p = list;

	while (itemlen > 0 && (*item == ' ' || *item == '\t'))
		item++, itemlen--;
	while (itemlen > 0 && (item[itemlen - 1] == ' ' || item[itemlen - 1] == '\t'))
		itemlen--;
	while (*p)
	{
		const char *e = strchr(p, ',');
		const char *s = p;
		size_t		n;

		if (e == NULL)
			e = p + strlen(p);
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		n = e - s;
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == itemlen && (icase ? strncasecmp(s, item, n) : strncmp(s, item, n)) == 0)
			return true;
		if (prefix && n > 0 && s[n - 1] == '*' && itemlen >= n - 1 &&
			(icase ? strncasecmp(s, item, n - 1) : strncmp(s, item, n - 1)) == 0)
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

/* origin_allowed: the rule allows every origin ("*") or this one. */
static bool
origin_allowed(const CorsRule *cr, const char *origin)
{
	return list_has(cr->origins, "*", 1, false, false) ||
		list_has(cr->origins, origin, strlen(origin), false, false);
}

/* headers_allowed: every header the comma-separated list names is allowed. */
static bool
headers_allowed(const CorsRule *cr, const char *headers)
{
	const char *p = headers;

	while (*p)
	{
		const char *e = strchr(p, ',');
		const char *s = p;

		if (e == NULL)
			e = p + strlen(p);
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		if (s < e && !list_has(cr->headers, s, e - s, true, true))
			return false;
		p = *e ? e + 1 : e;
	}
	return true;
}

/*
 * cors_preflight: answer an OPTIONS request, without authentication, from
 * the account's rules: the first rule that allows the origin, the
 * requested method and every requested header gives 200 with the
 * Access-Control-Allow-* headers; none (or no account) is 403
 * CorsPreflightFailure; without Origin or Access-Control-Request-Method
 * it is no preflight: 400.
 */
void
cors_preflight(Req *r, Resp *resp)
{
	const char *origin = req_header(r, "Origin");
	const char *method = req_header(r, "Access-Control-Request-Method");
	const char *headers = req_header(r, "Access-Control-Request-Headers");
	CorsCache  *c;

	r->xml = true;
	if (origin == NULL || *origin == '\0' || method == NULL || *method == '\0')
	{
		resp_error(r, resp, 400, "InvalidHeaderValue", "A required CORS header is not present.",
				   "a preflight request needs Origin and Access-Control-Request-Method");
		return;
	}
	c = cors_lock(r);
	for (int i = 0; c != NULL && i < c->nrules; i++)
	{
		const CorsRule *cr = &c->rules[i];
		char		age[32];

		if (!origin_allowed(cr, origin) || !list_has(cr->methods, method, strlen(method), false, false) ||
			(headers != NULL && !headers_allowed(cr, headers)))
			continue;
		snprintf(age, sizeof(age), "%ld", cr->max_age);
		resp->status = 200;
		resp_header(resp, "Access-Control-Allow-Origin", origin);
		resp_header(resp, "Access-Control-Allow-Methods", method);
		if (headers != NULL)
			resp_header(resp, "Access-Control-Allow-Headers", headers);
		resp_header(resp, "Access-Control-Max-Age", age);
		resp_header(resp, "Access-Control-Allow-Credentials", "true");
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (c != NULL)
		pthread_mutex_unlock(&c->lock);
	resp_error(r, resp, 403, "CorsPreflightFailure",
			   "CORS not enabled or no matching rule found for this request.", NULL);
}

/*
 * expose_headers: the value of Access-Control-Expose-Headers for a rule:
 * the response's headers that a prefix entry ("x-ms-*", "*") matches, and
 * every plain entry as it is.
 */
static void
expose_headers(const CorsRule *cr, Resp *resp, Buf *out)
{
	static const char *const fixed[] = {
		"x-ms-request-id", "x-ms-version", "x-ms-client-request-id", "Cache-Control",
		"X-Content-Type-Options", "Server", "Content-Type", "DataServiceVersion",
		"Date", "Content-Length", "Connection",
	};
	const char *p = cr->exposed;

	/* prefix entries against the response's headers */
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) + (size_t) resp->nhdr; i++)
	{
		const char *h = i < sizeof(fixed) / sizeof(fixed[0]) ? fixed[i] : resp->hname[i - sizeof(fixed) / sizeof(fixed[0])];
		const char *q = cr->exposed;
		bool		hit = false;

		if (strncasecmp(h, "Access-Control-", 15) == 0 || strcasecmp(h, "Vary") == 0)
			continue;
		while (*q && !hit)
		{
			const char *e = strchr(q, ',');
			const char *s = q;
			size_t		n;

			if (e == NULL)
				e = q + strlen(q);
			while (s < e && (*s == ' ' || *s == '\t'))
				s++;
			n = e - s;
			while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
				n--;
			if (n > 0 && s[n - 1] == '*' && strncasecmp(s, h, n - 1) == 0)
				hit = true;
			q = *e ? e + 1 : e;
		}
		if (hit)
		{
			if (out->len)
				buf_puts(out, ",");
			buf_puts(out, h);
		}
	}
	/* plain entries as they are */
	while (*p)
	{
		const char *e = strchr(p, ',');
		const char *s = p;
		size_t		n;

		if (e == NULL)
			e = p + strlen(p);
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		n = e - s;
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n > 0 && s[n - 1] != '*')
		{
			if (out->len)
				buf_puts(out, ",");
			buf_append(out, s, n);
		}
		p = *e ? e + 1 : e;
	}
	if (out->data == NULL)
		buf_append(out, "", 0);
}

/*
 * cors_response_headers: the CORS headers of the answer to a request that
 * carries Origin (not a preflight), errors included: the first rule that
 * allows the origin and the method gives Access-Control-Allow-Origin (the
 * origin, or "*" when the rule allows every origin),
 * Access-Control-Expose-Headers (unless it would be empty), and for a
 * listed origin Access-Control-Allow-Credentials and Vary: Origin (the
 * answer depends on the origin); when the account has rules but none
 * matches, Vary: Origin alone; an account without rules (or a name that is
 * no account) nothing, as the service answers (Azurite's CORS tests: no
 * Vary without rules, none for a "*" rule).  That an account has rules is
 * no secret: its preflights show them to anyone.  Requests without Origin
 * get none.
 */
void
cors_response_headers(Req *r, Resp *resp)
{
	const char *origin;
	CorsCache  *c;

	if (r->conn == NULL || r->wire_method == NULL || strcmp(r->wire_method, "OPTIONS") == 0)
		return;
	origin = req_header(r, "Origin");
	if (origin == NULL || *origin == '\0')
		return;
	if ((c = cors_lock(r)) == NULL)
		return;
	for (int i = 0; i < c->nrules; i++)
	{
		const CorsRule *cr = &c->rules[i];
		bool		any = list_has(cr->origins, "*", 1, false, false);
		Buf			exposed = {0};

		if (!origin_allowed(cr, origin) ||
			!list_has(cr->methods, r->wire_method, strlen(r->wire_method), false, false))
			continue;
		expose_headers(cr, resp, &exposed);
		if (exposed.len > 0)
			resp_header(resp, "Access-Control-Expose-Headers", exposed.data);
		buf_free(&exposed);
		resp_header(resp, "Access-Control-Allow-Origin", any ? "*" : origin);
		if (!any)
		{
			resp_header(resp, "Access-Control-Allow-Credentials", "true");
			resp_header(resp, "Vary", "Origin");
		}
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (c->nrules > 0)
		resp_header(resp, "Vary", "Origin");
	pthread_mutex_unlock(&c->lock);
}

/* ---- the properties document ---- */

/*
 * to_json: an element of the Set document as the extension takes it: an
 * element with children is an object (a name twice is refused), except
 * Cors, a list of its CorsRule elements (an empty Cors is no rules); an
 * element without children is its text, trimmed.  NULL with *why set when
 * the document cannot be one of the service's.
 */
static json_object *
to_json(const XmlNode *n, bool is_cors, const char **why)
{
	json_object *o;

	if (is_cors)
	{
		o = json_object_new_array();
		if (n->child == NULL && strspn(n->text, " \t\r\n") != strlen(n->text))
		{
			*why = "Cors holds text";
			json_object_put(o);
			return NULL;
		}
		for (const XmlNode *c = n->child; c; c = c->next)
		{
			json_object *rule;

			if (strcmp(c->name, "CorsRule") != 0)
			{
				*why = "Cors holds an element other than CorsRule";
				json_object_put(o);
				return NULL;
			}
			if (json_object_array_length(o) >= 64 || (rule = to_json(c, false, why)) == NULL ||
				!json_object_is_type(rule, json_type_object))
			{
				if (*why == NULL)
					*why = "a CorsRule is not a list of elements";
				json_object_put(o);
				return NULL;
			}
			json_object_array_add(o, rule);
		}
		return o;
	}
	if (n->child == NULL)
	{
		const char *s = n->text;
		size_t		len = strlen(s);

		while (len > 0 && strchr(" \t\r\n", s[len - 1]))
			len--;
		while (len > 0 && strchr(" \t\r\n", *s))
			s++, len--;
		return json_object_new_string_len(s, (int) len);
	}
	o = json_object_new_object();
	for (const XmlNode *c = n->child; c; c = c->next)
	{
		json_object *v;

		if (json_object_object_get_ex(o, c->name, NULL))
		{
			*why = "an element is given twice";
			json_object_put(o);
			return NULL;
		}
		v = to_json(c, n->name != NULL && strcmp(n->name, "StorageServiceProperties") == 0 &&
					strcmp(c->name, "Cors") == 0, why);
		if (v == NULL)
		{
			json_object_put(o);
			return NULL;
		}
		json_object_object_add(o, c->name, v);
	}
	return o;
}

/* put_leaf: <name>value</name> with the value of a member, if it has one. */
static void
put_leaf(Buf *b, json_object *o, const char *name)
{
	json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, name, &v) || v == NULL)
		return;
	buf_printf(b, "<%s>", name);
	xml_escape(b, json_object_get_string(v));
	buf_printf(b, "</%s>", name);
}

/* put_retention: <RetentionPolicy> of an element. */
static void
put_retention(Buf *b, json_object *o)
{
	json_object *rp;

	if (!json_object_object_get_ex(o, "RetentionPolicy", &rp))
		return;
	buf_puts(b, "<RetentionPolicy>");
	put_leaf(b, rp, "Enabled");
	put_leaf(b, rp, "Days");
	buf_puts(b, "</RetentionPolicy>");
}

/* props_xml: the Get answer's document from the extension's jsonb. */
static void
props_xml(Buf *b, json_object *p)
{
	json_object *o;
	static const char *const metrics[] = {"HourMetrics", "MinuteMetrics"};

	buf_puts(b, "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>");
	if (json_object_object_get_ex(p, "Logging", &o))
	{
		buf_puts(b, "<Logging>");
		put_leaf(b, o, "Version");
		put_leaf(b, o, "Delete");
		put_leaf(b, o, "Read");
		put_leaf(b, o, "Write");
		put_retention(b, o);
		buf_puts(b, "</Logging>");
	}
	for (int i = 0; i < 2; i++)
		if (json_object_object_get_ex(p, metrics[i], &o))
		{
			buf_printf(b, "<%s>", metrics[i]);
			put_leaf(b, o, "Version");
			put_leaf(b, o, "Enabled");
			put_leaf(b, o, "IncludeAPIs");
			put_retention(b, o);
			buf_printf(b, "</%s>", metrics[i]);
		}
	if (json_object_object_get_ex(p, "Cors", &o) && json_object_array_length(o) > 0)
	{
		buf_puts(b, "<Cors>");
		for (size_t i = 0; i < json_object_array_length(o); i++)
		{
			json_object *rule = json_object_array_get_idx(o, i);

			buf_puts(b, "<CorsRule>");
			put_leaf(b, rule, "AllowedOrigins");
			put_leaf(b, rule, "AllowedMethods");
			put_leaf(b, rule, "MaxAgeInSeconds");
			put_leaf(b, rule, "ExposedHeaders");
			put_leaf(b, rule, "AllowedHeaders");
			buf_puts(b, "</CorsRule>");
		}
		buf_puts(b, "</Cors>");
	}
	else
		buf_puts(b, "<Cors/>");
	buf_puts(b, "</StorageServiceProperties>");
}

/*
 * service_properties: GET (200, the stored document) and PUT (202) of
 * ?restype=service&comp=properties.  A SAS needs srt s and sp r to read,
 * sp w to write; a table SAS cannot do either.
 */
void
service_properties(Req *r, Resp *resp)
{
	DbErr		err;
	PGresult   *res;
	json_object *props;
	bool		set = strcmp(r->method, "PUT") == 0;
	const char *text = NULL;

	r->xml = true;
	if (!set && strcmp(r->method, "GET") != 0)
	{
		resp_error(r, resp, 405, "MethodNotAllowed",
				   "The resource doesn't support specified Http Verb.", "service properties take GET and PUT");
		return;
	}
	if (!sas_allows(r, resp, set ? "service_set" : "service_get", NULL, NULL, NULL))
		return;
	if (set)
	{
		const char *why = NULL;
		XmlNode    *doc = NULL;
		json_object *in = NULL;

		if (r->body.len > GW_XML_MAX_BYTES)
			why = "the document is larger than 256 KiB";
		else if ((doc = xml_parse(r->body.data ? r->body.data : "", r->body.len, &why)) != NULL)
		{
			if (strcmp(doc->name, "StorageServiceProperties") != 0)
				why = "the root element is not StorageServiceProperties";
			else if (doc->child == NULL && strspn(doc->text, " \t\r\n") != strlen(doc->text))
				why = "StorageServiceProperties holds text";
			else if ((in = doc->child ? to_json(doc, false, &why) : json_object_new_object()) == NULL && why == NULL)
				why = "malformed document";
		}
		xml_free(doc);
		if (in == NULL)
		{
			resp_error(r, resp, 400, "InvalidXmlDocument", "XML specified is not syntactically valid.", why);
			return;
		}
		text = json_text(in);
		res = db_call(r, "service_props_set", 1, &text, &err);
		json_object_put(in);
	}
	else
		res = db_call(r, "service_props_get", 0, NULL, &err);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	props = json_parse_db(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (set)
	{
		CorsCache  *c = cache_of(r);

		/* a Set through this gateway takes effect at once */
		if (c != NULL)
		{
			pthread_mutex_lock(&c->lock);
			rules_set(c, props);
			c->gen++;
			c->loaded = true;
			c->loaded_at = time(NULL);
			pthread_cond_broadcast(&c->cond);
			pthread_mutex_unlock(&c->lock);
		}
		resp->status = 202;
	}
	else
	{
		props_xml(&resp->body, props);
		resp->status = 200;
		resp->ctype = "application/xml";
	}
	if (props)
		json_object_put(props);
}
