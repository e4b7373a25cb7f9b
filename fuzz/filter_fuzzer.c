/*-------------------------------------------------------------------------
 *
 * filter_fuzzer.c
 *	  libFuzzer target for the $filter parser.
 *
 * Any input must parse or fail cleanly (AddressSanitizer and UBSan watch
 * the parser), and what parses must print as canonical text that parses
 * again to the same canonical text.  An error's message must fit its
 * buffer whole (echoes of the input are clipped to FILTER_ECHO_LIMIT
 * bytes), and be valid UTF-8 whenever the input is (echoes are cut
 * between characters).
 *
 *	  make fuzz && ./fuzz/filter_fuzzer fuzz/corpus -max_total_time=20
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter/filter.h"

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

/* Whether s[0..len) is well-formed UTF-8 without NULs (as server text is). */
static int
valid_utf8(const unsigned char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		unsigned char c = s[i];
		size_t		n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 :
			(c & 0xF8) == 0xF0 ? 4 : 0;

		if (c == 0 || n == 0 || (n == 2 && c < 0xC2) || i + n > len)
			return 0;
		for (size_t k = 1; k < n; k++)
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
		i += n;
	}
	return 1;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Arena		a = {NULL, 0, 0};
	FilterError err;
	char	   *first = canonical((const char *) data, size, &a, &err);

	if (first == NULL)
	{
		size_t		mlen = strlen(err.message);

		if (mlen + 1 >= sizeof(err.message))
		{
			fprintf(stderr, "error message filled its buffer: %s\n", err.message);
			abort();
		}
		if (valid_utf8(data, size) && !valid_utf8((const unsigned char *) err.message, mlen))
		{
			fprintf(stderr, "error message is not UTF-8: %s\n", err.message);
			abort();
		}
	}
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
