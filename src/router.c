/*-------------------------------------------------------------------------
 *
 * router.c
 *	  The scale-out router (extension tablestore_router): the tablestore SQL
 *	  API on a router database, each call run on the shards through PL/Proxy.
 *
 * A PartitionKey's partition is partition_hash(PartitionKey) & (P - 1), P
 * the cluster's partition count (a power of two); the foreign server
 * tablestore_cluster (FOREIGN DATA WRAPPER plproxy) maps each partition to
 * the connection string of a shard, an ordinary tablestore database.
 *
 * Every operation on one partition (the entity operations, batches, and
 * queries whose filter fixes the PartitionKey) calls a PL/Proxy function of
 * schema tablestore_router with the partition to RUN ON, which runs the
 * shard's function of the same name as the calling role.  A query without a
 * PartitionKey equality asks every node for a page at a time and merges the
 * pages in the service's key order (UTF-16 code units): the merged page ends
 * before the smallest continuation any node returned, so that a continuation
 * is a key, exactly as on one node.  create_table and delete_table run on
 * every node and are idempotent there, so that a call that failed on some
 * nodes completes when it is repeated.
 *
 * Node strings: a partition's node is a libpq connection string that says
 * where the node is, never who connects (see check_node): PL/Proxy
 * connects as the calling role, with the password of its user mapping if
 * it has one.  A string is read with libpq's own parser, and the router
 * routes only over a configuration whose every string passes; nodes are
 * told apart by their parsed address (host, port, database), and one node
 * spelled two ways is refused.
 *
 * Moving partitions between nodes: every routed call holds a share lock on
 * its partition (a call on every node, the one of "all partitions", -1)
 * while it runs, and only then: the lock is released when the call
 * returns, so no open transaction or cursor holds one.  A mover
 * (tablestore_router.lock_partition_for_move, superuser only) holds the
 * partition's lock and then the lock of all partitions, exclusively, while
 * it copies the partition and switches the foreign server's option: calls
 * on the partitions being moved, and calls on every node, wait; the others
 * go on.  After the wait a call reads the new configuration
 * (AcceptInvalidationMessages), so it runs on the partition's new node.  The
 * locks are advisory locks of a class (ROUTER_LOCK_CLASS) that no SQL
 * function takes, so no role can take or hold them but through a call.
 * A streaming query takes the lock per page and reads the partition map
 * under it; if the map changed since its last page, it starts again on the
 * new nodes after the last entity it returned.  The online mover
 * (tablestore_router.move_partition, PL/pgSQL) takes these locks only for
 * its cutover; while it copies, the target holds rows of a partition it
 * does not serve, so a query over every node asks the nodes one by one and
 * drops the rows of partitions that the map gives another node, and
 * create_table and delete_table refuse to run while a move is unfinished.
 *
 * Errors: a shard's error is raised again as the shard raised it (PL/Proxy
 * prefixes the message and detail with where it came from; they are taken
 * off), so that SQLSTATE, message, detail and hint are those of one node.
 * A node that cannot be reached gives ServerBusy (TS503).  What a node
 * answers is read as untrusted: an entity that is not a JSON object, keys
 * out of order or before the continuation asked for, a continuation that
 * does not advance, an error whose SQLSTATE is no error, are DATA_CORRUPTED
 * (XX001) naming the node's partition.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "common/jsonapi.h"
#include "libpq-fe.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "access/htup_details.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/formatting.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "tablestore.h"
#include "filter/filter.h"

/* the advisory lock key (first half) of the partition locks: "tsrp" */
#define ROUTER_LOCK_KEY	0x74737270
/*
 * The class (field 4) of the router's advisory locks: SQL's advisory lock
 * functions use 1 and 2 only, so no SQL caller can take, or wait for, a
 * lock of this class ("ts").
 */
#define ROUTER_LOCK_CLASS 0x7473
/* the page a streaming query fetches from the nodes at a time */
#define ROUTER_FETCH	1000

static const char *cluster_server = "tablestore_cluster";

/*
 * The cluster's shape, read from the foreign server's options: the number
 * of partitions and of distinct nodes.  Reset by any change of a foreign
 * server, which also counts a new generation of the partition map.
 */
static int	cluster_partitions = 0;
static int	cluster_nodes = 0;
static uint64 cluster_generation = 1;
/* per node, the lowest partition it holds: a call RUN ON it reaches the node */
#define ROUTER_MAX_NODES 256
static int	cluster_node_part[ROUTER_MAX_NODES];
/* per partition, its node (an index of cluster_node_part) */
#define ROUTER_MAX_PARTS 256
static int	cluster_part_node[ROUTER_MAX_PARTS];
static bool callbacks_registered = false;
/* the role whose user mapping was checked (check_user_mapping) */
static Oid	mapping_checked_for = InvalidOid;

/* Function OIDs of the PL/Proxy calls, by signature; reset by pg_proc changes. */
#define ROUTER_MAX_FUNCS 32
typedef struct RouterFunc
{
	const char *signature;
	Oid			oid;
} RouterFunc;
static RouterFunc router_funcs[ROUTER_MAX_FUNCS];
static int	router_nfuncs = 0;

static void
router_server_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	cluster_partitions = 0;
	cluster_nodes = 0;
	cluster_generation++;
	mapping_checked_for = InvalidOid;
}

static void
router_mapping_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	mapping_checked_for = InvalidOid;
}

static void
router_proc_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	router_nfuncs = 0;
}

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;

	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, router_server_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(USERMAPPINGOID, router_mapping_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, router_proc_changed, (Datum) 0);
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
 * cluster_shape: the partition count (and node count) of the cluster, from
 * the options p0 .. p<P-1> of the foreign server tablestore_cluster.  Every
 * node string is checked as configure() checks it (the server may have
 * been altered directly): the router routes over nothing else.  Nodes are
 * told apart by their address; one node under two spellings would be two
 * nodes to PL/Proxy (a query over every node would read it twice), so it
 * is refused.
 */
static int
cluster_shape(int *nodes)
{
	register_callbacks();
	if (cluster_partitions == 0)
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
										def->defname, cluster_server, node, cluster_node_part[node]),
								 errdetail("One node must be named by one connection string, or it is taken for two."),
								 errhint("Set the option to the text of p%d.", cluster_node_part[node])));
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
				cluster_node_part[node] = part;
			}
			else if (part < cluster_node_part[node])
				cluster_node_part[node] = part;
			if (part >= 0 && part < ROUTER_MAX_PARTS)
				cluster_part_node[part] = node;
		}
		/* PL/Proxy's option validator allows nothing else */
		if (parts == 0 || (parts & (parts - 1)) != 0)
			elog(ERROR, "foreign server \"%s\" has %d partitions, not a power of two",
				 cluster_server, parts);
		cluster_nodes = list_length(values);
		cluster_partitions = parts;
	}
	if (nodes)
		*nodes = cluster_nodes;
	return cluster_partitions;
}

/*
 * check_user_mapping: the calling role's user mapping of the cluster's
 * server (PL/Proxy adds its options to every node string) may give the
 * role's password, not another role's name: a role with USAGE on the
 * server may create its own mapping, and "user" there would make it act
 * as that role on the nodes.
 */
static void
check_user_mapping(void)
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
 * tablestore_router._check_user_mapping() RETURNS void: check_user_mapping
 * for the SQL functions of the router that call the nodes through PL/Proxy
 * without a C entry point (_may_set_service_properties asks node 0 through
 * _may_create_tables), so that a mapping naming another role is refused
 * there as in every routed call.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_check_user_mapping);
Datum
router_check_user_mapping(PG_FUNCTION_ARGS)
{
	(void) cluster_shape(NULL);	/* "not configured", if it is not */
	check_user_mapping();
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

/*
 * ts_partition_hash: the stable hash of a PartitionKey: 32-bit FNV-1a over
 * its UTF-8 bytes, then MurmurHash3's finalizer so that the low bits (which
 * pick the partition) depend on every byte.  It is part of the on-disk
 * contract of a cluster: never change it.
 */
static uint32
ts_partition_hash(const char *s, int len)
{
	uint32		h = 2166136261u;
	int			i;

	for (i = 0; i < len; i++)
	{
		h ^= (unsigned char) s[i];
		h *= 16777619u;
	}
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/*
 * tablestore.partition_hash(partition_key text) RETURNS integer
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(partition_hash);
Datum
partition_hash(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);

	PG_RETURN_INT32((int32) ts_partition_hash(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
}

/* the partition of a key in the current cluster */
static int
partition_of(const char *s, int len)
{
	return (int) (ts_partition_hash(s, len) & (uint32) (cluster_shape(NULL) - 1));
}

/*
 * tablestore_router.partition_of(partition_key text) RETURNS integer
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_partition_of);
Datum
router_partition_of(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);

	PG_RETURN_INT32(partition_of(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
}

/* the tag of a partition's lock (-1: all partitions) */
static void
partition_tag(LOCKTAG *tag, int part)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, ROUTER_LOCK_KEY, (uint32) part, ROUTER_LOCK_CLASS);
}

