/*-------------------------------------------------------------------------
 *
 * tables.h
 *	  The table catalog (tables.c): create_table, delete_table, the event
 *	  triggers' check, and the catalog statements others run through it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_TABLES_H
#define TS_TABLES_H

extern int	ts_exec_catalog(const char *sql, int nargs, Oid *argtypes, Datum *values);

#endif							/* TS_TABLES_H */
