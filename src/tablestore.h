/*-------------------------------------------------------------------------
 *
 * tablestore.h
 *	  What every part of the tablestore extension (Azure Table service
 *	  semantics on PostgreSQL) shares: its schemas, the service's limits,
 *	  the shape of an entity relation.
 *
 * Each component declares what it exports in a header of its own, and a
 * file includes the headers of what it uses:
 *	  errors.h		the service error codes, ts_ereport (errors.c)
 *	  edm.h			Edm values in the server (edm.c); edmtext.h their text
 *					forms in plain C (edmtext.c)
 *	  key.h			the key type and the comparison of keys (key.c)
 *	  entity.h		entities: input half (entity.c), output half
 *					(entityout.c, entityjson.c)
 *	  edmvalue.h	the Edm types' table ts_edm_types[] (edmvalue.c)
 *	  subxact.h		a function in a subtransaction (subxact.c)
 *	  entityrel.h	the entity-relation layer (entityrel.c)
 *	  entityops.h	the entity operations (entityops.c)
 *	  writepath.h	their two write paths (entityspi.c, entitywrite.c)
 *	  tables.h		the table catalog (tables.c)
 *	  filter/		the $filter language: filter.h (plain C), bind.h
 *	  queryplan.h	access paths of a filter (queryplan.c)
 *	  query.h		scans of the key index (query.c)
 *	  ttl.h			time to live: expiry, the sweep and its worker (ttl.c)
 *	  tskey/		the key index access method: tskey.h
 *	  router/		the scale-out router: router.h
 * Files that export nothing to C (module.c, batch.c, tableacl.c,
 * routedcall.c) are reached through the catalog.  doc/architecture.md has
 * the whole map.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TABLESTORE_H
#define TABLESTORE_H

#if PG_VERSION_NUM >= 160000
#define TS_FUNCTION_PREFIX
#else
#define TS_FUNCTION_PREFIX PGDLLEXPORT
#endif

/* Schemas: the extension's own objects, and one relation per table. */
#define TS_SCHEMA				"tablestore"
#define TS_DATA_SCHEMA			"tablestore_data"

/* Limits of the Table service (doc/limits.md). */
#define TS_MAX_KEY_UTF16		512		/* 1 KiB of UTF-16 per key */
#define TS_MAX_PROPERTIES		252		/* custom properties */
#define TS_MAX_NAME_CHARS		255		/* property name length */
#define TS_MAX_STRING_UTF16		32768	/* Edm.String, 64 KiB of UTF-16 */
#define TS_MAX_BINARY_BYTES		65536	/* Edm.Binary */
#define TS_MAX_ENTITY_SIZE		1048488 /* live service's observed limit */
#define TS_MAX_SELECT			(TS_MAX_PROPERTIES + 3)	/* names of a $select */
#define TS_MAX_BATCH_OPS		100
#define TS_MAX_BATCH_BYTES		(4 * 1024 * 1024)

/* Most bytes of a caller's value that an error message echoes. */
#define TS_ECHO_LIMIT			100

/* The heap attributes of an entity relation, as create_table makes them. */
#define TS_ATT_PK		1
#define TS_ATT_RK		2
#define TS_ATT_TS		3
#define TS_ATT_PROPS	4

#endif							/* TABLESTORE_H */
