/*-------------------------------------------------------------------------
 *
 * reqtypes.h
 *	  The request (Req) and the response being built (Resp), with the
 *	  parts the request parser fills in (resource, SAS, Prefer, query
 *	  options, metadata level): the types every component works on.  The
 *	  parser's functions are request.h's, the writer's response.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_REQTYPES_H
#define TSGW_REQTYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <microhttpd.h>

#include "account.h"
#include "buf.h"
#include "gwlimits.h"

/* Metadata levels of a JSON response. */
typedef enum Level
{
	LEVEL_NONE,
	LEVEL_MINIMAL,
	LEVEL_FULL
} Level;

typedef struct Param
{
	char	   *name;
	char	   *value;
} Param;

/* A shared access signature found in the query string (auth.c). */
typedef struct Sas
{
	bool		present;
	bool		account_sas;	/* else a table SAS */
	const char *perms;			/* sp */
	const char *srt;			/* account SAS resource types */
	const char *tn;				/* table SAS table */
	const char *spk,
			   *srk,
			   *epk,
			   *erk;			/* table SAS key range; NULL when absent */
	char		policy_perms[8];	/* sp from a stored access policy (si) */
	char		url_table[64];	/* tn when the SAS has none: the URL's table */
} Sas;

/*
 * What a request's path (after the account, decoded) addresses: decided
 * once by the request parser (parse_resource), for the SAS precheck and
 * for the routing alike.
 */
typedef enum Resource
{
	RES_BAD,					/* none of the forms below */
	RES_SERVICE,				/* the account root: "" */
	RES_TABLES,					/* "Tables" or "Tables()" */
	RES_TABLE,					/* "Tables('name')" */
	RES_TABLE_BAD,				/* starts "Tables('" but is not that form */
	RES_BATCH,					/* "$batch" */
	RES_ENTITIES,				/* "table" or "table()" */
	RES_ENTITY					/* "table(PartitionKey='pk',RowKey='rk')" */
} Resource;

/* A request's resource and the names its path carries (parse_resource). */
typedef struct Target
{
	Resource	kind;
	char	   *table;			/* RES_TABLE, RES_ENTITIES, RES_ENTITY */
	char	   *pk;				/* RES_ENTITY; all three malloc'd */
	char	   *rk;
	bool		bare;			/* RES_ENTITIES as "table", not "table()" */
} Target;

/* What a Prefer header asks for. */
typedef enum Prefer
{
	PREFER_NONE,
	PREFER_NO_CONTENT,			/* return-no-content */
	PREFER_CONTENT				/* return-content */
} Prefer;

/* A query's options, as the URL gives them (NULL: absent). */
typedef struct QueryOpts
{
	const char *filter;			/* $filter */
	const char *select;			/* $select */
	int			top;			/* $top: 1000 if absent, -1 if not valid */
	const char *next_table;		/* NextTableName, as sent */
	const char *next_pk;		/* NextPartitionKey, as sent */
	const char *next_rk;		/* NextRowKey, as sent */
} QueryOpts;

/* A response being built. */
typedef struct Resp
{
	int			status;
	Buf			body;
	const char *ctype;			/* static string or NULL */
	int			nhdr;
	char	   *hname[GW_MAX_HEADERS];
	char	   *hval[GW_MAX_HEADERS];
	bool		close;			/* close the connection after it */
	size_t		charged;		/* bytes of the memory budget already
								 * taken for the body (mem_reserve) */
} Resp;

typedef struct AddrSlot AddrSlot;	/* budget.c */

/*
 * One HTTP request, from its first byte to its response.  It lives in its
 * connection's context (conn.c), so whatever way libmicrohttpd ends a
 * request, the connection's end frees it.
 */
typedef struct Req
{
	char	   *raw_uri;		/* as sent, from the URI log callback */
	Buf			body;
	size_t		body_reserved;	/* bytes of the memory budget it holds */
	size_t		discarded;		/* body bytes read and dropped */
	bool		too_large;
	bool		dispatched;
	bool		refused;		/* answered from the headers: body dropped */
	Resp		refusal;		/* that answer */

	struct MHD_Connection *conn;
	const char *method;			/* after X-HTTP-Method */
	const char *wire_method;	/* as sent, what Shared Key signs */
	Account    *acct;
	bool		unknown_acct;	/* acct is a stand-in that never
								 * authenticates */
	AddrSlot   *addr;			/* its client address's share of the memory
								 * budget (budget.c) */
	bool		secondary;		/* addressed as <account>-secondary */
	bool		stats_repeats_account;	/* /<account>-secondary/<account>/
										 * ?restype=service&comp=stats */
	char	   *raw_path;		/* path as sent, still percent-encoded */
	char	   *rest;			/* decoded path after the account */
	Target		target;			/* what rest addresses */
	Prefer		prefer;			/* the Prefer header */
	const char *if_match;		/* the If-Match header without the blanks
								 * around it (RFC 7230's OWS), NULL if none */
	char	   *if_match_buf;	/* its trimmed copy, when it had blanks */
	QueryOpts	query;			/* $filter, $select, $top, continuation */
	Param		params[GW_MAX_PARAMS];
	int			nparams;
	Level		level;
	bool		xml;			/* an XML endpoint: errors as XML */
	char		request_id[40];
	char	   *base;			/* http://host[/account] */
	Sas			sas;
	bool		bearer;			/* authenticated by an OAuth bearer token */
	const char *role;			/* with bearer: the role its principal acts
								 * as (NULL: the login role) */
	const char *client_ip;		/* textual client address */
	char		ipbuf[64];
} Req;

#endif							/* TSGW_REQTYPES_H */
