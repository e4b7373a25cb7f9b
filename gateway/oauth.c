/*-------------------------------------------------------------------------
 *
 * oauth.c
 *	  OAuth 2.0 bearer tokens (Microsoft Entra ID's access tokens, or any
 *	  issuer's JWTs signed with a key given to the gateway): the token's
 *	  signature, lifetime, issuer and audience, and the PostgreSQL role its
 *	  principal acts as.
 *
 * The service takes `Authorization: Bearer <JWT>` and authorizes the
 * principal by its role assignments; the gateway has no directory to ask,
 * so what a token may do is configured:
 *	- --oauth-key: the public keys (PEM public key or X.509 certificate)
 *	  whose RS256/RS384/RS512 signatures are trusted;
 *	- --oauth-tenant and --oauth-issuer: the issuers accepted, exactly.
 *	  There is no default: Entra ID signs every tenant's tokens with the same
 *	  keys, so the issuer (and for a tenant, the tid claim) is what binds a
 *	  token to the operator's organisation;
 *	- --oauth-principal: a principal (the token's oid claim, or "*" for any
 *	  principal that has one) of an account, and the role it acts as.
 * A token that verifies but whose principal is not mapped is authenticated
 * and not authorized (403 AuthorizationPermissionMismatch), as a principal
 * without a role assignment is in the service.
 *
 * Everything that makes a token unacceptable is answered as the service
 * answers it: 403 AuthenticationFailed with the reason in the message.
 * Bearer tokens are refused over plain HTTP, as the service refuses them (a
 * bearer token is the credential itself).  Tokens are bounded (16 KiB),
 * decoded strictly (base64url without padding, JSON with no duplicate
 * member), and the algorithm is the header's only when it is one of the
 * RSA ones: "none" and the HMAC ones (which would let a public key serve as
 * an HMAC secret) are refused.  Keys are RSA of 2048 to 4096 bits with an
 * odd exponent of at least 65537, at most 8 of them, and a token that names
 * a certificate (kid, x5t) is verified with that one only: a junk token
 * costs a bounded number of verifications.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "oauth.h"

#include "account.h"
#include "buf.h"
#include "config.h"
#include "encode.h"
#include "json.h"
#include "reqtypes.h"
#include "response.h"

#define OAUTH_MAX_TOKEN		16384	/* bytes of a token */
#define OAUTH_MAX_KEYS		8		/* a token naming no key costs one
									 * verification per key */
#define OAUTH_MAX_BITS		4096
#define OAUTH_MAX_LIST		64		/* issuers, audiences, principals */
#define OAUTH_SKEW			300		/* seconds of clock skew tolerated */
#define OAUTH_MAX_TIME		253402300799.0	/* 9999-12-31T23:59:59Z */

/* The cloud suffixes of an account's table endpoint as an audience. */
static const char *const table_suffixes[] = {
	".table.core.windows.net",
	".table.core.chinacloudapi.cn",
	".table.core.usgovcloudapi.net",
	".table.core.cloudapi.de",
};

/* Azure Storage as an audience, by URL and by application id. */
static const char *const storage_audiences[] = {
	"https://storage.azure.com",
	"e406a681-f3d4-42a8-90b6-c2b029497af1",
};

/* A trusted key, and the thumbprints a token's header may name it by. */
typedef struct OAuthKey
{
	EVP_PKEY   *pkey;
	char		x5t[32];		/* base64url SHA-1 of the certificate; "" for
								 * a bare public key */
	char		x5t256[48];		/* base64url SHA-256 of the certificate */
} OAuthKey;

/* An accepted issuer; a tenant's issuers also require its tid claim. */
typedef struct OAuthIssuer
{
	char	   *iss;
	char	   *tid;			/* NULL: --oauth-issuer, no tid check */
} OAuthIssuer;

/* One --oauth-principal: a principal of an account and its role. */
typedef struct OAuthPrincipal
{
	char	   *account;
	char	   *principal;		/* an oid, or "*" */
	char	   *role;			/* NULL: the account's role */
} OAuthPrincipal;

