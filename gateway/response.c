/*-------------------------------------------------------------------------
 *
 * response.c
 *	  The response writer of tablestore-gateway: a response's headers,
 *	  its JSON body and Content-Type, and the service's error responses
 *	  (odata.error JSON, or <Error> XML at the XML endpoints).
 *
 * Everything above writes its answer into a Resp through these functions;
 * conn.c hands the finished Resp to libmicrohttpd.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "response.h"

#include "buf.h"
#include "gwlimits.h"
#include "reqtypes.h"

/*
 * resp_header: add a response header.  A value holding control characters
 * is dropped (it could only come from a bug, and would split the header).
 */
void
resp_header(Resp *resp, const char *name, const char *value)
{
	for (const unsigned char *p = (const unsigned char *) value; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
		{
			fprintf(stderr, "tablestore-gateway: dropped header %s with a control character\n", name);
			return;
		}
	for (int i = 0; i < resp->nhdr; i++)
		if (strcasecmp(resp->hname[i], name) == 0)
		{
			free(resp->hval[i]);
			resp->hval[i] = xstrdup(value);
			return;
		}
	if (resp->nhdr >= GW_MAX_HEADERS)
		return;
	resp->hname[resp->nhdr] = xstrdup(name);
	resp->hval[resp->nhdr] = xstrdup(value);
	resp->nhdr++;
}

/* json_ctype: the Content-Type of a JSON body at a metadata level. */
const char *
json_ctype(Level level)
{
	switch (level)
	{
		case LEVEL_NONE:
			return "application/json;odata=nometadata;streaming=true;charset=utf-8";
		case LEVEL_FULL:
			return "application/json;odata=fullmetadata;streaming=true;charset=utf-8";
		default:
			return "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";
	}
}

/* json_text: compact JSON text of an object, '/' not escaped. */
const char *
json_text(json_object *obj)
{
	return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* resp_json: a JSON response body with the negotiated Content-Type. */
void
resp_json(Req *r, Resp *resp, int status, json_object *obj)
{
	resp->status = status;
	resp->body.len = 0;
	buf_puts(&resp->body, json_text(obj));
	resp->ctype = json_ctype(r->level);
}

/*
 * resp_error: the service's error response: status, x-ms-error-code and
 * the odata.error JSON body (or <Error> XML for the XML endpoints).  The
 * message is the service's text, then `extra` (our reason) on its own
 * line, then the request id and time as the service writes them.
 */
void
resp_error(Req *r, Resp *resp, int status, const char *code, const char *message, const char *extra)
{
	Buf			value = {0};
	char		when[64];
	time_t		now = time(NULL);
	struct tm	tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S.0000000Z", &tm);
	buf_puts(&value, message);
	if (extra && *extra)
	{
		buf_puts(&value, "\n");
		buf_puts(&value, extra);
	}
	buf_printf(&value, "\nRequestId:%s\nTime:%s", r->request_id, when);

	resp->status = status;
	resp->body.len = 0;
	resp_header(resp, "x-ms-error-code", code);
	if (r->xml)
	{
		buf_puts(&resp->body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>");
		buf_puts(&resp->body, code);
		buf_puts(&resp->body, "</Code><Message>");
		for (const char *p = value.data; *p; p++)
		{
			switch (*p)
			{
				case '<':
					buf_puts(&resp->body, "&lt;");
					break;
				case '>':
					buf_puts(&resp->body, "&gt;");
					break;
				case '&':
					buf_puts(&resp->body, "&amp;");
					break;
				default:
					buf_append(&resp->body, p, 1);
			}
		}
		buf_puts(&resp->body, "</Message></Error>");
		resp->ctype = "application/xml";
	}
	else
	{
		json_object *o = json_object_new_object();
		json_object *e = json_object_new_object();
		json_object *m = json_object_new_object();

		json_object_object_add(m, "lang", json_object_new_string("en-US"));
		json_object_object_add(m, "value", json_object_new_string(value.data));
		json_object_object_add(e, "code", json_object_new_string(code));
		json_object_object_add(e, "message", m);
		json_object_object_add(o, "odata.error", e);
		buf_puts(&resp->body, json_text(o));
		json_object_put(o);
		resp->ctype = json_ctype(r->level);
	}
	buf_free(&value);
}

/* status_text: the reason phrase of a status, for batch sub-responses. */
const char *
status_text(int status)
{
	switch (status)
	{
		case 200:
			return "OK";
		case 201:
			return "Created";
		case 202:
			return "Accepted";
		case 204:
			return "No Content";
		case 400:
			return "Bad Request";
		case 403:
			return "Forbidden";
		case 404:
			return "Not Found";
		case 405:
			return "Method Not Allowed";
		case 409:
			return "Conflict";
		case 412:
			return "Precondition Failed";
		case 413:
			return "Request Entity Too Large";
		case 415:
			return "Unsupported Media Type";
		case 501:
			return "Not Implemented";
		case 503:
			return "Service Unavailable";
		default:
			return status >= 500 ? "Internal Server Error" : "Bad Request";
	}
}

/* free_resp: release a response's memory (not the Resp itself). */
void
free_resp(Resp *resp)
{
	buf_free(&resp->body);
	for (int i = 0; i < resp->nhdr; i++)
	{
		free(resp->hname[i]);
		free(resp->hval[i]);
	}
	resp->nhdr = 0;
}

/* bad_request: a 400 with a service code and our reason. */
void
bad_request(Req *r, Resp *resp, const char *code, const char *why)
{
	const char *msg = "One of the request inputs is not valid.";

	if (strcmp(code, "InvalidUri") == 0)
		msg = "The requested URI does not represent any resource on the server.";
	else if (strcmp(code, "InvalidQueryParameterValue") == 0)
		msg = "Value for one of the query parameters specified in the request URI is invalid.";
	else if (strcmp(code, "InvalidHeaderValue") == 0)
		msg = "The value for one of the HTTP headers is not in the correct format.";
	else if (strcmp(code, "MissingRequiredHeader") == 0)
		msg = "An HTTP header that's mandatory for this request is not specified.";
	else if (strcmp(code, "XMethodIncorrectValue") == 0 || strcmp(code, "XMethodNotUsingPost") == 0)
		msg = "The X-HTTP-Method header is not valid for this request.";
	resp_error(r, resp, 400, code, msg, why);
}

/* not_allowed: 405 for a method the resource does not serve. */
void
not_allowed(Req *r, Resp *resp)
{
	resp_error(r, resp, 405, "MethodNotAllowed",
			   "The requested method is not allowed on the specified resource.", NULL);
}

/* A 500 InternalError, with the service's text and detail as our extra line. */
void
resp_internal(Req *r, Resp *resp, const char *detail)
{
	resp_error(r, resp, 500, "InternalError",
			   "Server encountered an internal error. Please try again after some time.", detail);
}

/*
 * refuse_secondary_write: the answer to a write at <account>-secondary,
 * the read-only replica: 403 AuthorizationFailure, as the service answers
 * a request the account's setup does not allow.
 */
void
refuse_secondary_write(Req *r, Resp *resp)
{
	resp_error(r, resp, 403, "AuthorizationFailure",
			   "This request is not authorized to perform this operation.",
			   "the secondary endpoint (<account>-secondary) is read-only");
}
