/*-------------------------------------------------------------------------
 *
 * filter/bind.h
 *	  The $filter language bound to PostgreSQL (bind.c): parsing with the
 *	  service's errors, evaluation on entities and on the table list.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_FILTER_BIND_H
#define TS_FILTER_BIND_H

#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "filter/filter.h"

/*
 * What a filter is evaluated against: an entity (keys, Timestamp, stored
 * properties), or, when table_name is set, a row of the table list with the
 * one property TableName.
 */
typedef struct TsFilterRow
{
	const char *pk;
	int			pklen;
	const char *rk;
	int			rklen;
	TimestampTz ts;
	Jsonb	   *props;
	const char *table_name;
	int			table_name_len;
} TsFilterRow;

/*
 * A property value with its Edm type (a TsEdmType), decoded as evaluation
 * needs it.  Only a value in the stored form decodes: rows written with
 * plain SQL can hold anything, and a value that is not of its type counts as
 * absent, so that no stored byte can make a filter fail: a DateTime before
 * 1601, or a Timestamp (ts) outside 1601 to 9999, is no DateTime and counts
 * as absent.
 */
typedef struct TsFilterValue
{
	int			type;			/* TsEdmType */
	const char *str;			/* String, Binary's base64 */
	int			len;
	int64		i64;			/* Int32, Int64; DateTime's ticks */
	double		d;				/* Double */
	bool		b;				/* Boolean */
	uint8		guid[16];		/* Guid */
} TsFilterValue;

extern bool ts_filter_lookup(Jsonb *props, const char *name, int namelen, TsFilterValue *v);
extern FilterNode *ts_filter_parse(const char *text, int len);
extern bool ts_filter_eval(const FilterNode *n, const TsFilterRow *row);

#endif							/* TS_FILTER_BIND_H */
