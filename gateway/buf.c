/*-------------------------------------------------------------------------
 *
 * buf.c
 *	  Memory of tablestore-gateway: allocation that never returns NULL and
 *	  the growable, NUL-terminated byte buffer (Buf) that requests and
 *	  responses are built in.
 *
 * What a request may make the gateway hold is bounded before it is
 * allocated (the limits in gwlimits.h, the memory budget of budget.c), so
 * an allocation that fails is not a condition a request can cause: the
 * gateway aborts and its supervisor restarts it.
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/*
 * xmalloc: malloc that never returns NULL.  Every allocation is bounded by
 * the request limits, so running out of memory is a condition the gateway
 * cannot serve through; it exits and the supervisor restarts it.
 */
void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "tablestore-gateway: out of memory\n");
		abort();
	}
	return p;
}

/* xstrdup: strdup that never returns NULL. */
char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* xstrndup: a NUL-terminated copy of n bytes. */
char *
xstrndup(const char *s, size_t n)
{
	char	   *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* buf_append: append n bytes, keeping the buffer NUL-terminated. */
void
buf_append(Buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 256;
		char	   *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		if (p == NULL)
		{
			fprintf(stderr, "tablestore-gateway: out of memory\n");
			abort();
		}
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* buf_puts: append a C string. */
void
buf_puts(Buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

/* buf_printf: append formatted text. */
void
buf_printf(Buf *b, const char *fmt,...)
{
	va_list		ap;
	char		small[512];
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n < sizeof(small))
	{
		buf_append(b, small, n);
		return;
	}
	{
		char	   *big = xmalloc(n + 1);

		va_start(ap, fmt);
		vsnprintf(big, n + 1, fmt, ap);
		va_end(ap);
		buf_append(b, big, n);
		free(big);
	}
}

/* buf_free: release a buffer's memory and empty it. */
void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