/*
 * lock_partitions: the lock a call on one partition (part >= 0) or on every
 * node (part < 0) holds while it runs: a share lock, so that a mover's
 * exclusive lock waits for the call and the call waits for a move; then
 * the configuration the mover may have changed while we waited is read.
 * Released by unlock_partitions when the call returns (by the abort of the
 * (sub)transaction if it fails): no role holds it longer than its call.
 */
static void
lock_partitions(int part)
{
	LOCKTAG		tag;

	(void) cluster_shape(NULL);	/* "not configured", if it is not */
	check_user_mapping();
	partition_tag(&tag, part < 0 ? -1 : part);
	(void) LockAcquire(&tag, ShareLock, false, false);
	AcceptInvalidationMessages();
	check_user_mapping();
}

static void
unlock_partitions(int part)
{
	LOCKTAG		tag;

	partition_tag(&tag, part < 0 ? -1 : part);
	(void) LockRelease(&tag, ShareLock, false);
}

/*
 * tablestore_router.lock_partition_for_move(partition integer) RETURNS void:
 * a mover's locks (session level): the partition's, then that of all
 * partitions, exclusively.  Calls on the partition wait from the first on,
 * calls on every node from the second; the move begins with both.  Waits
 * at most lock_timeout for each (a call in flight must end first; the calls
 * that queue behind the mover wait no longer than that), and holds neither
 * if it fails.  Superuser only (EXECUTE revoked from PUBLIC).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_lock_partition_for_move);
Datum
router_lock_partition_for_move(PG_FUNCTION_ARGS)
{
	int			part = PG_GETARG_INT32(0);
	LOCKTAG		one;
	LOCKTAG		all;

	if (part < 0 || part >= cluster_shape(NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the cluster has no partition %d", part)));
	partition_tag(&one, part);
	partition_tag(&all, -1);
	(void) LockAcquire(&one, ExclusiveLock, true, false);
	PG_TRY();
	{
		(void) LockAcquire(&all, ExclusiveLock, true, false);
	}
	PG_CATCH();
	{
		(void) LockRelease(&one, ExclusiveLock, true);
		PG_RE_THROW();
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}

/*
 * tablestore_router.unlock_partition_for_move(partition integer) RETURNS
 * boolean: a mover's locks released; false if it did not hold them.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_unlock_partition_for_move);
Datum
router_unlock_partition_for_move(PG_FUNCTION_ARGS)
{
	int			part = PG_GETARG_INT32(0);
	LOCKTAG		one;
	LOCKTAG		all;
	bool		held;

	partition_tag(&one, part);
	partition_tag(&all, -1);
	held = LockHeldByMe(&all, ExclusiveLock) && LockHeldByMe(&one, ExclusiveLock);
	if (held)
	{
		(void) LockRelease(&all, ExclusiveLock, true);
		(void) LockRelease(&one, ExclusiveLock, true);
	}
	PG_RETURN_BOOL(held);
}

/*
 * tablestore_router._move_session_lock(take boolean) RETURNS boolean: the
 * mover's own lock (session level, the router's lock class, key "tsrp"+2),
 * held by move_partition for its whole run so that no two runs of a move
 * are alive at once (issue 23, attack F2).  take: acquire it without
 * waiting; false if another session holds it (true if this one does
 * already: a run of this session that failed left it).  Not take: release
 * it; false if this session did not hold it.  Superuser only (EXECUTE
 * revoked from PUBLIC).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_move_session_lock);
Datum
router_move_session_lock(PG_FUNCTION_ARGS)
{
	bool		take = PG_GETARG_BOOL(0);
	LOCKTAG		tag;
	bool		held;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, ROUTER_LOCK_KEY + 2, 0, ROUTER_LOCK_CLASS);
	held = LockHeldByMe(&tag, ExclusiveLock);
	if (take)
	{
		if (held)
			PG_RETURN_BOOL(true);
		PG_RETURN_BOOL(LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL);
	}
	if (held)
		(void) LockRelease(&tag, ExclusiveLock, true);
	PG_RETURN_BOOL(held);
}

/*
 * Routing: the partition of a JSON object's "PartitionKey" member, or 0 when
 * there is none (the shard then raises the error one node would).
 */
static int
route_object_key(Jsonb *obj)
{
	JsonbValue *v;

	if (obj == NULL || !JB_ROOT_IS_OBJECT(obj))
		return 0;
	v = getKeyJsonValueFromContainer(&obj->root, "PartitionKey", strlen("PartitionKey"), NULL);
	if (v == NULL || v->type != jbvString)
		return 0;
	return partition_of(v->val.string.val, v->val.string.len);
}

/* the partition of a batch: its first operation's entity's */
static int
route_batch(Jsonb *ops)
{
	JsonbValue *first;
	JsonbValue *entity;

	if (ops == NULL || !JB_ROOT_IS_ARRAY(ops) || JB_ROOT_IS_SCALAR(ops))
		return 0;
	first = getIthJsonbValueFromContainer(&ops->root, 0);
	if (first == NULL || first->type != jbvBinary || !JsonContainerIsObject(first->val.binary.data))
		return 0;
	entity = getKeyJsonValueFromContainer(first->val.binary.data, "entity", strlen("entity"), NULL);
	if (entity == NULL || entity->type != jbvBinary || !JsonContainerIsObject(entity->val.binary.data))
		return 0;
	entity = getKeyJsonValueFromContainer(entity->val.binary.data, "PartitionKey", strlen("PartitionKey"), NULL);
	if (entity == NULL || entity->type != jbvString)
		return 0;
	return partition_of(entity->val.string.val, entity->val.string.len);
}

static void *
router_filter_alloc(void *ctx, size_t size)
{
	return palloc0(size);
}

/*
 * route_query: the partition a filter confines a query to, or -1 when it
 * needs every node.  A filter that does not parse goes to partition 0,
 * whose node raises the error one node would (after its own checks of the
 * table and the privileges, in its order).
 */
static int
route_query(text *filter)
{
	FilterAllocator alloc = {router_filter_alloc, NULL};
	FilterNode *tree;
	FilterError err;
	TsQueryPlan *plan;

	if (filter == NULL)
		return -1;
	if (!filter_parse(VARDATA_ANY(filter), VARSIZE_ANY_EXHDR(filter), &alloc, &tree, &err))
		return 0;
	plan = ts_plan_query(tree);
	if (plan->empty)
		return 0;
	if (ts_key_range_is_point(&plan->pk))
		return partition_of(VARDATA_ANY(plan->pk.lo.value), VARSIZE_ANY_EXHDR(plan->pk.lo.value));
	if (plan->kind == TS_ACCESS_MULTI_POINT && plan->points != NIL)
	{
		int			part = -1;
		ListCell   *lc;

		foreach(lc, plan->points)
		{
			TsScanSegment *seg = lfirst(lc);
			int			p = partition_of(VARDATA_ANY(seg->pk.lo.value),
										 VARSIZE_ANY_EXHDR(seg->pk.lo.value));

			if (part >= 0 && p != part)
				return -1;
			part = p;
		}
		return part;
	}
	return -1;
}

/*
 * Errors.  rethrow_remote: a PL/Proxy error as the shard raised it, or as
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

static void rethrow_remote(ErrorData *ed) pg_attribute_noreturn();

static void
rethrow_remote(ErrorData *ed)
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
 * PL/Proxy 2.10 leaves the connection of a statement that failed in the
 * middle of its result, and reconnects on the next call, saying so with a
 * NOTICE ("PL/Proxy: dropping stale conn") that one node never gives.  The
 * shards' tablestore functions raise no notices, so a PL/Proxy call runs
 * with client_min_messages at least WARNING: the client sees what one node
 * would show.
 */
