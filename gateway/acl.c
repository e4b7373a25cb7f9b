/*-------------------------------------------------------------------------
 *
 * acl.c
 *	  Get and Set Table ACL (GET and PUT /<table>?comp=acl): a table's stored
 *	  access policies, kept by the extension (tablestore.get_table_acl,
 *	  tablestore.set_table_acl), as the service's SignedIdentifiers XML
 *	  (aclxml.c).  Shared Key only: a SAS can neither read nor set them
 *	  (refused before the body, dispatch.c's sas_precheck, and here again).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "acl.h"

#include "aclxml.h"
#include "db.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"

#define ACL_NOT_WITH_SAS "a shared access signature cannot read or set a table's stored access policies"

/* acl_get: 200 with the table's policies as XML. */
static void
acl_get(Req *r, Resp *resp, const char *table)
{
	DbErr		err;
	const char *vals[1] = {table};
	PGresult   *res = db_call(r, "get_table_acl", 1, vals, &err);

	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	if (PQntuples(res) != 1 || !aclxml_from_json(PQgetvalue(res, 0, 0), &resp->body))
	{
		PQclear(res);
		resp_error(r, resp, 500, "InternalError",
				   "Server encountered an internal error. Please try again after some time.",
				   "tablestore.get_table_acl returned something other than a policy list");
		return;
	}
	PQclear(res);
	resp->status = 200;
	resp->ctype = "application/xml";
}

/* acl_set: 204 once the body's policies replaced the table's. */
static void
acl_set(Req *r, Resp *resp, const char *table)
{
	DbErr		err;
	const char *why = NULL;
	char	   *json = aclxml_to_json(r->body.data, r->body.len, &why);
	const char *vals[2];
	PGresult   *res;

	if (json == NULL)
	{
		resp_error(r, resp, 400, "InvalidXmlDocument",
				   "XML specified is not syntactically valid.", why);
		return;
	}
	vals[0] = table;
	vals[1] = json;
	res = db_call(r, "set_table_acl", 2, vals, &err);
	free(json);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	PQclear(res);
	resp->status = 204;
}

/*
 * table_acl: a request on /<table>?comp=<comp>, answered as XML (the
 * service's errors there are XML too).  comp=acl only, GET or PUT, Shared
 * Key only (no SAS, no bearer token: the service's rule).
 */
void
table_acl(Req *r, Resp *resp, const char *table)
{
	const char *comp = req_param(r, "comp");

	r->xml = true;
	if (comp == NULL || strcmp(comp, "acl") != 0)
		resp_error(r, resp, 400, "InvalidQueryParameterValue",
				   "Value for one of the query parameters specified in the request URI is invalid.",
				   "a table serves comp=acl only");
	else if (r->sas.present)
		resp_error(r, resp, 403, "AuthorizationPermissionMismatch",
				   "This request is not authorized to perform this operation using this permission.",
				   ACL_NOT_WITH_SAS);
	else if (r->bearer)
		resp_error(r, resp, 403, "AuthorizationFailure",
				   "This request is not authorized to perform this operation.",
				   "a table's stored access policies are read and set with the account key only, not with a bearer token");
	else if (strcmp(r->method, "GET") == 0)
		acl_get(r, resp, table);
	else if (strcmp(r->method, "PUT") == 0)
		acl_set(r, resp, table);
	else
		resp_error(r, resp, 405, "MethodNotAllowed",
				   "The requested method is not allowed on the specified resource.", NULL);
}