static OAuthKey keys[OAUTH_MAX_KEYS];
static int	nkeys;
static OAuthIssuer issuers[OAUTH_MAX_LIST];
static int	nissuers;
static char *audiences[OAUTH_MAX_LIST];
static int	naudiences;
static OAuthPrincipal principals[OAUTH_MAX_LIST];
static int	nprincipals;

/* b64url_encode: base64url without padding of n bytes, into out (cap). */
static void
b64url_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
	char	   *b = b64_encode(in, n);
	size_t		o = 0;

	for (const char *p = b; *p && *p != '=' && o + 1 < cap; p++)
		out[o++] = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	out[o] = '\0';
	free(b);
}

/*
 * key_is_sound: an RSA key of 2048 to 4096 bits whose public exponent is
 * odd and at least 65537 (e = 1 would make every signature verify; small
 * or even exponents are no RSA anyone issues tokens with).
 */
static bool
key_is_sound(EVP_PKEY *pkey)
{
	BIGNUM	   *e = NULL;
	bool		ok;

	if (EVP_PKEY_base_id(pkey) != EVP_PKEY_RSA || EVP_PKEY_bits(pkey) < 2048 ||
		EVP_PKEY_bits(pkey) > OAUTH_MAX_BITS ||
		EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e) != 1)
		return false;
	ok = BN_is_odd(e) && BN_num_bits(e) >= 17;
	BN_free(e);
	return ok;
}

/*
 * oauth_add_key: trust the RSA public key in a PEM file (a public key, or
 * a certificate, whose key is taken and whose thumbprints a token's header
 * may name; its validity dates are the issuer's business, not the
 * gateway's).  False, with the reason on stderr, if the file holds neither
 * or the key is not sound (key_is_sound).
 */
bool
oauth_add_key(const char *path)
{
	FILE	   *f = fopen(path, "r");
	OAuthKey	k = {0};

	if (f == NULL)
	{
		perror(path);
		return false;
	}
	k.pkey = PEM_read_PUBKEY(f, NULL, NULL, NULL);
	if (k.pkey == NULL)
	{
		X509	   *cert;

		rewind(f);
		cert = PEM_read_X509(f, NULL, NULL, NULL);
		if (cert != NULL)
		{
			unsigned char md[SHA256_DIGEST_LENGTH];
			unsigned int mdlen;

			k.pkey = X509_get_pubkey(cert);
			if (X509_digest(cert, EVP_sha1(), md, &mdlen) == 1)
				b64url_encode(md, mdlen, k.x5t, sizeof(k.x5t));
			if (X509_digest(cert, EVP_sha256(), md, &mdlen) == 1)
				b64url_encode(md, mdlen, k.x5t256, sizeof(k.x5t256));
			X509_free(cert);
		}
	}
	fclose(f);
	if (k.pkey == NULL)
	{
		fprintf(stderr, "tablestore-gateway: %s holds no PEM public key or certificate\n", path);
		return false;
	}
	if (!key_is_sound(k.pkey))
	{
		fprintf(stderr, "tablestore-gateway: the key in %s is not an RSA key of 2048 to %d bits "
				"with an odd public exponent of at least 65537\n", path, OAUTH_MAX_BITS);
		EVP_PKEY_free(k.pkey);
		return false;
	}
	if (nkeys == OAUTH_MAX_KEYS)
	{
		fprintf(stderr, "tablestore-gateway: at most %d --oauth-key\n", OAUTH_MAX_KEYS);
		EVP_PKEY_free(k.pkey);
		return false;
	}
	keys[nkeys++] = k;
	return true;
}

/* add_issuer: one accepted issuer (exact), with the tid it requires. */
static bool
add_issuer(const char *iss, const char *tid, const char *option)
{
	if (*iss == '\0' || nissuers == OAUTH_MAX_LIST)
	{
		fprintf(stderr, "tablestore-gateway: %s takes a non-empty value; at most %d issuers\n",
				option, OAUTH_MAX_LIST);
		return false;
	}
	issuers[nissuers].iss = xstrdup(iss);
	issuers[nissuers].tid = tid ? xstrdup(tid) : NULL;
	nissuers++;
	return true;
}

/* oauth_add_issuer: --oauth-issuer, an iss accepted exactly as written. */
bool
oauth_add_issuer(const char *iss)
{
	return add_issuer(iss, NULL, "--oauth-issuer");
}

