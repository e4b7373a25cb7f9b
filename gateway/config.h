/*-------------------------------------------------------------------------
 *
 * config.h
 *	  The gateway's configuration, as main.c reads it from the command
 *	  line, shared read-only by the components.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_CONFIG_H
#define TSGW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct Account;					/* account.h */

/* Gateway configuration (main.c). */
typedef struct GwConfig
{
	const char *listen_addr;
	int			port;
	const char *conninfo;
	int			pool_size;
	const char *secondary_conninfo; /* --secondary-db: the hot standby; NULL:
									 * the secondary reads the primary */
	int			secondary_pool_size;	/* --secondary-pool (default: pool_size) */
	int			threads;
	int			pool_wait_ms;
	int			conn_timeout;	/* seconds a client may stay idle */
	int			header_timeout; /* seconds to send a request's line and
								 * headers */
	int			request_timeout;	/* seconds to send a request's body */
	int			max_connections;
	int			max_per_ip;		/* connections of one client address */
	size_t		memory_budget;	/* bytes of bodies and responses held */
	int			statement_timeout_ms;
	int			db_timeout_ms;	/* --db-timeout-ms: the client-side deadline
								 * of one database call (db.c) */
	bool		verbose;
	bool		tls;			/* HTTPS (--tls-cert, --tls-key) */
	struct Account *accounts;
	int			naccounts;
} GwConfig;

extern GwConfig gw_config;

#endif							/* TSGW_CONFIG_H */
