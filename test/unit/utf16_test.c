/*
 * test/unit/utf16_test.c: ts_utf16_cmp (src/utf16.c), the key order the
 * extension and the gateway share, against a reference that encodes both
 * strings in UTF-16 and compares code unit by code unit: fixed cases at
 * the edges (surrogates against U+E000..U+FFFF, prefixes, embedded NULs),
 * a million random pairs of valid UTF-8 (fixed seed), and malformed
 * UTF-8 cut at every length, which must be compared without reading past
 * either string (run under AddressSanitizer by `make unit`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf16.h"

static int	failures = 0;

/* Append code point cp to buf as UTF-8; returns the new length. */
static int
put_utf8(char *buf, int n, uint32_t cp)
{
	if (cp < 0x80)
		buf[n++] = (char) cp;
	else if (cp < 0x800)
	{
		buf[n++] = (char) (0xC0 | (cp >> 6));
		buf[n++] = (char) (0x80 | (cp & 0x3F));
	}
	else if (cp < 0x10000)
	{
		buf[n++] = (char) (0xE0 | (cp >> 12));
		buf[n++] = (char) (0x80 | ((cp >> 6) & 0x3F));
		buf[n++] = (char) (0x80 | (cp & 0x3F));
	}
	else
	{
		buf[n++] = (char) (0xF0 | (cp >> 18));
		buf[n++] = (char) (0x80 | ((cp >> 12) & 0x3F));
		buf[n++] = (char) (0x80 | ((cp >> 6) & 0x3F));
		buf[n++] = (char) (0x80 | (cp & 0x3F));
	}
	return n;
}

/* Append cp's UTF-16 code units to u; returns the new count. */
static int
put_utf16(uint16_t *u, int n, uint32_t cp)
{
	if (cp < 0x10000)
		u[n++] = (uint16_t) cp;
	else
	{
		u[n++] = (uint16_t) (0xD800 + ((cp - 0x10000) >> 10));
		u[n++] = (uint16_t) (0xDC00 + ((cp - 0x10000) & 0x3FF));
	}
	return n;
}

/* The reference order of two code point sequences: by UTF-16 code unit. */
static int
reference_cmp(const uint32_t *a, int na, const uint32_t *b, int nb)
{
	uint16_t	ua[64],
				ub[64];
	int			la = 0,
				lb = 0;

	for (int i = 0; i < na; i++)
		la = put_utf16(ua, la, a[i]);
	for (int i = 0; i < nb; i++)
		lb = put_utf16(ub, lb, b[i]);
	for (int i = 0; i < la && i < lb; i++)
		if (ua[i] != ub[i])
			return ua[i] < ub[i] ? -1 : 1;
	return (la > lb) - (la < lb);
}

static int
sign(int x)
{
	return (x > 0) - (x < 0);
}

/* Compare two code point sequences both ways and check against the reference. */
static void
check(const uint32_t *a, int na, const uint32_t *b, int nb)
{
	char		sa[128],
				sb[128];
	int			la = 0,
				lb = 0;
	int			want = reference_cmp(a, na, b, nb);

	for (int i = 0; i < na; i++)
		la = put_utf8(sa, la, a[i]);
	for (int i = 0; i < nb; i++)
		lb = put_utf8(sb, lb, b[i]);
	if (sign(ts_utf16_cmp(sa, la, sb, lb)) != want ||
		sign(ts_utf16_cmp(sb, lb, sa, la)) != -want)
	{
		if (failures++ < 10)
			fprintf(stderr, "FAIL: %d code points against %d: want %d\n", na, nb, want);
	}
}

/* A random code point, biased to the places where the orders differ. */
static uint32_t
random_cp(void)
{
	static const uint32_t edges[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF,
	0x10000, 0x10400, 0x1F600, 0x10FFFF};
	uint32_t	cp;

	switch (rand() % 5)
	{
		case 0:
			return edges[rand() % (sizeof(edges) / sizeof(edges[0]))];
		case 1:
			return 'a' + rand() % 3;
		case 2:
			return 0xE000 + rand() % 0x2000;
		case 3:
			return 0x10000 + rand() % 0x100000;
		default:
			do
				cp = rand() % 0x10000;
			while (cp >= 0xD800 && cp < 0xE000);
			return cp;
	}
}

int
main(void)
{
	uint32_t	a[16],
				b[16];
	int			tests = 0;

	/* fixed cases: a supplementary character sorts before U+E000..U+FFFF */
	{
		uint32_t	x[] = {0x1F600};
		uint32_t	y[] = {0xFFFD};
		uint32_t	z[] = {0xE000, 'a'};
		uint32_t	p[] = {'a', 0};
		uint32_t	q[] = {'a'};

		check(x, 1, y, 1);
		check(x, 1, z, 2);
		check(p, 2, q, 1);
		check(q, 1, q, 1);
		check(q, 0, q, 1);
		tests += 5;
	}

	/* random pairs sharing a random prefix */
	srand(25);
	for (int t = 0; t < 1000000; t++)
	{
		int			common = rand() % 4;
		int			na = common + rand() % 4;
		int			nb = common + rand() % 4;

		for (int i = 0; i < common; i++)
			a[i] = b[i] = random_cp();
		for (int i = common; i < na; i++)
			a[i] = random_cp();
		for (int i = common; i < nb; i++)
			b[i] = random_cp();
		check(a, na, b, nb);
		tests++;
	}

	/* malformed UTF-8 cut at every length: bounded, antisymmetric */
	{
		const char *bad[] = {"\xF0\x9F\x98", "\xE2\x82", "\xC3", "\x80\x80", "\xFF", "a\xF0", "a\xF4\x8F\xBF\xBF"};
		int			nbad = sizeof(bad) / sizeof(bad[0]);

		for (int i = 0; i < nbad; i++)
			for (int j = 0; j < nbad; j++)
				for (int li = 0; li <= (int) strlen(bad[i]); li++)
					for (int lj = 0; lj <= (int) strlen(bad[j]); lj++)
					{
						char	   *x = malloc(li ? li : 1);
						char	   *y = malloc(lj ? lj : 1);

						memcpy(x, bad[i], li);
						memcpy(y, bad[j], lj);
						if (sign(ts_utf16_cmp(x, li, y, lj)) != -sign(ts_utf16_cmp(y, lj, x, li)) ||
							(li == lj && memcmp(x, y, li) == 0 && ts_utf16_cmp(x, li, y, lj) != 0))
						{
							if (failures++ < 10)
								fprintf(stderr, "FAIL: malformed %d/%d against %d/%d\n", i, li, j, lj);
						}
						free(x);
						free(y);
						tests++;
					}
	}

	printf("utf16_test: %d passed, %d failed\n", tests - failures, failures);
	return failures != 0;
}
