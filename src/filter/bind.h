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

extern FilterNode *ts_filter_parse(const char *text, int len);
extern bool ts_filter_eval(const FilterNode *n, const TsFilterRow *row);

#endif							/* TS_FILTER_BIND_H */
