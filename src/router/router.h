/*-------------------------------------------------------------------------
 *
 * router.h
 *	  The scale-out router (extension tablestore_router): the tablestore SQL
 *	  API on a router database, each call run on the shards through PL/Proxy.
 *
 * Its files, by seam:
 *	  config.c		the cluster's shape (foreign server, node strings, user mapping)
 *	  hash.c		partition_hash, and the partition a call is routed to
 *	  locks.c		the partition locks of calls and moves, the table-name lock
 *	  transport.c	the PL/Proxy calls to a partition's node
 *	  errors.c		a node's error raised again; what a node may answer
 *	  api.c			the SQL API's shims: entities, batches, tables, ACLs
 *	  merge.c		queries over every node, page by page, merged in key order
 *	  stream.c		streaming queries over every node
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
#ifndef TS_ROUTER_H
#define TS_ROUTER_H

#include "fmgr.h"
#include "nodes/nodes.h"
#include "storage/lock.h"
#include "utils/jsonb.h"

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

/*
 * A result row of a set-returning PL/Proxy call, copied out.
 */
typedef struct RemoteRow
{
	Datum		values[8];
	bool		nulls[8];
} RemoteRow;

/* an argument of the calling function, NULL when it is SQL NULL */
#define ARG_TEXT(n) (PG_ARGISNULL(n) ? NULL : PG_GETARG_TEXT_PP(n))
#define ARG_JSONB(n) (PG_ARGISNULL(n) ? NULL : PG_GETARG_JSONB_P(n))

/* per node, the lowest partition it holds: a call RUN ON it reaches the node */
#define ROUTER_MAX_NODES 256
/* per partition, its node (an index of router_cluster_node_part) */
#define ROUTER_MAX_PARTS 256

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

/* config.c */
extern int	router_cluster_shape(int *nodes);
extern void router_mapping_check(void);

/* hash.c */
extern int	router_partition_for(const char *s, int len);
extern int	router_route_batch(Jsonb *ops);
extern int	router_route_object_key(Jsonb *obj);
extern int	router_route_query(text *filter);
extern uint32 ts_partition_hash(const char *s, int len);

/* locks.c */
extern bool router_table_name_tag(text *name, LOCKTAG *tag);
extern void router_call_lock(int part);
extern void router_call_unlock(int part);
extern void router_refuse_during_move(void);

/* transport.c */
extern Datum router_call_partition(FunctionCallInfo fcinfo, const char *signature, int part);
extern Datum router_call_remote(const char *signature, int nargs, Datum *args, bool *nulls, bool *isnull, int part);
extern Oid	router_remote_call_init(const char *signature, FmgrInfo *flinfo, FunctionCallInfo fcinfo, int nargs, Datum *args, bool *nulls, Node *resultinfo);
extern RemoteRow *router_call_remote_rows(const char *signature, int nargs, Datum *args, bool *nulls, int *nrows);
extern void router_forward_args(FunctionCallInfo fcinfo, int part, Datum *args, bool *nulls);
extern void router_quiet_begin(void);
extern void router_quiet_end(void);
extern void router_remote_call_failed(MemoryContext cxt) pg_attribute_noreturn();

/* errors.c */
extern void router_check_answer(Datum answer);
extern void router_raise_error_column(Datum error) pg_attribute_noreturn();
extern void router_rethrow_remote(ErrorData *ed) pg_attribute_noreturn();

/* merge.c */
extern Datum router_entity_jsonb(PageEntity *e, int part);
extern const char *router_page_source(int part);
extern void router_fetch_page(int part, text *table, text *filter, text *select, int top, text *npk, text *nrk, bool check_json, MergedPage *page);

/* the cluster's shape (config.c), valid after router_cluster_shape */
extern int	router_cluster_partitions;
extern int	router_cluster_nodes;
extern uint64 router_cluster_generation;
extern int	router_cluster_node_part[ROUTER_MAX_NODES];
extern int	router_cluster_part_node[ROUTER_MAX_PARTS];
#endif							/* TS_ROUTER_H */