static int	saved_client_min_messages = -1;

static void
quiet_begin(void)
{
	if (saved_client_min_messages < 0 && client_min_messages < WARNING)
	{
		saved_client_min_messages = client_min_messages;
		client_min_messages = WARNING;
	}
}

static void
quiet_end(void)
{
	if (saved_client_min_messages >= 0)
	{
		client_min_messages = saved_client_min_messages;
		saved_client_min_messages = -1;
	}
}

/*
 * router_func: the OID of a PL/Proxy call, by its signature with every
 * name qualified (no search_path can change what it names), e.g.
 * "tablestore_router._explain_query(pg_catalog.int4,pg_catalog.text,pg_catalog.text)".
 */
static Oid
router_func(const char *signature)
{
	int			i;
	Oid			oid;

	register_callbacks();
	for (i = 0; i < router_nfuncs; i++)
		if (router_funcs[i].signature == signature)
			return router_funcs[i].oid;
	oid = DatumGetObjectId(DirectFunctionCall1(regprocedurein, CStringGetDatum(signature)));
	if (router_nfuncs < ROUTER_MAX_FUNCS)
	{
		router_funcs[router_nfuncs].signature = signature;
		router_funcs[router_nfuncs].oid = oid;
		router_nfuncs++;
	}
	return oid;
}

/*
 * remote_call_init: set up a call of the PL/Proxy function named by
 * signature with the given arguments; returns its OID.
 */
static Oid
remote_call_init(const char *signature, FmgrInfo *flinfo, FunctionCallInfo fcinfo,
				 int nargs, Datum *args, bool *nulls, Node *resultinfo)
{
	Oid			fn = router_func(signature);

	Assert(nargs <= 8);
	fmgr_info(fn, flinfo);
	InitFunctionCallInfoData(*fcinfo, flinfo, nargs, InvalidOid, NULL, resultinfo);
	for (int i = 0; i < nargs; i++)
	{
		fcinfo->args[i].value = args[i];
		fcinfo->args[i].isnull = nulls[i];
	}
	return fn;
}

/*
 * remote_call_failed: in the PG_CATCH of a PL/Proxy call, raise its error
 * again as the shard raised it (cxt: the memory context of the caller).
 */
static void remote_call_failed(MemoryContext cxt) pg_attribute_noreturn();

static void
remote_call_failed(MemoryContext cxt)
{
	ErrorData  *ed;

	quiet_end();
	MemoryContextSwitchTo(cxt);
	ed = CopyErrorData();
	FlushErrorState();
	rethrow_remote(ed);
}

/*
 * tablestore._may_set_service_properties() RETURNS boolean: whether the
 * calling role may set the account's service properties, that is may
 * create tables (CREATE on tablestore_data) on the node of partition 0,
 * asked as that role through PL/Proxy after the router's user-mapping
 * check.  A C entry point, so that the node's refusal of the role's
 * connection is a privilege error (42501) as in every routed call, not
 * PL/Proxy's internal error (test/cluster/fuzz_router.sh found it).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_may_set_service_properties);
Datum
router_may_set_service_properties(PG_FUNCTION_ARGS)
{
	FmgrInfo	flinfo;
	MemoryContext oldcxt = CurrentMemoryContext;
	Datum		result = (Datum) 0;
	bool		isnull = true;
	LOCAL_FCINFO(call, 8);

	(void) cluster_shape(NULL);	/* "not configured", if it is not */
	check_user_mapping();
	(void) remote_call_init("tablestore_router._may_create_tables()", &flinfo, call, 0, NULL, NULL, NULL);
	quiet_begin();
	PG_TRY();
	{
		result = FunctionCallInvoke(call);
		isnull = call->isnull;
	}
	PG_CATCH();
	{
		remote_call_failed(oldcxt);
	}
	PG_END_TRY();
	quiet_end();
	PG_RETURN_BOOL(!isnull && DatumGetBool(result));
}

/*
 * A result row of a set-returning PL/Proxy call, copied out.
 */
typedef struct RemoteRow
{
	Datum		values[6];
	bool		nulls[6];
} RemoteRow;

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
static void raise_error_column(Datum error) pg_attribute_noreturn();

static void
raise_error_column(Datum error)
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
 * check_answer: a one-value call's answer (jsonb); {"#error": [SQLSTATE,
 * message, detail, hint]} is the node's error, raised here (no entity or
 * plan has a property named "#error").
 */
static void
check_answer(Datum answer)
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

/*
 * call_remote: call a PL/Proxy function that returns one value (jsonb: a
 * one-value _routed_ call's answer), with the shard's errors as the shard
 * raised them.
 */
static Datum
call_remote(const char *signature, int nargs, Datum *args, bool *nulls, bool *isnull, int part)
{
	FmgrInfo	flinfo;
	MemoryContext oldcxt = CurrentMemoryContext;
	Datum		result = (Datum) 0;
	LOCAL_FCINFO(fcinfo, 8);

	(void) remote_call_init(signature, &flinfo, fcinfo, nargs, args, nulls, NULL);
	quiet_begin();
	PG_TRY();
	{
		result = FunctionCallInvoke(fcinfo);
		*isnull = fcinfo->isnull;
	}
	PG_CATCH();
	{
		remote_call_failed(oldcxt);
	}
	PG_END_TRY();
	quiet_end();
	if (!*isnull)
	{
		Jsonb	   *jb;

		check_answer(result);
		/* an entity call's answer (an entity, a plan) is an object */
		jb = DatumGetJsonbP(result);
		if (part >= 0 && !JB_ROOT_IS_OBJECT(jb))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d answered a JSON value that is not an object", part)));
	}
	return result;
}

/*
 * call_remote_rows: call a set-returning PL/Proxy function (value per
 * call, as the executor would) and copy its rows (at most 6 columns) into
 * the current memory context.  Called through fmgr rather than SQL, so the
 * calls need no EXECUTE privilege: only the functions of schema tablestore
 * reach them, with the partition they computed.  The last column of every
 * such function is the node's error, as data: the first row that has one
 * raises it.
 */
static RemoteRow *
call_remote_rows(const char *signature, int nargs, Datum *args, bool *nulls, int *nrows)
{
	Oid			fn;
	FmgrInfo	flinfo;
	ReturnSetInfo rsinfo;
	ExprContext *econtext = CreateStandaloneExprContext();
	TupleDesc	desc = NULL;
	MemoryContext oldcxt = CurrentMemoryContext;
	RemoteRow  *rows;
	int			cap = 16;
	int			n = 0;
	int16		typlen = -1;
	bool		typbyval = false;
	int			errcol;
	Oid			rettype;
	LOCAL_FCINFO(fcinfo, 8);

	memset(&rsinfo, 0, sizeof(rsinfo));
	rsinfo.type = T_ReturnSetInfo;
	rsinfo.econtext = econtext;
	rsinfo.allowedModes = (int) SFRM_ValuePerCall;
	rsinfo.returnMode = SFRM_ValuePerCall;
	fn = remote_call_init(signature, &flinfo, fcinfo, nargs, args, nulls, (Node *) &rsinfo);
	if (get_func_result_type(fn, NULL, &desc) != TYPEFUNC_COMPOSITE)
	{
		desc = NULL;
		get_typlenbyval(get_func_rettype(fn), &typlen, &typbyval);
	}
	if (desc != NULL && desc->natts > (int) lengthof(((RemoteRow *) NULL)->values))
		elog(ERROR, "function %s returns %d columns, more than the router reads", signature, desc->natts);
	rsinfo.expectedDesc = desc;
	/*
	 * The node's error: a set call's last column "error", or a one-value
	 * call's jsonb answer {"#error": [...]} (the calls on every node)
	 */
	rettype = get_func_rettype(fn);
	errcol = desc != NULL && strcmp(NameStr(TupleDescAttr(desc, desc->natts - 1)->attname), "error") == 0 ?
		desc->natts - 1 : -1;
	rows = palloc0(sizeof(RemoteRow) * cap);

	quiet_begin();
	PG_TRY();
	{
		for (;;)
		{
			Datum		d;

			CHECK_FOR_INTERRUPTS();
			rsinfo.isDone = ExprSingleResult;
			fcinfo->isnull = false;
			d = FunctionCallInvoke(fcinfo);
			if (rsinfo.isDone == ExprEndResult)
				break;
			if (n == cap)
			{
				cap *= 2;
				rows = repalloc(rows, sizeof(RemoteRow) * cap);
			}
			memset(&rows[n], 0, sizeof(RemoteRow));
			if (desc == NULL)
			{
				rows[n].nulls[0] = fcinfo->isnull;
				if (!fcinfo->isnull)
					rows[n].values[0] = datumCopy(d, typbyval, typlen);
			}
			else if (fcinfo->isnull)
			{
				for (int c = 0; c < desc->natts; c++)
					rows[n].nulls[c] = true;
			}
			else
			{
				HeapTupleHeader td = DatumGetHeapTupleHeader(d);
				HeapTupleData tup;

				tup.t_len = HeapTupleHeaderGetDatumLength(td);
				ItemPointerSetInvalid(&tup.t_self);
				tup.t_tableOid = InvalidOid;
				tup.t_data = td;
				heap_deform_tuple(&tup, desc, rows[n].values, rows[n].nulls);
				for (int c = 0; c < desc->natts; c++)
				{
					Form_pg_attribute att = TupleDescAttr(desc, c);

					if (!rows[n].nulls[c])
						rows[n].values[c] = datumCopy(rows[n].values[c], att->attbyval, att->attlen);
				}
			}
			n++;
		}
	}
	PG_CATCH();
	{
		remote_call_failed(oldcxt);
	}
	PG_END_TRY();
	quiet_end();
	FreeExprContext(econtext, true);
	for (int r = 0; r < n; r++)
	{
		if (errcol >= 0 && !rows[r].nulls[errcol])
			raise_error_column(rows[r].values[errcol]);
		if (desc == NULL && rettype == JSONBOID && !rows[r].nulls[0])
			check_answer(rows[r].values[0]);
	}
	*nrows = n;
	return rows;
}


