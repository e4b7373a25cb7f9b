/*-------------------------------------------------------------------------
 *
 * utf16.c
 *	  The comparison of UTF-8 strings by UTF-16 code unit, in plain C with
 *	  no PostgreSQL headers, so that the extension and the gateway
 *	  (gateway/Makefile builds this file too) order keys the same way.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <string.h>

#include "utf16.h"

/*
 * The first UTF-16 code unit of the character that starts at s, of which
 * n bytes are left: the unit itself, or the high surrogate of a
 * supplementary character.  Never reads past n: a lead byte without the
 * continuation bytes it announces (only in malformed text, which the
 * server never stores but a gateway may be sent) counts as a unit of its
 * own value.
 */
static uint32_t
first_utf16_unit(const unsigned char *s, int n)
{
	unsigned	c = s[0];
	uint32_t	cp;

	if (c < 0x80)
		return c;
	if ((c & 0xE0) == 0xC0 && n >= 2)
		return ((c & 0x1F) << 6) | (s[1] & 0x3F);
	if ((c & 0xF0) == 0xE0 && n >= 3)
		return ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
	if ((c & 0xF8) == 0xF0 && n >= 4)
	{
		cp = ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
		if (cp >= 0x10000)
			return 0xD800 + ((cp - 0x10000) >> 10);
		return cp;
	}
	return c;
}

/*
 * ts_utf16_cmp: compare two UTF-8 strings ordinally by UTF-16 code unit, as
 * the service orders keys and strings.
 *
 * UTF-8 byte order equals code point order, which equals UTF-16 order except
 * where a supplementary character meets one in U+E000..U+FFFF.  So compare
 * bytes, and at the first difference compare the two characters' first
 * UTF-16 code units; when those are equal (two supplementary characters
 * with the same high surrogate) the bytes decide, as code points do.
 */
int
ts_utf16_cmp(const char *a, int alen, const char *b, int blen)
{
	int			n = alen < blen ? alen : blen;
	int			i = 0;
	uint32_t	ua,
				ub;

	while (i < n && a[i] == b[i])
		i++;
	if (i == n)
		return (alen > blen) - (alen < blen);

	/* back up to the start of the differing characters */
	while (i > 0 && (((unsigned char) a[i]) & 0xC0) == 0x80)
		i--;
	ua = first_utf16_unit((const unsigned char *) a + i, alen - i);
	ub = first_utf16_unit((const unsigned char *) b + i, blen - i);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return memcmp(a + i, b + i, n - i) < 0 ? -1 : 1;
}
