/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  The scale-out router: a node's error raised again as the node raised
 *	  it; ServerBusy for an unreachable node; DATA_CORRUPTED for an answer
 *	  that breaks the protocol.
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/guc.h"

#include "errors.h"
#include "router/router.h"

/*
 * Errors.  router_rethrow_remote: a PL/Proxy error as the shard raised it, or as
 * ServerBusy when PL/Proxy could not reach the shard.
 */
static const char *
strip_prefix(const char *s, const char *prefix)
{
	size_t		n = strlen(prefix);

	if (s != NULL && strncmp(s, prefix, n) == 0)
		return s + n;
	return s;
}

/*
 * connection_error: PL/Proxy could not reach a node, or lost it.  A role
 * the node refuses is a privilege error (roles are per server); anything
 * else is ServerBusy.  libpq's text is kept, without the socket or host it
 * names.  If the connection failed, nothing was sent to the node; if the
 * node was lost during the call, the call may have been done there (its
 * commit can precede the loss of the reply).
 */
static void connection_error(const char *plproxy_message) pg_attribute_noreturn();

static void
connection_error(const char *plproxy_message)
{
	bool		connecting = strstr(plproxy_message, "] PQconnectPoll: ") != NULL ||
		strstr(plproxy_message, "] PQconnectStart: ") != NULL;
	const char *what = strstr(plproxy_message, "] ");
	const char *p;
	char	   *msg;
	int			len;

	/* "...: [db] PQconnectPoll: connection to server on socket ... failed: FATAL: ..." */
	what = what ? what + 2 : plproxy_message;
	if ((p = strstr(what, ": ")) != NULL)
		what = p + 2;
	if (strncmp(what, "connection to server", 20) == 0 && (p = strstr(what, " failed: ")) != NULL)
		what = p + strlen(" failed: ");
	msg = pstrdup(what);
	len = strlen(msg);
	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		msg[--len] = '\0';
	if (strstr(msg, "role \"") != NULL || strstr(msg, "authentication failed") != NULL ||
		strstr(msg, "no pg_hba.conf entry") != NULL || strstr(msg, "not permitted to log in") != NULL ||
		strstr(msg, "permission denied for database") != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the current role cannot connect to a node of the cluster: %s", msg),
				 errhint("Roles and their grants are per server: the role must exist and be able to log in on every node.")));
	if (connecting)
		ts_ereport(ERROR, TS_ServerBusy,
				   errmsg("a node of the cluster is unavailable: %s", msg),
				   errhint("Nothing was done on the nodes that could not be reached; retry when the node is back."));
	ts_ereport(ERROR, TS_ServerBusy,
			   errmsg("a node of the cluster was lost during the call: %s", msg),
			   errhint("The call may or may not have been done on that node; read before retrying a write that is not idempotent."));
}

void
router_rethrow_remote(ErrorData *ed)
{
	const char *remote = ed->message ? strstr(ed->message, "] REMOTE ERROR: ") : NULL;

	if (remote != NULL)
	{
		ed->message = pstrdup(remote + strlen("] REMOTE ERROR: "));
		if (ed->detail)
			ed->detail = pstrdup(strip_prefix(ed->detail, "Remote detail: "));
		if (ed->hint)
			ed->hint = pstrdup(strip_prefix(ed->hint, "Remote hint: "));
		ed->context = NULL;
		ed->internalquery = NULL;
		ed->internalpos = 0;
		ed->cursorpos = 0;
		/* raised here, so that the caller's context is added as on one node */
		ThrowErrorData(ed);
	}
	/*
	 * PL/Proxy's own errors (a connection that failed: "PL/Proxy function
	 * tablestore_router.<f>(<n>): [db] PQ...") and a node's FATAL or PANIC,
	 * which PL/Proxy raises as "tablestore_router.<f>(<n>): [db] REMOTE
	 * FATAL: ..." with the node's SQLSTATE (57P01 when the node was shut
	 * down under an open connection): the node's session is gone, its
	 * transaction with it.
	 */
	if (ed->message &&
		(strncmp(ed->message, "PL/Proxy function tablestore_router.", 36) == 0 ||
		 strncmp(ed->message, "tablestore_router.", 18) == 0) &&
		(strstr(ed->message, "] PQ") != NULL || strstr(ed->message, "] REMOTE FATAL: ") != NULL ||
		 strstr(ed->message, "] REMOTE PANIC: ") != NULL))
		connection_error(ed->message);
	/*
	 * A data exception raised here rather than on the node: a value the
	 * node answered that its column's type does not accept (a json column
	 * that is not JSON), which PL/Proxy reads on the router.
	 */
	if (ERRCODE_TO_CATEGORY(ed->sqlerrcode) == ERRCODE_DATA_EXCEPTION)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a node answered a value its type does not accept: %s", ed->message)));
	ReThrowError(ed);
}