#define ARG_TEXT(n) (PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n))
#define ARG_JSONB(n) (PG_ARGISNULL(n) ? NULL : PG_GETARG_JSONB_P(n))

/* the arguments of the calling function, after a leading partition */
static void
forward_args(FunctionCallInfo fcinfo, int part, Datum *args, bool *nulls)
{
	args[0] = Int32GetDatum(part);
	nulls[0] = false;
	for (int i = 0; i < PG_NARGS(); i++)
	{
		args[i + 1] = PG_GETARG_DATUM(i);
		nulls[i + 1] = PG_ARGISNULL(i);
	}
}

/* one routed call of a function returning a value */
static Datum
routed_call(FunctionCallInfo fcinfo, const char *signature, int part)
{
	Datum		args[8];
	bool		nulls[8];
	bool		isnull;
	Datum		result;

	lock_partitions(part);
	forward_args(fcinfo, part, args, nulls);
	result = call_remote(signature, PG_NARGS() + 1, args, nulls, &isnull, part);
	unlock_partitions(part);
	if (isnull)
		PG_RETURN_NULL();
	return result;
}

#define ENTITY_CALL(name, sig) \
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_##name); \
Datum \
router_##name(PG_FUNCTION_ARGS) \
{ \
	return routed_call(fcinfo, "tablestore_router._" #name sig, route_object_key(ARG_JSONB(1))); \
}

ENTITY_CALL(insert_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)")
ENTITY_CALL(update_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb,pg_catalog.text)")
ENTITY_CALL(merge_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb,pg_catalog.text)")
ENTITY_CALL(insert_or_replace_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)")
ENTITY_CALL(insert_or_merge_entity, "(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)")

/* the partition of a PartitionKey argument (0 for NULL) */
static int
route_key_arg(FunctionCallInfo fcinfo, int n)
{
	text	   *pk = ARG_TEXT(n);

	return pk ? partition_of(VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk)) : 0;
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_delete_entity);
Datum
router_delete_entity(PG_FUNCTION_ARGS)
{
	(void) routed_call(fcinfo, "tablestore_router._delete_entity(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.text)",
					   route_key_arg(fcinfo, 1));
	PG_RETURN_VOID();
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_get_entity);
Datum
router_get_entity(PG_FUNCTION_ARGS)
{
	return routed_call(fcinfo, "tablestore_router._get_entity(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.text)",
					   route_key_arg(fcinfo, 1));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_explain_query);
Datum
router_explain_query(PG_FUNCTION_ARGS)
{
	int			part = route_query(ARG_TEXT(1));

	return routed_call(fcinfo, "tablestore_router._explain_query(pg_catalog.int4,pg_catalog.text,pg_catalog.text)", Max(part, 0));
}

/* the rows of a routed set-returning call, materialized (a batch: at most 100) */
static void
return_rows(FunctionCallInfo fcinfo, RemoteRow *rows, int nrows)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int r = 0; r < nrows; r++)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, rows[r].values, rows[r].nulls);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_execute_batch);
Datum
router_execute_batch(PG_FUNCTION_ARGS)
{
	Datum		args[3];
	bool		nulls[3];
	int			part = route_batch(ARG_JSONB(1));
	RemoteRow  *rows;
	int			nrows;

	lock_partitions(part);
	forward_args(fcinfo, part, args, nulls);
	rows = call_remote_rows("tablestore_router._execute_batch(pg_catalog.int4,pg_catalog.text,pg_catalog.jsonb)",
							3, args, nulls, &nrows);
	unlock_partitions(part);
	return_rows(fcinfo, rows, nrows);
	return (Datum) 0;
}

/*
 * Tables.  create_table and delete_table take a router-wide lock on the
 * name, so that calls through this router on one name run one at a time,
 * then run the idempotent function on every node; if no node did anything,
 * the call is repeated on one node for the error one node gives.
 */
static bool
table_name_tag(text *name, LOCKTAG *tag)
{
	char	   *lower;

	if (name == NULL)
		return false;
	lower = asc_tolower(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, ROUTER_LOCK_KEY + 1,
						 ts_partition_hash(lower, strlen(lower)), ROUTER_LOCK_CLASS);
	return true;
}

/*
 * Refuse create_table and delete_table while a partition move is unfinished
 * (tablestore_router.move_partition, issue 23): a move replicates the tables
 * it listed when it began, so a table created or deleted under it would be
 * stranded on one node or resurrected.  Called under the lock of "all
 * partitions", which a move takes (and releases) after recording itself and
 * before listing the tables: a call that passed this check has finished
 * before the move lists them.
 */
