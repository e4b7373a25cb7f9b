/*-------------------------------------------------------------------------
 *
 * filter_fuzzer.c
 *	  libFuzzer target for the $filter parser.
 *
 * Any input must parse or fail cleanly (AddressSanitizer and UBSan watch
 * the parser), and what parses must print as canonical text that parses
 * again to the same canonical text.
 *
 *	  make fuzz && ./fuzz/filter_fuzzer fuzz/corpus -max_total_time=20
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

typedef struct Arena
{
	void	  **blocks;
	size_t		n;
	size_t		cap;
} Arena;

static void *
arena_alloc(void *ctx, size_t size)
{
	Arena	   *a = ctx;

	if (a->n == a->cap)
	{
		a->cap = a->cap ? a->cap * 2 : 64;
		a->blocks = realloc(a->blocks, a->cap * sizeof(void *));
		if (a->blocks == NULL)
			abort();
	}
	a->blocks[a->n] = malloc(size ? size : 1);
	if (a->blocks[a->n] == NULL)
		abort();
	return a->blocks[a->n++];
}

static void
arena_free(Arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->blocks[i]);
	free(a->blocks);
}

static char *
canonical(const char *text, size_t len, Arena *a, FilterError *err)
{
	FilterAllocator alloc = {arena_alloc, a};
	FilterNode *tree;
	size_t		need;
	char	   *out;

	if (!filter_parse(text, len, &alloc, &tree, err))
		return NULL;
	need = filter_format(tree, NULL, 0);
	out = arena_alloc(a, need + 1);
	filter_format(tree, out, need + 1);
	return out;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Arena		a = {NULL, 0, 0};
	FilterError err;
	char	   *first = canonical((const char *) data, size, &a, &err);

	if (first != NULL)
	{
		char	   *second = canonical(first, strlen(first), &a, &err);

		/* the canonical form adds parentheses, which may pass the depth limit */
		if (second == NULL && strstr(err.message, "nested") == NULL)
		{
			fprintf(stderr, "canonical form does not parse: %s\n  %s\n", first, err.message);
			abort();
		}
		if (second != NULL && strcmp(first, second) != 0)
		{
			fprintf(stderr, "canonical form is not stable:\n  %s\n  %s\n", first, second);
			abort();
		}
	}
	arena_free(&a);
	return 0;
}
