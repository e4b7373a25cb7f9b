/*-------------------------------------------------------------------------
 *
 * fuzz_batch.c
 *	  libFuzzer target for the gateway's parsers of untrusted bytes: the
 *	  $batch multipart parser (batch_parse, which also takes apart each
 *	  embedded request line, its headers and URL, and reads each body with
 *	  the strict JSON parser of json.c), the request path parser
 *	  (parse_resource, with percent-decoding and the entity path parser),
 *	  and the JSON and XML parsers on the whole body.  Input: a
 *	  Content-Type line, then the body.  Built and run for a bounded time by
 *	  test/gateway/run.sh.
 *
 * The JSON parser is also checked against itself: whatever it accepts,
 * json-c prints as text that it accepts again and prints the same way (a
 * value it could not read back, or read differently, would mean it lets
 * through something that changes on its way to the database).
 *
 * It links the gateway's own parsing layer as the program does (the
 * Makefile's FUZZ_SRCS: batchparse.c, request.c, json.c, xml.c and what
 * they stand on), with no stand-ins: nothing the parsers call reaches the
 * database, authentication or the connections.  gw_config, which main.c
 * fills from the options, is the fuzzer's own: no accounts.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "account.h"
#include "batchparse.h"
#include "buf.h"
#include "config.h"
#include "encode.h"
#include "gwlimits.h"
#include "json.h"
#include "reqtypes.h"
#include "request.h"
#include "response.h"
#include "xml.h"

GwConfig	gw_config;

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static Account acct = {.name = "devstoreaccount1"};
	Req			r = {0};
	const uint8_t *nl = memchr(data, '\n', size);
	char	   *ctype;
	char	   *body;
	size_t		blen;
	SubReq		subs[GW_MAX_BATCH_OPS];
	int			nsubs;
	bool		too_many;
	bool		query;

	if (nl == NULL)
		return 0;
	r.acct = &acct;
	ctype = xstrndup((const char *) data, nl - data);
	blen = size - (nl - data) - 1;
	body = xstrndup((const char *) nl + 1, blen);	/* NUL-terminated, as a Buf is */
	batch_parse(&r, ctype, body, blen, subs, &nsubs, &too_many, &query);
	for (int i = 0; i < nsubs; i++)
	{
		json_object *op = NULL;
		const char *opname;
		const char *code;

		if (sub_to_op(&subs[i], &op, &opname, &code) == NULL)
			json_object_put(op);
		free_sub(&subs[i]);
	}
	/* the body as JSON: what is accepted reads back as itself */
	{
		json_object *v,
				   *again;

		if (json_parse_request(body, blen, &v, NULL) == JSON_OK)
		{
			char	   *text = xstrdup(v ? json_text(v) : "null");

			if (json_parse_request(text, strlen(text), &again, NULL) != JSON_OK ||
				strcmp(text, again ? json_text(again) : "null") != 0)
				abort();
			if (again)
				json_object_put(again);
			if (v)
				json_object_put(v);
			free(text);
		}
	}
	/* the body as XML (service properties): accepted or refused, never more */
	{
		const char *why;
		XmlNode    *x = xml_parse(body, blen, &why);

		if (x == NULL && why == NULL)
			abort();
		xml_free(x);
	}
	/* the first line as the path of a request, and as a Prefer value */
	parse_prefer(ctype);
	if (pct_decode(ctype))
	{
		Target		t;

		parse_resource(ctype, &t);
		free(t.table);
		free(t.pk);
		free(t.rk);
	}
	free(ctype);
	free(body);
	return 0;
}
