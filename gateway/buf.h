/*-------------------------------------------------------------------------
 *
 * buf.h
 *	  A growable byte buffer, always NUL-terminated, and the allocation
 *	  helpers that exit on out-of-memory (buf.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_BUF_H
#define TSGW_BUF_H

#include <stddef.h>

typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

extern void buf_append(Buf *b, const char *s, size_t n);
extern void buf_puts(Buf *b, const char *s);
extern void buf_printf(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void buf_free(Buf *b);
extern void *xmalloc(size_t n);
extern char *xstrdup(const char *s);
extern char *xstrndup(const char *s, size_t n);

#endif							/* TSGW_BUF_H */
