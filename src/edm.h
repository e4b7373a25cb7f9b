/*-------------------------------------------------------------------------
 *
 * edm.h
 *	  Edm values in the server (edm.c): UTF-16 lengths, DateTime ticks and
 *	  timestamps, Guid and base64 literals, ETags.  The plain-C text forms
 *	  are edmtext.h's, the order of UTF-16 code units utf16.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_EDM_H
#define TS_EDM_H

#include "datatype/timestamp.h"

/*
 * ts_timestamptz_to_ticks of a timestamptz before or after the service's
 * DateTime range: -1, and the ticks of 10000-01-01 (3,067,671 days after
 * 1601-01-01), one more than those of the largest DateTime.
 */
#define TS_TICKS_BEFORE_RANGE	INT64CONST(-1)
#define TS_TICKS_AFTER_RANGE	(INT64CONST(3067671) * INT64CONST(864000000000))
/* the ticks of an If-Match entity tag that is not one of ours: match none */
#define TS_TICKS_NO_MATCH		INT64CONST(-2)

extern int	ts_utf16_length(const char *s, int len);
extern bool ts_parse_datetime(const char *s, int len, int64 *ticks);
extern char *ts_format_datetime(int64 ticks);
extern bool ts_timestamptz_in_range(TimestampTz ts);
extern char *ts_format_stored_timestamp(TimestampTz ts, text *pk, text *rk);
extern TimestampTz ts_next_write_timestamp(TimestampTz previous);
extern TimestampTz ts_write_timestamp(TimestampTz previous, text *pk, text *rk);
extern void ts_check_write_timestamp(TimestampTz ts, text *pk, text *rk);
extern int64 ts_timestamptz_to_ticks(TimestampTz ts);
extern TimestampTz ts_ticks_to_timestamptz(int64 ticks);
extern bool ts_parse_guid(const char *s, int len, uint8 *out);
extern char *ts_format_guid(const uint8 *g);
extern bool ts_check_base64(const char *s, int len, int *nbytes);
extern char *ts_format_etag(TimestampTz ts);
extern char *ts_etag_from_datetime(const char *dt);
extern bool ts_parse_etag(const char *etag, int64 *ticks);

#endif							/* TS_EDM_H */