static void
refuse_during_move(void)
{
	int			ret;

	/* a router database not yet updated to 0.6.0 has no moves */
	if (!OidIsValid(RangeVarGetRelid(makeRangeVar("tablestore_router", "_moves", -1), NoLock, true)))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute("SELECT partition::text, target FROM tablestore_router._moves "
					  "WHERE finished_at IS NULL ORDER BY id LIMIT 1", true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed: %d", ret);
	if (SPI_processed > 0)
	{
		char	   *part = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		ts_ereport(ERROR, TS_ServerBusy,
				   errmsg("tables cannot be created or deleted while partition %s of the cluster is being moved", part),
				   errhint("Retry when the move is done (tablestore_router.moves); an interrupted move completes when tablestore_router.move_partition is called again."));
	}
	SPI_finish();
}

static void
table_everywhere(FunctionCallInfo fcinfo, const char *all_signature, const char *one_signature)
{
	Datum		args[2];
	bool		nulls[2];
	RemoteRow  *rows;
	int			nrows;
	bool		done = false;
	bool		isnull;
	LOCKTAG		name_tag;
	bool		named = table_name_tag(ARG_TEXT(0), &name_tag);

	/* held while the call runs, as the partition locks are */
	if (named)
		(void) LockAcquire(&name_tag, ExclusiveLock, false, false);
	lock_partitions(-1);
	refuse_during_move();
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = call_remote_rows(all_signature, 1, args, nulls, &nrows);
	/* each node's answer: true if it did the work (errors are raised) */
	for (int r = 0; r < nrows; r++)
	{
		Jsonb	   *jb;
		JsonbValue	v;

		if (rows[r].nulls[0])
			continue;
		jb = DatumGetJsonbP(rows[r].values[0]);
		if (JB_ROOT_IS_SCALAR(jb) && JsonbExtractScalar(&jb->root, &v) &&
			v.type == jbvBool && v.val.boolean)
			done = true;
	}
	if (!done)
	{
		forward_args(fcinfo, 0, args, nulls);
		(void) call_remote(one_signature, 2, args, nulls, &isnull, -1);
	}
	unlock_partitions(-1);
	if (named)
		(void) LockRelease(&name_tag, ExclusiveLock, false);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_create_table);
Datum
router_create_table(PG_FUNCTION_ARGS)
{
	table_everywhere(fcinfo, "tablestore_router._create_table(pg_catalog.text)",
					 "tablestore_router._create_table_on(pg_catalog.int4,pg_catalog.text)");
	PG_RETURN_VOID();
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_delete_table);
Datum
router_delete_table(PG_FUNCTION_ARGS)
{
	table_everywhere(fcinfo, "tablestore_router._delete_table(pg_catalog.text)",
					 "tablestore_router._delete_table_on(pg_catalog.int4,pg_catalog.text)");
	PG_RETURN_VOID();
}

/*
 * Stored access policies (Get/Set Table ACL).  Every node keeps a table's
 * policies with its copy of the table, so that delete_table, which runs on
 * every node, removes them, and each node checks the caller's rights on its
 * relation.  set_table_acl replaces them on every node (under the table's
 * name lock, as create_table and delete_table; a node's error is raised and
 * the call can be repeated, replacing all again).  get_table_acl takes the
 * same name lock in share mode, so that it never reads a set half applied
 * (the nodes commit one at a time): it sees the list before the set or the
 * one after.  As the nodes agree when no set is in flight, it reads one
 * node (that of partition 0): the gateway looks a SAS's policy (si) up on
 * every request, and a read of every partition cost one remote call each.
 * A set that failed on some node leaves the nodes differing until it is
 * repeated (its error says so); get answers partition 0's node's list.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_set_table_acl);
Datum
router_set_table_acl(PG_FUNCTION_ARGS)
{
	Datum		args[2];
	bool		nulls[2];
	int			nrows;
	LOCKTAG		name_tag;
	bool		named = table_name_tag(ARG_TEXT(0), &name_tag);

	if (named)
		(void) LockAcquire(&name_tag, ExclusiveLock, false, false);
	lock_partitions(-1);
	for (int i = 0; i < 2; i++)
	{
		args[i] = PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i);
	}
	(void) call_remote_rows("tablestore_router._set_table_acl(pg_catalog.text,pg_catalog.jsonb)",
							2, args, nulls, &nrows);
	unlock_partitions(-1);
	if (named)
		(void) LockRelease(&name_tag, ExclusiveLock, false);
	PG_RETURN_VOID();
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_get_table_acl);
Datum
router_get_table_acl(PG_FUNCTION_ARGS)
{
	Datum		args[1];
	bool		nulls[1];
	RemoteRow  *rows;
	int			nrows;
	Jsonb	   *first = NULL;
	LOCKTAG		name_tag;
	bool		named = table_name_tag(ARG_TEXT(0), &name_tag);

	/* share mode: gets run together, a set (exclusive) waits for them */
	if (named)
		(void) LockAcquire(&name_tag, ShareLock, false, false);
	lock_partitions(-1);
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = call_remote_rows("tablestore_router._get_table_acl(pg_catalog.text)", 1, args, nulls, &nrows);
	unlock_partitions(-1);
	if (named)
		(void) LockRelease(&name_tag, ShareLock, false);
	for (int r = 0; r < nrows; r++)
	{
		Jsonb	   *jb;

		if (rows[r].nulls[0])
			continue;
		jb = DatumGetJsonbP(rows[r].values[0]);
		if (first == NULL)
			first = jb;
		else if (compareJsonbContainers(&first->root, &jb->root) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the stored access policies of table \"%s\" differ between nodes",
							text_to_cstring(ARG_TEXT(0))),
					 errhint("Set them again with tablestore.set_table_acl: it replaces them on every node.")));
	}
	if (first == NULL)
		elog(ERROR, "no node answered for the stored access policies");
	PG_RETURN_JSONB_P(first);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * list_tables: the tables every node has (a table whose creation or
 * deletion failed on some node is not listed until the call is repeated).
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_list_tables);
Datum
router_list_tables(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		args[1];
	bool		nulls[1];
	RemoteRow  *rows;
	int			nrows;
	int			nodes;
	char	  **names;

	(void) cluster_shape(&nodes);
	lock_partitions(-1);
	args[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	rows = call_remote_rows("tablestore_router._list_tables(pg_catalog.text)", 1, args, nulls, &nrows);
	unlock_partitions(-1);
	names = palloc(sizeof(char *) * Max(nrows, 1));
	for (int r = 0; r < nrows; r++)
		names[r] = rows[r].nulls[0] ? "" : TextDatumGetCString(rows[r].values[0]);
	qsort(names, nrows, sizeof(char *), cmp_names);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int r = 0; r < nrows;)
	{
		int			n = 1;

		while (r + n < nrows && strcmp(names[r], names[r + n]) == 0)
			n++;
		if (n >= nodes)
		{
			Datum		v = CStringGetTextDatum(names[r]);
			bool		isnull = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &v, &isnull);
		}
		r += n;
	}
	return (Datum) 0;
}

/*
 * Queries.  A page from the nodes: the entities (json text and keys) in key
 * order and the continuation.
 */
/* the arguments of the page calls: partition, table, filter, select, top, continuation */
#define PAGE_ALL_ARGS "pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.int4,pg_catalog.text,pg_catalog.text"
#define PAGE_ARGS "pg_catalog.int4," PAGE_ALL_ARGS

typedef struct PageEntity
{
	text	   *json;
	text	   *pk;
	text	   *rk;
	bool		foreign;		/* of a partition the map gives another node */
	int			node;			/* the node that returned it */
} PageEntity;

typedef struct MergedPage
{
	PageEntity *ents;
	int			n;
	text	   *next_pk;		/* NULL: the query ends with this page */
	text	   *next_rk;
} MergedPage;

static int
key_cmp(text *apk, text *ark, text *bpk, text *brk)
{
	int			c = ts_utf16_cmp(VARDATA_ANY(apk), VARSIZE_ANY_EXHDR(apk),
								 VARDATA_ANY(bpk), VARSIZE_ANY_EXHDR(bpk));

	if (c != 0)
		return c;
	return ts_utf16_cmp(VARDATA_ANY(ark), VARSIZE_ANY_EXHDR(ark),
						VARDATA_ANY(brk), VARSIZE_ANY_EXHDR(brk));
}

static int
cmp_entities(const void *a, const void *b)
{
	const PageEntity *x = a;
	const PageEntity *y = b;

	return key_cmp(x->pk, x->rk, y->pk, y->rk);
}

/*
 * JSON from a node, checked for its shape: an entity must be one object,
 * a page an array of objects.
 */
typedef struct JsonShape
{
	int			depth;
	bool		array_of_objects;	/* the root must be an array of objects */
	bool		bad;
} JsonShape;

static void
shape_object_start(void *state)
{
	JsonShape  *sh = state;

	if (sh->depth == 0 && sh->array_of_objects)
		sh->bad = true;
	sh->depth++;
}

static void
shape_array_start(void *state)
{
	JsonShape  *sh = state;

	if ((sh->depth == 0 && !sh->array_of_objects) || (sh->depth == 1 && sh->array_of_objects))
		sh->bad = true;
	sh->depth++;
}

static void
shape_end(void *state)
{
	((JsonShape *) state)->depth--;
}

static void
shape_scalar(void *state, char *token, JsonTokenType tokentype)
{
	JsonShape  *sh = state;

	if (sh->depth == 0 || (sh->depth == 1 && sh->array_of_objects))
		sh->bad = true;
}

/* true if json (len bytes) is a JSON object, or an array of objects */
static bool
json_shape_ok(char *json, int len, bool array_of_objects)
{
	JsonShape	sh = {0, array_of_objects, false};
	JsonSemAction sem;
	JsonLexContext *lex = makeJsonLexContextCstringLen(json, len, GetDatabaseEncoding(), false);

	memset(&sem, 0, sizeof(sem));
	sem.semstate = &sh;
	sem.object_start = shape_object_start;
	sem.object_end = shape_end;
	sem.array_start = shape_array_start;
	sem.array_end = shape_end;
	sem.scalar = shape_scalar;
	return pg_parse_json(lex, &sem) == JSON_SUCCESS && !sh.bad;
}

/* where a page came from, for errors */
static const char *
page_source(int part)
{
	return part >= 0 ? psprintf("the node of partition %d", part) : "a node";
}

