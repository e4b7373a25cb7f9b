/*-------------------------------------------------------------------------
 *
 * edm.c
 *	  The Table service's value forms: DateTime (100 ns ticks), Guid, Binary
 *	  (base64), ETags, and UTF-16 lengths and order of UTF-8 strings.
 *
 * The service is written in .NET: its lengths are counted in UTF-16 code
 * units and its string order is ordinal by UTF-16 code unit.  PostgreSQL
 * holds text as UTF-8, so these helpers translate without converting.
 *
 * A DateTime is held as ticks: 100 ns units since 1601-01-01T00:00:00Z,
 * the start of the service's DateTime range.
 *
 * An entity's Timestamp is stored as a timestamptz, whose range is wider:
 * a row written with SQL can hold a ts before 1601, after 9999 or infinite.
 * Nothing here asserts on a stored value: reading such a Timestamp is an
 * error naming the entity, a filter treats it as absent, and no ETag
 * matches it; a write never stores one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/base64.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/datetime.h"

#include "errors.h"
#include "edm.h"
#include "edmtext.h"

#define TICKS_PER_SECOND	INT64CONST(10000000)
#define TICKS_PER_DAY		(INT64CONST(86400) * TICKS_PER_SECOND)

/* Ticks of 9999-12-31T23:59:59.9999999Z, the largest DateTime. */
#define MAX_TICKS			(TS_TICKS_AFTER_RANGE - 1)

/*
 * The service's range as timestamptz (microseconds since 2000-01-01):
 * 1601-01-01T00:00:00Z, and 10000-01-01T00:00:00Z, the first time after the
 * range (145,731 and 2,921,940 days from 2000-01-01; test/sql/stored_ranges
 * checks both ends against PostgreSQL's own arithmetic).  The CHECK
 * constraint entity_ts_in_range (tables.c) states the same range in SQL.
 */
#define MIN_TIMESTAMPTZ		(-INT64CONST(145731) * USECS_PER_DAY)
#define END_TIMESTAMPTZ		(INT64CONST(2921940) * USECS_PER_DAY)

/* The range as the service writes it, for messages. */
#define DATETIME_RANGE_TEXT "1601-01-01T00:00:00Z and 9999-12-31T23:59:59.9999999Z"

/*
 * ts_utf16_length: the number of UTF-16 code units of a UTF-8 string
 * (characters outside the BMP count two).
 *
 * Each lead byte starts a character, and a lead byte of 0xF0 or more one
 * outside the BMP; continuation bytes are 10xxxxxx.  Eight bytes at a time:
 * a word of ASCII adds eight, any other word its counts of continuation
 * bytes and four-byte leads, as sums of one bit per byte.
 */
int
ts_utf16_length(const char *s, int len)
{
	const uint64 high = UINT64CONST(0x8080808080808080);
	const uint64 ones = UINT64CONST(0x0101010101010101);
	int			n = 0;
	int			i = 0;

	for (; i + 8 <= len; i += 8)
	{
		uint64		w;
		uint64		cont;
		uint64		lead4;

		memcpy(&w, s + i, sizeof(w));
		if ((w & high) == 0)
		{
			n += 8;
			continue;
		}
		/* bit 7 of a byte: set and bit 6 clear; bits 7 to 4 all set */
		cont = (w & ~(w << 1) & high) >> 7;
		lead4 = (w & (w << 1) & (w << 2) & (w << 3) & high) >> 7;
		n += 8 - (int) ((cont * ones) >> 56) + (int) ((lead4 * ones) >> 56);
	}
	for (; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if ((c & 0xC0) != 0x80)		/* a lead byte starts a character */
			n += (c >= 0xF0) ? 2 : 1;
	}
	return n;
}

/*
 * ts_parse_datetime: parse an ISO 8601 UTC DateTime of the form
 * YYYY-MM-DDTHH:MM:SS[.fffffff][Z] into ticks.
 *
 * Returns false if the text is not of that form (the caller reports
 * InvalidInput).  A well-formed value before 1601 is reported here as
 * OutOfRangeInput.
 */
bool
ts_parse_datetime(const char *s, int len, int64 *ticks)
{
	int64_t		t;

	switch (edm_parse_datetime(s, len, &t))
	{
		case EDM_TEXT_OK:
			*ticks = t;
			return true;
		case EDM_TEXT_MALFORMED:
			return false;
		case EDM_TEXT_OUT_OF_RANGE:
			break;
	}
	ts_ereport(ERROR, TS_OutOfRangeInput,
			   errmsg("DateTime value \"%s\" is out of range", ts_clip(s, len)),
			   errhint("DateTime values lie between " DATETIME_RANGE_TEXT "."));
	return false;				/* keep the compiler quiet */
}

/*
 * ts_format_datetime: ticks as the service writes a DateTime: UTC, up to
 * seven fractional digits with trailing zeros trimmed.  Ticks outside the
 * range are a caller's bug (a stored Timestamp is checked first, see
 * ts_format_stored_timestamp), reported rather than asserted.
 */
