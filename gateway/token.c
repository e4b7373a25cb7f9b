/*-------------------------------------------------------------------------
 *
 * token.c
 *	  Continuation tokens: the keys where the next page of a query starts,
 *	  as opaque text signed with the account's key.
 *
 * Keys may hold any Unicode character, which headers cannot carry, so a
 * key travels as "2!", the base64 of its UTF-8 bytes,
 * "!" and a MAC: base64url of the first 16 bytes of HMAC-SHA256 under the
 * account's key of what the token is (kind 'p' NextPartitionKey, 'r'
 * NextRowKey, 't' NextTableName), the table (lower-case: names are case-
 * insensitive) and the key.  So the gateway accepts back only tokens it
 * issued to that account for that table, across restarts and across
 * gateways sharing the account's key.  The prefix keeps the token of the
 * empty key non-empty: the JavaScript SDK stops paging at an empty
 * NextPartitionKey.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "token.h"

#include "buf.h"
#include "encode.h"
#include "reqtypes.h"

#define TOKEN_MAC_BYTES 16

/* token_mac: the MAC part of a token (see above), appended to out. */
static void
token_mac(Req *r, char kind, const char *table, const char *key, Buf *out)
{
	Buf			text = {0};
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char	   *b;

	buf_printf(&text, "tablestore continuation\n%c\n", kind);
	for (const char *p = table; *p; p++)
	{
		char		c = (*p >= 'A' && *p <= 'Z') ? *p + ('a' - 'A') : *p;

		buf_append(&text, &c, 1);
	}
	buf_puts(&text, "\n");
	buf_puts(&text, key);
	if (HMAC(EVP_sha256(), r->acct->key, r->acct->keylen, (const unsigned char *) text.data, text.len,
			 mac, &maclen) == NULL || maclen < TOKEN_MAC_BYTES)
		memset(mac, 0, sizeof(mac));
	b = b64_encode(mac, TOKEN_MAC_BYTES);
	for (char *p = b; *p && *p != '='; p++)
	{
		char		c = *p == '+' ? '-' : *p == '/' ? '_' : *p;

		buf_append(out, &c, 1);
	}
	free(b);
	buf_free(&text);
}

/* token_encode: the token of key (malloc'd). */
char *
token_encode(Req *r, char kind, const char *table, const char *key)
{
	char	   *b = b64_encode((const unsigned char *) key, strlen(key));
	Buf			t = {0};

	buf_puts(&t, "2!");
	buf_puts(&t, b);
	buf_puts(&t, "!");
	token_mac(r, kind, table, key, &t);
	free(b);
	return t.data;
}

/*
 * token_decode: the key of a token this gateway issued for this account,
 * kind and table, malloc'd; NULL if it is malformed or not one it issued.
 */
char *
token_decode(Req *r, char kind, const char *table, const char *token)
{
	const char *sep;
	size_t		n;
	unsigned char *out;
	int			len;
	Buf			want = {0};
	bool		ok;

	if (strncmp(token, "2!", 2) != 0 || (sep = strchr(token + 2, '!')) == NULL)
		return NULL;
	n = sep - (token + 2);
	if (n > 8192)
		return NULL;
	out = xmalloc(n + 1);
	memcpy(out, token + 2, n);
	out[n] = '\0';
	len = b64_decode((const char *) out, out, n);
	if (len < 0 || memchr(out, '\0', len) != NULL)
	{
		free(out);
		return NULL;
	}
	out[len] = '\0';
	token_mac(r, kind, table, (const char *) out, &want);
	ok = strlen(sep + 1) == want.len && CRYPTO_memcmp(sep + 1, want.data, want.len) == 0;
	buf_free(&want);
	if (!ok)
	{
		free(out);
		return NULL;
	}
	return (char *) out;
}