/*
 * fetch_page: at most top entities of a query from its partition's node
 * (part >= 0) or from every node, after the continuation (npk, nrk).  The
 * caller holds the partition's lock (lock_partitions).
 *
 * From every node, each node returns its own page and continuation; the
 * merged page holds the entities below the smallest continuation (beyond
 * it, a node has not said what it holds), at most top of them, and its
 * continuation is the first key it did not return: so a page is exactly
 * the entities of [start, continuation) on all nodes.
 *
 * The rows are checked before they are merged: an entity is a JSON object
 * (unless check_json is false: the caller parses every entity, see
 * entity_jsonb) at or after the continuation asked for, a node's continuation is after
 * it (or the query would ask for the same page again, for ever), one
 * node's entities are in key order and before its continuation, and no two
 * nodes return the same key.
 */
/*
 * entity_is_foreign: whether the entity of PartitionKey pk, returned by node
 * (an index of cluster_node_part), is of a partition that the partition map
 * gives another node.  During a partition move the target holds the
 * replicated copy of the moving partition before it serves it
 * (tablestore_router.move_partition), and a move interrupted after its
 * switch leaves the source's old copy until it is run again: a query over
 * every node reads each partition on its own node only, or it would return
 * those entities twice or stale.
 */
static bool
entity_is_foreign(text *pk, int node)
{
	uint32		mask = (uint32) cluster_partitions - 1;
	uint32		p = ts_partition_hash(VARDATA_ANY(pk), VARSIZE_ANY_EXHDR(pk)) & mask;

	return cluster_part_node[p] != node;
}

static void
fetch_page(int part, text *table, text *filter, text *select, int top,
		   text *npk, text *nrk, bool check_json, MergedPage *page)
{
	Datum		args[7];
	bool		nulls[7];
	RemoteRow  *rows;
	int			nrows;
	text	   *bound_pk = NULL;
	text	   *bound_rk = NULL;
	int			n = 0;
	int			k;
	int		   *rownode;
	const char *from = page_source(part);

	args[0] = Int32GetDatum(part);
	nulls[0] = false;
	args[1] = PointerGetDatum(table);
	nulls[1] = table == NULL;
	args[2] = PointerGetDatum(filter);
	nulls[2] = filter == NULL;
	args[3] = PointerGetDatum(select);
	nulls[3] = select == NULL;
	args[4] = Int32GetDatum(top);
	nulls[4] = false;
	args[5] = PointerGetDatum(npk);
	nulls[5] = npk == NULL;
	args[6] = PointerGetDatum(nrk);
	nulls[6] = nrk == NULL;

	if (part >= 0)
	{
		rows = call_remote_rows("tablestore_router._query_page(" PAGE_ARGS ")", 7, args, nulls, &nrows);
		rownode = palloc(sizeof(int) * Max(nrows, 1));
		for (int r = 0; r < nrows; r++)
			rownode[r] = cluster_part_node[part];
	}
	else
	{
		/*
		 * Every node, one after the other, so that each row's node is known
		 * (entity_is_foreign), which a call RUN ON ALL does not tell.
		 */
		int			nnodes;

		(void) cluster_shape(&nnodes);
		rows = NULL;
		rownode = NULL;
		nrows = 0;
		for (int i = 0; i < nnodes; i++)
		{
			RemoteRow  *more;
			int			nmore;

			args[0] = Int32GetDatum(cluster_node_part[i]);
			more = call_remote_rows("tablestore_router._query_page(" PAGE_ARGS ")", 7, args, nulls, &nmore);
			if (nmore == 0)
				continue;
			rows = rows == NULL ? palloc(sizeof(RemoteRow) * nmore) :
				repalloc(rows, sizeof(RemoteRow) * (nrows + nmore));
			rownode = rownode == NULL ? palloc(sizeof(int) * nmore) :
				repalloc(rownode, sizeof(int) * (nrows + nmore));
			memcpy(rows + nrows, more, sizeof(RemoteRow) * nmore);
			for (int r = 0; r < nmore; r++)
				rownode[nrows + r] = i;
			nrows += nmore;
		}
		args[0] = Int32GetDatum(part);
	}

	page->ents = palloc(sizeof(PageEntity) * Max(nrows, 1));
	for (int r = 0; r < nrows; r++)
	{
		RemoteRow  *row = &rows[r];
		text	   *json;

		if (row->nulls[0])
		{
			/*
			 * A node's continuation: the merged page stops before it.  One
			 * without both keys is no page a node writes; taken as the end
			 * of that node's entities it would cut them off silently.
			 */
			text	   *cpk;
			text	   *crk;

			if (row->nulls[1] || row->nulls[2])
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("%s returned a continuation without its keys", from)));
			cpk = DatumGetTextPP(row->values[1]);
			crk = DatumGetTextPP(row->values[2]);
			if (npk != NULL && key_cmp(cpk, crk, npk, nrk) <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("%s returned a continuation that does not advance past the one asked for", from),
						 errdetail("Asked for (%s, %s), answered (%s, %s).",
								   text_to_cstring(npk), text_to_cstring(nrk),
								   text_to_cstring(cpk), text_to_cstring(crk))));
			if (part >= 0 && n > 0 && key_cmp(page->ents[n - 1].pk, page->ents[n - 1].rk, cpk, crk) >= 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("%s returned a continuation before an entity of its page", from)));
			if (bound_pk == NULL || key_cmp(cpk, crk, bound_pk, bound_rk) < 0)
			{
				bound_pk = cpk;
				bound_rk = crk;
			}
			continue;
		}
		if (row->nulls[3] || row->nulls[4])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity without its keys", from)));
		json = DatumGetTextPP(row->values[0]);
		page->ents[n].json = json;
		page->ents[n].pk = DatumGetTextPP(row->values[3]);
		page->ents[n].rk = DatumGetTextPP(row->values[4]);
		if (check_json && !json_shape_ok(VARDATA_ANY(json), VARSIZE_ANY_EXHDR(json), false))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity that is not a JSON object", from),
					 errdetail("The entity of keys (%s, %s).",
							   text_to_cstring(page->ents[n].pk), text_to_cstring(page->ents[n].rk))));
		if (npk != NULL && key_cmp(page->ents[n].pk, page->ents[n].rk, npk, nrk) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity before the continuation asked for", from)));
		if (part >= 0 && n > 0 &&
			key_cmp(page->ents[n - 1].pk, page->ents[n - 1].rk, page->ents[n].pk, page->ents[n].rk) >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned entities out of key order", from)));
		page->ents[n].node = rownode[r];
		page->ents[n].foreign = entity_is_foreign(page->ents[n].pk, rownode[r]);
		/* an entity dropped below is still checked for what a node may answer */
		if (page->ents[n].foreign && !check_json &&
			!json_shape_ok(VARDATA_ANY(json), VARSIZE_ANY_EXHDR(json), false))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s returned an entity that is not a JSON object", from),
					 errdetail("The entity of keys (%s, %s).",
							   text_to_cstring(page->ents[n].pk), text_to_cstring(page->ents[n].rk))));
		n++;
	}
	if (part < 0)
	{
		/*
		 * One key twice is an error when one node returned it twice or two
		 * nodes both as theirs; a node's copy of a partition it does not
		 * hold (a move's) beside the copy of the node that holds it is not.
		 */
		qsort(page->ents, n, sizeof(PageEntity), cmp_entities);
		for (k = 1; k < n; k++)
			if (cmp_entities(&page->ents[k - 1], &page->ents[k]) == 0 &&
				(page->ents[k - 1].node == page->ents[k].node ||
				 (!page->ents[k - 1].foreign && !page->ents[k].foreign)))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the nodes returned the entity of keys (%s, %s) twice",
								text_to_cstring(page->ents[k].pk), text_to_cstring(page->ents[k].rk)),
						 errhint("A node named twice in the partition map, or a partition on two nodes, does this.")));
	}
	/* checked, the entities of partitions of other nodes are dropped */
	k = 0;
	for (int i = 0; i < n; i++)
		if (!page->ents[i].foreign)
			page->ents[k++] = page->ents[i];
	n = k;

	page->next_pk = bound_pk;
	page->next_rk = bound_rk;
	for (k = 0; k < n; k++)
	{
		PageEntity *e = &page->ents[k];

		if (bound_pk != NULL && key_cmp(e->pk, e->rk, bound_pk, bound_rk) >= 0)
			break;
		if (k == top)
		{
			page->next_pk = e->pk;
			page->next_rk = e->rk;
			break;
		}
	}
	page->n = k;
}

