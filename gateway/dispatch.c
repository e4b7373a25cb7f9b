/*-------------------------------------------------------------------------
 *
 * dispatch.c
 *	  A request from its headers to its handler, one way: parsed
 *	  (request.c), answered at once if it is a CORS preflight, its format
 *	  negotiated, authenticated (auth.c), refused early if the secondary
 *	  or its SAS cannot allow it; then, its body read, routed to the
 *	  handler of its resource: the service root (service.c, and the
 *	  statistics: secondary.c), the tables (tables.c), a table's entities
 *	  (entities.c), a table's ACL (acl.c) or a $batch (batch.c).
 *
 * The handlers call the database layer (db.c) and write their answers
 * with the response writer (response.c, odata.c); none of them calls
 * back up into this file.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dispatch.h"

#include "acl.h"
#include "auth.h"
#include "batch.h"
#include "buf.h"
#include "entities.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"
#include "secondary.h"
#include "service.h"
#include "tables.h"

/* service: ?restype=service&comp=properties (service.c) or stats (XML). */
static void
service(Req *r, Resp *resp)
{
	const char *comp = req_param(r, "comp");
	const char *restype = req_param(r, "restype");

	r->xml = true;
	if (restype == NULL || strcmp(restype, "service") != 0 || comp == NULL ||
		(strcmp(comp, "properties") != 0 && strcmp(comp, "stats") != 0))
	{
		bad_request(r, resp, "InvalidQueryParameterValue", "the account root serves restype=service&comp=properties|stats");
		return;
	}
	if (strcmp(comp, "properties") == 0)
	{
		service_properties(r, resp);	/* service.c */
		return;
	}
	if (strcmp(r->method, "GET") != 0)
	{
		resp_error(r, resp, 405, "MethodNotAllowed",
				   "The resource doesn't support specified Http Verb.", "service statistics are read only");
		return;
	}
	if (!sas_allows(r, resp, "service_get", NULL, NULL, NULL))
		return;
	if (strcmp(comp, "stats") == 0 && !r->secondary)
	{
		/* as the service and Azurite: statistics are the secondary's */
		bad_request(r, resp, "InvalidQueryParameterValue",
					"service statistics are served at the secondary endpoint, <account>-secondary");
		return;
	}
	service_stats(r, resp);		/* secondary.c */
}

/*
 * sas_precheck: whether the request's SAS may allow its operation, decided
 * from the URL and headers alone (the operation, the table, the keys when
 * the URL names them), so that a request its SAS cannot allow is refused
 * before its body is read or charged.  handle_request checks again with
 * the body (an insert's keys, each operation of a batch).
 */
static bool
sas_precheck(Req *r, Resp *resp)
{
	const char *m = r->method;
	Target	   *t = &r->target;
	const char *op;

	switch (t->kind)
	{
		case RES_SERVICE:
			return strcmp(m, "GET") == 0 ? sas_allows(r, resp, "service_get", NULL, NULL, NULL) :
				strcmp(m, "PUT") != 0 || sas_allows(r, resp, "service_set", NULL, NULL, NULL);
		case RES_TABLES:
			if (strcmp(m, "GET") == 0)
				return sas_allows(r, resp, "list_tables", NULL, NULL, NULL);
			if (strcmp(m, "POST") == 0)
				return sas_allows(r, resp, "create_table", NULL, NULL, NULL);
			return true;
		case RES_TABLE:
			if (strcmp(m, "GET") == 0)
				return sas_allows(r, resp, "list_tables", NULL, NULL, NULL);
			if (strcmp(m, "DELETE") == 0)
				return sas_allows(r, resp, "delete_table", t->table, NULL, NULL);
			return true;
		case RES_ENTITIES:
		case RES_ENTITY:
			if (req_param(r, "comp") != NULL)
				return auth_refuse_sas(r, resp, "a shared access signature cannot read or set a table's stored access policies");
			op = entity_op(m, t->kind == RES_ENTITY, r->if_match != NULL);
			return op == NULL || sas_allows(r, resp, op, t->table, t->pk, t->rk);
		case RES_TABLE_BAD:
		case RES_BATCH:
		case RES_BAD:
			break;
	}
	return true;
}

/*
 * prepare_request: everything that can be decided from the request line
 * and headers, before the body is read: the URL taken apart, the account,
 * the payload format, X-HTTP-Method, and authentication.  False with the
 * answer in resp when the request is refused (its body is then never
 * kept).  Shared Key signs the method on the wire, so X-HTTP-Method
 * replaces it only once the signature is checked.
 */
