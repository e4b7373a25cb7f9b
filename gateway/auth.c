/*-------------------------------------------------------------------------
 *
 * auth.c
 *	  Authentication and scope of a request: Shared Key and Shared Key Lite
 *	  signatures, account and table shared access signatures (SAS), and
 *	  what a SAS permits; bearer tokens are oauth.c's.  Everything here runs before the database sees
 *	  the request.
 *
 * HMAC-SHA256 and base64 are OpenSSL's; signatures are compared in
 * constant time.  The canonicalized resource is the path exactly as sent
 * (still percent-encoded), as the SDKs sign it.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include <libpq-fe.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "auth.h"

#include "account.h"
#include "buf.h"
#include "config.h"
#include "db.h"
#include "encode.h"
#include "gwlimits.h"
#include "oauth.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"

#include "../src/utf16.h"

/*
 * The reason given for every signature that does not verify, whether the
 * key, the account named, the string signed or the date is wrong: an
 * unknown account fails here too (unknown_account), with the same words.
 */
#define SIGNATURE_MISMATCH \
	"the signature does not match, or the request's date is not within 15 minutes of the server's time"

/* A thread's HMAC context and the key it was last keyed with. */
typedef struct HmacTls
{
	EVP_MAC_CTX *ctx;
	size_t		keylen;			/* SIZE_MAX: none */
	unsigned char key[128];
} HmacTls;

static pthread_key_t hmac_key;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

/* hmac_tls_free: a thread's context, freed when the thread ends. */
static void
hmac_tls_free(void *p)
{
	HmacTls    *t = p;

	EVP_MAC_CTX_free(t->ctx);
	OPENSSL_cleanse(t->key, sizeof(t->key));
	free(t);
}

static void
hmac_key_init(void)
{
	(void) pthread_key_create(&hmac_key, hmac_tls_free);
}

/*
 * hmac_tls: the calling thread's context, its digest set (NULL on an
 * OpenSSL or memory failure).
 */
static HmacTls *
hmac_tls(void)
{
	HmacTls    *t;
	EVP_MAC    *mac;
	OSSL_PARAM	params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0),
		OSSL_PARAM_construct_end()
	};

	pthread_once(&hmac_once, hmac_key_init);
	if ((t = pthread_getspecific(hmac_key)) != NULL)
		return t;
	if ((t = calloc(1, sizeof(HmacTls))) == NULL)
		return NULL;
	t->keylen = SIZE_MAX;
	mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	t->ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac);			/* the context holds its own reference */
	if (t->ctx == NULL || EVP_MAC_CTX_set_params(t->ctx, params) != 1 ||
		pthread_setspecific(hmac_key, t) != 0)
	{
		EVP_MAC_CTX_free(t->ctx);
		free(t);
		return NULL;
	}
	return t;
}

/*
 * hmac_sha256: HMAC-SHA256(key, data) into out (32 bytes); false on an
 * OpenSSL failure.  OpenSSL 3's one-shot HMAC() looks the MAC and the digest
 * up by name in its provider tables on every call (a lock and a hash lookup
 * each), which was most of a signature check's cost in the profile of
 * single-entity requests; each thread keeps one context, its digest set
 * once, and re-keys it only when the key differs from its last call's
 * (re-keying hashes the key's pads; the same key reuses them).
 */
bool
hmac_sha256(const unsigned char *key, size_t keylen, const void *data, size_t len,
			unsigned char *out)
{
	HmacTls    *t = hmac_tls();
	size_t		outlen = 0;

	if (t == NULL)
		return false;
	/* the same key as the thread's last call (one account): keep its pads */
	if (keylen == t->keylen && memcmp(key, t->key, keylen) == 0)
		key = NULL;
	else if (keylen <= sizeof(t->key))
	{
		memcpy(t->key, key, keylen);
		t->keylen = keylen;
	}
	else
		t->keylen = SIZE_MAX;
	if (EVP_MAC_init(t->ctx, key, key ? keylen : 0, NULL) != 1 ||
		EVP_MAC_update(t->ctx, data, len) != 1 ||
		EVP_MAC_final(t->ctx, out, &outlen, 32) != 1 || outlen != 32)
	{
		t->keylen = SIZE_MAX;
		return false;
	}
	return true;
}

