/*-------------------------------------------------------------------------
 *
 * key.h
 *	  The key type tablestore.key (key.c): text ordered by UTF-16 code
 *	  unit, and the one comparison of keys that the key type, the query
 *	  planner, the scans and the router's merge share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_KEY_H
#define TS_KEY_H

extern int	ts_key_cmp(const text *a, const text *b);
extern int	ts_key_pair_cmp(const text *apk, const text *ark, const text *bpk, const text *brk);

#endif							/* TS_KEY_H */