/* the page-size argument as a node takes it (NULL: the maximum) */
static int
arg_page_top(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? 1000 : PG_GETARG_INT32(n);
}

/*
 * check_page_args: a page query's arguments, checked by a node's function
 * itself for the error one node gives; true if they hold.  Only what the
 * page merge relies on is checked here: the page size and a whole
 * continuation.
 */
static bool
page_args_ok(FunctionCallInfo fcinfo)
{
	int			top;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(4) != PG_ARGISNULL(5))
		return false;
	top = arg_page_top(fcinfo, 3);
	return top >= 0 && top <= 1000;
}

/* the page as a JSON array text "[e1,e2,...]" */
static char *
page_array(MergedPage *page)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int i = 0; i < page->n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&buf, ',');
		appendBinaryStringInfo(&buf, VARDATA_ANY(page->ents[i].json), VARSIZE_ANY_EXHDR(page->ents[i].json));
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/*
 * check_node_page: a node's own page (query_entities_page on one
 * partition), checked before it is passed on: the entities an array of
 * objects, a continuation whole and after the one asked for.
 */
static void
check_node_page(int part, bool json, RemoteRow *row, text *npk, text *nrk)
{
	char	   *text_form;

	if (row->nulls[0])
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the node of partition %d returned a page without its entities", part)));
	if (json)
	{
		text	   *t = DatumGetTextPP(row->values[0]);

		if (!json_shape_ok(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), true))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d returned a page that is not an array of objects", part)));
	}
	else
	{
		Jsonb	   *jb = DatumGetJsonbP(row->values[0]);
		JsonbIterator *it;
		JsonbValue	v;
		JsonbIteratorToken tok;
		bool		ok = JB_ROOT_IS_ARRAY(jb) && !JB_ROOT_IS_SCALAR(jb);

		if (ok)
		{
			it = JsonbIteratorInit(&jb->root);
			while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
				if (tok == WJB_ELEM && (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data)))
					ok = false;
		}
		if (!ok)
		{
			text_form = JsonbToCString(NULL, &jb->root, 60);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d returned a page that is not an array of objects", part),
					 errdetail("It begins %.60s", text_form)));
		}
	}
	if (row->nulls[1] != row->nulls[2])
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the node of partition %d returned a continuation without its keys", part)));
	if (!row->nulls[1] && npk != NULL && nrk != NULL &&
		key_cmp(DatumGetTextPP(row->values[1]), DatumGetTextPP(row->values[2]), npk, nrk) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the node of partition %d returned a continuation that does not advance past the one asked for", part)));
}

/*
 * query_entities_page and query_entities_page_json: a query on one
 * partition is the node's own page; one on every node is merged.
 */
static Datum
router_page(FunctionCallInfo fcinfo, bool json)
{
	int			part = route_query(ARG_TEXT(1));
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	MergedPage		page;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	if (part >= 0 || !page_args_ok(fcinfo))
	{
		Datum		args[7];
		bool		anulls[7];
		RemoteRow  *rows;
		int			nrows;

		part = Max(part, 0);
		lock_partitions(part);
		forward_args(fcinfo, part, args, anulls);
		rows = call_remote_rows(json ?
								"tablestore_router._query_entities_page_json(" PAGE_ARGS ")" :
								"tablestore_router._query_entities_page(" PAGE_ARGS ")",
								7, args, anulls, &nrows);
		unlock_partitions(part);
		if (nrows != 1)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the node of partition %d returned %d rows for a page", part, nrows)));
		check_node_page(part, json, &rows[0], ARG_TEXT(4), ARG_TEXT(5));
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, rows[0].values, rows[0].nulls)));
	}

	lock_partitions(-1);
	fetch_page(-1, ARG_TEXT(0), ARG_TEXT(1), ARG_TEXT(2), arg_page_top(fcinfo, 3),
			   ARG_TEXT(4), ARG_TEXT(5), true, &page);
	unlock_partitions(-1);
	if (json)
		values[0] = CStringGetTextDatum(page_array(&page));
	else
		values[0] = DirectFunctionCall1(jsonb_in, CStringGetDatum(page_array(&page)));
	if (page.next_pk)
	{
		values[1] = PointerGetDatum(page.next_pk);
		values[2] = PointerGetDatum(page.next_rk);
	}
	else
		nulls[1] = nulls[2] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities_page);
Datum
router_query_entities_page(PG_FUNCTION_ARGS)
{
	return router_page(fcinfo, false);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities_page_json);
Datum
router_query_entities_page_json(PG_FUNCTION_ARGS)
{
	return router_page(fcinfo, true);
}

/*
 * query_page: the page as rows, then the continuation row.  As
 * _query_page_keyed (five result columns, as on a node), each entity's
 * keys too, for a client (the HTTP gateway) whose $select may leave them
 * out of the entity.
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_page);
Datum
router_query_page(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			part = route_query(ARG_TEXT(1));
	MergedPage		page;
	Datum		values[5];
	bool		nulls[5] = {false, true, true, true, true};
	bool		keyed;

	if (!page_args_ok(fcinfo))
		part = Max(part, 0);
	lock_partitions(part);
	fetch_page(part, ARG_TEXT(0), ARG_TEXT(1), ARG_TEXT(2), arg_page_top(fcinfo, 3),
			   ARG_TEXT(4), ARG_TEXT(5), true, &page);
	unlock_partitions(part);
	InitMaterializedSRF(fcinfo, 0);
	keyed = rsinfo->setDesc->natts == 5;
	for (int i = 0; i < page.n; i++)
	{
		values[0] = PointerGetDatum(page.ents[i].json);
		nulls[0] = false;
		nulls[1] = nulls[2] = true;
		if (keyed)
		{
			values[3] = PointerGetDatum(page.ents[i].pk);
			values[4] = PointerGetDatum(page.ents[i].rk);
			nulls[3] = nulls[4] = false;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (page.next_pk)
	{
		nulls[0] = true;
		nulls[3] = nulls[4] = true;
		values[1] = PointerGetDatum(page.next_pk);
		values[2] = PointerGetDatum(page.next_rk);
		nulls[1] = nulls[2] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * A stream from one node: its current page and its own continuation.
 */
typedef struct StreamSource
{
	int			part;			/* the partition to RUN ON: the node's, or the query's */
	MemoryContext pagecxt;		/* the current page; reset per page */
	MergedPage	page;
	int			next;			/* the page's next entity */
	bool		started;
} StreamSource;

typedef struct StreamState
{
	MemoryContext cxt;			/* the stream's: outlives the pages */
	text	   *table;
	text	   *filter;
	text	   *select;
	bool		capped;			/* top given */
	bool		json;			/* json out (else jsonb: see entity_jsonb) */
	int64		remaining;		/* if capped, entities still to return */
	int			part;			/* the query's partition, or -1: every node */
	uint64		generation;		/* of the partition map the sources are of; 0: none yet */
	text	   *last_pk;		/* the last entity returned (NULL: none yet) */
	text	   *last_rk;
	bool		resumed;		/* the sources begin at the last entity returned */
	int			nsources;
	StreamSource *sources;
} StreamState;

/*
 * stream_sources: the sources of a stream over every node, one per node of
 * the partition map read now (under the lock of all partitions); the old
 * ones' pages are dropped, and the new ones begin at the last entity the
 * stream returned.
 */
static void
stream_sources(StreamState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	for (int i = 0; i < st->nsources; i++)
		MemoryContextDelete(st->sources[i].pagecxt);
	if (st->sources)
		pfree(st->sources);
	(void) cluster_shape(&st->nsources);
	st->sources = palloc0(sizeof(StreamSource) * st->nsources);
	for (int i = 0; i < st->nsources; i++)
	{
		st->sources[i].part = cluster_node_part[i];
		st->sources[i].pagecxt = AllocSetContextCreate(st->cxt, "tablestore router page",
													   ALLOCSET_DEFAULT_SIZES);
	}
	st->generation = cluster_generation;
	st->resumed = st->last_pk != NULL;
	MemoryContextSwitchTo(old);
}