/* sign: base64(HMAC-SHA256(account key, text)), malloc'd. */
static char *
sign(Account *a, const char *text, size_t len)
{
	unsigned char mac[32];

	if (!hmac_sha256(a->key, a->keylen, text, len, mac))
		return xstrdup("");
	return b64_encode(mac, sizeof(mac));
}

/* same_sig: constant-time comparison of two signatures. */
static bool
same_sig(const char *a, const char *b)
{
	size_t		n = strlen(a);

	return n > 0 && n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

/* auth_fail: the 403 every failed authentication gets. */
static bool
auth_fail(Req *r, Resp *resp, const char *code, const char *why)
{
	const char *msg = strcmp(code, "AuthenticationFailed") == 0
		? "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."
		: "This request is not authorized to perform this operation.";

	resp_error(r, resp, 403, code, msg, why);
	return false;
}

/* parse_rfc1123: "Tue, 24 Nov 2026 11:33:20 GMT" to time_t, -1 if bad. */
static time_t
parse_rfc1123(const char *s)
{
	struct tm	tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (end == NULL || *end != '\0')
		return (time_t) -1;
	return timegm(&tm);
}

/*
 * parse_iso: a SAS time (st, se, or a stored access policy's Start and
 * Expiry) in exactly one of the service's documented UTC forms
 * YYYY-MM-DD, YYYY-MM-DDThh:mmZ, YYYY-MM-DDThh:mm:ssZ and
 * YYYY-MM-DDThh:mm:ss.fffffffZ (1 to 7 digits of fraction; upper-case T and
 * Z, no leap second, a real day, years 1601 to 9999), the forms
 * tablestore.set_table_acl takes (src/tableacl.c, time_shape_ok); false
 * otherwise.  The time is in microseconds since 1970 (the fraction's first
 * six digits): a start or an expiry compared at that precision neither
 * widens nor narrows the window (an SDK's start of "now", with its
 * milliseconds, is valid at once).
 */
static bool
parse_iso(const char *s, long long *out)
{
	static const char *const shapes[] = {"dddd-dd-dd", "dddd-dd-ddTdd:ddZ", "dddd-dd-ddTdd:dd:ddZ"};
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	size_t		len = strlen(s);
	const char *shape = NULL;
	long		usec = 0;
	int			y, mo, d, h = 0, mi = 0, sec = 0;
	long long	days, yy;
	unsigned	mp;

	for (int i = 0; i < 3; i++)
		if (len == strlen(shapes[i]))
			shape = shapes[i];
	if (shape == NULL && len >= 22 && len <= 28 && s[19] == '.' && s[len - 1] == 'Z')
	{
		for (size_t i = 20; i < len - 1; i++)
		{
			if (s[i] < '0' || s[i] > '9')
				return false;
			if (i < 26)
				usec = usec * 10 + (s[i] - '0');
		}
		for (size_t i = len - 1; i < 26; i++)
			usec *= 10;
		shape = "dddd-dd-ddTdd:dd:dd";
	}
	if (shape == NULL)
		return false;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return false;
#define DIGITS2(p) (((p)[0] - '0') * 10 + ((p)[1] - '0'))
	y = DIGITS2(s) * 100 + DIGITS2(s + 2);
	mo = DIGITS2(s + 5);
	d = DIGITS2(s + 8);
	if (len > 10)
	{
		h = DIGITS2(s + 11);
		mi = DIGITS2(s + 14);
		if (len > 17)
			sec = DIGITS2(s + 17);
	}
#undef DIGITS2
	if (y < 1601 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 59)
		return false;
	if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
		return false;
	/* days since 1970-01-01 of the proleptic Gregorian date (years from March) */
	yy = y - (mo <= 2);
	mp = (unsigned) (mo + 9) % 12;
	days = 365 * yy + yy / 4 - yy / 100 + yy / 400 + (153 * mp + 2) / 5 + d - 1 - 719468;
	*out = (days * 86400 + h * 3600 + mi * 60 + sec) * 1000000LL + usec;
	return true;
}

/*
 * canonical_resource: "/" account raw-path ["?comp=" value].  With
 * secondary, the path without its first segment "<account>-secondary":
 * the Python SDK signs a secondary endpoint's requests so (it sends
 * /<account>-secondary/<account>/?comp=stats and signs
 * /<account>/<account>/?comp=stats), and the service accepts both forms;
 * that form is the primary's service root too, so it is taken only where
 * the request is served as the root (prepare_request decides).
 * With unslashed, the path without its one trailing "/": a path and the
 * same path with a "/" appended address one resource (prepare_request
 * drops it), and clients sign either (Azurite's raw-REST tests sign
 * /<account>/Tables and send /<account>/Tables/), so accepting both signs
 * nothing a client could not already have asked for.  False if there is
 * no such form.
 */
static bool
canonical_resource(Req *r, Buf *b, bool secondary, bool unslashed)
{
	const char *comp = req_param(r, "comp");
	const char *path = r->raw_path;
	size_t		n = strlen(r->acct->name);
	size_t		len;

	if (secondary)
	{
		if (path[0] != '/' || strncmp(path + 1, r->acct->name, n) != 0 ||
			strncmp(path + 1 + n, "-secondary", 10) != 0 ||
			(path[n + 11] != '/' && path[n + 11] != '\0'))
			return false;
		path += n + 11;

		/*
		 * Without the secondary segment a path starting with the account
		 * is what a path-style request to the primary's service root signs:
		 * accepted only where the request is served as that root (the
		 * Python SDK's statistics form), never for a table so named.
		 */
		if (path[0] == '/' && strncmp(path + 1, r->acct->name, n) == 0 &&
			(path[n + 1] == '/' || path[n + 1] == '\0') && !r->stats_repeats_account)
			return false;
	}
	len = strlen(path);
	if (unslashed)
	{
		if (len < 2 || path[len - 1] != '/' || path[len - 2] == '/')
			return false;
		len--;
	}
	buf_printf(b, "/%s%.*s", r->acct->name, (int) len, path);
	if (comp != NULL)
		buf_printf(b, "?comp=%s", comp);
	return true;
}

/*
 * signed_with: whether sig is the Shared Key (Lite) signature of the
 * request with canonicalized resource res and the date of either header
 * (clients differ), which must be within GW_DATE_SKEW of now: that bounds
 * the replay of a captured request.
 */
static bool
signed_with(Req *r, bool lite, const char *res, const char *sig)
{
	const char *dates[2] = {req_header(r, "x-ms-date"), req_header(r, "Date")};
	bool		ok = false;

	for (int i = 0; i < 2 && !ok; i++)
	{
		Buf			sts = {0};
		char	   *mine;
		time_t		t;

		if (dates[i] == NULL)
			continue;
		t = parse_rfc1123(dates[i]);
		if (t == (time_t) -1 || labs((long) (time(NULL) - t)) > GW_DATE_SKEW)
			continue;
		if (lite)
			buf_printf(&sts, "%s\n%s", dates[i], res);
		else
		{
			const char *md5 = req_header(r, "Content-MD5");
			const char *ctype = req_header(r, "Content-Type");

			/* the method on the wire, before X-HTTP-Method */
			buf_printf(&sts, "%s\n%s\n%s\n%s\n%s", r->wire_method ? r->wire_method : r->method,
					   md5 ? md5 : "", ctype ? ctype : "", dates[i], res);
		}
		mine = sign(r->acct, sts.data, sts.len);
		ok = same_sig(mine, sig);
		free(mine);
		buf_free(&sts);
	}
	return ok;
}

/*
 * shared_key: check an Authorization header of either scheme, over any
 * form of the canonicalized resource (canonical_resource).
 */
static bool
shared_key(Req *r, Resp *resp, const char *auth)
{
	bool		lite;
	const char *p;
	const char *colon;
	bool		ok = false;

	if (strncmp(auth, "SharedKeyLite ", 14) == 0)
	{
		lite = true;
		p = auth + 14;
	}
	else if (strncmp(auth, "SharedKey ", 10) == 0)
	{
		lite = false;
		p = auth + 10;
	}
	else
		return auth_fail(r, resp, "AuthenticationFailed", "the Authorization scheme is not SharedKey or SharedKeyLite");
	colon = strchr(p, ':');
	if (colon == NULL || (size_t) (colon - p) != strlen(r->acct->name) ||
		strncmp(p, r->acct->name, colon - p) != 0)
		return auth_fail(r, resp, "AuthenticationFailed", SIGNATURE_MISMATCH);

	for (int form = 0; form < 4 && !ok; form++)
	{
		Buf			res = {0};

		if (canonical_resource(r, &res, (form & 1) != 0, (form & 2) != 0))
			ok = signed_with(r, lite, res.data, colon + 1);
		buf_free(&res);
	}
	if (!ok)
	{
		if (req_header(r, "x-ms-date") == NULL && req_header(r, "Date") == NULL)
			return auth_fail(r, resp, "AuthenticationFailed", "neither x-ms-date nor Date was sent");
		return auth_fail(r, resp, "AuthenticationFailed", SIGNATURE_MISMATCH);
	}
	return true;
}

/* p_or_empty: a query parameter or "". */
static const char *
p_or_empty(Req *r, const char *name)
{
	const char *v = req_param(r, name);

	return v ? v : "";
}

/* ip_value: an IPv4 address as a number, or -1. */
static long long
ip_value(const char *s)
{
	unsigned	a, b, c, d;
	int			n = 0;

	if (sscanf(s, "%3u.%3u.%3u.%3u%n", &a, &b, &c, &d, &n) != 4 || s[n] != '\0' ||
		a > 255 || b > 255 || c > 255 || d > 255)
		return -1;
	return ((long long) a << 24) | (b << 16) | (c << 8) | d;
}

/* sip_allows: whether the client address is in the SAS's sip range. */
static bool
sip_allows(Req *r, const char *sip)
{
	char		lo[64],
				hi[64];
	const char *dash = strchr(sip, '-');
	long long	ip = ip_value(r->client_ip);
	long long	l,
				h;

	if (dash)
	{
		snprintf(lo, sizeof(lo), "%.*s", (int) (dash - sip), sip);
		snprintf(hi, sizeof(hi), "%s", dash + 1);
	}
	else
	{
		snprintf(lo, sizeof(lo), "%s", sip);
		snprintf(hi, sizeof(hi), "%s", sip);
	}
	l = ip_value(lo);
	h = ip_value(hi);
	return ip >= 0 && l >= 0 && h >= 0 && ip >= l && ip <= h;
}

/* The one answer for every way a stored access policy cannot be used. */
#define POLICY_UNUSABLE "the stored access policy named by si does not exist"

/*
 * sas_perms_valid: sp (the SAS's own or its policy's) is a set of the
 * service's permission letters: r, a, u, d for a table SAS (as a stored
 * access policy's Permission, src/tableacl.c), the account SAS letters for
 * an account SAS; each at most once.  Unknown letters are refused (403
 * AuthenticationFailed, as the service refuses malformed signature fields)
 * rather than ignored.
 */
static bool
sas_perms_valid(const char *sp, bool account_sas)
{
	const char *letters = account_sas ? "rwdlacupxytfi" : "raud";

	if (sp == NULL || *sp == '\0')
		return false;
	for (const char *p = sp; *p; p++)
		if (strchr(letters, *p) == NULL || strchr(p + 1, *p) != NULL)
			return false;
	return true;
}

/*
 * sas_policy: apply the stored access policy si of a table SAS whose
 * signature verified: its Start, Expiry and Permission take the place of
 * the SAS's st, se and sp (into stbuf, sebuf and the Sas), as the service
 * does.  The policy is read from the account's database as the account's
 * role on every request, so that removing or changing it takes effect on
 * the next one.  A field given both in the SAS and in the policy, an expiry
 * or permissions given by neither, and a policy or table that does not
 * exist (or that the role may not read) are 403 AuthenticationFailed; a
 * database that cannot answer is its 5xx.  Only a caller who could sign
 * gets here, so the lookup tells nothing to one who cannot.
 */
static bool
sas_policy(Req *r, Resp *resp, const char *si, const char **st, const char **se,
		   char *stbuf, char *sebuf, size_t cap)
{
	DbErr		err;
	const char *vals[2] = {r->sas.tn, si};
	PGresult   *res = db_call(r, "sas_policy", 2, vals, &err);
	const char *pst,
			   *pse,
			   *psp;
	const char *why = NULL;

	if (res == NULL)
	{
		if (err.http >= 500)
		{
			db_error_response(r, resp, &err);
			return false;
		}
		db_err_free(&err);
		return auth_fail(r, resp, "AuthenticationFailed", POLICY_UNUSABLE);
	}
	if (PQntuples(res) != 1)
	{
		PQclear(res);
		return auth_fail(r, resp, "AuthenticationFailed", POLICY_UNUSABLE);
	}
	pst = PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0);
	pse = PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1);
	psp = PQgetisnull(res, 0, 2) ? NULL : PQgetvalue(res, 0, 2);
	if ((pst && *st) || (pse && *se) || (psp && r->sas.perms))
		why = "a field (st, se or sp) is given both by the SAS and by its stored access policy";
	else if ((!pse && !*se) || (!psp && !r->sas.perms))
		why = "neither the SAS nor its stored access policy gives an expiry (se) and permissions (sp)";
	else
	{
		if (pst)
		{
			snprintf(stbuf, cap, "%s", pst);
			*st = stbuf;
		}
		if (pse)
		{
			snprintf(sebuf, cap, "%s", pse);
			*se = sebuf;
		}
		if (psp)
		{
			snprintf(r->sas.policy_perms, sizeof(r->sas.policy_perms), "%s", psp);
			r->sas.perms = r->sas.policy_perms;
		}
	}
	PQclear(res);
	return why == NULL || auth_fail(r, resp, "AuthenticationFailed", why);
}

