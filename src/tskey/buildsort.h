/*-------------------------------------------------------------------------
 *
 * buildsort.h
 *	  tskey index build: the in-memory sort of the heap's entries, which
 *	  stores and compares each PartitionKey once (buildsort.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSKEY_BUILDSORT_H
#define TSKEY_BUILDSORT_H

#include "storage/itemptr.h"

typedef struct BuildSort BuildSort;

extern BuildSort *buildsort_begin(void);
extern bool buildsort_put(BuildSort *s, const char *pk, int pklen, const char *rk, int rklen,
						  ItemPointer tid, bool alive);
extern void buildsort_spill(BuildSort *s,
							void (*put) (void *arg, const char *pk, int pklen,
										 const char *rk, int rklen, const char *tail),
							void *arg);
extern void buildsort_perform(BuildSort *s);
extern bool buildsort_next(BuildSort *s, char **pk, int *pklen, bool *newpk,
						   char **rk, int *rklen, ItemPointer tid, bool *alive);
extern void buildsort_end(BuildSort *s);

#endif							/* TSKEY_BUILDSORT_H */
