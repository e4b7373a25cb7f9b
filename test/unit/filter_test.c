/*-------------------------------------------------------------------------
 *
 * filter_test.c
 *	  Unit tests of the $filter parser (src/filter/parse.c), built and run
 *	  outside the server by tools/run-tests.sh.  Each case is a filter and
 *	  either its canonical form (filter_format) or the error kind and
 *	  position the parser must report.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter/filter.h"

typedef struct Arena
{
	void	   *blocks[4096];
	int			n;
} Arena;

static void *
arena_alloc(void *ctx, size_t size)
{
	Arena	   *a = ctx;
	void	   *m = malloc(size ? size : 1);

	if (m == NULL || a->n == 4096)
		abort();
	a->blocks[a->n++] = m;
	return m;
}

static void
arena_free(Arena *a)
{
	while (a->n > 0)
		free(a->blocks[--a->n]);
}

typedef struct Case
{
	const char *filter;
	const char *expect;			/* canonical form, or NULL for an error */
	FilterErrorKind kind;		/* the error */
	int			position;		/* its position, 0 = any */
} Case;

#define OK(f, e)			{f, e, 0, 0}
#define ERR(f, k, pos)		{f, NULL, k, pos}

static const Case cases[] = {
	/* literals of every type, and their canonical forms */
	OK("Name eq 'Smith'", "(Name eq 'Smith')"),
	OK("Name eq 'O''Brien'", "(Name eq 'O''Brien')"),
	OK("Name eq ''", "(Name eq '')"),
	OK("Name eq 'Zoë 😀'", "(Name eq 'Zoë 😀')"),
	OK("Age eq 30", "(Age eq 30)"),
	OK("Age eq -5", "(Age eq -5)"),
	OK("Age eq 2147483647", "(Age eq 2147483647)"),
	OK("Age eq -2147483648", "(Age eq -2147483648)"),
	OK("Big eq 1574726400000L", "(Big eq 1574726400000L)"),
	OK("Big eq -9223372036854775808L", "(Big eq -9223372036854775808L)"),
	OK("Big eq 5l", "(Big eq 5L)"),
	OK("Price eq 100.25", "(Price eq 100.25)"),
	OK("Price eq 2.0", "(Price eq 2.0)"),
	OK("Price eq 1e3", "(Price eq 1000.0)"),
	OK("Price eq -2.5E-3", "(Price eq -0.0025000000000000001)"),
	OK("IsActive eq true", "(IsActive eq true)"),
	OK("IsActive eq false", "(IsActive eq false)"),
	OK("When eq datetime'2008-07-10T00:00:00Z'", "(When eq datetime'2008-07-10T00:00:00Z')"),
	OK("When lt datetime'2008-07-10T00:00:00.1234567Z'", "(When lt datetime'2008-07-10T00:00:00.1234567Z')"),
	OK("When ge datetime'1601-01-01T00:00:00'", "(When ge datetime'1601-01-01T00:00:00Z')"),
	OK("Id eq guid'A455C695-DF98-5678-AAAA-81D3367E5A34'", "(Id eq guid'a455c695-df98-5678-aaaa-81d3367e5a34')"),
	OK("B eq X'0102FF'", "(B eq X'0102FF')"),
	OK("B eq binary'0a0B'", "(B eq X'0A0B')"),
	OK("B eq X''", "(B eq X'')"),
	/* operators, literals on the left, keywords in any case */
	OK("Age ne 1", "(Age ne 1)"),
	OK("Age gt 1", "(Age gt 1)"),
	OK("Age ge 1", "(Age ge 1)"),
	OK("Age lt 1", "(Age lt 1)"),
	OK("Age le 1", "(Age le 1)"),
	OK("'Sales' eq PartitionKey", "(PartitionKey eq 'Sales')"),
	OK("30 lt Age", "(Age gt 30)"),
	OK("30 le Age", "(Age ge 30)"),
	OK("30 gt Age", "(Age lt 30)"),
	OK("30 ge Age", "(Age le 30)"),
	OK("Age GT 30 AND Name Eq 'x'", "((Age gt 30) and (Name eq 'x'))"),
	/* precedence: not > and > or; parentheses */
	OK("A eq 1 or B eq 2 and C eq 3", "((A eq 1) or ((B eq 2) and (C eq 3)))"),
	OK("(A eq 1 or B eq 2) and C eq 3", "(((A eq 1) or (B eq 2)) and (C eq 3))"),
	OK("A eq 1 and B eq 2 or C eq 3", "(((A eq 1) and (B eq 2)) or (C eq 3))"),
	OK("not A eq 1 and B eq 2", "(not (A eq 1) and (B eq 2))"),
	OK("not (A eq 1 or B eq 2)", "not ((A eq 1) or (B eq 2))"),
	OK("not not IsActive", "not not (IsActive eq true)"),
	OK("((Age gt 1))", "(Age gt 1)"),
	/* bare Booleans and constants */
	OK("IsActive", "(IsActive eq true)"),
	OK("not IsActive", "not (IsActive eq true)"),
	OK("IsActive and Age gt 3", "((IsActive eq true) and (Age gt 3))"),
	OK("true", "true"),
	OK("false or IsActive", "(false or (IsActive eq true))"),
	OK("", "true"),
	OK("   ", "true"),
	OK("_x1 eq 1", "(_x1 eq 1)"),
	OK("Age eq 1 and Age eq 2 and Age eq 3 and Age eq 4 and Age eq 5 and Age eq 6 and Age eq 7 and "
	   "Age eq 8 and Age eq 9 and Age eq 10 and Age eq 11 and Age eq 12 and Age eq 13 and Age eq 14 and Age eq 15",
	   NULL),
	/* errors */
	ERR("Age eq 1 and Age eq 2 and Age eq 3 and Age eq 4 and Age eq 5 and Age eq 6 and Age eq 7 and "
		"Age eq 8 and Age eq 9 and Age eq 10 and Age eq 11 and Age eq 12 and Age eq 13 and Age eq 14 and "
		"Age eq 15 and Age eq 16", FERR_TOO_MANY, 202),
	ERR("startswith(Name, 'A')", FERR_NOT_IMPLEMENTED, 1),
	ERR("tolower (Name) eq 'a'", FERR_NOT_IMPLEMENTED, 1),
	ERR("Name eq null", FERR_NULL, 9),
	ERR("null eq Name", FERR_NULL, 1),
	ERR("Age eq 2147483648", FERR_LITERAL, 8),
	ERR("Age eq -2147483649", FERR_LITERAL, 8),
	ERR("Big eq 9223372036854775808L", FERR_LITERAL, 8),
	ERR("Price eq 1e999", FERR_LITERAL, 10),
	ERR("When eq datetime'2008-13-10T00:00:00Z'", FERR_LITERAL, 9),
	ERR("When eq datetime'1600-12-31T23:59:59Z'", FERR_OUT_OF_RANGE, 9),
	ERR("Id eq guid'xyz'", FERR_LITERAL, 7),
	ERR("B eq X'0102F'", FERR_LITERAL, 6),
	ERR("B eq X'zz'", FERR_LITERAL, 6),
	ERR("B eq foo'12'", FERR_LITERAL, 6),
	ERR("Name eq 'abc", FERR_SYNTAX, 9),
	ERR("Age eq", FERR_SYNTAX, 7),
	ERR("Age 30", FERR_SYNTAX, 5),
	ERR("Age eq 30 Name", FERR_SYNTAX, 11),
	ERR("(Age eq 30", FERR_SYNTAX, 11),
	ERR("Age eq 30)", FERR_SYNTAX, 10),
	ERR("Age eq Height", FERR_SYNTAX, 8),
	ERR("1 eq 1", FERR_SYNTAX, 1),
	ERR("'a'", FERR_SYNTAX, 4),
	ERR("Age add 1 eq 2", FERR_SYNTAX, 5),
	ERR("and", FERR_SYNTAX, 1),
	ERR("Age eq 1 and", FERR_SYNTAX, 13),
	ERR("Age eq 1 or or", FERR_SYNTAX, 13),
	ERR("Age eq 1; drop table x", FERR_SYNTAX, 9),
	ERR("Age eq 12abc", FERR_SYNTAX, 10),
	ERR("Age eq -", FERR_SYNTAX, 8),
	ERR("Age eq 1.", FERR_LITERAL, 8),
	ERR("Zoë eq 'x' and é", FERR_SYNTAX, 0),
};

