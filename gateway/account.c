/*-------------------------------------------------------------------------
 *
 * account.c
 *	  The configured accounts looked up by name, and the stand-in for a
 *	  name that is none (main.c configures them at start-up).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "account.h"

#include "buf.h"
#include "config.h"

/* find_account: the configured account of that name, or NULL. */
Account *
find_account(const char *name, size_t len)
{
	for (int i = 0; i < gw_config.naccounts; i++)
		if (strlen(gw_config.accounts[i].name) == len &&
			strncmp(gw_config.accounts[i].name, name, len) == 0)
			return &gw_config.accounts[i];
	return NULL;
}

/*
 * unknown_account: a stand-in for a name that is no configured account
 * (malloc'd; freed with its request).  It carries a random key, so a
 * request for it goes through exactly the checks a known account's does
 * and fails where a wrong signature fails, with the same answer: which
 * accounts exist cannot be probed.
 */
Account *
unknown_account(const char *name, size_t len)
{
	Account    *a = xmalloc(sizeof(Account));

	memset(a, 0, sizeof(*a));
	a->name = xstrndup(name, len);
	a->keylen = 32;
	if (RAND_bytes(a->key, a->keylen) != 1)
	{
		fprintf(stderr, "tablestore-gateway: no random bytes\n");
		abort();
	}
	return a;
}
