/*-------------------------------------------------------------------------
 *
 * config.c
 *	  The scale-out router: the cluster's shape: the foreign server
 *	  tablestore_cluster read into the partition map, node strings checked
 *	  and made canonical, the user mapping check, and their invalidation.
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "libpq-fe.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "tablestore.h"
#include "router/router.h"

static const char *cluster_server = "tablestore_cluster";

/*
 * The cluster's shape, read from the foreign server's options: the number
 * of partitions and of distinct nodes.  Reset by any change of a foreign
 * server, which also counts a new generation of the partition map.
 */
int			router_cluster_partitions = 0;
int			router_cluster_nodes = 0;
uint64 router_cluster_generation = 1;
int			router_cluster_node_part[ROUTER_MAX_NODES];
int			router_cluster_part_node[ROUTER_MAX_PARTS];
static bool callbacks_registered = false;
/* the role whose user mapping was checked (router_mapping_check) */
static Oid	mapping_checked_for = InvalidOid;

/* a foreign server changed: read the cluster's shape again, a new map */
static void
router_server_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	router_cluster_partitions = 0;
	router_cluster_nodes = 0;
	router_cluster_generation++;
	mapping_checked_for = InvalidOid;
}

/* a user mapping changed: check the calling role's mapping again */
static void
router_mapping_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	mapping_checked_for = InvalidOid;
}

/* register the invalidation callbacks of the cluster's shape, once */
static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;

	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, router_server_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(USERMAPPINGOID, router_mapping_changed, (Datum) 0);
	callbacks_registered = true;
}

/*
 * Node strings.  A node string names WHERE a node is; the calling role
 * decides WHO connects.  PL/Proxy appends user=<calling role> (or the
 * role's user mapping) to a string only when the string has no "user="
 * anywhere, and libpq would take a password, a password file, a client
 * certificate or a service file (which may hold any of them) from the
 * string for every role alike; the options of a foreign server are
 * readable by every role.  So a node string may set only the keywords
 * below, which say where the node is and how to reach it safely, and no
 * value may contain "user=".  Refused among others: user, password,
 * passfile, service (a service file section may set user and password),
 * sslcert, sslkey and sslpassword (a client certificate is an identity),
 * krbsrvname and gsslib (how the router's own Kerberos credentials are
 * presented), options (settings of the node's session, role among them),
 * replication and client_encoding (PL/Proxy's to decide).
 */
static const char *const node_keywords[] = {
	/* the address: these tell nodes apart (node_identity) */
	"host", "hostaddr", "port", "dbname",
	/* how to reach it */
	"connect_timeout", "application_name", "fallback_application_name",
	"keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
	"tcp_user_timeout", "target_session_attrs",
	/* how sure to be that it is the node */
	"sslmode", "sslcompression", "sslrootcert", "sslcrl", "sslcrldir", "sslsni",
	"ssl_min_protocol_version", "ssl_max_protocol_version", "requirepeer",
	"channel_binding", "gssencmode",
	NULL
};

/* a parsed node string: what PL/Proxy is given, and what tells nodes apart */
typedef struct NodeString
{
	char	   *canonical;		/* the allowed keywords in node_keywords order */
	char	   *identity;		/* host, hostaddr, port, dbname, defaults filled */
} NodeString;

/* value as a conninfo value: bare if it is plain, else quoted */
static void
append_conninfo(StringInfo buf, const char *keyword, const char *value)
{
	bool		bare = *value != '\0';

	for (const char *c = value; *c && bare; c++)
		bare = isalnum((unsigned char) *c) || strchr("/._-:,@[]", *c) != NULL;
	if (buf->len > 0)
		appendStringInfoChar(buf, ' ');
	appendStringInfo(buf, "%s=", keyword);
	if (bare)
	{
		appendStringInfoString(buf, value);
		return;
	}
	appendStringInfoChar(buf, '\'');
	for (const char *c = value; *c; c++)
	{
		if (*c == '\'' || *c == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *c);
	}
	appendStringInfoChar(buf, '\'');
}

