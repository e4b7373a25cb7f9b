/*-------------------------------------------------------------------------
 *
 * tables.c
 *	  The table handlers: Query Tables, Get Table (a query of one name),
 *	  Create Table and Delete Table, each one call of an extension
 *	  function with the request's values, its result written as the
 *	  service's answer.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <libpq-fe.h>

#include "tables.h"

#include "auth.h"
#include "buf.h"
#include "db.h"
#include "odata.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"
#include "token.h"

/* table_query: GET /Tables with $filter, $top and NextTableName. */
void
table_query(Req *r, Resp *resp)
{
	int			top;
	char		limit[16];
	const char *vals[3];
	DbErr		err;
	PGresult   *res;
	json_object *o,
			   *arr;
	Buf			b = {0};
	int			n;

	const char *next = r->query.next_table;
	char	   *from = NULL;

	if (!sas_allows(r, resp, "list_tables", NULL, NULL, NULL) || !check_top(r, resp))
		return;
	top = r->query.top;
	if (next != NULL && (from = token_decode(r, 't', "", next)) == NULL)
	{
		bad_request(r, resp, "InvalidInput", "a continuation token is not one this gateway issued");
		return;
	}
	snprintf(limit, sizeof(limit), "%d", top + 1);
	vals[0] = r->query.filter;
	vals[1] = from;
	vals[2] = limit;
	res = db_call(r, "list_tables", 3, vals, &err);
	free(from);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	o = json_object_new_object();
	if (r->level != LEVEL_NONE)
	{
		buf_printf(&b, "%s/$metadata#Tables", r->base);
		json_object_object_add(o, "odata.metadata", json_object_new_string(b.data));
	}
	arr = json_object_new_array();
	n = PQntuples(res);
	for (int i = 0; i < n && i < top; i++)
		json_object_array_add(arr, table_item(r, PQgetvalue(res, i, 0), false));
	json_object_object_add(o, "value", arr);
	if (n > top && top > 0)
	{
		char	   *t = token_encode(r, 't', "", PQgetvalue(res, top, 0));

		resp_header(resp, "x-ms-continuation-NextTableName", t);
		free(t);
	}
	resp_json(r, resp, 200, o);
	json_object_put(o);
	PQclear(res);
	buf_free(&b);
}

/* table_get: GET /Tables('name'), the table as a query of its name. */
void
table_get(Req *r, Resp *resp, const char *name)
{
	Buf			f = {0};
	const char *vals[3];
	DbErr		err;
	PGresult   *res;

	if (!sas_allows(r, resp, "list_tables", NULL, NULL, NULL))
		return;
	buf_puts(&f, "TableName eq '");
	for (const char *p = name; *p; p++)
	{
		if (*p == '\'')
			buf_puts(&f, "''");
		else
			buf_append(&f, p, 1);
	}
	buf_puts(&f, "'");
	vals[0] = f.data;
	vals[1] = NULL;
	vals[2] = "1";
	res = db_call(r, "list_tables", 3, vals, &err);
	buf_free(&f);
	if (res == NULL)
	{
		db_error_response(r, resp, &err);
		return;
	}
	if (PQntuples(res) == 0)
		resp_error(r, resp, 404, "ResourceNotFound", "The specified resource does not exist.", NULL);
	else
	{
		json_object *o = table_item(r, PQgetvalue(res, 0, 0), true);

		resp_json(r, resp, 200, o);
		json_object_put(o);
	}
	PQclear(res);
}

/* table_create: POST /Tables with {"TableName": "..."}. */
void
table_create(Req *r, Resp *resp)
{
	json_object *body = parse_body_object(r, resp);
	json_object *tn;
	const char *name;
	DbErr		err;
	PGresult   *res;
	Buf			loc = {0};

	if (body == NULL)
		return;
	if (!json_object_object_get_ex(body, "TableName", &tn) || !json_object_is_type(tn, json_type_string))
	{
		json_object_put(body);
		bad_request(r, resp, "InvalidInput", "the body needs a TableName string");
		return;
	}
	name = json_object_get_string(tn);
	if (!sas_allows(r, resp, "create_table", name, NULL, NULL))
	{
		json_object_put(body);
		return;
	}
	res = db_call(r, "create_table", 1, &name, &err);
	if (res == NULL)
	{
		json_object_put(body);
		db_error_response(r, resp, &err);
		return;
	}
	PQclear(res);
	buf_printf(&loc, "%s/Tables('%s')", r->base, name);
	resp_header(resp, "Location", loc.data);
	resp_header(resp, "DataServiceId", loc.data);
	buf_free(&loc);
	if (r->prefer == PREFER_NO_CONTENT)
	{
		resp->status = 204;
		resp_header(resp, "Preference-Applied", "return-no-content");
	}
	else
	{
		json_object *o = table_item(r, name, true);

		if (r->prefer == PREFER_CONTENT)
			resp_header(resp, "Preference-Applied", "return-content");
		resp_json(r, resp, 201, o);
		json_object_put(o);
	}
	json_object_put(body);
}

/* table_delete: DELETE /Tables('name'). */
void
table_delete(Req *r, Resp *resp, const char *name)
{
	if (!sas_allows(r, resp, "delete_table", name, NULL, NULL))
		return;
	call_for_204(r, resp, "delete_table", 1, &name);
}
