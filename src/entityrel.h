/*-------------------------------------------------------------------------
 *
 * entityrel.h
 *	  The entity-relation layer beneath both write paths (entityrel.c):
 *	  table names, opening and checking a table's relation, stored rows, the
 *	  per-relation cache and its invalidation, If-Match, the not-found and
 *	  key-violation errors.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_ENTITYREL_H
#define TS_ENTITYREL_H

#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "storage/lockdefs.h"
#include "utils/elog.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

/* The cache entry of an entity relation (pinned while a call uses it). */
typedef struct TsEntityRel TsEntityRel;

/* The prepared statements the SPI path keeps per relation. */
#define TS_REL_STATEMENTS		6

/* The most rounds a write makes while concurrent writes change its key. */
#define TS_WRITE_MAX_ROUNDS		100

extern bool ts_table_name_chars_valid(const char *name, int len);
extern bool ts_table_name_is_valid(const char *name, int len);
extern char *ts_relation_name(const char *name, int len);
extern Oid	ts_key_type_oid(void);
extern Oid	ts_table_open(text *table_name, AclMode required, LOCKMODE lockmode, char **relname,
						  Oid *keyindex);
extern Oid	ts_check_entity_relation(Relation heap, bool need_index);
extern void ts_check_stored_row(const char *relname, const Datum *values, const bool *isnull);
extern void ts_rel_recheck(TsEntityRel *rel);
extern bool ts_stored_row_valid(const Datum *values, const bool *isnull);
extern text *ts_arg_table_name(FunctionCallInfo fcinfo);
extern TsEntityRel *ts_rel_pin(Oid relid, const char *relname, Oid keyindex);
extern void ts_rel_unpin(TsEntityRel *rel);
extern Oid	ts_rel_relid(TsEntityRel *rel);
extern const char *ts_rel_relname(TsEntityRel *rel);
extern Oid	ts_rel_keyindex(TsEntityRel *rel);
extern struct _SPI_plan **ts_rel_statements(TsEntityRel *rel);
extern void ts_rel_drop_statements(TsEntityRel *rel);
extern int	ts_rel_check_exprs(TsEntityRel *rel, Relation heap, struct Expr ***exprs, char ***names);
extern char *ts_rel_key_index_name(TsEntityRel *rel);
extern bool ts_rel_is_key_violation(const char *keyname, ErrorData *edata);
extern void ts_rel_raise_if_key_violation(TsEntityRel *rel, const char *keyname, text *pk, text *rk);
extern bool ts_parse_if_match(const char *s, int64 *ticks);
extern TimestampTz ts_if_match_timestamp(int64 ticks);
extern void ts_check_if_match(TimestampTz stored_ts, bool conditional, int64 ticks, text *pk, text *rk);
extern void ts_entity_not_found(text *pk, text *rk) pg_attribute_noreturn();

#endif							/* TS_ENTITYREL_H */