/*
 * append_address: one of host, hostaddr, port as the router's libpq would
 * use it, a list normalised item by item: the router's defaults where the
 * string has no value (PQconndefaults: the environment, else the compiled
 * defaults); an empty value or list item is what libpq makes of it, the
 * compiled default (port 5432, the default socket directory; no hostaddr);
 * a host name in lower case; a socket directory as a canonical path
 * (canonicalize_path: no doubled or trailing slash, no "." segment), since
 * the kernel reads "/x//shard0/" as "/x/shard0"; a port as a number.
 */
static void
append_address(StringInfo buf, const char *keyword, const char *value, PQconninfoOption *defaults)
{
	bool		is_port = strcmp(keyword, "port") == 0;
	bool		is_host = strcmp(keyword, "host") == 0;
	const char *item;

	if (value == NULL)
		for (PQconninfoOption *d = defaults; d && d->keyword; d++)
			if (strcmp(d->keyword, keyword) == 0)
				value = d->val;
	if (value == NULL)
		value = "";
	appendStringInfo(buf, "%s=", keyword);
	item = value;
	for (;;)
	{
		const char *end = strchr(item, ',');
		int			len = end ? (int) (end - item) : (int) strlen(item);
		char	   *v = pnstrdup(item, len);

		if (item != value)
			appendStringInfoChar(buf, ',');
		if (len == 0)
		{
			if (is_host)
				appendStringInfoString(buf, DEFAULT_PGSOCKET_DIR);
			else if (is_port)
				appendStringInfoString(buf, DEF_PGPORT_STR);
		}
		else if (is_port && strspn(v, "0123456789") == (size_t) len)
			appendStringInfo(buf, "%ld", strtol(v, NULL, 10));
		else if (is_host && v[0] == '/')
		{
			canonicalize_path(v);
			appendStringInfoString(buf, v);
		}
		else
			appendStringInfoString(buf, asc_tolower(v, len));
		if (end == NULL)
			break;
		item = end + 1;
	}
	appendStringInfoChar(buf, '\n');
}

/*
 * check_node: parse a node string with libpq's parser (as PL/Proxy's
 * libpq will read it) and check it names where a node is and nothing else
 * (see node_keywords); what names the string in errors, e.g. "node 2" or
 * "partition p5"; code, the SQLSTATE of its errors.
 */
static void
check_node(const char *conninfo, const char *what, int code, NodeString *out)
{
	char	   *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &perr);
	PQconninfoOption *defaults;
	StringInfoData canon;
	StringInfoData ident;
	const char *addr[4] = {NULL, NULL, NULL, NULL};

	if (opts == NULL)
	{
		char	   *msg = pstrdup(perr ? perr : "out of memory");
		int			len = strlen(msg);

		if (perr)
			PQfreemem(perr);
		while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
			msg[--len] = '\0';
		ereport(ERROR,
				(errcode(code),
				 errmsg("the connection string of %s is not valid: %s", what, msg)));
	}
	initStringInfo(&canon);
	PG_TRY();
	{
		for (int k = 0; node_keywords[k]; k++)
			for (PQconninfoOption *o = opts; o->keyword; o++)
			{
				if (o->val == NULL || strcmp(o->keyword, node_keywords[k]) != 0)
					continue;
				if (strstr(asc_tolower(o->val, strlen(o->val)), "user=") != NULL)
					ereport(ERROR,
							(errcode(code),
							 errmsg("the connection string of %s has \"user\" in the value of \"%s\"", what, o->keyword),
							 errdetail("PL/Proxy connects as the calling role only to a connection string without \"user=\" in it.")));
				append_conninfo(&canon, o->keyword, o->val);
				if (k < 4)
					addr[k] = pstrdup(o->val);
			}
		for (PQconninfoOption *o = opts; o->keyword; o++)
		{
			bool		allowed = false;

			if (o->val == NULL)
				continue;
			for (int k = 0; node_keywords[k] && !allowed; k++)
				allowed = strcmp(o->keyword, node_keywords[k]) == 0;
			if (allowed)
				continue;
			if (strstr(o->keyword, "password") != NULL || strcmp(o->keyword, "passfile") == 0 ||
				strcmp(o->keyword, "sslkey") == 0)
				ereport(ERROR,
						(errcode(code),
						 errmsg("the connection string of %s carries a password or a key (\"%s\")", what, o->keyword),
						 errdetail("The options of a foreign server are readable by every role, and a node string is used for every role alike."),
						 errhint("Give a role's password in its own user mapping of server tablestore_cluster, or in the .pgpass file of the router's server.")));
			ereport(ERROR,
					(errcode(code),
					 errmsg("the connection string of %s sets \"%s\", which a node string may not", what, o->keyword),
					 errdetail("A node string says where a node is; who connects is the calling role."),
					 errhint("A node string may set: host, hostaddr, port, dbname, and how to reach the node (timeouts, keepalives, SSL and GSS requirements, application_name).")));
		}
		if (addr[3] == NULL || addr[3][0] == '\0')
			ereport(ERROR,
					(errcode(code),
					 errmsg("the connection string of %s does not name a database (dbname)", what)));
	}
	PG_FINALLY();
	{
		PQconninfoFree(opts);
		if (perr)
			PQfreemem(perr);
	}
	PG_END_TRY();

	/* the address, with the defaults the router's libpq would use */
	defaults = PQconndefaults();
	initStringInfo(&ident);
	append_address(&ident, "host", addr[0], defaults);
	append_address(&ident, "hostaddr", addr[1], defaults);
	append_address(&ident, "port", addr[2], defaults);
	appendStringInfo(&ident, "dbname=%s", addr[3]);
	if (defaults)
		PQconninfoFree(defaults);
	out->canonical = canon.data;
	out->identity = ident.data;
}