char *
ts_format_datetime(int64 ticks)
{
	char	   *buf = palloc(EDM_DATETIME_BUFLEN);

	if (ticks < 0 || ticks > MAX_TICKS)
		elog(ERROR, "DateTime ticks " INT64_FORMAT " are outside the service's range", ticks);
	edm_format_datetime(ticks, buf);
	return buf;
}

/*
 * ts_timestamptz_in_range: whether a timestamptz lies in the service's
 * DateTime range (infinities do not).
 */
bool
ts_timestamptz_in_range(TimestampTz ts)
{
	return ts >= MIN_TIMESTAMPTZ && ts < END_TIMESTAMPTZ;
}

/*
 * The text of a timestamptz for messages: ISO, in UTC, whatever the
 * session's DateStyle and TimeZone, as the range it is compared with.
 */
static char *
timestamptz_text(TimestampTz ts)
{
	char		buf[MAXDATELEN + 1];
	struct pg_tm tm;
	fsec_t		fsec;

	if (TIMESTAMP_NOT_FINITE(ts))
		EncodeSpecialTimestamp(ts, buf);
	else if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) == 0)
	{
		tm.tm_isdst = 0;		/* UTC: print its offset */
		EncodeDateTime(&tm, fsec, true, 0, NULL, USE_ISO_DATES, buf);
	}
	else
		return psprintf(INT64_FORMAT " microseconds after 2000-01-01", ts);
	return pstrdup(buf);
}

/*
 * ts_format_stored_timestamp: the stored Timestamp ts of entity (pk, rk) as
 * the service writes it.  A ts outside the service's range (written with
 * SQL into a relation without the CHECK constraint entity_ts_in_range, or
 * before it was added) is an error naming the entity: there is no DateTime
 * to write for it, and a clipped or wrapped one would be a wrong ETag.
 */
char *
ts_format_stored_timestamp(TimestampTz ts, text *pk, text *rk)
{
	if (!ts_timestamptz_in_range(ts))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("entity (\"%s\", \"%s\") has a Timestamp outside the service's range",
						ts_clip_text(pk), ts_clip_text(rk)),
				 errdetail("Its ts is %s; Timestamps lie between " DATETIME_RANGE_TEXT ".",
						   timestamptz_text(ts)),
				 errhint("Correct the row's ts with SQL, or delete the entity.")));
	return ts_format_datetime(ts_timestamptz_to_ticks(ts));
}

/*
 * ts_next_write_timestamp: the Timestamp a write gives an entity whose
 * Timestamp is now previous (DT_NOBEGIN for a new entity): the clock, but
 * always after previous, so that every write changes the ETag even within
 * one microsecond.  Neither clipped nor wrapped: it may lie past the range
 * (an entity whose ts was set with SQL to its last microsecond, or beyond);
 * the writer refuses it (ts_check_write_timestamp) or, when previous may be
 * stale, tests it (ts_timestamptz_in_range) and decides on the latest.
 */
TimestampTz
ts_next_write_timestamp(TimestampTz previous)
{
	TimestampTz now = GetCurrentTimestamp();
	/* no overflow whatever previous holds: past the range it stays past */
	TimestampTz next = previous >= END_TIMESTAMPTZ ? previous :
		previous < MIN_TIMESTAMPTZ ? MIN_TIMESTAMPTZ : previous + 1;

	return Max(now, next);
}

/*
 * ts_write_timestamp: ts_next_write_timestamp for entity (pk, rk), refused
 * outside the range with the SQLSTATE of the CHECK constraint that refuses
 * it in SQL, so that no write stores a Timestamp no read can serve.
 */
TimestampTz
ts_write_timestamp(TimestampTz previous, text *pk, text *rk)
{
	TimestampTz ts = ts_next_write_timestamp(previous);

	ts_check_write_timestamp(ts, pk, rk);
	return ts;
}

/*
 * ts_check_write_timestamp: refuse a Timestamp outside the service's range
 * that a write would store for entity (pk, rk): for a write whose SQL
 * computed it (the SPI path's GREATEST(clock, ts + 1 microsecond)), called
 * on the value it returned, so that the error undoes the write.
 */
void
ts_check_write_timestamp(TimestampTz ts, text *pk, text *rk)
{
	if (!ts_timestamptz_in_range(ts))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("entity (\"%s\", \"%s\") cannot be written: its Timestamp would be outside the service's range",
						ts_clip_text(pk), ts_clip_text(rk)),
				 errdetail("A write sets the Timestamp to the current time, or just after the entity's Timestamp "
						   "if that is later: %s; Timestamps lie between " DATETIME_RANGE_TEXT ".",
						   timestamptz_text(ts)),
				 errhint("The entity's ts was set with SQL: set it to an earlier time, or delete the entity and insert it again.")));
}

/* Ticks from 1601-01-01 to 2000-01-01, PostgreSQL's timestamp epoch. */
static int64
pg_epoch_ticks(void)
{
	return edm_days_from_1601(2000, 1, 1) * TICKS_PER_DAY;
}