/*
 * source_fetch: the next page of a source.  The page is fetched under the
 * lock of its partition (or of all partitions), taken for the page only;
 * a stream over every node reads the partition map under that lock, and
 * if it is not the map its sources are of (a partition moved between two
 * pages), makes new sources and returns false: the caller starts over.
 */
static bool
source_fetch(StreamState *st, StreamSource *src)
{
	MemoryContext old;
	text	   *npk = src->page.next_pk;
	text	   *nrk = src->page.next_rk;
	int			top = ROUTER_FETCH;

	CHECK_FOR_INTERRUPTS();
	lock_partitions(st->part);
	if (st->part < 0)
	{
		(void) cluster_shape(NULL);
		if (st->generation != cluster_generation)
		{
			stream_sources(st);
			unlock_partitions(st->part);
			return false;
		}
	}
	if (!src->started && st->resumed)
	{
		/* a new source begins at the last entity returned (skipped below) */
		npk = st->last_pk;
		nrk = st->last_rk;
	}
	if (st->capped && st->remaining < top)
		top = (int) Max(st->remaining, 1);
	/* the continuation, out of the page it came from, for the next one */
	old = MemoryContextSwitchTo(st->cxt);
	if (npk)
	{
		npk = (text *) pg_detoast_datum_copy((struct varlena *) npk);
		nrk = (text *) pg_detoast_datum_copy((struct varlena *) nrk);
	}
	MemoryContextReset(src->pagecxt);
	MemoryContextSwitchTo(src->pagecxt);
	fetch_page(src->part, st->table, st->filter, st->select, top, npk, nrk, st->json, &src->page);
	MemoryContextSwitchTo(old);
	unlock_partitions(st->part);
	if (npk)
	{
		pfree(npk);
		pfree(nrk);
	}
	src->next = 0;
	/* after new sources, the last entity returned is not returned again */
	if (!src->started && st->resumed && src->page.n > 0 &&
		key_cmp(src->page.ents[0].pk, src->page.ents[0].rk, st->last_pk, st->last_rk) == 0)
		src->next = 1;
	src->started = true;
	return true;
}

/*
 * stream_fill: every source with its next entity at hand, or ended.
 */
static void
stream_fill(StreamState *st)
{
	for (int i = 0; i < st->nsources; i++)
	{
		StreamSource *src = &st->sources[i];

		while (src->next >= src->page.n && !(src->started && src->page.next_pk == NULL))
		{
			if (!source_fetch(st, src))
			{
				/* new sources: start over */
				i = -1;
				break;
			}
		}
	}
}

/*
 * entity_jsonb: an entity a node sent as text, as jsonb: parsed once, which
 * checks it (a text that is not a JSON object is DATA_CORRUPTED, as
 * fetch_page's check would have said, without parsing it twice).
 */
static Datum
entity_jsonb(PageEntity *e, int part)
{
	MemoryContext cxt = CurrentMemoryContext;
	Datum		d = (Datum) 0;
	bool		ok;

	PG_TRY();
	{
		d = DirectFunctionCall1(jsonb_in, CStringGetDatum(text_to_cstring(e->json)));
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
		/* only the text's own faults; a cancel or the like goes on */
		if (ERRCODE_TO_CATEGORY(ed->sqlerrcode) != ERRCODE_DATA_EXCEPTION)
			PG_RE_THROW();
		FlushErrorState();
		d = (Datum) 0;
	}
	PG_END_TRY();
	ok = d != (Datum) 0 && JB_ROOT_IS_OBJECT(DatumGetJsonbP(d));
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s returned an entity that is not a JSON object", page_source(part)),
				 errdetail("The entity of keys (%s, %s).", text_to_cstring(e->pk), text_to_cstring(e->rk))));
	return d;
}

/*
 * query_entities and query_entities_json: streamed a page at a time from
 * the query's partition's node, or from every node, each with its own
 * continuation, merged in key order: the router holds a page per node
 * however many entities match, and no node sends an entity twice.  The
 * entities come out in strictly ascending key order (a node that answers
 * otherwise is DATA_CORRUPTED), which is what lets a stream start again
 * after its last entity when partitions move.
 */
static Datum
router_stream(FunctionCallInfo fcinfo, bool json)
{
	FuncCallContext *fctx;
	StreamState *st;
	PageEntity *best = NULL;
	StreamSource *from = NULL;
	MemoryContext old;

	if (SRF_IS_FIRSTCALL())
	{
		fctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		st = palloc0(sizeof(StreamState));
		st->cxt = fctx->multi_call_memory_ctx;
		st->table = PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_P_COPY(0);
		st->filter = PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_P_COPY(1);
		st->select = PG_ARGISNULL(2) ? NULL : PG_GETARG_TEXT_P_COPY(2);
		st->capped = !PG_ARGISNULL(3);
		st->json = json;
		st->remaining = st->capped ? PG_GETARG_INT32(3) : 0;
		st->part = route_query(st->filter);
		if (st->part >= 0)
		{
			/* RUN ON the partition reaches its node, wherever it is */
			st->nsources = 1;
			st->sources = palloc0(sizeof(StreamSource));
			st->sources[0].part = st->part;
			st->sources[0].pagecxt = AllocSetContextCreate(st->cxt, "tablestore router page",
														   ALLOCSET_DEFAULT_SIZES);
		}
		/* else the sources are made under the first page's lock */
		fctx->user_fctx = st;
		MemoryContextSwitchTo(old);

		/*
		 * A cap below 1 is checked by one node's query_entities, after its
		 * checks of the table and the filter: ask it for the error (a
		 * negative cap) or for the check of the arguments of an empty
		 * stream (a cap of 0, which returns nothing).  Every other argument
		 * is checked by the pages as query_entities checks it.
		 */
		if (st->capped && st->remaining < 1)
		{
			Datum		args[5];
			bool		nulls[5];
			int			nrows;
			int			part = Max(st->part, 0);

			lock_partitions(part);
			forward_args(fcinfo, part, args, nulls);
			(void) call_remote_rows("tablestore_router._query_check(pg_catalog.int4,pg_catalog.text,pg_catalog.text,pg_catalog.text,pg_catalog.int4)",
									5, args, nulls, &nrows);
			unlock_partitions(part);
		}
	}
	fctx = SRF_PERCALL_SETUP();
	st = fctx->user_fctx;

	if (st->capped && st->remaining <= 0)
		SRF_RETURN_DONE(fctx);
	if (st->part < 0 && st->generation == 0)
	{
		/* the first page: the partition map is read under its lock */
		lock_partitions(-1);
		stream_sources(st);
		unlock_partitions(-1);
	}
	stream_fill(st);
	for (int i = 0; i < st->nsources; i++)
	{
		StreamSource *src = &st->sources[i];
		PageEntity *e = src->next < src->page.n ? &src->page.ents[src->next] : NULL;

		if (e != NULL && (best == NULL || key_cmp(e->pk, e->rk, best->pk, best->rk) < 0))
		{
			best = e;
			from = src;
		}
	}
	if (best == NULL)
		SRF_RETURN_DONE(fctx);
	if (st->last_pk != NULL && key_cmp(best->pk, best->rk, st->last_pk, st->last_rk) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s returned the entity of keys (%s, %s) after (%s, %s)", page_source(from->part),
						text_to_cstring(best->pk), text_to_cstring(best->rk),
						text_to_cstring(st->last_pk), text_to_cstring(st->last_rk)),
				 errhint("A node named twice in the partition map, or a partition on two nodes, does this.")));
	/* the last entity returned, kept where the stream's state lives */
	old = MemoryContextSwitchTo(st->cxt);
	if (st->last_pk)
	{
		pfree(st->last_pk);
		pfree(st->last_rk);
	}
	st->last_pk = (text *) pg_detoast_datum_copy((struct varlena *) best->pk);
	st->last_rk = (text *) pg_detoast_datum_copy((struct varlena *) best->rk);
	MemoryContextSwitchTo(old);
	from->next++;
	if (st->capped)
		st->remaining--;
	if (json)
		SRF_RETURN_NEXT(fctx, PointerGetDatum(pg_detoast_datum_copy((struct varlena *) best->json)));
	SRF_RETURN_NEXT(fctx, entity_jsonb(best, from->part));
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities);
Datum
router_query_entities(PG_FUNCTION_ARGS)
{
	return router_stream(fcinfo, false);
}

TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_query_entities_json);
Datum
router_query_entities_json(PG_FUNCTION_ARGS)
{
	return router_stream(fcinfo, true);
}