/*
 * router_cluster_shape: the partition count (and node count) of the cluster, from
 * the options p0 .. p<P-1> of the foreign server tablestore_cluster.  Every
 * node string is checked as configure() checks it (the server may have
 * been altered directly): the router routes over nothing else.  Nodes are
 * told apart by their address; one node under two spellings would be two
 * nodes to PL/Proxy (a query over every node would read it twice), so it
 * is refused.
 */
int
router_cluster_shape(int *nodes)
{
	register_callbacks();
	if (router_cluster_partitions == 0)
	{
		ForeignServer *server = GetForeignServerByName(cluster_server, true);
		List	   *values = NIL;
		List	   *idents = NIL;
		ListCell   *lc;
		int			parts = 0;

		if (server == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the tablestore cluster is not configured"),
					 errhint("Define it with tablestore_router.configure(ARRAY['<connection string of a node>', ...]).")));
		foreach(lc, server->options)
		{
			DefElem    *def = lfirst(lc);
			const char *v;
			ListCell   *lc2;
			ListCell   *lc3;
			int			part;
			int			node = 0;
			bool		seen = false;
			NodeString	ns;

			if (def->defname[0] != 'p' || strspn(def->defname + 1, "0123456789") != strlen(def->defname + 1) ||
				def->defname[1] == '\0' || strlen(def->defname) > 5)
				continue;
			parts++;
			part = atoi(def->defname + 1);
			v = defGetString(def);
			if (strstr(v, "user=") != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("partition %s of server %s has \"user=\" in its connection string", def->defname, cluster_server),
						 errdetail("PL/Proxy connects as the calling role only to a connection string without \"user=\" in it.")));
			check_node(v, psprintf("partition %s of server %s", def->defname, cluster_server),
					   ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, &ns);
			forboth(lc2, values, lc3, idents)
			{
				if (strcmp(lfirst(lc3), ns.identity) == 0)
				{
					if (strcmp(lfirst(lc2), v) != 0)
						ereport(ERROR,
								(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
								 errmsg("partition %s of server %s names node %d (partition p%d) under another spelling",
										def->defname, cluster_server, node, router_cluster_node_part[node]),
								 errdetail("One node must be named by one connection string, or it is taken for two."),
								 errhint("Set the option to the text of p%d.", router_cluster_node_part[node])));
					seen = true;
					break;
				}
				node++;
			}
			if (!seen)
			{
				if (node >= ROUTER_MAX_NODES)
					ereport(ERROR,
							(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							 errmsg("a tablestore cluster has at most %d nodes", ROUTER_MAX_NODES)));
				values = lappend(values, (char *) v);
				idents = lappend(idents, ns.identity);
				router_cluster_node_part[node] = part;
			}
			else if (part < router_cluster_node_part[node])
				router_cluster_node_part[node] = part;
			if (part >= 0 && part < ROUTER_MAX_PARTS)
				router_cluster_part_node[part] = node;
		}
		/* PL/Proxy's option validator allows nothing else */
		if (parts == 0 || (parts & (parts - 1)) != 0)
			elog(ERROR, "foreign server \"%s\" has %d partitions, not a power of two",
				 cluster_server, parts);
		router_cluster_nodes = list_length(values);
		router_cluster_partitions = parts;
	}
	if (nodes)
		*nodes = router_cluster_nodes;
	return router_cluster_partitions;
}

