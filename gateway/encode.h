/*-------------------------------------------------------------------------
 *
 * encode.h
 *	  Percent-encoding, UTF-8 sequences, base64 and UUIDs (encode.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_ENCODE_H
#define TSGW_ENCODE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

extern bool pct_decode(char *s);
extern int	utf8_seq_len(const unsigned char *p, const unsigned char *end);
extern void url_encode_key(Buf *b, const char *key);
extern void entity_path(Buf *b, const char *table, const char *pk, const char *rk);
extern char *b64_encode(const unsigned char *data, size_t len);
extern int	b64_decode(const char *in, unsigned char *out, size_t outcap);
extern void new_uuid(char *out);

#endif							/* TSGW_ENCODE_H */
