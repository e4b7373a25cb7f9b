/*-------------------------------------------------------------------------
 *
 * edmvalue.h
 *	  The Edm types of property values (edmvalue.c): the table
 *	  ts_edm_types[], per type its name and the function that checks a
 *	  value given as JSON and gives its canonical stored form.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_EDMVALUE_H
#define TS_EDMVALUE_H

#include "utils/jsonb.h"

/* The Edm types of property values. */
typedef enum TsEdmType
{
	EDM_STRING,
	EDM_INT32,
	EDM_INT64,
	EDM_DOUBLE,
	EDM_BOOLEAN,
	EDM_DATETIME,
	EDM_GUID,
	EDM_BINARY
} TsEdmType;

#define TS_NUM_EDM_TYPES		(EDM_BINARY + 1)

/* One property value, checked and made canonical by its type. */
typedef struct TsEdmValue
{
	const JsonbValue *given;	/* as given: a JSON string, number or Boolean */
	bool		annotated;		/* its type is its annotation's, not inferred */
	const char *prop;			/* the property's name (not terminated), for errors */
	int			proplen;
	JsonbValue	canon;			/* set: the stored value */
	bool		needs_annotation;	/* set: the stored form annotates it */
	int64		size;			/* set: its size by the service's formula */
} TsEdmValue;

typedef struct TsEdmTypeInfo
{
	const char *name;			/* "Edm.String", ... */
	int			len;
	/* check ev->given as a literal of the type (service errors), set the rest */
	void		(*canonicalize) (TsEdmValue *ev);
} TsEdmTypeInfo;

extern const TsEdmTypeInfo ts_edm_types[TS_NUM_EDM_TYPES];
extern int	ts_edm_type_by_name(const char *s, int len);
extern TsEdmType ts_edm_type_of_json(const JsonbValue *v);

/* Set v to the JSON string s of len bytes (not copied). */
static inline void
ts_set_jsonb_string(JsonbValue *v, const char *s, int len)
{
	v->type = jbvString;
	v->val.string.val = (char *) s;
	v->val.string.len = len;
}

#endif							/* TS_EDMVALUE_H */