/*
 * oauth_add_tenant: --oauth-tenant, a Microsoft Entra ID tenant: its v1
 * and v2 issuers in the global cloud, each requiring the tid claim to be
 * the tenant.  A tenant id is a GUID or a domain name: letters, digits,
 * '.' and '-', nothing that could change the issuer's URL.
 */
bool
oauth_add_tenant(const char *tid)
{
	char		iss[256];

	if (*tid == '\0' || strlen(tid) > 100 ||
		strspn(tid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != strlen(tid))
	{
		fprintf(stderr, "tablestore-gateway: --oauth-tenant takes a tenant id (a GUID)\n");
		return false;
	}
	snprintf(iss, sizeof(iss), "https://sts.windows.net/%s/", tid);
	if (!add_issuer(iss, tid, "--oauth-tenant"))
		return false;
	snprintf(iss, sizeof(iss), "https://login.microsoftonline.com/%s/v2.0", tid);
	return add_issuer(iss, tid, "--oauth-tenant");
}

/* oauth_add_audience: --oauth-audience, one more audience accepted as is. */
bool
oauth_add_audience(const char *aud)
{
	if (*aud == '\0' || naudiences == OAUTH_MAX_LIST)
	{
		fprintf(stderr, "tablestore-gateway: --oauth-audience takes a non-empty value, at most %d times\n",
				OAUTH_MAX_LIST);
		return false;
	}
	audiences[naudiences++] = xstrdup(aud);
	return true;
}

/*
 * oauth_add_principal: --oauth-principal ACCOUNT:PRINCIPAL[:ROLE].  The
 * account must be configured when the options are checked
 * (oauth_check_config); the principal is an object id or "*".
 */
bool
oauth_add_principal(const char *spec)
{
	char	   *s = xstrdup(spec);
	char	   *principal = strchr(s, ':');
	char	   *role;
	OAuthPrincipal *p;

	if (principal == NULL || principal == s || principal[1] == '\0' || principal[1] == ':' ||
		nprincipals == OAUTH_MAX_LIST)
	{
		fprintf(stderr, "tablestore-gateway: --oauth-principal takes ACCOUNT:PRINCIPAL[:ROLE], at most %d times\n",
				OAUTH_MAX_LIST);
		free(s);
		return false;
	}
	*principal++ = '\0';
	role = strchr(principal, ':');
	if (role)
		*role++ = '\0';
	p = &principals[nprincipals++];
	p->account = xstrdup(s);
	p->principal = xstrdup(principal);
	p->role = (role && *role) ? xstrdup(role) : NULL;
	free(s);
	return true;
}

/*
 * oauth_check_config: after the options: every principal names a
 * configured account; the options need a key, and a key needs issuers.
 * False with the reason on stderr.
 */
bool
oauth_check_config(void)
{
	for (int i = 0; i < nprincipals; i++)
		if (find_account(principals[i].account, strlen(principals[i].account)) == NULL)
		{
			fprintf(stderr, "tablestore-gateway: --oauth-principal names account \"%s\", which is not configured\n",
					principals[i].account);
			return false;
		}
	if ((nprincipals > 0 || nissuers > 0 || naudiences > 0) && nkeys == 0)
	{
		fprintf(stderr, "tablestore-gateway: the --oauth-* options need --oauth-key\n");
		return false;
	}
	if (nkeys > 0 && nissuers == 0)
	{
		fprintf(stderr, "tablestore-gateway: --oauth-key needs --oauth-tenant or --oauth-issuer: "
				"an identity provider's keys sign other tenants' tokens too\n");
		return false;
	}
	return true;
}

/* oauth_enabled: whether the gateway takes bearer tokens at all. */
bool
oauth_enabled(void)
{
	return nkeys > 0;
}

/*
 * b64url_decode: strict base64url without padding (RFC 7515): n bytes of
 * input to malloc'd *out, NUL-terminated for JSON; -1 if not canonical.
 */
static int
b64url_decode(const char *in, size_t n, unsigned char **out)
{
	unsigned char *o;
	size_t		olen = 0;
	unsigned	acc = 0;
	int			bits = 0;

	if (n % 4 == 1)
		return -1;
	o = xmalloc(n * 3 / 4 + 2);
	for (size_t i = 0; i < n; i++)
	{
		char		c = in[i];
		int			v;

		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '-')
			v = 62;
		else if (c == '_')
			v = 63;
		else
		{
			free(o);
			return -1;
		}
		acc = (acc << 6) | (unsigned) v;
		bits += 6;
		if (bits >= 8)
		{
			bits -= 8;
			o[olen++] = (unsigned char) (acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0)				/* the unused low bits must be zero */
	{
		free(o);
		return -1;
	}
	o[olen] = '\0';
	*out = o;
	return (int) olen;
}

/* b64url_json: a base64url segment decoded and parsed as a JSON object. */
static json_object *
b64url_json(const char *in, size_t n)
{
	unsigned char *text;
	int			len = b64url_decode(in, n, &text);
	json_object *obj;

	if (len < 0)
		return NULL;
	obj = json_parse_strict((const char *) text, (size_t) len);
	free(text);
	if (obj != NULL && !json_object_is_type(obj, json_type_object))
	{
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

/* signature_digest: the digest of a JWS RSA algorithm, NULL for others. */
static const EVP_MD *
signature_digest(const char *alg)
{
	if (strcmp(alg, "RS256") == 0)
		return EVP_sha256();
	if (strcmp(alg, "RS384") == 0)
		return EVP_sha384();
	if (strcmp(alg, "RS512") == 0)
		return EVP_sha512();
	return NULL;
}

/*
 * key_named: whether key k may verify a token with this header: the
 * header names no certificate (kid, x5t or x5t#S256, as Entra ID names its
 * signing certificates), or names k's, or k is a bare public key.  A token
 * that names a certificate is verified with that one only.
 */
static bool
key_named(json_object *header, const OAuthKey *k)
{
	static const char *const names[] = {"kid", "x5t", "x5t#S256"};
	bool		named = false;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
	{
		json_object *v;
		const char *t;

		if (!json_object_object_get_ex(header, names[i], &v) || !json_object_is_type(v, json_type_string))
			continue;
		named = true;
		t = json_object_get_string(v);
		if (k->x5t[0] && (strcmp(t, k->x5t) == 0 || strcmp(t, k->x5t256) == 0))
			return true;
	}
	return !named || k->x5t[0] == '\0';
}

/* signed_by_trusted_key: whether a trusted key verifies the signature. */
static bool
signed_by_trusted_key(json_object *header, const EVP_MD *md, const char *input, size_t inlen,
					  const unsigned char *sig, size_t siglen)
{
	for (int i = 0; i < nkeys; i++)
	{
		EVP_MD_CTX *ctx;
		bool		ok;

		if (!key_named(header, &keys[i]))
			continue;
		if ((ctx = EVP_MD_CTX_new()) == NULL)
			return false;
		ok = EVP_DigestVerifyInit(ctx, NULL, md, NULL, keys[i].pkey) == 1 &&
			EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *) input, inlen) == 1;
		EVP_MD_CTX_free(ctx);
		if (ok)
			return true;
	}
	return false;
}

/*
 * claim_time: a NumericDate claim: 1 if present and a finite number of
 * seconds between 1970 and 9999, 0 if absent, -1 if anything else (a
 * string, 1e309, a date no clock reaches: a lifetime that cannot be
 * checked is no lifetime).  The number is only compared, never passed on,
 * so reading it as a double loses nothing that matters.
 */
static int
claim_time(json_object *claims, const char *name, double *out)
{
	json_object *v;
	double		d;

	if (!json_object_object_get_ex(claims, name, &v))
		return 0;
	if (!(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return -1;
	d = json_object_get_double(v);
	if (!isfinite(d) || d < 0 || d > OAUTH_MAX_TIME)
		return -1;
	*out = d;
	return 1;
}

/*
 * issuer_of: the accepted issuer a token's claims name exactly (and, for a
 * tenant's, whose tid they carry); NULL if none.
 */
static const OAuthIssuer *
issuer_of(json_object *claims)
{
	json_object *iss;
	json_object *tid;

	if (!json_object_object_get_ex(claims, "iss", &iss) || !json_object_is_type(iss, json_type_string))
		return NULL;
	if (!json_object_object_get_ex(claims, "tid", &tid) || !json_object_is_type(tid, json_type_string))
		tid = NULL;
	for (int i = 0; i < nissuers; i++)
		if (strcmp(json_object_get_string(iss), issuers[i].iss) == 0 &&
			(issuers[i].tid == NULL ||
			 (tid != NULL && strcasecmp(json_object_get_string(tid), issuers[i].tid) == 0)))
			return &issuers[i];
	return NULL;
}

/*
 * same_but_slash: whether s is want (in any case: URLs' scheme and host,
 * and GUIDs, are case-insensitive), or want followed by one "/" (the
 * service takes an audience with or without its trailing slash).
 */
static bool
same_but_slash(const char *s, const char *want, size_t wantlen)
{
	return strncasecmp(s, want, wantlen) == 0 &&
		(s[wantlen] == '\0' || (s[wantlen] == '/' && s[wantlen + 1] == '\0'));
}

/*
 * audience_ok: whether one audience is Azure Storage, this account's table
 * endpoint in one of the clouds, or one given with --oauth-audience.
 */
static bool
audience_ok(const char *aud, const char *account)
{
	size_t		alen = strlen(account);

	for (size_t i = 0; i < sizeof(storage_audiences) / sizeof(storage_audiences[0]); i++)
		if (same_but_slash(aud, storage_audiences[i], strlen(storage_audiences[i])))
			return true;
	if (strncasecmp(aud, "https://", 8) == 0 && strncasecmp(aud + 8, account, alen) == 0)
		for (size_t i = 0; i < sizeof(table_suffixes) / sizeof(table_suffixes[0]); i++)
			if (same_but_slash(aud + 8 + alen, table_suffixes[i], strlen(table_suffixes[i])))
				return true;
	for (int i = 0; i < naudiences; i++)
		if (strcmp(aud, audiences[i]) == 0)
			return true;
	return false;
}

/* audiences_ok: aud is one string or an array of them; any one will do. */
static bool
audiences_ok(json_object *aud, const char *account)
{
	if (json_object_is_type(aud, json_type_string))
		return audience_ok(json_object_get_string(aud), account);
	if (json_object_is_type(aud, json_type_array))
		for (size_t i = 0; i < json_object_array_length(aud) && i < OAUTH_MAX_LIST; i++)
		{
			json_object *a = json_object_array_get_idx(aud, i);

			if (json_object_is_type(a, json_type_string) &&
				audience_ok(json_object_get_string(a), account))
				return true;
		}
	return false;
}

/*
 * principal_of: the mapping of an account's principal (its oid exactly,
 * else "*"); NULL if none.
 */
static OAuthPrincipal *
principal_of(const char *account, const char *oid)
{
	OAuthPrincipal *any = NULL;

	for (int i = 0; i < nprincipals; i++)
	{
		if (strcmp(principals[i].account, account) != 0)
			continue;
		if (strcasecmp(principals[i].principal, oid) == 0)	/* GUIDs: any case */
			return &principals[i];
		if (strcmp(principals[i].principal, "*") == 0)
			any = &principals[i];
	}
	return any;
}

/* bearer_fail: 403 AuthenticationFailed with the reason. */
static bool
bearer_fail(Req *r, Resp *resp, const char *detail)
{
	resp_error(r, resp, 403, "AuthenticationFailed",
			   "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
			   detail);
	return false;
}

/*
 * verify_token: the checks of a compact JWS in order: shape, header,
 * signature, then the claims (lifetime, issuer, audience).  NULL when the
 * token is acceptable, with *claims_out set; else the reason.
 */
static const char *
verify_token(Req *r, const char *token, size_t len, json_object **claims_out)
{
	const char *dot1 = memchr(token, '.', len);
	const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (dot1 + 1 - token)) : NULL;
	json_object *header = NULL;
	json_object *claims = NULL;
	json_object *v;
	unsigned char *sig = NULL;
	int			siglen;
	const EVP_MD *md;
	double		exp = 0,
				nbf = 0;
	int			has_nbf = 0;
	time_t		now = time(NULL);
	const char *why = NULL;

	if (len > OAUTH_MAX_TOKEN || dot1 == NULL || dot2 == NULL ||
		memchr(dot2 + 1, '.', len - (dot2 + 1 - token)) != NULL)
		return "the bearer token is not a signed JWT (header.claims.signature)";
	header = b64url_json(token, dot1 - token);
	if (header == NULL || !json_object_object_get_ex(header, "alg", &v) ||
		!json_object_is_type(v, json_type_string))
		why = "the bearer token's header is not base64url JSON naming its algorithm";
	else if ((md = signature_digest(json_object_get_string(v))) == NULL)
		why = "the bearer token's algorithm is not RS256, RS384 or RS512";
	else if (json_object_object_get_ex(header, "crit", NULL))
		why = "the bearer token has critical header parameters the gateway does not know";
	else if ((siglen = b64url_decode(dot2 + 1, len - (dot2 + 1 - token), &sig)) <= 0 ||
			 !signed_by_trusted_key(header, md, token, dot2 - token, sig, siglen))
		why = "Signature validation failed: the bearer token is not signed by a key this gateway trusts";
	else if ((claims = b64url_json(dot1 + 1, dot2 - (dot1 + 1))) == NULL)
		why = "the bearer token's claims are not base64url JSON";
	else if (claim_time(claims, "exp", &exp) != 1)
		why = "Lifetime validation failed: the token has no exp, or one that is no date";
	else if ((has_nbf = claim_time(claims, "nbf", &nbf)) < 0)
		why = "Lifetime validation failed: the token's nbf is no date";
	else if (has_nbf && (double) now + OAUTH_SKEW < nbf)
		why = "Lifetime validation failed: the token is not yet valid (nbf)";
	else if ((double) now - OAUTH_SKEW >= exp)
		why = "Lifetime validation failed: the token is expired (exp)";
	else if (issuer_of(claims) == NULL)
		why = "Issuer validation failed: the token's issuer (and tenant) is not accepted";
	else if (!json_object_object_get_ex(claims, "aud", &v) || !audiences_ok(v, r->acct->name))
		why = "Audience validation failed: the token's audience is not this account";
	free(sig);
	if (header)
		json_object_put(header);
	if (why != NULL)
	{
		if (claims)
			json_object_put(claims);
		return why;
	}
	*claims_out = claims;
	return NULL;
}

/*
 * oauth_authenticate: authenticate a request by its bearer token (the
 * Authorization header's value after "Bearer ", blanks around it allowed)
 * and authorize its principal, which a token names by its oid: on success
 * r->role is the role it acts as and r->bearer is set.  False with the
 * response filled otherwise.
 */
bool
oauth_authenticate(Req *r, Resp *resp, const char *token)
{
	json_object *claims = NULL;
	json_object *oid;
	OAuthPrincipal *p = NULL;
	const char *why;
	size_t		len;

	if (!oauth_enabled())
		return bearer_fail(r, resp, "this gateway takes no bearer tokens (it has no --oauth-key)");
	if (!gw_config.tls)
		return bearer_fail(r, resp, "Authentication scheme Bearer is not allowed with HTTP: a bearer token is sent only over HTTPS");
	while (*token == ' ' || *token == '\t')
		token++;
	len = strlen(token);
	while (len > 0 && (token[len - 1] == ' ' || token[len - 1] == '\t'))
		len--;
	if ((why = verify_token(r, token, len, &claims)) != NULL)
		return bearer_fail(r, resp, why);
	if (json_object_object_get_ex(claims, "oid", &oid) && json_object_is_type(oid, json_type_string) &&
		json_object_get_string_len(oid) > 0)
		p = principal_of(r->acct->name, json_object_get_string(oid));
	json_object_put(claims);
	if (p == NULL)
	{
		resp_error(r, resp, 403, "AuthorizationPermissionMismatch",
				   "This request is not authorized to perform this operation using this permission.",
				   "the token names no principal (oid) that has a role on this account (--oauth-principal)");
		return false;
	}
	r->bearer = true;
	r->role = p->role ? p->role : r->acct->role;
	return true;
}