/*
 * router_mapping_check: the calling role's user mapping of the cluster's
 * server (PL/Proxy adds its options to every node string) may give the
 * role's password, not another role's name: a role with USAGE on the
 * server may create its own mapping, and "user" there would make it act
 * as that role on the nodes.
 */
void
router_mapping_check(void)
{
	Oid			role = GetUserId();
	ForeignServer *server;
	UserMapping *um;
	ListCell   *lc;
	char	   *name;

	if (mapping_checked_for == role)
		return;
	server = GetForeignServerByName(cluster_server, false);
	um = GetUserMapping(role, server->serverid);
	name = GetUserNameFromId(role, false);
	foreach(lc, um->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "user") == 0 && strcmp(defGetString(def), name) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("the user mapping of role \"%s\" for server %s names another role", name, cluster_server),
					 errdetail("Calls through the router run on the nodes as the calling role."),
					 errhint("Drop the mapping's \"user\" option; it may give the role's own password.")));
	}
	mapping_checked_for = role;
}

/*
 * tablestore_router._check_user_mapping() RETURNS void: router_mapping_check
 * for the SQL functions of the router that call the nodes through PL/Proxy
 * without a C entry point (_may_set_service_properties asks node 0 through
 * _may_create_tables), so that a mapping naming another role is refused
 * there as in every routed call.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_check_user_mapping);
Datum
router_check_user_mapping(PG_FUNCTION_ARGS)
{
	(void) router_cluster_shape(NULL);	/* "not configured", if it is not */
	router_mapping_check();
	PG_RETURN_VOID();
}

/*
 * tablestore_router._check_nodes(nodes text[]) RETURNS text[]: configure()'s
 * check of its nodes: each as the router will give it to PL/Proxy (its
 * canonical form), and no node twice.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_check_nodes);
Datum
router_check_nodes(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	NodeString *ns;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls, &n);
	ns = palloc(sizeof(NodeString) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if (enulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a cluster needs at least one node, none of them NULL")));
		check_node(TextDatumGetCString(elems[i]), psprintf("node %d", i + 1),
				   ERRCODE_INVALID_PARAMETER_VALUE, &ns[i]);
		for (int j = 0; j < i; j++)
			if (strcmp(ns[j].identity, ns[i].identity) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("nodes %d and %d are the same node", j + 1, i + 1)));
		elems[i] = CStringGetTextDatum(ns[i].canonical);
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * tablestore_router.node_string(node text) RETURNS text: a node string as
 * the router stores it: the text of the cluster's node at the same address
 * if it has one, else the string's canonical form.  A mover sets a
 * partition's option to it, so that a node is never named two ways.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_node_string);
Datum
router_node_string(PG_FUNCTION_ARGS)
{
	NodeString	ns;
	ForeignServer *server = GetForeignServerByName(cluster_server, true);
	ListCell   *lc;

	check_node(text_to_cstring(PG_GETARG_TEXT_PP(0)), "the node", ERRCODE_INVALID_PARAMETER_VALUE, &ns);
	if (server != NULL)
		foreach(lc, server->options)
		{
			DefElem    *def = lfirst(lc);
			NodeString	other;

			if (def->defname[0] != 'p' || strspn(def->defname + 1, "0123456789") != strlen(def->defname + 1))
				continue;
			check_node(defGetString(def), psprintf("partition %s of server %s", def->defname, cluster_server),
					   ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, &other);
			if (strcmp(other.identity, ns.identity) == 0)
				PG_RETURN_TEXT_P(cstring_to_text(defGetString(def)));
		}
	PG_RETURN_TEXT_P(cstring_to_text(ns.canonical));
}