int
main(void)
{
	int			passed = 0,
				failed = 0;
	char		nested[400];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		const Case *c = &cases[i];
		Arena		a = {{0}, 0};
		FilterAllocator alloc = {arena_alloc, &a};
		FilterNode *tree = NULL;
		FilterError err;
		char		text[1024];
		bool		ok = filter_parse(c->filter, strlen(c->filter), &alloc, &tree, &err);
		bool		good;

		if (ok)
			filter_format(tree, text, sizeof(text));
		if (c->expect == NULL && c->kind == 0 && c->position == 0)
			good = ok;			/* only that it parses */
		else if (c->expect != NULL)
			good = ok && strcmp(text, c->expect) == 0;
		else
			good = !ok && err.kind == c->kind && (c->position == 0 || err.position == c->position);
		if (good)
			passed++;
		else
		{
			failed++;
			printf("FAIL: %s\n", c->filter);
			if (ok)
				printf("  parsed as: %s\n", text);
			else
				printf("  error kind %d at %d: %s\n", err.kind, err.position, err.message);
		}
		arena_free(&a);
	}

	/* nesting deeper than the limit is an error, not a stack overflow */
	{
		Arena		a = {{0}, 0};
		FilterAllocator alloc = {arena_alloc, &a};
		FilterNode *tree;
		FilterError err;
		int			n = 0;

		for (int i = 0; i < 150; i++)
			nested[n++] = '(';
		n += sprintf(nested + n, "A eq 1");
		for (int i = 0; i < 150; i++)
			nested[n++] = ')';
		if (!filter_parse(nested, n, &alloc, &tree, &err) && err.kind == FERR_SYNTAX)
			passed++;
		else
		{
			failed++;
			printf("FAIL: deep nesting was accepted\n");
		}
		arena_free(&a);
	}

	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
