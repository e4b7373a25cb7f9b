/*-------------------------------------------------------------------------
 *
 * hash.c
 *	  The scale-out router: partition_hash and routing: the partition of a
 *	  PartitionKey, of an entity, of a batch and of a query's filter.
 *
 * The router's design is in router.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "tablestore.h"
#include "filter/filter.h"
#include "queryplan.h"
#include "router/router.h"

/*
 * ts_partition_hash: the stable hash of a PartitionKey: 32-bit FNV-1a over
 * its UTF-8 bytes, then MurmurHash3's finalizer so that the low bits (which
 * pick the partition) depend on every byte.  It is part of the on-disk
 * contract of a cluster: never change it.
 */
uint32
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
int
router_partition_for(const char *s, int len)
{
	return (int) (ts_partition_hash(s, len) & (uint32) (router_cluster_shape(NULL) - 1));
}

/*
 * tablestore_router.router_partition_for(partition_key text) RETURNS integer
 */
TS_FUNCTION_PREFIX PG_FUNCTION_INFO_V1(router_partition_of);
Datum
router_partition_of(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);

	PG_RETURN_INT32(router_partition_for(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
}

/*
 * Routing: the partition of a JSON object's "PartitionKey" member, or 0 when
 * there is none (the shard then raises the error one node would).
 */
int
router_route_object_key(Jsonb *obj)
{
	JsonbValue *v;

	if (obj == NULL || !JB_ROOT_IS_OBJECT(obj))
		return 0;
	v = getKeyJsonValueFromContainer(&obj->root, "PartitionKey", strlen("PartitionKey"), NULL);
	if (v == NULL || v->type != jbvString)
		return 0;
	return router_partition_for(v->val.string.val, v->val.string.len);
}

/* the partition of a batch: its first operation's entity's */
int
router_route_batch(Jsonb *ops)
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
	return router_partition_for(entity->val.string.val, entity->val.string.len);
}

static void *
router_filter_alloc(void *ctx, size_t size)
{
	return palloc0(size);
}

/*
 * router_route_query: the partition a filter confines a query to, or -1 when it
 * needs every node.  A filter that does not parse goes to partition 0,
 * whose node raises the error one node would (after its own checks of the
 * table and the privileges, in its order).
 */
int
router_route_query(text *filter)
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
		return router_partition_for(VARDATA_ANY(plan->pk.lo.value), VARSIZE_ANY_EXHDR(plan->pk.lo.value));
	if (plan->kind == TS_ACCESS_MULTI_POINT && plan->points != NIL)
	{
		int			part = -1;
		ListCell   *lc;

		foreach(lc, plan->points)
		{
			TsScanSegment *seg = lfirst(lc);
			int			p = router_partition_for(VARDATA_ANY(seg->pk.lo.value),
										 VARSIZE_ANY_EXHDR(seg->pk.lo.value));

			if (part >= 0 && p != part)
				return -1;
			part = p;
		}
		return part;
	}
	return -1;
}

