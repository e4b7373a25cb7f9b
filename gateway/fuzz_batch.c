/*-------------------------------------------------------------------------
 *
 * fuzz_batch.c
 *	  libFuzzer target for the gateway's parsers of untrusted bytes: the
 *	  $batch multipart parser (batch_parse, which also takes apart each
 *	  embedded request line, its headers and URL, and reads each body with
 *	  the strict JSON parser of json.c), the entity path parser with
 *	  percent-decoding, and the JSON and XML parsers on the whole body.  Input: a
 *	  Content-Type line, then the body.  Built and run for a bounded time by
 *	  test/gateway/run.sh.
 *
 * The JSON parser is also checked against itself: whatever it accepts,
 * json-c prints as text that it accepts again and prints the same way (a
 * value it could not read back, or read differently, would mean it lets
 * through something that changes on its way to the database).
 *
 * parse_entity_path lives in handlers.c, which calls the database,
 * authentication and configuration; those are stubs that abort: parsing
 * must never reach them.
 *
 *-------------------------------------------------------------------------
 */
#include "batch.c"

#include <stdlib.h>

GwConfig	gw_config;

Account *
find_account(const char *name, size_t len)
{
	abort();
}

Account *
unknown_account(const char *name, size_t len)
{
	abort();
}

bool
db_call_rows(Req *r, const char *stmt, int nparams, const char *const *values,
			 DbRowFn fn, void *arg, DbErr *err)
{
	abort();
}

bool
req_charge(Req *r, size_t n)
{
	abort();
}

PGresult *
db_call(Req *r, const char *stmt, int nparams, const char *const *values, DbErr *err)
{
	abort();
}

void
db_err_free(DbErr *err)
{
	abort();
}

void
db_error_response(Req *r, Resp *resp, DbErr *err)
{
	abort();
}

void
table_acl(Req *r, Resp *resp, const char *table)
{
	abort();
}

bool
authenticate(Req *r, Resp *resp)
{
	abort();
}

bool
auth_refuse_sas(Req *r, Resp *resp, const char *why)
{
	abort();
}

bool
sas_allows(Req *r, Resp *resp, const char *op, const char *table, const char *pk, const char *rk)
{
	abort();
}

bool
key_in_range(Req *r, const char *pk, const char *rk)
{
	abort();
}

int
key_cmp(const char *a, const char *b)
{
	abort();
}

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
	char	   *table,
			   *pk,
			   *rk;
	bool		has_keys;

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
		bool		dup;

		if (sub_to_op(&subs[i], &op, &opname, &dup) == NULL)
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
	/* the first line as an entity path */
	if (pct_decode(ctype) && parse_entity_path(ctype, &table, &pk, &rk, &has_keys))
	{
		free(table);
		free(pk);
		free(rk);
	}
	free(ctype);
	free(body);
	return 0;
}