bool
prepare_request(Req *r, Resp *resp)
{
	const char *xm = req_header(r, "X-HTTP-Method");

	if (!request_parse(r, resp))
		return false;
	/* a CORS preflight is answered unauthenticated, from the rules (service.c) */
	if (strcmp(r->method, "OPTIONS") == 0)
	{
		cors_preflight(r, resp);
		return false;
	}
	if (!r->xml && !negotiate(r, resp))
		return false;
	if (!check_x_method(r, resp, xm))
		return false;
	if (!authenticate(r, resp))
		return false;
	if (r->unknown_acct)
	{
		/* cannot happen: the stand-in's key is random */
		resp_error(r, resp, 403, "AuthenticationFailed",
				   "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
				   NULL);
		return false;
	}
	if (xm != NULL)
		r->method = xm;
	if (r->target.kind == RES_SERVICE)
		r->xml = true;
	/*
	 * The secondary is the service's read-only replica: only reads there.
	 * A $batch is a read only in its query form, which handle_batch checks
	 * once the body is read.
	 */
	if (r->secondary && strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0 &&
		!(strcmp(r->method, "POST") == 0 && r->target.kind == RES_BATCH))
	{
		refuse_secondary_write(r, resp);
		return false;
	}
	/* what a SAS cannot allow is refused before its body is read */
	return !r->sas.present || sas_precheck(r, resp);
}

/*
 * handle_request: run the operation of a request that prepare_request
 * accepted, its body now complete.  Every path out leaves a complete
 * response in resp.
 */
void
handle_request(Req *r, Resp *resp)
{
	const char *m = r->method;
	Target	   *t = &r->target;

	if (!body_md5_matches(r))
	{
		resp_error(r, resp, 400, "Md5Mismatch",
				   "The MD5 value specified in the request did not match the MD5 value calculated by the server.",
				   NULL);
		return;
	}

	if (t->kind == RES_SERVICE)
	{
		service(r, resp);
		return;
	}
	if (req_param(r, "comp") != NULL && strncmp(r->rest, "Tables", 6) == 0 &&
		(r->rest[6] == '\0' || r->rest[6] == '('))
	{
		/* comp=acl is a table's (/<table>), not the table list's (attack-acl F4) */
		bad_request(r, resp, "InvalidQueryParameterValue", "comp is not a parameter of Tables");
		return;
	}
	switch (t->kind)
	{
		case RES_TABLES:
			if (strcmp(m, "GET") == 0)
				table_query(r, resp);
			else if (strcmp(m, "POST") == 0)
				table_create(r, resp);
			else
				not_allowed(r, resp);
			break;
		case RES_TABLE_BAD:
			bad_request(r, resp, "InvalidUri", "expected Tables('<name>')");
			break;
		case RES_TABLE:
			if (strchr(t->table, '\''))
				bad_request(r, resp, "InvalidResourceName", "a table name cannot contain a quote");
			else if (strcmp(m, "DELETE") == 0)
				table_delete(r, resp, t->table);
			else if (strcmp(m, "GET") == 0)
				table_get(r, resp, t->table);
			else
				not_allowed(r, resp);
			break;
		case RES_BATCH:
			if (strcmp(m, "POST") == 0)
				handle_batch(r, resp);
			else
				not_allowed(r, resp);
			break;
		case RES_ENTITIES:
		case RES_ENTITY:
			if (req_param(r, "comp") != NULL && t->bare)
				table_acl(r, resp, t->table);
			else if (req_param(r, "comp") != NULL)
				bad_request(r, resp, "InvalidQueryParameterValue",
							"comp is a parameter of /<table> only, not of <table>() or an entity");
			else if (t->kind == RES_ENTITIES && strcmp(m, "GET") == 0)
				entity_query(r, resp, t->table);
			else if (t->kind == RES_ENTITIES && strcmp(m, "POST") == 0)
				entity_insert(r, resp, t->table);
			else if (t->kind == RES_ENTITIES)
				not_allowed(r, resp);
			else if (strcmp(m, "GET") == 0)
				entity_get(r, resp, t->table, t->pk, t->rk);
			else if (strcmp(m, "PUT") == 0 || strcmp(m, "MERGE") == 0 || strcmp(m, "PATCH") == 0)
				entity_write(r, resp, t->table, t->pk, t->rk);
			else if (strcmp(m, "DELETE") == 0)
				entity_delete(r, resp, t->table, t->pk, t->rk);
			else
				not_allowed(r, resp);
			break;
		case RES_SERVICE:
		case RES_BAD:
			bad_request(r, resp, "InvalidUri",
						"expected <table>, <table>() or <table>(PartitionKey='<pk>',RowKey='<rk>')");
			break;
	}
}
