/*-------------------------------------------------------------------------
 *
 * filter.h
 *	  The OData $filter language of the Table service: the tree the parser
 *	  builds.  Plain C with no PostgreSQL headers, so that the parser can be
 *	  unit-tested and fuzzed outside the server.  The component src/filter/:
 *	  parse.c (lexer and parser) and format.c (canonical text), plain C with
 *	  ../edmtext.c; bind.c binds the tree to PostgreSQL (ts_filter_parse and
 *	  the evaluation, declared in tablestore.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FILTER_H
#define FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * At most this many comparisons in one filter (the service's limit); the
 * constants true and false count as comparisons, so that every leaf of the
 * tree is bounded.
 */
#define FILTER_MAX_COMPARISONS	15
/*
 * At most this many nodes (comparisons, constants, and, or, not) in one
 * filter, so that the work and memory of every walk of the tree is bounded.
 */
#define FILTER_MAX_NODES		100
/* Parentheses and "not" nest at most this deep. */
#define FILTER_MAX_DEPTH		64

typedef enum FilterOp
{
	FOP_EQ,
	FOP_NE,
	FOP_GT,
	FOP_GE,
	FOP_LT,
	FOP_LE
} FilterOp;

/* Literal types, in the order of the Edm types (TsEdmType). */
typedef enum FilterLitType
{
	FLIT_STRING,
	FLIT_INT32,
	FLIT_INT64,
	FLIT_DOUBLE,
	FLIT_BOOLEAN,
	FLIT_DATETIME,
	FLIT_GUID,
	FLIT_BINARY
} FilterLitType;

typedef struct FilterLiteral
{
	FilterLitType type;
	union
	{
		struct
		{
			char	   *data;		/* String: UTF-8; Binary: bytes */
			size_t		len;
		}			bytes;
		int32_t		i32;
		int64_t		i64;
		double		d;
		bool		b;
		int64_t		ticks;		/* DateTime: 100 ns since 1601-01-01 */
		uint8_t		guid[16];
	}			v;
} FilterLiteral;

typedef enum FilterNodeKind
{
	FN_AND,
	FN_OR,
	FN_NOT,
	FN_COMPARE,					/* property op literal */
	FN_CONST					/* true or false */
} FilterNodeKind;

typedef struct FilterNode
{
	FilterNodeKind kind;
	struct FilterNode *left;	/* AND, OR, NOT */
	struct FilterNode *right;	/* AND, OR */
	/* FN_COMPARE: always "property op literal", the literal moved right */
	char	   *prop;
	size_t		proplen;
	FilterOp	op;
	FilterLiteral lit;
	bool		value;			/* FN_CONST */
} FilterNode;

typedef enum FilterErrorKind
{
	FERR_SYNTAX,				/* InvalidInput */
	FERR_NOT_IMPLEMENTED,		/* a function: NotImplemented */
	FERR_TOO_MANY,				/* over FILTER_MAX_COMPARISONS: InvalidInput */
	FERR_NULL,					/* the null literal: InvalidInput */
	FERR_LITERAL,				/* a literal that is not of its type: InvalidInput */
	FERR_OUT_OF_RANGE			/* a DateTime before 1601: OutOfRangeInput */
} FilterErrorKind;

/*
 * The most bytes of the filter's text that an error message echoes (the
 * server's TS_ECHO_LIMIT, which bind.c checks it equals): a longer
 * piece is cut at a character boundary and marked "...".
 */
#define FILTER_ECHO_LIMIT	100

typedef struct FilterError
{
	FilterErrorKind kind;
	int			position;		/* 1-based character position */
	char		message[256];	/* what went wrong; what was expected */
} FilterError;

/* Memory for the tree; the parser never frees. */
typedef struct FilterAllocator
{
	void	   *(*alloc) (void *ctx, size_t size);
	void	   *ctx;
} FilterAllocator;

/*
 * Parse text (len bytes of UTF-8) into *tree.  Returns false with *err
 * filled in if it is not a valid filter.  An empty or blank filter is the
 * constant true.
 */
extern bool filter_parse(const char *text, size_t len, const FilterAllocator *alloc,
						 FilterNode **tree, FilterError *err);

/* The operator with its operands swapped ("5 lt x" is "x gt 5"). */
extern FilterOp filter_op_swap(FilterOp op);
extern const char *filter_op_name(FilterOp op);
extern size_t filter_format(const FilterNode *n, char *buf, size_t size);

#endif							/* FILTER_H */
