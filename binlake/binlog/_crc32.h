/* The binlog's checksum: zlib's CRC-32 (the reflected polynomial 0xEDB88320), as zlib.crc32 gives
 * it, for the compiled walks (_frames.c, _rowdecode.c) and the archive's copy loop (_eventruns.c).
 *
 * Events are checked one by one, most of them under 200 bytes, so the cost per call counts as
 * much as the speed per byte. Where the CPU has a carry-less multiply (PCLMULQDQ, every x86-64 of
 * the last decade), an event's 64-byte blocks are folded into one 16-byte remainder with the
 * same CRC (Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
 * Instruction", Intel, 2009), and that remainder and the bytes past the last whole block go
 * through the tables; elsewhere the tables do it all, eight bytes a step. The folding constants
 * are computed here from the polynomial, not written down. */
#ifndef BINLAKE_CRC32_H
#define BINLAKE_CRC32_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC32_FOLDS 1
#endif

static uint32_t crc32_table[8][256];
static int crc32_folding;  /* whether crc32_of folds (set by crc32_init, or crc32_use) */
static int crc32_use(int fold);

/* n bytes into the CRC register c (its value before the final inversion). */
static uint32_t crc32_tables(uint32_t c, const unsigned char *p, size_t n) {
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = crc32_table[7][lo & 0xFF] ^ crc32_table[6][(lo >> 8) & 0xFF] ^ crc32_table[5][(lo >> 16) & 0xFF] ^
            crc32_table[4][lo >> 24] ^ crc32_table[3][hi & 0xFF] ^ crc32_table[2][(hi >> 8) & 0xFF] ^
            crc32_table[1][(hi >> 16) & 0xFF] ^ crc32_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = crc32_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

#ifdef CRC32_FOLDS
/* x^n mod P in the reflected form PCLMULQDQ multiplies, shifted one bit as its products are:
 * the 33-bit folding constant for a distance of n bits. */
static uint64_t crc32_xpow(unsigned n) {
    uint32_t r = 0x80000000u;  /* x^0, reflected */
    while (n--) r = r & 1 ? (r >> 1) ^ 0xEDB88320u : r >> 1;
    return (uint64_t)r << 1;
}

static __m128i crc32_k512, crc32_k128;  /* folds over 4 blocks (512 bits), over 1 (128) */

__attribute__((target("pclmul,sse2")))
static inline __m128i crc32_fold(__m128i x, __m128i k, __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

/* n >= 64 bytes: the CRC, inverted as zlib gives it. */
__attribute__((target("pclmul,sse2")))
static uint32_t crc32_folded(const unsigned char *p, size_t n) {
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)0xFFFFFFFF));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16)), x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    n -= 64;
    for (; n >= 64; p += 64, n -= 64) {
        x0 = crc32_fold(x0, crc32_k512, _mm_loadu_si128((const __m128i *)p));
        x1 = crc32_fold(x1, crc32_k512, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = crc32_fold(x2, crc32_k512, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = crc32_fold(x3, crc32_k512, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    x0 = crc32_fold(crc32_fold(crc32_fold(x0, crc32_k128, x1), crc32_k128, x2), crc32_k128, x3);
    for (; n >= 16; p += 16, n -= 16) x0 = crc32_fold(x0, crc32_k128, _mm_loadu_si128((const __m128i *)p));
    unsigned char rest[16];
    _mm_storeu_si128((__m128i *)rest, x0);
    return ~crc32_tables(crc32_tables(0, rest, 16), p, n);
}
#endif

/* The tables, and whether the CPU folds. */
static void crc32_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc32_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc32_table[t][i] = (crc32_table[t - 1][i] >> 8) ^ crc32_table[0][crc32_table[t - 1][i] & 0xFF];
#ifdef CRC32_FOLDS
    /* a block's low half (its first 8 bytes) travels 64 bits further than its high half */
    crc32_k512 = _mm_set_epi64x((long long)crc32_xpow(512 - 32), (long long)crc32_xpow(512 + 32));
    crc32_k128 = _mm_set_epi64x((long long)crc32_xpow(128 - 32), (long long)crc32_xpow(128 + 32));
#endif
    crc32_use(1);
}

/* crc32_use(0): the tables alone; crc32_use(1): fold where the CPU can. Whether it folds now. */
static int crc32_use(int fold) {
#ifdef CRC32_FOLDS
    __builtin_cpu_init();
    crc32_folding = fold && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
#else
    (void)fold;
#endif
    return crc32_folding;
}

/* zlib.crc32(p[:n]). */
static inline uint32_t crc32_of(const unsigned char *p, size_t n) {
#ifdef CRC32_FOLDS
    if (crc32_folding && n >= 64) return crc32_folded(p, n);
#endif
    return ~crc32_tables(0xFFFFFFFFu, p, n);
}

#endif
