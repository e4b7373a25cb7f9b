/*-------------------------------------------------------------------------
 *
 * utf16.h
 *	  The service's order of keys and strings, by UTF-16 code unit, on
 *	  UTF-8 text, in plain C with no PostgreSQL headers: the extension
 *	  (the key type, the index, the filter, the router's merge) and the
 *	  gateway (a table SAS's key range) compare with this one function.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TS_UTF16_H
#define TS_UTF16_H

extern int	ts_utf16_cmp(const char *a, int alen, const char *b, int blen);

#endif							/* TS_UTF16_H */
