/* Little-endian integers and MySQL's packed integers (net_field_length) as the compiled loops read
 * them: the GTID events' bodies (_gtid.h) and the rows events' column counts (_rowdecode.c). The
 * reference is binlake/binlog/varlen.py.
 */
#ifndef BINLAKE_VARLEN_H
#define BINLAKE_VARLEN_H

#include <stdint.h>

/* The n-byte little-endian integer at p. */
static inline uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A packed integer (net_field_length, as varlen.read_packed reads it) at b[*p] into v, *p moved past
 * it: 1, or 0 where the reference reads none (past n, the prefixes it rejects). */
static inline int packed_int(const unsigned char *b, long long n, long long *p, uint64_t *v) {
    if (*p >= n) return 0;
    unsigned first = b[*p];
    int width = first < 251 ? 0 : first == 0xFC ? 2 : first == 0xFD ? 3 : first == 0xFE ? 8 : -1;
    if (width < 0 || *p + 1 + width > n) return 0;
    *v = width ? le(b + *p + 1, width) : first;
    *p += 1 + width;
    return 1;
}

#endif
