/*-------------------------------------------------------------------------
 *
 * edmtext.c
 *	  Parsing the text forms of Edm DateTime and Guid values, in plain C.
 *
 * No PostgreSQL headers: the $filter parser uses this too, and it is built
 * and fuzzed outside the server.  edm.c wraps it with the server's error
 * reporting.
 *
 *-------------------------------------------------------------------------
 */
#include "edmtext.h"

#include <stdio.h>

/*
 * edm_days_from_1601: days from 1601-01-01 to y-m-d, proleptic Gregorian.
 */
int64_t
edm_days_from_1601(int y, int m, int d)
{
	/* days from 0000-03-01, shifting the year to start in March */
	int64_t		yy = (m <= 2) ? y - 1 : y;
	int64_t		era = (yy >= 0 ? yy : yy - 399) / 400;
	int64_t		yoe = yy - era * 400;
	int64_t		mp = (m + 9) % 12;
	int64_t		doy = (153 * mp + 2) / 5 + d - 1;
	int64_t		doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	int64_t		days = era * 146097 + doe;

	/* 1601-01-01 is day 584694 of that count */
	return days - 584694;
}

static bool
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static bool
digits(const char *s, int n, int *out)
{
	int			v = 0;

	for (int i = 0; i < n; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/*
 * edm_parse_datetime: YYYY-MM-DDTHH:MM:SS[.fffffff][Z] (UTC) into ticks
 * since 1601-01-01.  A well-formed date before 1601 is OUT_OF_RANGE.
 */
EdmTextStatus
edm_parse_datetime(const char *s, size_t len, int64_t *ticks)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			y,
				mo,
				d,
				h,
				mi,
				sec;
	int64_t		frac = 0;
	size_t		pos = 19;

	if (len < 19 ||
		!digits(s, 4, &y) || s[4] != '-' ||
		!digits(s + 5, 2, &mo) || s[7] != '-' ||
		!digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
		!digits(s + 11, 2, &h) || s[13] != ':' ||
		!digits(s + 14, 2, &mi) || s[16] != ':' ||
		!digits(s + 17, 2, &sec))
		return EDM_TEXT_MALFORMED;

	if (pos < len && s[pos] == '.')
	{
		int			ndigits = 0;

		pos++;
		while (pos < len && s[pos] >= '0' && s[pos] <= '9')
		{
			if (ndigits == 7)
				return EDM_TEXT_MALFORMED;	/* finer than a tick */
			frac = frac * 10 + (s[pos] - '0');
			ndigits++;
			pos++;
		}
		if (ndigits == 0)
			return EDM_TEXT_MALFORMED;
		while (ndigits++ < 7)
			frac *= 10;
	}
	if (pos < len && (s[pos] == 'Z' || s[pos] == 'z'))
		pos++;
	if (pos != len)
		return EDM_TEXT_MALFORMED;

	if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59)
		return EDM_TEXT_MALFORMED;
	if (d > mdays[mo - 1] + (mo == 2 && is_leap(y) ? 1 : 0))
		return EDM_TEXT_MALFORMED;
	if (y < 1601)
		return EDM_TEXT_OUT_OF_RANGE;

	*ticks = edm_days_from_1601(y, mo, d) * EDM_TICKS_PER_DAY +
		((int64_t) h * 3600 + mi * 60 + sec) * EDM_TICKS_PER_SECOND + frac;
	return EDM_TEXT_OK;
}

/* The value of a hex digit, or -1 (inline: a Guid has 32 of them). */
static inline int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * edm_hexval: the value of a hex digit, or -1.
 */
int
edm_hexval(char c)
{
	return hexval(c);
}

/*
 * edm_parse_guid: xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (hex, either case)
 * into 16 bytes.
 */
bool
edm_parse_guid(const char *s, size_t len, uint8_t *out)
{
	/* where each byte's two hex digits start */
	static const uint8_t at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
	int			bad = 0;

	if (len != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
		return false;
	for (int i = 0; i < 16; i++)
	{
		int			hi = hexval(s[at[i]]);
		int			lo = hexval(s[at[i] + 1]);

		bad |= hi | lo;			/* negative if either is not a digit */
		out[i] = (uint8_t) ((hi & 0xF) << 4 | (lo & 0xF));
	}
	return bad >= 0;
}

/* Write value as exactly ndigits decimal digits, zero-padded. */
static void
put_digits(char *out, int64_t value, int ndigits)
{
	for (int i = ndigits - 1; i >= 0; i--)
	{
		out[i] = (char) ('0' + value % 10);
		value /= 10;
	}
}

/*
 * edm_format_datetime: ticks as the service writes a DateTime (UTC, up to
 * seven fractional digits, trailing zeros trimmed) into buf, which must
 * hold EDM_DATETIME_BUFLEN bytes.
 */
void
edm_format_datetime(int64_t ticks, char *buf)
{
	int64_t		days = ticks / EDM_TICKS_PER_DAY;
	int64_t		rest = ticks % EDM_TICKS_PER_DAY;
	int64_t		frac = rest % EDM_TICKS_PER_SECOND;
	int			secs = (int) (rest / EDM_TICKS_PER_SECOND);
	/* civil date from days, counting from 0000-03-01 (days 584694 = 1601-01-01) */
	int64_t		z = days + 584694;
	int64_t		era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t		doe = z - era * 146097;
	int64_t		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t		mp = (5 * doy + 2) / 153;
	int			d = (int) (doy - (153 * mp + 2) / 5 + 1);
	int			m = (int) (mp < 10 ? mp + 3 : mp - 9);
	int			y = (int) (yoe + era * 400 + (m <= 2));
	int			n;

	/* digits by hand: this runs for every entity a query returns */
	put_digits(buf, y, 4);
	buf[4] = '-';
	put_digits(buf + 5, m, 2);
	buf[7] = '-';
	put_digits(buf + 8, d, 2);
	buf[10] = 'T';
	put_digits(buf + 11, secs / 3600, 2);
	buf[13] = ':';
	put_digits(buf + 14, (secs / 60) % 60, 2);
	buf[16] = ':';
	put_digits(buf + 17, secs % 60, 2);
	n = 19;
	if (frac != 0)
	{
		int			ndigits = 7;

		while (frac % 10 == 0)
		{
			frac /= 10;
			ndigits--;
		}
		buf[n++] = '.';
		put_digits(buf + n, frac, ndigits);
		n += ndigits;
	}
	buf[n++] = 'Z';
	buf[n] = '\0';
}