/*
 * raise_node_error: raise a node's error that its _routed_ function
 * answered as data (SQLSTATE, message, detail, hint) as the node raised it,
 * with the caller's context, as on one node.
 */
static void raise_node_error(const char *state, const char *message,
							 const char *detail, const char *hint) pg_attribute_noreturn();

static void
raise_node_error(const char *state, const char *message, const char *detail, const char *hint)
{
	ErrorData	ed;

	if (state == NULL || message == NULL || strlen(state) != 5 ||
		strspn(state, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 5)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a node answered an error that is not one")));
	/* classes 00 (success), 01 (warning) and 02 (no data) are no error */
	if (state[0] == '0' && (state[1] == '0' || state[1] == '1' || state[1] == '2'))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a node answered an error with SQLSTATE %s, which is not an error", state),
				 errdetail("The node's message: %s", message)));
	memset(&ed, 0, sizeof(ed));
	ed.elevel = ERROR;
	ed.sqlerrcode = MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4]);
	ed.message = pstrdup(message);
	ed.detail = detail ? pstrdup(detail) : NULL;
	ed.hint = hint ? pstrdup(hint) : NULL;
	ed.assoc_context = CurrentMemoryContext;
	ThrowErrorData(&ed);
	pg_unreachable();
}

/* the error column of a set call's row (text[]: SQLSTATE, message, detail, hint) */
void
router_raise_error_column(Datum error)
{
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	char	   *f[4] = {NULL, NULL, NULL, NULL};

	deconstruct_array(DatumGetArrayTypeP(error), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &enulls, &n);
	for (int i = 0; i < n && i < 4; i++)
		if (!enulls[i])
			f[i] = TextDatumGetCString(elems[i]);
	if (n != 4)
		f[0] = NULL;
	raise_node_error(f[0], f[1], f[2], f[3]);
}

/*
 * router_check_answer: a one-value call's answer (jsonb); {"#error": [SQLSTATE,
 * message, detail, hint]} is the node's error, raised here (no entity or
 * plan has a property named "#error").
 */
void
router_check_answer(Datum answer)
{
	Jsonb	   *jb = DatumGetJsonbP(answer);
	JsonbValue *err;
	char	   *f[4] = {NULL, NULL, NULL, NULL};
	int			n = 0;

	if (!JB_ROOT_IS_OBJECT(jb) || JB_ROOT_COUNT(jb) != 1 ||
		(err = getKeyJsonValueFromContainer(&jb->root, "#error", 6, NULL)) == NULL)
		return;
	if (err->type == jbvBinary && JsonContainerIsArray(err->val.binary.data))
	{
		JsonbIterator *it = JsonbIteratorInit(err->val.binary.data);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (n < 4 && v.type == jbvString)
				f[n] = pnstrdup(v.val.string.val, v.val.string.len);
			n++;
		}
	}
	if (n != 4)
		f[0] = NULL;
	raise_node_error(f[0], f[1], f[2], f[3]);
}