/*
 * ts_timestamptz_to_ticks: a timestamptz (microseconds) in ticks.  A
 * timestamptz outside the service's range (infinities included) gives
 * TS_TICKS_BEFORE_RANGE or TS_TICKS_AFTER_RANGE, which no DateTime or ETag
 * parses to, so that it matches no ETag and no wrapped product of it looks
 * like a real time (-infinity times ten is, modulo 2^64, 2000-01-01).
 */
int64
ts_timestamptz_to_ticks(TimestampTz ts)
{
	if (ts < MIN_TIMESTAMPTZ)
		return TS_TICKS_BEFORE_RANGE;
	if (ts >= END_TIMESTAMPTZ)
		return TS_TICKS_AFTER_RANGE;
	return (int64) ts * 10 + pg_epoch_ticks();
}

/*
 * ts_ticks_to_timestamptz: ticks as a timestamptz; sub-microsecond digits
 * are truncated.
 */
TimestampTz
ts_ticks_to_timestamptz(int64 ticks)
{
	int64		t = ticks - pg_epoch_ticks();

	/* floor division, so that times before 2000 truncate toward the past */
	return (TimestampTz) (t >= 0 ? t / 10 : -((-t + 9) / 10));
}

/*
 * ts_parse_guid: parse xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (hex, either
 * case) into 16 bytes.
 */
bool
ts_parse_guid(const char *s, int len, uint8 *out)
{
	return edm_parse_guid(s, len, out);
}

/*
 * ts_format_guid: the canonical lower-case text of a Guid.
 */
char *
ts_format_guid(const uint8 *g)
{
	return psprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
					g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
					g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

static bool
is_base64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		(c >= '0' && c <= '9') || c == '+' || c == '/';
}

/*
 * ts_check_base64: whether s is strict, padded base64; if so, the number of
 * bytes it encodes.
 */
bool
ts_check_base64(const char *s, int len, int *nbytes)
{
	int			pad = 0;

	if (len % 4 != 0)
		return false;
	if (len > 0 && s[len - 1] == '=')
		pad = (len > 1 && s[len - 2] == '=') ? 2 : 1;
	for (int i = 0; i < len - pad; i++)
		if (!is_base64_char(s[i]))
			return false;
	*nbytes = len / 4 * 3 - pad;
	return true;
}

/*
 * ts_format_etag: the ETag of an entity whose Timestamp is ts, in the live
 * service's form W/"datetime'2021-02-01T20%3A58%3A57.614341Z'".
 */
char *
ts_format_etag(TimestampTz ts)
{
	char		dt[EDM_DATETIME_BUFLEN];

	if (!ts_timestamptz_in_range(ts))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("an entity's Timestamp %s is outside the service's range", timestamptz_text(ts)),
				 errdetail("Timestamps lie between " DATETIME_RANGE_TEXT "."),
				 errhint("Correct the row's ts with SQL, or delete the entity.")));
	edm_format_datetime(ts_timestamptz_to_ticks(ts), dt);
	return ts_etag_from_datetime(dt);
}

/*
 * ts_etag_from_datetime: the ETag of a Timestamp already formatted as a
 * DateTime (so that an entity's output formats its Timestamp once).
 */
char *
ts_etag_from_datetime(const char *dt)
{
	static const char prefix[] = "W/\"datetime'";
	/* each of the two colons becomes "%3A" */
	char	   *buf = palloc(sizeof(prefix) + EDM_DATETIME_BUFLEN + 4 + 2);
	char	   *out = buf;

	memcpy(out, prefix, sizeof(prefix) - 1);
	out += sizeof(prefix) - 1;
	for (const char *p = dt; *p; p++)
	{
		if (*p == ':')
		{
			memcpy(out, "%3A", 3);
			out += 3;
		}
		else
			*out++ = *p;
	}
	memcpy(out, "'\"", 3);
	return buf;
}

/*
 * ts_parse_etag: the Timestamp (in ticks) an ETag stands for.  Returns
 * false if the text is not an ETag of the service's form.
 */
bool
ts_parse_etag(const char *etag, int64 *ticks)
{
	static const char prefix[] = "W/\"datetime'";
	static const char suffix[] = "'\"";
	size_t		len = strlen(etag);
	StringInfoData dt;

	if (len < strlen(prefix) + strlen(suffix) ||
		strncmp(etag, prefix, strlen(prefix)) != 0 ||
		strcmp(etag + len - strlen(suffix), suffix) != 0)
		return false;

	initStringInfo(&dt);
	for (size_t i = strlen(prefix); i < len - strlen(suffix); i++)
	{
		if (etag[i] == '%' && i + 2 < len && etag[i + 1] == '3' &&
			(etag[i + 2] == 'A' || etag[i + 2] == 'a'))
		{
			appendStringInfoChar(&dt, ':');
			i += 2;
		}
		else
			appendStringInfoChar(&dt, etag[i]);
	}
	if (dt.len < 20 || dt.data[dt.len - 1] != 'Z')
		return false;
	/* an out-of-range time cannot be any entity's ETag: call it malformed */
	if (dt.data[0] < '1' || (strncmp(dt.data, "1601", 4) < 0))
		return false;
	return ts_parse_datetime(dt.data, dt.len, ticks);
}
