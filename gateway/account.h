/*-------------------------------------------------------------------------
 *
 * account.h
 *	  One configured account (name, key, role, database, pool) and its
 *	  lookup by name (account.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_ACCOUNT_H
#define TSGW_ACCOUNT_H

#include <stddef.h>

struct DbPool;

/*
 * One configured account: name, HMAC key, PostgreSQL role and database.
 * An account is the unit of isolation: its tables live in its own
 * database, served by its own pool (db.c).
 */
typedef struct Account
{
	char	   *name;
	unsigned char key[128];
	int			keylen;
	char	   *role;			/* NULL: the gateway's own login role */
	char	   *database;		/* NULL: the database of --db */
	struct DbPool *pool;
	struct DbPool *secondary;	/* on --secondary-db's standby; NULL: none */
	long long	last_sync;		/* the secondary's last LastSyncTime
								 * reported (secondary.c), 0: none */
} Account;

extern Account *find_account(const char *name, size_t len);
extern Account *unknown_account(const char *name, size_t len);

#endif							/* TSGW_ACCOUNT_H */
