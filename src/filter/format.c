/*-------------------------------------------------------------------------
 *
 * format.c
 *	  Print a $filter tree as canonical filter text: keywords in lower case,
 *	  every binary node in parentheses, literals in their OData form.  Used
 *	  to show a residual predicate, and by the parser's unit tests.
 *
 *-------------------------------------------------------------------------
 */
#include "filter.h"

#include <stdarg.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "edmtext.h"

typedef struct Out
{
	char	   *buf;
	size_t		size;
	size_t		len;			/* what the whole text needs */
} Out;

static void put(Out *o, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
put(Out *o, const char *fmt,...)
{
	va_list		ap;
	int			n;
	size_t		room = o->len < o->size ? o->size - o->len : 0;

	va_start(ap, fmt);
	n = vsnprintf(o->buf ? o->buf + (o->len < o->size ? o->len : o->size) : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t) n;
}

static void
put_literal(Out *o, const FilterLiteral *l)
{
	switch (l->type)
	{
		case FLIT_STRING:
			put(o, "'");
			for (size_t i = 0; i < l->v.bytes.len; i++)
				put(o, l->v.bytes.data[i] == '\'' ? "''" : "%c", l->v.bytes.data[i]);
			put(o, "'");
			break;
		case FLIT_INT32:
			put(o, "%" PRId32, l->v.i32);
			break;
		case FLIT_INT64:
			put(o, "%" PRId64 "L", l->v.i64);
			break;
		case FLIT_DOUBLE:
			{
				char		d[40];

				snprintf(d, sizeof(d), "%.17g", l->v.d);
				/* keep it a Double literal: it needs a '.' or an exponent */
				put(o, "%s%s", d, strpbrk(d, ".eEin") ? "" : ".0");
				break;
			}
		case FLIT_BOOLEAN:
			put(o, "%s", l->v.b ? "true" : "false");
			break;
		case FLIT_DATETIME:
			{
				char		dt[EDM_DATETIME_BUFLEN];

				edm_format_datetime(l->v.ticks, dt);
				put(o, "datetime'%s'", dt);
				break;
			}
		case FLIT_GUID:
			put(o, "guid'");
			for (int i = 0; i < 16; i++)
				put(o, (i == 4 || i == 6 || i == 8 || i == 10) ? "-%02x" : "%02x", l->v.guid[i]);
			put(o, "'");
			break;
		case FLIT_BINARY:
			put(o, "X'");
			for (size_t i = 0; i < l->v.bytes.len; i++)
				put(o, "%02X", (unsigned char) l->v.bytes.data[i]);
			put(o, "'");
			break;
	}
}

/*
 * Write node n.  Recursive: the parser bounds every tree to
 * FILTER_MAX_NODES nodes, so the depth is bounded too (this file has no
 * PostgreSQL headers and cannot call check_stack_depth).
 */
static void
put_node(Out *o, const FilterNode *n)
{
	switch (n->kind)
	{
		case FN_AND:
		case FN_OR:
			put(o, "(");
			put_node(o, n->left);
			put(o, n->kind == FN_AND ? " and " : " or ");
			put_node(o, n->right);
			put(o, ")");
			break;
		case FN_NOT:
			put(o, "not ");
			put_node(o, n->left);
			break;
		case FN_COMPARE:
			put(o, "(%s %s ", n->prop, filter_op_name(n->op));
			put_literal(o, &n->lit);
			put(o, ")");
			break;
		case FN_CONST:
			put(o, "%s", n->value ? "true" : "false");
			break;
	}
}

/*
 * filter_format: write the canonical text of tree n into buf (at most size
 * bytes, NUL-terminated); returns the length the whole text needs.
 */
size_t
filter_format(const FilterNode *n, char *buf, size_t size)
{
	Out			o = {buf, size, 0};

	put_node(&o, n);
	if (buf != NULL && size > 0 && o.len >= size)
		buf[size - 1] = '\0';
	return o.len;
}