/*
 * auth_refuse_sas: refuse an operation that no SAS may perform (403
 * AuthorizationPermissionMismatch); true when the request has no SAS.
 */
bool
auth_refuse_sas(Req *r, Resp *resp, const char *why)
{
	return !r->sas.present || auth_fail(r, resp, "AuthorizationPermissionMismatch", why);
}

/*
 * sas: check a shared access signature in the query string: its
 * signature (account or table layout), its stored access policy (si, a
 * table SAS's only), time window, protocol and address.  What it permits
 * is checked per operation by sas_allows().
 */
static bool
sas(Req *r, Resp *resp)
{
	const char *sig = req_param(r, "sig");
	const char *sv = req_param(r, "sv");
	const char *se = req_param(r, "se");
	const char *st = req_param(r, "st");
	const char *sip = req_param(r, "sip");
	const char *spr = req_param(r, "spr");
	const char *si = req_param(r, "si");
	char		stbuf[64],
				sebuf[64];
	Buf			sts = {0};
	char	   *mine;
	bool		ok;
	struct timeval tv;
	long long	now,
				tse,
				tst;

	/* sp may come from a table SAS's stored access policy instead */
	if (sv == NULL || (req_param(r, "sp") == NULL && si == NULL))
		return auth_fail(r, resp, "AuthenticationFailed", "the SAS lacks sv or sp");
	r->sas.present = true;
	r->sas.perms = req_param(r, "sp");
	if (req_param(r, "ss") != NULL || req_param(r, "srt") != NULL)
	{
		if (si != NULL || r->sas.perms == NULL)
			return auth_fail(r, resp, "AuthenticationFailed", "an account SAS needs sp and cannot name a stored access policy (si)");
		r->sas.account_sas = true;
		r->sas.srt = p_or_empty(r, "srt");
		buf_printf(&sts, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n",
				   r->acct->name, r->sas.perms, p_or_empty(r, "ss"), r->sas.srt,
				   p_or_empty(r, "st"), p_or_empty(r, "se"), p_or_empty(r, "sip"),
				   p_or_empty(r, "spr"), sv);
		if (strcmp(sv, "2020-12-06") >= 0)
		{
			sts.len--;
			buf_printf(&sts, "\n%s\n", p_or_empty(r, "ses"));
		}
		if (strchr(p_or_empty(r, "ss"), 't') == NULL)
		{
			buf_free(&sts);
			return auth_fail(r, resp, "AuthorizationServiceMismatch", "the account SAS does not include the table service (ss)");
		}
	}
	else
	{
		const char *tn = req_param(r, "tn");
		char	   *lower;

		/*
		 * Without tn, the table is the one the URL addresses: the
		 * signature covers /table/<account>/<table>, so it verifies only
		 * for that table, and nothing is granted that a SAS naming it would
		 * not grant (Azurite accepts such a SAS; the service documents tn
		 * as required and says nothing of its absence: README, gateway
		 * decisions).  A request that addresses no single table (a batch,
		 * the table list) still needs tn.
		 */
		if (tn == NULL)
		{
			size_t		n = 0;
			const char *p = r->rest ? r->rest : "";

			while (n < sizeof(r->sas.url_table) - 1 &&
				   ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9')))
				n++;
			if (n == 0 || n == sizeof(r->sas.url_table) - 1 ||
				(p[n] != '\0' && p[n] != '(' && p[n] != '/') || (n == 6 && strncasecmp(p, "Tables", 6) == 0))
				return auth_fail(r, resp, "AuthenticationFailed", "a table SAS needs tn");
			memcpy(r->sas.url_table, p, n);
			r->sas.url_table[n] = '\0';
			tn = r->sas.url_table;
		}
		r->sas.account_sas = false;
		r->sas.tn = tn;
		r->sas.spk = req_param(r, "spk");
		r->sas.srk = req_param(r, "srk");
		r->sas.epk = req_param(r, "epk");
		r->sas.erk = req_param(r, "erk");
		lower = xstrdup(tn);
		for (char *q = lower; *q; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q += 'a' - 'A';
		buf_printf(&sts, "%s\n%s\n%s\n/table/%s/%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s",
				   p_or_empty(r, "sp"), p_or_empty(r, "st"), p_or_empty(r, "se"), r->acct->name, lower,
				   p_or_empty(r, "si"), p_or_empty(r, "sip"), p_or_empty(r, "spr"), sv,
				   p_or_empty(r, "spk"), p_or_empty(r, "srk"), p_or_empty(r, "epk"), p_or_empty(r, "erk"));
		free(lower);
	}
	mine = sign(r->acct, sts.data, sts.len);
	ok = same_sig(mine, sig);
	free(mine);
	buf_free(&sts);
	if (!ok)
		return auth_fail(r, resp, "AuthenticationFailed", "the SAS signature does not match");
	if (si != NULL && !sas_policy(r, resp, si, &st, &se, stbuf, sebuf, sizeof(stbuf)))
		return false;
	if (!sas_perms_valid(r->sas.perms, r->sas.account_sas))
		return auth_fail(r, resp, "AuthenticationFailed",
						 r->sas.account_sas ? "the SAS's permissions (sp) are not a set of the letters r, w, d, l, a, c, u, p, x, y, t, f, i" :
						 "the SAS's permissions (sp) are not a set of the letters r, a, u, d");
	gettimeofday(&tv, NULL);
	now = (long long) tv.tv_sec * 1000000LL + tv.tv_usec;
	if (se == NULL || !parse_iso(se, &tse))
		return auth_fail(r, resp, "AuthenticationFailed", "the SAS has no valid expiry (se)");
	if (now >= tse)
		return auth_fail(r, resp, "AuthenticationFailed", "the SAS has expired");
	if (st != NULL && (!parse_iso(st, &tst) || now < tst))
		return auth_fail(r, resp, "AuthenticationFailed", "the SAS is not valid yet (st)");
	if (spr != NULL && strcmp(spr, "https,http") != 0 && strcmp(spr, "http,https") != 0 &&
		!(strcmp(spr, "https") == 0 && gw_config.tls))
		return auth_fail(r, resp, "AuthorizationProtocolMismatch", "the SAS does not allow the protocol of this request (spr)");
	if (sip != NULL && !sip_allows(r, sip))
		return auth_fail(r, resp, "AuthorizationSourceIPMismatch", "the client address is not in the SAS's range (sip)");
	return true;
}

/*
 * The versions of the service (x-ms-version), newest first, as the
 * service's versioning page lists them (2026-06-06 is the newest of June
 * 2026).  The gateway serves every one alike: the Table protocol it speaks
 * is the same in all of them.
 */
static const char *const service_versions[] = {
	"2026-06-06", "2026-04-06", "2026-02-06", "2025-11-05", "2025-07-05", "2025-05-05",
	"2025-01-05", "2024-11-04", "2024-08-04", "2024-05-04", "2024-02-04", "2023-11-03",
	"2023-08-03", "2023-01-03", "2022-11-02", "2021-12-02", "2021-10-04", "2021-08-06",
	"2021-06-08", "2021-04-10", "2021-02-12", "2020-12-06", "2020-10-02", "2020-08-04",
	"2020-06-12", "2020-04-08", "2020-02-10", "2019-12-12", "2019-10-10", "2019-07-07",
	"2019-02-02", "2018-11-09", "2018-03-28", "2017-11-09", "2017-07-29", "2017-04-17",
	"2016-05-31", "2015-12-11", "2015-07-08", "2015-04-05", "2015-02-21", "2014-02-14",
	"2013-08-15", "2012-02-12", "2011-08-18", "2009-09-19", "2009-07-17", "2009-04-14",
};

/*
 * service_version: whether v names a version of the service: one of the
 * list, or a calendar date after its newest.  The service refuses a
 * version it does not know, and so does the gateway for every past date;
 * a later date is what an SDK newer than this gateway sends once the
 * service has that version, and refusing it would break that SDK until
 * the gateway is upgraded (Azurite's most frequent complaint) while the
 * table protocol stays the same.
 */
static bool
service_version(const char *v)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			y,
				m,
				d,
				n = 0;

	for (size_t i = 0; i < sizeof(service_versions) / sizeof(service_versions[0]); i++)
		if (strcmp(v, service_versions[i]) == 0)
			return true;
	if (strlen(v) != 10 || v[4] != '-' || v[7] != '-')
		return false;
	for (int i = 0; i < 10; i++)
		if (i != 4 && i != 7 && !(v[i] >= '0' && v[i] <= '9'))
			return false;
	if (sscanf(v, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10 ||
		m < 1 || m > 12 || d < 1 || d > mdays[m - 1] ||
		(m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
		return false;
	return strcmp(v, service_versions[0]) > 0;
}

/*
 * shared_key_version: a request that is no SAS names its version in
 * x-ms-version (optional here): 400 InvalidHeaderValue if it is none.
 */
static bool
shared_key_version(Req *r, Resp *resp)
{
	const char *version = req_header(r, "x-ms-version");

	if (version == NULL || service_version(version))
		return true;
	resp_error(r, resp, 400, "InvalidHeaderValue",
			   "The value for one of the HTTP headers is not in the correct format.",
			   "x-ms-version is not a version of the service");
	return false;
}

/*
 * sas_version: a SAS's version is its sv (the service ignores x-ms-version
 * then), by the same rule: 400 InvalidQueryParameterValue if it is none.
 * A missing sv is sas()'s to refuse.
 */
static bool
sas_version(Req *r, Resp *resp)
{
	const char *sv = req_param(r, "sv");

	if (sv == NULL || service_version(sv))
		return true;
	resp_error(r, resp, 400, "InvalidQueryParameterValue",
			   "Value for one of the query parameters specified in the request URI is invalid.",
			   "sv is not a version of the service");
	return false;
}

/*
 * authenticate: a request carries a Shared Key (Lite) or Bearer (OAuth,
 * oauth.c) Authorization header or a SAS; anything else is refused with 403, and an x-ms-version
 * that is no version of the service with 400 (service_version).  A request that
 * carries both is authenticated by its header if that verifies, else by
 * its SAS, whose permissions then apply: Azurite accepts such a request if
 * either verifies, and clients written against it send both (its raw-REST
 * tests sign no date); the SAS alone would be accepted anyway, so this
 * grants nothing the SAS does not.  The version checked is the one of the
 * credential that authenticates: x-ms-version for a request whose header
 * verifies or that has no SAS, the SAS's sv otherwise.
 */
bool
authenticate(Req *r, Resp *resp)
{
	const char *auth = req_header(r, "Authorization");
	const char *sig = req_param(r, "sig");
	bool		bearer = auth != NULL && strncasecmp(auth, "Bearer ", 7) == 0;

	if (auth != NULL && sig != NULL)
	{
		Resp		tried = {0};
		bool		ok = bearer ? oauth_authenticate(r, &tried, auth + 7) : shared_key(r, &tried, auth);

		free_resp(&tried);
		if (ok)
			return shared_key_version(r, resp);
		return sas_version(r, resp) && sas(r, resp);
	}
	if (bearer)
		return shared_key_version(r, resp) && oauth_authenticate(r, resp, auth + 7);
	if (auth != NULL)
		return shared_key_version(r, resp) && shared_key(r, resp, auth);
	if (sig != NULL)
		return sas_version(r, resp) && sas(r, resp);
	return shared_key_version(r, resp) &&
		auth_fail(r, resp, "AuthenticationFailed", "the request has neither an Authorization header nor a SAS");
}

/*
 * key_cmp: compare two keys by UTF-16 code unit, the service's order, with
 * the extension's own comparison (src/utf16.c).
 */
int
key_cmp(const char *a, const char *b)
{
	return ts_utf16_cmp(a, (int) strlen(a), b, (int) strlen(b));
}

/*
 * key_in_range: whether (pk, rk) lies in a table SAS's range, both ends
 * inclusive: from (spk, srk) to (epk, erk); a missing srk is the smallest
 * RowKey, a missing erk means every RowKey of epk.
 */
bool
key_in_range(Req *r, const char *pk, const char *rk)
{
	Sas		   *s = &r->sas;

	if (s->spk != NULL)
	{
		int			c = key_cmp(pk, s->spk);

		if (c < 0 || (c == 0 && s->srk != NULL && key_cmp(rk, s->srk) < 0))
			return false;
	}
	if (s->epk != NULL)
	{
		int			c = key_cmp(pk, s->epk);

		if (c > 0 || (c == 0 && s->erk != NULL && key_cmp(rk, s->erk) > 0))
			return false;
	}
	return true;
}

/* has_perms: whether the SAS's sp holds every letter of `need`. */
static bool
has_perms(Req *r, const char *need)
{
	for (const char *p = need; *p; p++)
		if (strchr(r->sas.perms, *p) == NULL)
			return false;
	return true;
}

/*
 * sas_allows: whether the request's SAS (if any) permits operation `op` on
 * `table` (and, for entity operations, the key (pk, rk), which must be in
 * a table SAS's range; pk NULL for queries, whose range is applied to the
 * results).  Operations: service_get, service_set, list_tables, create_table,
 * delete_table, query, get, insert, update, merge, insert_or_replace,
 * insert_or_merge, delete.
 */
bool
sas_allows(Req *r, Resp *resp, const char *op, const char *table,
		   const char *pk, const char *rk)
{
	static const struct
	{
		const char *op;
		const char *table_perms;	/* NULL: not with a table SAS */
		const char *acct_types;		/* any one of these srt letters */
		const char *acct_perms;		/* all of these sp letters ("|": any) */
	}			rules[] = {
		{"service_get", NULL, "s", "r"},
		{"service_set", NULL, "s", "w"},
		{"list_tables", NULL, "c", "l"},
		{"create_table", NULL, "c", "c|w|a"},
		{"delete_table", NULL, "c", "d"},
		{"query", "r", "oc", "r"},
		{"get", "r", "o", "r"},
		{"insert", "a", "o", "a"},
		{"update", "u", "o", "u"},
		{"merge", "u", "o", "u"},
		{"insert_or_replace", "au", "o", "au"},
		{"insert_or_merge", "au", "o", "au"},
		{"delete", "d", "o", "d"},
	};

	if (!r->sas.present)
		return true;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
	{
		if (strcmp(rules[i].op, op) != 0)
			continue;
		if (r->sas.account_sas)
		{
			bool		type_ok = false;
			bool		perm_ok;

			for (const char *t = rules[i].acct_types; *t; t++)
				if (strchr(r->sas.srt, *t))
					type_ok = true;
			if (!type_ok)
				return auth_fail(r, resp, "AuthorizationResourceTypeMismatch",
								 "the account SAS does not include this resource type (srt)");
			if (strchr(rules[i].acct_perms, '|'))
			{
				perm_ok = false;
				for (const char *p = rules[i].acct_perms; *p; p++)
					if (*p != '|' && strchr(r->sas.perms, *p))
						perm_ok = true;
			}
			else
				perm_ok = has_perms(r, rules[i].acct_perms);
			if (!perm_ok)
				return auth_fail(r, resp, "AuthorizationPermissionMismatch",
								 "the SAS does not grant the permission this operation needs (sp)");
			return true;
		}
		if (rules[i].table_perms == NULL)
			return auth_fail(r, resp, "AuthorizationPermissionMismatch",
							 "a table SAS cannot be used for operations on the table list or the service");
		if (table == NULL || strcasecmp(table, r->sas.tn) != 0)
			return auth_fail(r, resp, "AuthorizationPermissionMismatch",
							 "the table SAS is for another table (tn)");
		if (!has_perms(r, rules[i].table_perms))
			return auth_fail(r, resp, "AuthorizationPermissionMismatch",
							 "the SAS does not grant the permission this operation needs (sp)");
		if (pk != NULL && !key_in_range(r, pk, rk))
			return auth_fail(r, resp, "AuthorizationPermissionMismatch",
							 "the entity's key is outside the SAS's key range");
		return true;
	}
	return auth_fail(r, resp, "AuthorizationPermissionMismatch", "operation not allowed with a SAS");
}
