/*-------------------------------------------------------------------------
 *
 * encode.c
 *	  The encodings of the protocol's text: percent-decoding of URLs
 *	  (libmicrohttpd's decoder, made strict), the percent-encoded key of
 *	  an entity URL, base64 (OpenSSL's EVP) and random UUIDs.
 *
 * Nothing here knows a request: each function maps bytes to bytes, so the
 * request parser (request.c), the batch parser (batchparse.c), the
 * response writers and authentication share one definition of each form.
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "encode.h"

#include "buf.h"

/*
 * url_encode_key: a key as it appears between the quotes of an entity URL:
 * quotes doubled, then every byte outside encodeURIComponent's unreserved
 * set percent-encoded (quotes stay literal, as the JavaScript SDK sends
 * them).
 */
void
url_encode_key(Buf *b, const char *key)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *) key; *p; p++)
	{
		unsigned char c = *p;

		if (c == '\'')
			buf_puts(b, "''");
		else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
				 strchr("-_.!~*()", c) != NULL)
			buf_append(b, (const char *) &c, 1);
		else
		{
			char		e[3] = {'%', hex[c >> 4], hex[c & 15]};

			buf_append(b, e, 3);
		}
	}
}

/* entity_path: `table(PartitionKey='pk',RowKey='rk')`, keys encoded. */
void
entity_path(Buf *b, const char *table, const char *pk, const char *rk)
{
	buf_puts(b, table);
	buf_puts(b, "(PartitionKey='");
	url_encode_key(b, pk);
	buf_puts(b, "',RowKey='");
	url_encode_key(b, rk);
	buf_puts(b, "')");
}

/* b64_encode: standard padded base64 (OpenSSL), malloc'd. */
char *
b64_encode(const unsigned char *data, size_t len)
{
	char	   *out = xmalloc(4 * ((len + 2) / 3) + 1);

	EVP_EncodeBlock((unsigned char *) out, data, (int) len);
	return out;
}

/*
 * b64_decode: decode strict padded base64 into out; returns the number of
 * bytes, or -1 if the text is not base64 or does not fit.
 */
int
b64_decode(const char *in, unsigned char *out, size_t outcap)
{
	size_t		n = strlen(in);
	int			len;
	int			pad = 0;
	unsigned char *tmp;

	if (n % 4 != 0)
		return -1;
	if (n == 0)
		return 0;
	if (n / 4 * 3 > outcap + 2)
		return -1;
	tmp = xmalloc(n / 4 * 3 + 1);
	len = EVP_DecodeBlock(tmp, (const unsigned char *) in, (int) n);
	if (len < 0)
	{
		free(tmp);
		return -1;
	}
	if (in[n - 1] == '=')
		pad++;
	if (in[n - 2] == '=')
		pad++;
	len -= pad;
	if ((size_t) len > outcap)
	{
		free(tmp);
		return -1;
	}
	memcpy(out, tmp, len);
	free(tmp);
	return len;
}

/* new_uuid: a random version-4 UUID in text form (37 bytes with NUL). */
void
new_uuid(char *out)
{
	unsigned char u[16];

	if (RAND_bytes(u, sizeof(u)) != 1)
		memset(u, 0, sizeof(u));
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
			 u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/*
 * utf8_seq_len: the length of the well-formed UTF-8 sequence at p (at most
 * end - p bytes), or 0 if it is not one (Unicode 15, table 3-7: no overlong form, no surrogate,
 * nothing above U+10FFFF).  The one check of UTF-8 in the gateway: JSON
 * bodies (json.c) and percent-decoded URLs (pct_decode).
 */
int
utf8_seq_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80,
				hi = 0xbf;
	int			n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
	{
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;			/* no overlong forms */
		else if (c == 0xed)
			hi = 0x9f;			/* no surrogates */
	}
	else if (c >= 0xf0 && c <= 0xf4)
	{
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;			/* nothing above U+10FFFF */
	}
	else
		return 0;
	if (end - p < n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/*
 * pct_decode: percent-decode in place with libmicrohttpd's decoder ('+'
 * stays '+', as SAS signatures need).  False if a '%' is not followed by
 * two hex digits, or the result holds a NUL byte or is not valid UTF-8,
 * none of which any name, key or value of the protocol may contain.
 */
bool
pct_decode(char *s)
{
	size_t		n;
	const unsigned char *p = (const unsigned char *) s;
	size_t		i = 0;

	/*
	 * libmicrohttpd's decoder keeps a '%' not followed by two hex digits as
	 * it is, so "a%zz" and "a%25zz" would be one key: refuse it instead
	 */
	for (const char *c = s; *c; c++)
		if (*c == '%' && !(isxdigit((unsigned char) c[1]) && isxdigit((unsigned char) c[2])))
			return false;
	n = MHD_http_unescape(s);

	if (strlen(s) != n)
		return false;
	while (i < n)
	{
		int			len = utf8_seq_len(p + i, p + n);

		if (len == 0)
			return false;
		i += len;
	}
	return true;
}
