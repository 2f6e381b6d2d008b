/* A MySQL GTID event's facts and the texts records give them, for the compiled loops: the archive's
 * index (archive/_eventruns.c) and the lane (_rowdecode.c). The reference is
 * events.decode_mysql_gtid, gtid.mysql_gtid and records.ts_from_micros; one home here for both.
 */
#ifndef BINLAKE_GTID_H
#define BINLAKE_GTID_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "_varlen.h"

/* What a GTID (33) or ANONYMOUS_GTID (34) event's body says, as events.decode_mysql_gtid reads it. */
typedef struct {
    unsigned char sid[16];
    long long gno;
    int logical; /* last_committed and sequence_number were logged (MySQL 5.7+) */
    long long last_committed, sequence_number;
    int stamped; /* the commit timestamps were logged (MySQL 8.0.1+) */
    long long immediate_us, original_us;
    int has_length; /* transaction_length was logged (MySQL 8.0.2+) */
    uint64_t length;
} gtid_body_t;


/* 1 read, 0 where the body reads oddly (too short, a packed length the reference rejects). */
static int gtid_read(const unsigned char *b, long long n, gtid_body_t *g) {
    if (n < 25) return 0;
    memset(g, 0, sizeof *g);
    memcpy(g->sid, b + 1, 16);
    g->gno = (long long)le(b + 17, 8);
    long long p = 25;
    if (n >= p + 17 && b[p] == 2) {  /* LOGICAL_TIMESTAMP_TYPECODE */
        g->logical = 1;
        g->last_committed = (long long)le(b + p + 1, 8);
        g->sequence_number = (long long)le(b + p + 9, 8);
        p += 17;
    }
    if (n < p + 7) return 1;
    uint64_t ts = le(b + p, 7);
    p += 7;
    g->stamped = 1;
    if (ts & (1ULL << 55)) {  /* the original commit timestamp follows */
        ts &= (1ULL << 55) - 1;
        if (n < p + 7) return 0;
        g->original_us = (long long)le(b + p, 7);
        p += 7;
    } else {
        g->original_us = (long long)ts;
    }
    g->immediate_us = (long long)ts;
    if (n <= p) return 1;
    g->has_length = 1;
    return packed_int(b, n, &p, &g->length);
}

/* Digits of v at the end of s[0..n): where they start. */
static int gtid_digits(char *s, int n, unsigned long long v) {
    do {
        s[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return n;
}

/* A signed number's text into out: its length. */
static int gtid_number(char *out, long long v) {
    char d[24];
    int at = gtid_digits(d, sizeof d, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
    if (v < 0) d[--at] = '-';
    memcpy(out, d + at, sizeof d - at);
    return (int)(sizeof d - at);
}

/* A uuid's text, 36 characters, as str(uuid.UUID) writes it. */
static void gtid_uuid(char *out, const unsigned char *sid) {
    static const char hex[] = "0123456789abcdef";
    int w = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[w++] = '-';
        out[w++] = hex[sid[i] >> 4];
        out[w++] = hex[sid[i] & 15];
    }
}

/* The GTID as MySQL writes it, "uuid:gno", into out (64 bytes): its length. The uuid's text is kept
 * from the last call (a file's transactions mostly share their server's). */
static int gtid_text_into(char *out, const unsigned char *sid, long long gno) {
    static unsigned char last[16];
    static char text[36];
    static int known;
    if (!known || memcmp(last, sid, 16) != 0) {
        gtid_uuid(text, sid);
        memcpy(last, sid, 16);
        known = 1;
    }
    memcpy(out, text, 36);
    out[36] = ':';
    return 37 + gtid_number(out + 37, gno);
}

/* Whether gtid_ts_into writes the time us: from the epoch to the end of year 9999. */
static inline int ts_written(long long us) { return us >= 0 && us < 253402300800000000LL; }

/* A time as records.ts_from_micros writes it, "YYYY-MM-DDTHH:MM:SS.ffffffZ", into out (32 bytes):
 * its length, or 0 out of the years it writes. The second's text is kept from the last call
 * (transactions come many to a second). */
static int gtid_ts_into(char *out, long long us) {
    static long long second = -1;
    static char text[32];
    static int width;
    if (us < 0) return 0;
    long long secs = us / 1000000;
    if (secs != second) {
        time_t t = (time_t)secs;
        struct tm tm;
        if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 > 9999) return 0;
        width = snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900, tm.tm_mon + 1,
                         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (width != 20) return 0;
        second = secs;
    }
    memcpy(out, text, 20);
    long long frac = us % 1000000;
    for (int i = 5; i >= 0; i--, frac /= 10) out[20 + i] = (char)('0' + frac % 10);
    out[26] = 'Z';
    return 27;
}

/* SHA-1 (FIPS 180-4) of n bytes into out[20]: for uuid5 ids, a few dozen bytes each. */
static void sha1(const unsigned char *msg, size_t n, unsigned char out[20]) {
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    size_t blocks = (n + 8) / 64 + 1;
    for (size_t k = 0; k < blocks; k++) {
        unsigned char block[64];
        for (int i = 0; i < 64; i++) {  /* the message, 0x80, zeros, its length in bits (big-endian) */
            size_t at = k * 64 + (size_t)i;
            block[i] = at < n ? msg[at] : at == n ? 0x80 : 0;
        }
        if (k == blocks - 1)
            for (int i = 0; i < 8; i++) block[63 - i] = (unsigned char)(((uint64_t)n * 8) >> (8 * i));
        uint32_t w[80];
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 | (uint32_t)block[4 * i + 2] << 8 |
                   block[4 * i + 3];
        for (int i = 16; i < 80; i++) {
            uint32_t x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16];
            w[i] = x << 1 | x >> 31;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; i++) {
            uint32_t f = i < 20 ? (b & c) | (~b & d) : i < 40 ? b ^ c ^ d : i < 60 ? (b & c) | (b & d) | (c & d) : b ^ c ^ d;
            uint32_t kk = i < 20 ? 0x5A827999u : i < 40 ? 0x6ED9EBA1u : i < 60 ? 0x8F1BBCDCu : 0xCA62C1D6u;
            uint32_t t = (a << 5 | a >> 27) + f + e + kk + w[i];
            e = d;
            d = c;
            c = b << 30 | b >> 2;
            b = a;
            a = t;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
    }
    for (int i = 0; i < 20; i++) out[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* The id of a transaction without GTID, as records.derived_txn_id makes it: uuid5(namespace,
 * "server_id:binlog_file:start_pos"), 36 characters into out. 0, or -1 where the name is too long. */
static int derived_id(char *out, const unsigned char namespace[16], unsigned long server_id, const char *file,
                      size_t file_len, long long start_pos) {
    unsigned char msg[512], digest[20];
    if (file_len > 400) return -1;
    memcpy(msg, namespace, 16);
    int n = snprintf((char *)msg + 16, sizeof msg - 16, "%lu:%.*s:%lld", server_id, (int)file_len, file, start_pos);
    if (n < 0 || (size_t)n >= sizeof msg - 16) return -1;
    sha1(msg, 16 + (size_t)n, digest);
    digest[6] = (digest[6] & 0x0F) | 0x50;  /* version 5 */
    digest[8] = (digest[8] & 0x3F) | 0x80;  /* RFC 4122 variant */
    gtid_uuid(out, digest);
    return 0;
}

#endif
