/*-------------------------------------------------------------------------
 *
 * edmtext.h
 *	  The text forms of Edm values (DateTime, Guid, hex Binary), in plain C
 *	  with no PostgreSQL headers, so that the $filter parser, its unit tests
 *	  and its fuzz target can use them outside the server.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EDMTEXT_H
#define EDMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 100 ns ticks since 0001-01-01 would overflow nothing, but the service's
 * range starts in 1601: ticks count from 1601-01-01T00:00:00Z. */
#define EDM_TICKS_PER_SECOND	INT64_C(10000000)
#define EDM_TICKS_PER_DAY		(INT64_C(86400) * EDM_TICKS_PER_SECOND)

typedef enum EdmTextStatus
{
	EDM_TEXT_OK,
	EDM_TEXT_MALFORMED,
	EDM_TEXT_OUT_OF_RANGE
} EdmTextStatus;

extern int64_t edm_days_from_1601(int y, int m, int d);
extern EdmTextStatus edm_parse_datetime(const char *s, size_t len, int64_t *ticks);
extern bool edm_parse_guid(const char *s, size_t len, uint8_t *out);
extern int	edm_hexval(char c);

/* YYYY-MM-DDTHH:MM:SS.fffffffZ and a NUL */
#define EDM_DATETIME_BUFLEN 32
extern void edm_format_datetime(int64_t ticks, char *buf);

#endif							/* EDMTEXT_H */
