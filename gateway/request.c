/*-------------------------------------------------------------------------
 *
 * request.c
 *	  The request parser of tablestore-gateway: what a request asks for,
 *	  read from its URL and headers into the request (Req) once, before
 *	  anything acts on it.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* req_header: a request header (case-insensitive name) or NULL. */
const char *
req_header(Req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* req_header_list: the values of a list-valued header, joined by ", ". */
typedef struct HdrJoin
{
	const char *name;
	Buf		   *out;
} HdrJoin;

/*
 * join_header: one header of the connection (an MHD_KeyValueIterator for
 * req_header_list), appended to the list if it is the one wanted.
 */
static enum MHD_Result
join_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	HdrJoin    *h = cls;

	if (strcasecmp(key, h->name) == 0 && value != NULL)
	{
		if (h->out->len > 0)
			buf_puts(h->out, ", ");
		buf_puts(h->out, value);
	}
	return MHD_YES;
}

/* req_header_list: see HdrJoin above. */
void
req_header_list(Req *r, const char *name, Buf *out)
{
	HdrJoin		h = {name, out};

	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, join_header, &h);
}

/* req_param: a decoded query parameter (exact name) or NULL. */
const char *
req_param(Req *r, const char *name)
{
	for (int i = 0; i < r->nparams; i++)
		if (strcmp(r->params[i].name, name) == 0)
			return r->params[i].value;
	return NULL;
}
