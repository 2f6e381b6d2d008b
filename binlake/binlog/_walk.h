/* The compiled walk's rules for cutting events and ordinary transactions out of a file's bytes,
 * shared by _frames.c (BinlogReader.cut / skim) and _rowdecode.c (the lane): one home for what an
 * ordinary transaction is. Each includer calls walk_init() when its module loads.
 *
 * Contract (framing.py, assemble.py): these only ever say "this is ordinary" and stop before
 * anything else; the reference walk then takes it, and words the error when there is one.
 */
#ifndef BINLAKE_WALK_H
#define BINLAKE_WALK_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_crc32.h"
#include "_events.h"

static void walk_init(void) { crc32_init(); }

static inline uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The size of an ordinary event at pos (index i), or 0 where the reference loop must take it: a
 * FORMAT_DESCRIPTION event, a header that cannot be one, an event running past stop or the data. */
static long long ordinary(const Py_buffer *b, long long i, long long pos, long long stop, long long min_size) {
    if (i < 0 || stop - pos < HEADER_LEN || i + HEADER_LEN > b->len) return 0;
    const unsigned char *e = (const unsigned char *)b->buf + i;
    long long size = u32(e + 9);
    if (e[4] == FORMAT_DESCRIPTION_EVENT || size < min_size || pos + size > stop || i + size > b->len) return 0;
    return size;
}

static int crc_matches(const unsigned char *e, long long size) {
    return crc32_of(e, (size_t)(size - 4)) == u32(e + size - 4);
}

/* Whether a QUERY event's text is exactly "BEGIN" (what the servers log after a GTID), its status
 * variables and database name inside the event as check_query() wants them. */
static int is_begin(const unsigned char *body, long long body_len, Py_ssize_t phl) {
    if (phl < 11 || body_len < phl) return 0;
    long long status_len = phl >= 13 ? (body[11] | body[12] << 8) : 0;
    long long text = phl + status_len + body[8] + 1;
    return text + 5 == body_len && memcmp(body + text, "BEGIN", 5) == 0;
}

/* Where an ordinary transaction ends (transaction_end). */
typedef struct {
    unsigned long long xid;
    Py_ssize_t events;
    long long last; /* its XID event's offset */
} txn_end_t;

/* The end of the ordinary transaction at pos, or 0 where the reference walk must take it.
 * Ordinary: a GTID (MySQL's, then a QUERY "BEGIN"; MariaDB's without FL_STANDALONE, which is its
 * BEGIN), then only events `inside` allows (table maps, rows, their statements), then an XID; every
 * event whole in [pos, stop), its CRC32 matching, at most `most_events` of them. */
static long long transaction_end(const Py_buffer *b, long long base, long long pos, long long stop, Py_ssize_t header_len,
                                 int crc, Py_ssize_t query_phl, const unsigned char *inside, Py_ssize_t most_events,
                                 txn_end_t *out) {
    const unsigned char *buf = b->buf;
    long long min_size = header_len + (crc ? 4 : 0);
    int begun = 0; /* the BEGIN seen (a MariaDB GTID is its own) */
    for (Py_ssize_t n = 0; n < most_events; n++) {
        long long i = pos - base;
        long long size = ordinary(b, i, pos, stop, min_size);
        if (size == 0) return 0;
        const unsigned char *e = buf + i, *body = e + header_len;
        long long body_len = size - header_len - (crc ? 4 : 0);
        if (crc && !crc_matches(e, size)) return 0;
        int t = e[4];
        if (n == 0) {
            if (t == MARIA_GTID_EVENT) {
                if (body_len < 13 || body[12] & (FL_STANDALONE | FL_COMPLETED_XA)) return 0;
                begun = 1;
            } else if (t != GTID_LOG_EVENT && t != ANONYMOUS_GTID_LOG_EVENT && t != GTID_TAGGED_LOG_EVENT) {
                return 0;
            }
        } else if (!begun) {
            if (t != QUERY_EVENT || !is_begin(body, body_len, query_phl)) return 0;
            begun = 1;
        } else if (t == XID_EVENT) {
            if (body_len < 8) return 0;
            out->xid = (unsigned long long)u32(body) | (unsigned long long)u32(body + 4) << 32;
            out->events = n + 1;
            out->last = pos;
            return pos + size;
        } else if (!inside[t]) {
            return 0;
        }
        pos += size;
    }
    return 0;
}

#endif
