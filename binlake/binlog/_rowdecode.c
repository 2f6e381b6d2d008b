/* Row images of a rows event decoded in one pass, straight to binlake's JSON-typed values.
 *
 * The compiled twin of binlake/binlog/rows.py's reference path (mysql-replication's decoders
 * plus _Converter): for every column kind it handles it must give the very same Python values,
 * and tests/test_rowdecode.py compares the two on every rows event of the test data and the
 * public fixtures. Anything it does not handle, or any byte it does not expect, raises
 * Fallback: the caller then decodes the event with the reference path, which also words the
 * error when the event is really broken. So this file never decides what an error says.
 *
 * The lane (_lane.h, included at the end) writes runs of whole ordinary transactions as
 * `binlake scan`'s JSON lines, or the Spark job's columns, with these decoders (binlake/assemble/lane.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#include "_gtid.h"
#include "_walk.h"

static PyObject *Fallback;

enum kind {
    K_INT8 = 1, K_UINT8, K_INT16, K_UINT16, K_INT24, K_UINT24, K_INT32, K_UINT32, K_INT64, K_UINT64,
    K_FLOAT, K_DOUBLE, K_YEAR,
    K_STR_UTF8,    /* a = length bytes (1..4) */
    K_STR_BINARY,  /* "base64:...", b = BINARY(b)'s length (its trailing zeros are not logged), else 0 */
    K_STR_GUESS,   /* no charset in the metadata: UTF-8 when it is, else base64 */
    K_STR_CODEC,   /* extra = Python codec name */
    K_DECIMAL,     /* a = precision, b = scale */
    K_DATETIME2, K_TIMESTAMP2, K_TIME2,  /* a = fsp */
    K_DATE,
    K_ENUM, K_SET, /* a = size in bytes, extra = list of names (ENUM: [""] + names), None when unnamed */
    K_BIT,         /* a = bytes, b = bits */
    K_JSON,        /* a = length bytes (1..4): MySQL's binary JSON (json_binary.cc) */
    K_GEOMETRY,    /* a = length bytes (1..4): a 4-byte SRID, then WKB; EWKT text (rows.geometry_text) */
    K_VECTOR,      /* a = length bytes (1..4): float32s, little-endian (MySQL 9); a list of floats */
};

typedef struct {
    int kind, a, b;
    PyObject *name;   /* borrowed from the plan tuple */
    PyObject *extra;  /* borrowed */
} col_t;

typedef struct {
    const unsigned char *p, *end;
} cursor_t;

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};

/* Fractional seconds as mysql-replication reads them (microseconds). */
static int read_fsp(cursor_t *c, int fsp, long *us) {
    int n = (fsp + 1) / 2;
    if (n == 0) { *us = 0; return 0; }
    if (c->end - c->p < n) return -1;
    long v = (long)be(c->p, n);
    c->p += n;
    if (fsp % 2) v /= 10;
    for (int i = fsp; i < 6; i++) v *= 10;
    if (v < 0 || v > 999999) return -1;
    *us = v;
    return 0;
}

static int days_in_month(long y, int m) {
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return d[m - 1];
}

/* v in decimal, zero-padded to at least width digits (printf's "%0*u", without its cost): two
 * digits per division, decimals' nine-digit groups and dates' fields being most of the numbers. */
static int digits_into(char *dst, uint64_t v, int width) {
    static const char PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char tmp[24], *q = tmp + sizeof tmp;
    while (v >= 100) {
        q -= 2;
        memcpy(q, PAIRS + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) { q -= 2; memcpy(q, PAIRS + 2 * v, 2); }
    else *--q = (char)('0' + v);
    int n = (int)(tmp + sizeof tmp - q), k = 0;
    while (k < width - n) dst[k++] = '0';
    memcpy(dst + k, q, (size_t)n);
    return k + n;
}

/* "HH:MM:SS[.ffffff]" cut to fsp digits (hours may have more than two). */
static int time_text(char *buf, int h, int mi, int s, long us, int fsp) {
    int n = digits_into(buf, (uint64_t)h, 2);
    buf[n++] = ':';
    n += digits_into(buf + n, (uint64_t)mi, 2);
    buf[n++] = ':';
    n += digits_into(buf + n, (uint64_t)s, 2);
    if (fsp) {
        char frac[8];
        digits_into(frac, (uint64_t)us, 6);
        buf[n++] = '.';
        memcpy(buf + n, frac, fsp);
        n += fsp;
    }
    return n;
}

static int date_text(char *buf, long y, int mo, int d) {
    int n = digits_into(buf, (uint64_t)y, 4);
    buf[n++] = '-';
    n += digits_into(buf + n, (uint64_t)mo, 2);
    buf[n++] = '-';
    return n + digits_into(buf + n, (uint64_t)d, 2);
}

/* "YYYY-MM-DD HH:MM:SS[.ffffff]" cut to fsp digits, as rows._fmt_datetime gives it. */
static int datetime_text(char *buf, long y, int mo, int d, int h, int mi, int s, long us, int fsp) {
    int n = date_text(buf, y, mo, d);
    buf[n++] = ' ';
    return n + time_text(buf + n, h, mi, s, us, fsp);
}

/* Civil date of a day count since 1970-01-01 (Howard Hinnant's algorithm). */
static void civil(long z, long *y, int *m, int *d) {
    z += 719468;
    long era = (z >= 0 ? z : z - 146096) / 146097;
    long doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* n bytes as base64 into o (4 * ((n + 2) / 3) chars). */
static void base64_into(char *o, const unsigned char *p, Py_ssize_t n) {
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
        *o++ = T[v >> 18]; *o++ = T[(v >> 12) & 63]; *o++ = T[(v >> 6) & 63]; *o++ = T[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = p[i] << 16;
        *o++ = T[v >> 18]; *o++ = T[(v >> 12) & 63]; *o++ = '='; *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (p[i] << 16) | (p[i + 1] << 8);
        *o++ = T[v >> 18]; *o++ = T[(v >> 12) & 63]; *o++ = T[(v >> 6) & 63]; *o++ = '=';
    }
}

static PyObject *base64_str(const unsigned char *p, Py_ssize_t n) {
    PyObject *s = PyUnicode_New(7 + 4 * ((n + 2) / 3), 127);
    if (!s) return NULL;
    char *o = (char *)PyUnicode_DATA(s);
    memcpy(o, "base64:", 7);
    base64_into(o + 7, p, n);
    return s;
}

/* NEWDECIMAL: sign, integer digits without leading zeros, exactly `scale` fraction digits,
 * into out (>= 110 bytes); its length, or -1 for "fall back" (out NULL: the checks alone, 0 for
 * a value it would write). precision and scale may come from a
 * JSON document's bytes: checked before they are used. A column's precision is at most 65; a JSON
 * document's decimal is MySQL's my_decimal, whose precision goes to 81 (a DECIMAL(65,30) value
 * CAST AS JSON is logged with 66). */
/* decimal_text's refusals of the groups of a decimal's bytes b (sign undone): 0 or -1. */
static int decimal_valid(const unsigned char *b, int intg0, int intg0x, int frac0, int frac0x) {
    static const uint64_t LIMIT[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
    int pos = 0;
    if (DIG2BYTES[intg0x]) {
        if (be(b, DIG2BYTES[intg0x]) >= 1000000000) return -1;
        pos += DIG2BYTES[intg0x];
    }
    for (int i = 0; i < intg0 + frac0; i++, pos += 4)
        if (be(b + pos, 4) > 999999999) return -1;
    if (frac0x && be(b + pos, DIG2BYTES[frac0x]) >= LIMIT[frac0x]) return -1;
    return 0;
}

static int decimal_text(cursor_t *c, int precision, int scale, char *out) {
    if (precision < 1 || precision > 81 || scale < 0 || scale > 30 || scale > precision) return -1;
    int intg = precision - scale;
    int intg0 = intg / 9, frac0 = scale / 9;
    int intg0x = intg - intg0 * 9, frac0x = scale - frac0 * 9;
    int size = intg0 * 4 + DIG2BYTES[intg0x] + frac0 * 4 + DIG2BYTES[frac0x];
    if (size < 1) return -1;
    if (c->end - c->p < size) return -1;
    unsigned char b[40];
    memcpy(b, c->p, size);
    c->p += size;
    int negative = !(b[0] & 0x80);
    b[0] ^= 0x80;
    if (negative) for (int i = 0; i < size; i++) b[i] = ~b[i];
    if (!out) return decimal_valid(b, intg0, intg0x, frac0, frac0x);
    char digits[100];
    int n = 0, pos = 0;
    uint64_t v;
    if (DIG2BYTES[intg0x]) {
        v = be(b + pos, DIG2BYTES[intg0x]);
        pos += DIG2BYTES[intg0x];
        if (v >= 1000000000) return -1;
        n += digits_into(digits + n, v, intg0x);
    }
    for (int i = 0; i < intg0; i++, pos += 4) {
        v = be(b + pos, 4);
        if (v > 999999999) return -1;
        n += digits_into(digits + n, v, 9);
    }
    int o = 0;
    if (negative) out[o++] = '-';
    int lead = 0;
    while (lead < n && digits[lead] == '0') lead++;
    if (lead == n) out[o++] = '0';
    else { memcpy(out + o, digits + lead, n - lead); o += n - lead; }
    if (scale) {
        out[o++] = '.';
        for (int i = 0; i < frac0; i++, pos += 4) {
            v = be(b + pos, 4);
            if (v > 999999999) return -1;
            o += digits_into(out + o, v, 9);
        }
        if (frac0x) {
            v = be(b + pos, DIG2BYTES[frac0x]);
            uint64_t lim = 1;
            for (int i = 0; i < frac0x; i++) lim *= 10;
            if (v >= lim) return -1;
            o += digits_into(out + o, v, frac0x);
        }
    }
    return o;
}

static int copy_text(char *buf, const char *text) {
    size_t n = strlen(text);
    memcpy(buf, text, n);
    return (int)n;
}

#define TNEED(c, n) do { if ((c)->end - (c)->p < (Py_ssize_t)(n)) return -1; } while (0)

/* DECIMAL and the temporal kinds as the text binlake gives them, into buf (>= 112 bytes):
 * its length, or -1 for "fall back". Shared by the values (decode) and the JSON lines (render). */
/* A negative TIME2 (v: its 3 bytes, the sign bit clear; then its fraction) as the reference
 * gives it: mysql-replication negates the whole 3 bytes and reads the fraction as a signed
 * number, then rows._time2 takes a second off and the fraction from one (MySQL stores it
 * borrowed), and rows._fmt_time writes the sum. Its length in buf, or -1: fall back. */
static int negative_time2(cursor_t *c, uint32_t v, int fsp, char *buf) {
    int n = (fsp + 1) / 2;
    if (c->end - c->p < n) return -1;
    int64_t f = 0;
    if (n) {
        f = (int64_t)be(c->p, n);
        if (f >= (int64_t)1 << (8 * n - 1)) f -= (int64_t)1 << (8 * n);  /* signed, as the package reads it */
    }
    c->p += n;
    if (fsp % 2) f /= 10;  /* int(f / 10): towards zero */
    for (int i = fsp; i < 6; i++) f *= 10;
    uint32_t e = (0x1000000 - v) & 0xFFFFFF;  /* the package's ~v + 1, as its 24 bits */
    int64_t t = ((int64_t)((e >> 12) & 0x3FF) * 3600 + ((e >> 6) & 63) * 60 + (e & 63)) * 1000000 + f;
    int64_t us = t > 0 && t % 1000000 ? -((t / 1000000 + 1) * 1000000 - t % 1000000) : -t;
    int k = 0;
    if (us < 0) { buf[k++] = '-'; us = -us; }
    int64_t sec = us / 1000000;
    return k + time_text(buf + k, (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60), (long)(us % 1000000), fsp);
}

static int text_value(cursor_t *c, const col_t *col, char *buf) {
    const unsigned char *p = c->p;
    switch (col->kind) {
    case K_DECIMAL: return decimal_text(c, col->a, col->b, buf);
    case K_DATETIME2: {
        TNEED(c, 5); c->p += 5;
        uint64_t v = be(p, 5);
        long ym = (long)((v >> 22) & 0x1FFFF);
        long y = ym / 13; int mo = ym % 13;
        int d = (v >> 17) & 31, h = (v >> 12) & 31, mi = (v >> 6) & 63, s = v & 63;
        long us;
        if (read_fsp(c, col->a, &us) < 0) return -1;
        if (!(v >> 39)) return -1;  /* negative: never written by MySQL */
        if (y < 1 || y > 9999 || mo < 1 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59)
            return datetime_text(buf, 0, 0, 0, 0, 0, 0, 0, col->a);  /* the zero datetime, as the server shows it */
        return datetime_text(buf, y, mo, d, h, mi, s, us, col->a);
    }
    case K_TIMESTAMP2: {
        TNEED(c, 4); c->p += 4;
        int32_t t = (int32_t)be(p, 4);
        long us;
        if (read_fsp(c, col->a, &us) < 0 || t < 0) return -1;
        if (t == 0) return datetime_text(buf, 0, 0, 0, 0, 0, 0, 0, col->a);  /* 0 is the zero TIMESTAMP */
        long y; int mo, d;
        civil(t / 86400, &y, &mo, &d);
        long sec = t % 86400;
        return datetime_text(buf, y, mo, d, (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60), us, col->a);
    }
    case K_DATE: {
        TNEED(c, 3); c->p += 3;
        long v = (long)le(p, 3);
        long y = (v >> 9) & 0x7FFF; int mo = (v >> 5) & 15, d = v & 31;
        if (y == 0 || mo == 0 || d == 0) return copy_text(buf, "0000-00-00");
        if (y > 9999 || mo > 12 || d > days_in_month(y, mo)) return -1;
        return date_text(buf, y, mo, d);
    }
    case K_TIME2: {
        TNEED(c, 3); c->p += 3;
        uint32_t v = (uint32_t)be(p, 3);
        long us;
        if (!(v & 0x800000)) return negative_time2(c, v, col->a, buf);
        if (read_fsp(c, col->a, &us) < 0) return -1;
        int h = (v >> 12) & 0x3FF, mi = (v >> 6) & 63, s = v & 63;
        if (mi > 59 || s > 59) return -1;
        return time_text(buf, h, mi, s, us, col->a);
    }
    }
    return -1;
}

/* BIT(bits) in nbytes (<= 8) as a number, the bits above `bits` masked off as the reference does. */
static uint64_t bit_value(const unsigned char *p, int nbytes, int bits) {
    uint64_t v = be(p, nbytes);
    int top = nbytes == 1 ? bits : bits % 8;
    if (top && top < 8) {
        int shift = (nbytes - 1) * 8 + top;
        if (shift < 64) v &= (((uint64_t)1) << shift) - 1;
    }
    return v;
}

/* One value, read once from the row image into a small tagged value; the two writers below
 * (to_py, to_json) turn it into a Python object or JSON text. Adding a column kind is one case
 * here (and its plan in fastrows.py); tests/test_column_types.py says where each type goes. */
typedef enum {
    V_INT,    /* i */
    V_UINT,   /* u */
    V_DOUBLE, /* d */
    V_TEXT,   /* text[0..len): ASCII (DECIMAL, temporal kinds) */
    V_UTF8,   /* s[0..n): must be valid UTF-8, else fall back */
    V_GUESS,  /* s[0..n): UTF-8 text when valid, else "base64:..." */
    V_BYTES,  /* s[0..n): "base64:..." */
    V_CODEC,  /* s[0..n) in the Python codec `codec` */
    V_PYSTR,  /* obj: a str of the plan (an ENUM member), borrowed */
    V_SET,    /* u: the members' bitmask; obj: their names (a list) */
    V_NULL,   /* JSON's null */
    V_BOOL,   /* i: JSON's true (1) or false (0) */
    V_OPAQUE, /* u: the MySQL type of an opaque JSON value, s[0..n): its bytes, "base64:type<u>:..." */
    V_JSON,   /* a JSON object or array: i its type (JSONB_*), u its count, s[0..n) its bytes */
    V_GEOM,   /* s[0..n): a GEOMETRY's stored bytes (more than its SRID), as EWKT text */
    V_FLOATS, /* s[0..n): a VECTOR's float32s, a list of floats (a partial float's bytes ignored) */
} vtype_t;

typedef struct {
    vtype_t type;
    int64_t i;
    uint64_t u;
    double d;
    const unsigned char *s;
    Py_ssize_t n;
    const char *codec;
    PyObject *obj;
    int len;
    char text[112];
    int depth;            /* V_JSON: how many containers hold it */
    Py_ssize_t *budget;   /* JSON: how many more values the document may visit (shared) */
    Py_ssize_t room;      /* the document's budget, held by its top value */
} value_t;

/* ---- MySQL's binary JSON ----------------------------------------------------------------------
 * A document is a type byte and the value (sql-common/json_binary.cc): objects and arrays (small:
 * 2-byte counts and offsets, large: 4-byte) with an entry per member, scalars, and opaque values
 * of other MySQL types. The reference reads it with mysql-replication's json_binary (opaque
 * temporals by binlake.binlog.replication._parse_opaque) and maps it with rows._jsonable; every
 * value here is what those give. What MySQL never writes (a value past its container's end, keys
 * out of MySQL's order or not UTF-8, a document deeper than MySQL allows) falls back. */

enum { J_SMALL_OBJECT, J_LARGE_OBJECT, J_SMALL_ARRAY, J_LARGE_ARRAY, J_LITERAL, J_INT16, J_UINT16, J_INT32,
       J_UINT32, J_INT64, J_UINT64, J_DOUBLE, J_STRING, J_OPAQUE = 15 };
#define JSON_MAX_DEPTH 100  /* MySQL's JSON_DOCUMENT_MAX_DEPTH: containers inside containers */

/* json_binary's variable length (7 bits a byte, at most 5 bytes): its byte count, or 0. */
static int json_varlen(const unsigned char *p, Py_ssize_t n, uint64_t *len) {
    uint64_t v = 0;
    for (int i = 0; i < 5 && i < n; i++) {
        v |= (uint64_t)(p[i] & 0x7F) << (7 * i);
        if (!(p[i] & 0x80)) { *len = v; return i + 1; }
    }
    return 0;
}

/* An opaque DATE, TIME, DATETIME or TIMESTAMP (MySQL's packed temporal, little-endian) as
 * _parse_opaque writes it, into out; its length. */
static int json_temporal(int type, const unsigned char *raw, Py_ssize_t n, char *out) {
    int64_t packed = (int64_t)le(raw, n < 8 ? (int)n : 8);
    uint64_t a = packed < 0 ? (uint64_t)0 - (uint64_t)packed : (uint64_t)packed;
    uint64_t whole = a >> 24, frac = a & 0xFFFFFF;
    int o = 0;
    if (type == 11 || type == 19) {  /* TIME, TIME2: [-]HH:MM:SS.ffffff */
        if (packed < 0) out[o++] = '-';
        o += digits_into(out + o, (whole >> 12) % 1024, 2);
    } else {
        uint64_t ym = whole >> 22;
        o += digits_into(out + o, ym / 13, 4);
        out[o++] = '-';
        o += digits_into(out + o, ym % 13, 2);
        out[o++] = '-';
        o += digits_into(out + o, (whole >> 17) % 32, 2);
        if (type == 10 || type == 14) return o;  /* DATE, NEWDATE */
        out[o++] = ' ';
        o += digits_into(out + o, (whole >> 12) % 32, 2);
    }
    out[o++] = ':';
    o += digits_into(out + o, (whole >> 6) % 64, 2);
    out[o++] = ':';
    o += digits_into(out + o, whole % 64, 2);
    out[o++] = '.';
    return o + digits_into(out + o, frac, 6);
}

/* A JSON value of type t, its bytes from p (n: up to its container's end), into v (whose depth
 * and budget are set): 0, or 1 fall back. An object or array is only checked here; json_entry
 * reads its members. */
static int json_value(int t, const unsigned char *p, Py_ssize_t n, value_t *v) {
    if (--*v->budget < 0) return 1;  /* more values than bytes: entries that point back */
    uint64_t len;
    int k;
    switch (t) {
    case J_SMALL_OBJECT: case J_LARGE_OBJECT: case J_SMALL_ARRAY: case J_LARGE_ARRAY: {
        int os = t == J_SMALL_OBJECT || t == J_SMALL_ARRAY ? 2 : 4;
        if (v->depth >= JSON_MAX_DEPTH || n < 2 * os) return 1;
        uint64_t count = le(p, os), size = le(p + os, os);
        uint64_t entry = (t <= J_LARGE_OBJECT ? os + 2 : 0) + 1 + os;  /* key entry + value entry */
        if (size > (uint64_t)n || 2 * os + count * entry > size) return 1;
        v->type = V_JSON; v->i = t; v->u = count; v->s = p; v->n = (Py_ssize_t)size;
        return 0;
    }
    case J_LITERAL:
        if (n < 1 || p[0] > 2) return 1;
        v->type = p[0] ? V_BOOL : V_NULL;
        v->i = p[0] == 1;
        return 0;
    case J_INT16: if (n < 2) return 1; v->type = V_INT; v->i = (int16_t)le(p, 2); return 0;
    case J_UINT16: if (n < 2) return 1; v->type = V_INT; v->i = (int64_t)le(p, 2); return 0;
    case J_INT32: if (n < 4) return 1; v->type = V_INT; v->i = (int32_t)le(p, 4); return 0;
    case J_UINT32: if (n < 4) return 1; v->type = V_INT; v->i = (int64_t)le(p, 4); return 0;
    case J_INT64: if (n < 8) return 1; v->type = V_INT; v->i = (int64_t)le(p, 8); return 0;
    case J_UINT64: if (n < 8) return 1; v->type = V_UINT; v->u = le(p, 8); return 0;
    case J_DOUBLE: {
        if (n < 8) return 1;
        uint64_t u = le(p, 8);
        memcpy(&v->d, &u, 8);
        v->type = V_DOUBLE;
        return 0;
    }
    case J_STRING:  /* bytes: UTF-8 text when they are, else "base64:..." (_jsonable) */
        if (!(k = json_varlen(p, n, &len)) || len > (uint64_t)(n - k)) return 1;
        v->type = V_GUESS; v->s = p + k; v->n = (Py_ssize_t)len; v->len = 0;
        return 0;
    case J_OPAQUE: {
        if (n < 2 || !(k = json_varlen(p + 1, n - 1, &len)) || len > (uint64_t)(n - 1 - k)) return 1;
        const unsigned char *raw = p + 1 + k;
        switch (p[0]) {
        case 0: case 246: {  /* DECIMAL, NEWDECIMAL: precision, scale, the binary decimal */
            if (len < 2) return 1;
            cursor_t dc = {raw + 2, raw + len};
            v->type = V_TEXT;
            v->len = decimal_text(&dc, raw[0], raw[1], v->text);  /* all its scale's decimals, no exponent */
            return v->len < 0;
        }
        case 7: case 10: case 11: case 12: case 14: case 17: case 18: case 19:  /* the temporal types */
            v->type = V_TEXT;
            v->len = json_temporal(p[0], raw, (Py_ssize_t)len, v->text);
            return 0;
        }
        v->type = V_OPAQUE; v->u = p[0]; v->s = raw; v->n = (Py_ssize_t)len;
        return 0;
    }
    }
    return 1;
}

/* Member i of the object or array v: its key (objects: UTF-8 checked by the writers, in MySQL's
 * order by the caller) and its value into child. 0, or 1 fall back. */
static int json_entry(const value_t *v, Py_ssize_t i, const unsigned char **key, Py_ssize_t *klen, value_t *child) {
    int small = v->i == J_SMALL_OBJECT || v->i == J_SMALL_ARRAY, object = v->i <= J_LARGE_OBJECT;
    int os = small ? 2 : 4;
    const unsigned char *p = v->s;
    uint64_t size = (uint64_t)v->n, count = v->u;
    if (object) {
        const unsigned char *e = p + 2 * os + (os + 2) * i;
        uint64_t at = le(e, os), n = le(e + os, 2);
        if (at + n > size) return 1;
        *key = p + at;
        *klen = (Py_ssize_t)n;
    }
    const unsigned char *e = p + 2 * os + (object ? (os + 2) * count : 0) + (1 + os) * i;
    int t = e[0];
    child->depth = v->depth + 1;
    child->budget = v->budget;
    if (t == J_LITERAL || t == J_INT16 || t == J_UINT16 || (!small && (t == J_INT32 || t == J_UINT32)))
        return json_value(t, e + 1, os, child);  /* inlined in its entry */
    uint64_t at = le(e + 1, os);
    if (at >= size) return 1;
    return json_value(t, p + at, (Py_ssize_t)(size - at), child);
}

/* Whether key b comes after key a in MySQL's order of an object's keys (length, then bytes):
 * MySQL writes them so, each once. */
static int json_key_after(const unsigned char *a, Py_ssize_t alen, const unsigned char *b, Py_ssize_t blen) {
    if (!a) return 1;
    if (alen != blen) return alen < blen;
    return memcmp(a, b, (size_t)alen) < 0;
}


/* ---- GEOMETRY ----------------------------------------------------------------------------------
 * A stored GEOMETRY is MySQL's 4-byte SRID (little-endian) and the WKB; the reference
 * (rows.geometry_text) writes it as EWKT: `SRID=<n>;` unless 0, each coordinate as rows._num
 * does (an integral one below 1e15 as an integer, "-0" for negative zero, any other as Python's
 * repr), empty ones as `<NAME> EMPTY`, the members of a MULTI* from their first `(`. What MySQL
 * never writes falls back: a byte order other than little-endian, an unknown type, a member
 * with no `(` (an empty one), bytes past the geometry, geometries nested deeper than 64. */

#define WKB_MAX_DEPTH 64

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} text_t;

/* 0, or -1 with MemoryError set. */
static int text_put(text_t *t, const char *s, Py_ssize_t n) {
    if (t->len + n > t->cap) {
        Py_ssize_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + n) cap *= 2;
        char *p = PyMem_Realloc(t->p, (size_t)cap);
        if (!p) { PyErr_NoMemory(); return -1; }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, (size_t)n);
    t->len += n;
    return 0;
}

/* A coordinate as rows._num writes it: 0, or -1 with an exception set. */
static int coordinate_text(text_t *t, double x) {
    if (fabs(x) < 1e15 && x == (double)(int64_t)x) {  /* NaN fails the first test */
        char buf[24];
        if (x == 0 && signbit(x)) return text_put(t, "-0", 2);
        int64_t i = (int64_t)x;
        int n = 0;
        if (i < 0) { buf[n++] = '-'; i = -i; }
        n += digits_into(buf + n, (uint64_t)i, 1);
        return text_put(t, buf, n);
    }
    char *r = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);  /* repr(x), nan and inf too */
    if (!r) return -1;
    int rc = text_put(t, r, (Py_ssize_t)strlen(r));
    PyMem_Free(r);
    return rc;
}


/* n points (x y, joined by ","): 0, 1 fall back, -1 error. */
static int points_text(text_t *t, cursor_t *c, uint32_t n) {
    if ((uint64_t)(c->end - c->p) < 16 * (uint64_t)n) return 1;
    for (uint32_t i = 0; i < n; i++) {
        double x, y;
        uint64_t u = le(c->p, 8), w = le(c->p + 8, 8);
        memcpy(&x, &u, 8);
        memcpy(&y, &w, 8);
        c->p += 16;
        if ((i && text_put(t, ",", 1)) || coordinate_text(t, x) || text_put(t, " ", 1) || coordinate_text(t, y))
            return -1;
    }
    return 0;
}

#define GTRY(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)

static int count_of(cursor_t *c, uint32_t *n) {
    if (c->end - c->p < 4) return 1;
    *n = u32(c->p);
    c->p += 4;
    return 0;
}

/* One WKB geometry as rows._wkb writes it: 0, 1 fall back, -1 error. */
static int wkb_text(text_t *t, cursor_t *c, int depth) {
    static const char *NAMES[8] = {NULL, "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING",
                                   "MULTIPOLYGON", "GEOMETRYCOLLECTION"};
    if (depth > WKB_MAX_DEPTH || c->end - c->p < 5 || c->p[0] != 1) return 1;
    uint32_t kind = u32(c->p + 1), n;
    c->p += 5;
    if (kind < 1 || kind > 7) return 1;
    const char *name = NAMES[kind];
    Py_ssize_t namelen = (Py_ssize_t)strlen(name);
    if (kind == 1) {
        GTRY(text_put(t, "POINT(", 6));
        GTRY(points_text(t, c, 1));
        return text_put(t, ")", 1);
    }
    GTRY(count_of(c, &n));
    if (!n) {
        GTRY(text_put(t, name, namelen));
        return text_put(t, " EMPTY", 6);
    }
    GTRY(text_put(t, name, namelen));
    GTRY(text_put(t, "(", 1));
    if (kind == 2) {
        GTRY(points_text(t, c, n));
        return text_put(t, ")", 1);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (i) GTRY(text_put(t, ",", 1));
        if (kind == 3) {  /* a ring */
            uint32_t m;
            GTRY(count_of(c, &m));
            GTRY(text_put(t, "(", 1));
            GTRY(points_text(t, c, m));
            GTRY(text_put(t, ")", 1));
            continue;
        }
        Py_ssize_t at = t->len;
        GTRY(wkb_text(t, c, depth + 1));
        if (kind != 7) {  /* MULTIPOINT((1 2),(3 4)): a member from its first "(" */
            char *open = memchr(t->p + at, '(', (size_t)(t->len - at));
            if (!open) return 1;  /* an empty member: the reference's error */
            Py_ssize_t skip = open - (t->p + at);
            memmove(t->p + at, open, (size_t)(t->len - at - skip));
            t->len -= skip;
        }
    }
    return text_put(t, ")", 1);
}

/* A stored GEOMETRY (more than its SRID) as EWKT into t: 0, 1 fall back, -1 error. */
static int geometry_text(text_t *t, const unsigned char *s, Py_ssize_t n) {
    uint32_t srid = u32(s);
    if (srid) {
        char buf[24];
        int k = 5;
        memcpy(buf, "SRID=", 5);
        k += digits_into(buf + k, srid, 1);
        buf[k++] = ';';
        GTRY(text_put(t, buf, k));
    }
    cursor_t c = {s + 4, s + n};
    GTRY(wkb_text(t, &c, 0));
    return c.p == c.end ? 0 : 1;  /* bytes past the geometry: the reference ignores them, MySQL writes none */
}

#define SNEED(c, n) do { if ((c)->end - (c)->p < (Py_ssize_t)(n)) return 1; } while (0)

/* 0 with *v set, or 1: fall back (a kind or a byte it does not expect). */
static inline int scan_value(cursor_t *c, const col_t *col, value_t *v) {
    const unsigned char *p = c->p;
    Py_ssize_t left = c->end - p;
    switch (col->kind) {
    case K_INT8: SNEED(c, 1); c->p += 1; v->type = V_INT; v->i = (int8_t)p[0]; return 0;
    case K_UINT8: SNEED(c, 1); c->p += 1; v->type = V_INT; v->i = p[0]; return 0;
    case K_INT16: SNEED(c, 2); c->p += 2; v->type = V_INT; v->i = (int16_t)le(p, 2); return 0;
    case K_UINT16: SNEED(c, 2); c->p += 2; v->type = V_INT; v->i = (int64_t)le(p, 2); return 0;
    case K_INT24: {
        SNEED(c, 3); c->p += 3;
        int64_t x = (int64_t)le(p, 3);
        v->type = V_INT; v->i = x >= 0x800000 ? x - 0x1000000 : x;
        return 0;
    }
    case K_UINT24: SNEED(c, 3); c->p += 3; v->type = V_INT; v->i = (int64_t)le(p, 3); return 0;
    case K_INT32: SNEED(c, 4); c->p += 4; v->type = V_INT; v->i = (int32_t)le(p, 4); return 0;
    case K_UINT32: SNEED(c, 4); c->p += 4; v->type = V_INT; v->i = (int64_t)le(p, 4); return 0;
    case K_INT64: SNEED(c, 8); c->p += 8; v->type = V_INT; v->i = (int64_t)le(p, 8); return 0;
    case K_UINT64: SNEED(c, 8); c->p += 8; v->type = V_UINT; v->u = le(p, 8); return 0;
    case K_FLOAT: {
        SNEED(c, 4); c->p += 4;
        float f; uint32_t u = (uint32_t)le(p, 4);
        memcpy(&f, &u, 4);
        v->type = V_DOUBLE; v->d = (double)f;
        return 0;
    }
    case K_DOUBLE: {
        SNEED(c, 8); c->p += 8;
        uint64_t u = le(p, 8);
        memcpy(&v->d, &u, 8);
        v->type = V_DOUBLE;
        return 0;
    }
    case K_YEAR: SNEED(c, 1); c->p += 1; v->type = V_INT; v->i = p[0] ? p[0] + 1900 : 0; return 0;
    case K_STR_UTF8: case K_STR_BINARY: case K_STR_GUESS: case K_STR_CODEC: {
        SNEED(c, col->a);
        uint64_t n = le(p, col->a);
        if ((uint64_t)(left - col->a) < n) return 1;
        v->s = p + col->a;
        v->n = (Py_ssize_t)n;
        v->len = col->kind == K_STR_BINARY && col->b > (int)n ? col->b : (int)n;  /* BINARY(b): its stripped zeros */
        c->p = v->s + n;
        v->type = col->kind == K_STR_UTF8 ? V_UTF8 : col->kind == K_STR_BINARY ? V_BYTES
                : col->kind == K_STR_GUESS ? V_GUESS : V_CODEC;
        if (v->type == V_CODEC && !(v->codec = PyUnicode_AsUTF8(col->extra))) { PyErr_Clear(); return 1; }
        return 0;
    }
    case K_DECIMAL: case K_DATETIME2: case K_TIMESTAMP2: case K_DATE: case K_TIME2:
        v->len = text_value(c, col, v->text);
        v->type = V_TEXT;
        return v->len < 0;
    case K_ENUM: {
        SNEED(c, col->a); c->p += col->a;
        uint64_t i = le(p, col->a);
        if (col->extra == Py_None) { v->type = V_UINT; v->u = i; return 0; } /* members unnamed: the index */
        if (i >= (uint64_t)PyList_GET_SIZE(col->extra)) return 1;
        v->type = V_PYSTR; v->obj = PyList_GET_ITEM(col->extra, (Py_ssize_t)i);
        return 0;
    }
    case K_SET:
        SNEED(c, col->a); c->p += col->a;
        v->u = le(p, col->a);
        if (col->extra == Py_None) { v->type = V_UINT; return 0; } /* members unnamed: the bitmask */
        v->type = V_SET; v->obj = col->extra;
        return 0;
    case K_BIT:
        SNEED(c, col->a); c->p += col->a;
        if (col->a > 8) return 1;
        v->type = V_UINT; v->u = bit_value(p, col->a, col->b);
        return 0;
    case K_JSON: {
        SNEED(c, col->a);
        uint64_t n = le(p, col->a);
        if ((uint64_t)(left - col->a) < n) return 1;
        c->p = p + col->a + n;
        if (n == 0) { v->type = V_NULL; return 0; }  /* an empty document: the reference's None */
        v->depth = 0;
        v->room = (Py_ssize_t)n;
        v->budget = &v->room;
        return json_value(p[col->a], p + col->a + 1, (Py_ssize_t)n - 1, v);
    }
    case K_GEOMETRY: case K_VECTOR: {
        SNEED(c, col->a);
        uint64_t n = le(p, col->a);
        if ((uint64_t)(left - col->a) < n) return 1;
        c->p = p + col->a + n;
        v->s = p + col->a;
        v->n = (Py_ssize_t)n;
        v->len = 0;
        /* a GEOMETRY of its SRID or less: the reference's base64 of the bytes */
        v->type = col->kind == K_VECTOR ? V_FLOATS : n > 4 ? V_GEOM : V_BYTES;
        return 0;
    }
    }
    return 1;
}

/* A value as a Python object; NULL with no exception set means "fall back". */
/* A binary value's bytes with the trailing zeros the server stripped from a BINARY(n) (v->len
 * of them in all, at most 255), in tmp when there are any. */
static const unsigned char *binary_bytes(const value_t *v, unsigned char tmp[256], Py_ssize_t *n) {
    *n = v->n;
    if (v->len <= v->n || v->len > 255) return v->s;
    memcpy(tmp, v->s, (size_t)v->n);
    memset(tmp + v->n, 0, (size_t)(v->len - v->n));
    *n = v->len;
    return tmp;
}

static PyObject *to_py(const value_t *v);

/* "base64:type<n>:" of an opaque JSON value into o (<= 16 bytes); its length. Its bytes follow as base64. */
static int opaque_head(const value_t *v, char *o) {
    memcpy(o, "base64:type", 11);
    int k = 11 + digits_into(o + 11, v->u, 1);
    o[k++] = ':';
    return k;
}

/* A JSON object (a dict, keys in the document's order) or array (a list); NULL with no exception
 * set: fall back. */
static PyObject *json_py(const value_t *v) {
    int object = v->i <= J_LARGE_OBJECT;
    Py_ssize_t count = (Py_ssize_t)v->u;
    PyObject *r = object ? PyDict_New() : PyList_New(count);
    const unsigned char *prev = NULL;
    Py_ssize_t prevlen = 0;
    if (!r) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        value_t child;
        const unsigned char *key = NULL;
        Py_ssize_t klen = 0;
        if (json_entry(v, i, &key, &klen, &child) || (object && !json_key_after(prev, prevlen, key, klen))) goto fail;
        PyObject *x = to_py(&child);
        if (!x) goto fail;
        if (!object) { PyList_SET_ITEM(r, i, x); continue; }
        prev = key;
        prevlen = klen;
        PyObject *name = PyUnicode_DecodeUTF8((const char *)key, klen, "strict");
        if (!name) { PyErr_Clear(); Py_DECREF(x); goto fail; }  /* not UTF-8: the reference's base64 key */
        int rc = PyDict_SetItem(r, name, x);
        Py_DECREF(name);
        Py_DECREF(x);
        if (rc < 0) goto fail;
    }
    return r;
fail:
    Py_DECREF(r);
    return NULL;
}

static PyObject *to_py(const value_t *v) {
    switch (v->type) {
    case V_INT: return PyLong_FromLongLong(v->i);
    case V_UINT: return PyLong_FromUnsignedLongLong(v->u);
    case V_DOUBLE: return PyFloat_FromDouble(v->d);
    case V_TEXT: return PyUnicode_FromStringAndSize(v->text, v->len);
    case V_BYTES: {
        unsigned char tmp[256];
        Py_ssize_t n;
        const unsigned char *b = binary_bytes(v, tmp, &n);
        return base64_str(b, n);
    }
    case V_UTF8: case V_GUESS: case V_CODEC: {
        PyObject *r = v->type == V_CODEC ? PyUnicode_Decode((const char *)v->s, v->n, v->codec, "strict")
                                         : PyUnicode_DecodeUTF8((const char *)v->s, v->n, "strict");
        if (!r) {
            PyErr_Clear();
            if (v->type == V_GUESS) return base64_str(v->s, v->n);
        }
        return r;
    }
    case V_PYSTR: Py_INCREF(v->obj); return v->obj;
    case V_SET: {
        PyObject *r = PyList_New(0);
        if (!r || v->obj == Py_None) return r;
        Py_ssize_t n = PyList_GET_SIZE(v->obj);
        for (Py_ssize_t i = 0; i < n && i < 64; i++) {
            if ((v->u >> i) & 1 && PyList_Append(r, PyList_GET_ITEM(v->obj, i)) < 0) { Py_DECREF(r); return NULL; }
        }
        return r;
    }
    case V_NULL: Py_RETURN_NONE;
    case V_BOOL: return PyBool_FromLong((long)v->i);
    case V_OPAQUE: {
        char head[16];
        int k = opaque_head(v, head);
        PyObject *s = PyUnicode_New(k + 4 * ((v->n + 2) / 3), 127);
        if (!s) return NULL;
        memcpy(PyUnicode_DATA(s), head, k);
        base64_into((char *)PyUnicode_DATA(s) + k, v->s, v->n);
        return s;
    }
    case V_JSON: return json_py(v);
    case V_GEOM: {
        text_t t = {NULL, 0, 0};
        int rc = geometry_text(&t, v->s, v->n);
        PyObject *r = rc ? NULL : PyUnicode_New(t.len, 127);  /* ASCII */
        if (r) memcpy(PyUnicode_DATA(r), t.p, (size_t)t.len);
        PyMem_Free(t.p);
        return r;
    }
    case V_FLOATS: {
        Py_ssize_t count = v->n / 4;
        PyObject *r = PyList_New(count);
        for (Py_ssize_t i = 0; r && i < count; i++) {
            float f;
            uint32_t u = (uint32_t)le(v->s + 4 * i, 4);
            memcpy(&f, &u, 4);
            PyObject *x = PyFloat_FromDouble((double)f);
            if (!x) Py_CLEAR(r);
            else PyList_SET_ITEM(r, i, x);
        }
        return r;
    }
    }
    return NULL;
}

/* One value as a Python object, or NULL (no exception set: fall back). */
static PyObject *read_value(cursor_t *c, const col_t *col) {
    value_t v;
    return scan_value(c, col, &v) ? NULL : to_py(&v);
}

static int bit(const unsigned char *bm, Py_ssize_t i) {
    return (bm[i >> 3] >> (i & 7)) & 1;
}

/* One image: {name: value} for the columns in `present`, in column order. */
static PyObject *read_image(cursor_t *c, const col_t *cols, Py_ssize_t ncols, const unsigned char *present,
                            Py_ssize_t npresent) {
    Py_ssize_t nb = (npresent + 7) / 8;
    if (c->end - c->p < nb) return NULL;
    const unsigned char *nulls = c->p;
    c->p += nb;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        if (!bit(present, i)) continue;
        PyObject *v;
        if (bit(nulls, k++)) {
            v = Py_None;
            Py_INCREF(v);
        } else {
            v = read_value(c, &cols[i]);
            if (!v) { Py_DECREF(d); return NULL; }
        }
        int rc = PyDict_SetItem(d, cols[i].name, v);
        Py_DECREF(v);
        if (rc < 0) { Py_DECREF(d); return NULL; }
    }
    return d;
}

static Py_ssize_t count_bits(const unsigned char *bm, Py_ssize_t n) {
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) k += bit(bm, i);
    return k;
}

/* The plan's columns into cols: 0, or -1 with an exception set. */
static int plan_columns(PyObject *plan, col_t *cols, Py_ssize_t ncols) {
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *t = PyTuple_GET_ITEM(plan, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5) { PyErr_SetString(PyExc_TypeError, "bad plan"); return -1; }
        cols[i].name = PyTuple_GET_ITEM(t, 0);
        cols[i].kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        cols[i].a = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
        cols[i].b = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 3));
        cols[i].extra = PyTuple_GET_ITEM(t, 4);
        if (PyErr_Occurred()) return -1;
    }
    return 0;
}

/* The plan's columns into cols, and the event's bitmaps checked against them: 0, or -1 with an
 * exception set (Fallback when the event does not fit the plan). */
static int load_plan(PyObject *plan, col_t *cols, Py_ssize_t ncols, const Py_buffer *body, Py_ssize_t pos,
                     const Py_buffer *pr1, const Py_buffer *pr2, int op) {
    if (pr1->len * 8 < ncols || (op == 1 && pr2->len * 8 < ncols) || pos < 0 || pos > body->len) {
        PyErr_SetNone(Fallback);
        return -1;
    }
    return plan_columns(plan, cols, ncols);
}

/* decode(body, pos, plan, present, present2, op) -> [(before, after), ...]
 * plan: tuple of (name, kind, a, b, extra) per column; op: 0 insert, 1 update, 2 delete. */
static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer body, pr1, pr2;
    Py_ssize_t pos;
    PyObject *plan;
    int op;
    if (!PyArg_ParseTuple(args, "y*nO!y*y*i", &body, &pos, &PyTuple_Type, &plan, &pr1, &pr2, &op)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t ncols = PyTuple_GET_SIZE(plan);
    col_t *cols = PyMem_Calloc(ncols ? ncols : 1, sizeof(col_t));
    if (!cols) { PyErr_NoMemory(); goto done; }
    if (load_plan(plan, cols, ncols, &body, pos, &pr1, &pr2, op) < 0) goto done;
    const unsigned char *p1 = pr1.buf, *p2 = pr2.buf;
    Py_ssize_t n1 = count_bits(p1, ncols), n2 = op == 1 ? count_bits(p2, ncols) : 0;
    cursor_t c = {(const unsigned char *)body.buf + pos, (const unsigned char *)body.buf + body.len};
    out = PyList_New(0);
    if (!out) goto done;
    while (c.p < c.end) {
        const unsigned char *row = c.p;
        PyObject *a = read_image(&c, cols, ncols, p1, n1), *b = NULL, *pair;
        if (!a) goto fail;
        if (op == 1) {
            b = read_image(&c, cols, ncols, p2, n2);
            if (!b) { Py_DECREF(a); goto fail; }
            pair = PyTuple_Pack(2, a, b);
            Py_DECREF(b);
        } else if (op == 0) {
            pair = PyTuple_Pack(2, Py_None, a);
        } else {
            pair = PyTuple_Pack(2, a, Py_None);
        }
        Py_DECREF(a);
        if (!pair || PyList_Append(out, pair) < 0) { Py_XDECREF(pair); goto fail; }
        Py_DECREF(pair);
        if (c.p == row) goto fail;  /* a row of no bytes (no column in the images): not MySQL's */
    }
    goto done;
fail:
    Py_CLEAR(out);
    if (!PyErr_Occurred()) PyErr_SetNone(Fallback);
done:
    PyMem_Free(cols);
    PyBuffer_Release(&body);
    PyBuffer_Release(&pr1);
    PyBuffer_Release(&pr2);
    return out;
}

/* ---- JSON lines ------------------------------------------------------------------------------
 * render() writes the row changes of a rows event straight from the images as the JSON lines
 * `binlake scan --rows` prints, byte for byte what orjson gives for the records decode() feeds
 * (tests/test_json_lines.py compares the two). Status codes below: 0 done, 1 fall back (the
 * caller then takes the records path), -1 a Python exception is set. */

typedef struct {
    PyObject *bytes;  /* grows; cut to len at the end */
    char *p;
    Py_ssize_t len, cap;
} out_t;

static int reserve(out_t *o, Py_ssize_t n) {
    if (o->len + n <= o->cap) return 0;
    Py_ssize_t cap = o->cap;
    while (cap < o->len + n) cap *= 2;
    if (_PyBytes_Resize(&o->bytes, cap) < 0) return -1;
    o->cap = cap;
    o->p = PyBytes_AS_STRING(o->bytes);
    return 0;
}

static int put(out_t *o, const char *s, Py_ssize_t n) {
    if (reserve(o, n) < 0) return -1;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    return 0;
}

static int put_u64(out_t *o, uint64_t v) {
    char buf[24];
    int i = 24;
    do { buf[--i] = (char)('0' + v % 10); v /= 10; } while (v);
    return put(o, buf + i, 24 - i);
}

static int put_i64(out_t *o, int64_t v) {
    if (v >= 0) return put_u64(o, (uint64_t)v);
    if (put(o, "-", 1) < 0) return -1;
    return put_u64(o, (uint64_t)0 - (uint64_t)v);
}

/* Length of the valid UTF-8 sequence at s (2..4), or 0: exactly what Python's strict decoder
 * accepts (no overlongs, no surrogates, nothing above U+10FFFF). */
static int utf8_len(const unsigned char *s, Py_ssize_t left) {
    unsigned char c0 = s[0], lo = 0x80, hi = 0xBF;
    if (c0 >= 0xC2 && c0 <= 0xDF) return left >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c0 >= 0xE0 && c0 <= 0xEF) {
        if (c0 == 0xE0) lo = 0xA0; else if (c0 == 0xED) hi = 0x9F;
        return left >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c0 >= 0xF0 && c0 <= 0xF4) {
        if (c0 == 0xF0) lo = 0x90; else if (c0 == 0xF4) hi = 0x8F;
        return left >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* Does any byte of w need a look: a control character, '"', '\\', or not ASCII? (The bit hacks
 * "haszero" and "hasless": exact about whether any byte matches.) */
/* The length of the ill-formed sequence at s (left bytes) that Python's "replace" error handler
 * takes for one U+FFFD: its maximal subpart, a lead byte and the continuation bytes it accepts
 * (Unicode's "U+FFFD substitution of maximal subparts"), else one byte. */
static int utf8_bad(const unsigned char *s, Py_ssize_t left) {
    unsigned char c0 = s[0], lo = 0x80, hi = 0xBF;
    int need;
    if (c0 >= 0xC2 && c0 <= 0xDF) need = 1;
    else if (c0 >= 0xE0 && c0 <= 0xEF) need = 2, lo = c0 == 0xE0 ? 0xA0 : 0x80, hi = c0 == 0xED ? 0x9F : 0xBF;
    else if (c0 >= 0xF0 && c0 <= 0xF4) need = 3, lo = c0 == 0xF0 ? 0x90 : 0x80, hi = c0 == 0xF4 ? 0x8F : 0xBF;
    else return 1;
    int k = 1;
    if (k < left && s[k] >= lo && s[k] <= hi)
        for (k++; k <= need && k < left && (s[k] & 0xC0) == 0x80; k++) {}
    return k;
}

static inline int special8(uint64_t w) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t q = w ^ (0x22 * ones), b = w ^ (0x5C * ones);
    return (((w - 0x20 * ones) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b) | w) & high ? 1 : 0;
}

/* put_str's check beside 0 (the bytes are known UTF-8) and 1 (validate them) */
#define UTF8_REPLACE 2

/* A JSON string of UTF-8 bytes, escaped as orjson escapes (\" \\ \b \t \n \f \r, other controls
 * \u00xx, the rest as is), in one pass. check: validate the UTF-8 too; 1 when it is not valid
 * (what was written of it stays: the caller starts again from its mark); UTF8_REPLACE: what is not
 * valid is written as bytes.decode("utf-8", "replace") gives it. */
static int put_str(out_t *o, const unsigned char *s, Py_ssize_t n, int check) {
    static const char HEX[] = "0123456789abcdef";
    if (reserve(o, n + 2) < 0) return -1;
    o->p[o->len++] = '"';
    Py_ssize_t run = 0, i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!special8(w)) { i += 8; continue; }
        }
        unsigned char ch = s[i];
        if (ch >= 0x80) {
            int k = check ? utf8_len(s + i, n - i) : 1;
            if (!k && check != UTF8_REPLACE) return 1;
            if (!k) {  /* U+FFFD for the ill-formed sequence, as bytes.decode("utf-8", "replace") */
                k = utf8_bad(s + i, n - i);
                if (reserve(o, (i - run) + 3 + (n - i) + 1) < 0) return -1;
                memcpy(o->p + o->len, s + run, i - run);
                o->len += i - run;
                memcpy(o->p + o->len, "\xEF\xBF\xBD", 3);
                o->len += 3;
                run = i + k;
            }
            i += k;
            continue;
        }
        if (ch >= 0x20 && ch != '"' && ch != '\\') { i++; continue; }
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        int k = 2;
        switch (ch) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\t': esc[1] = 't'; break;
        case '\n': esc[1] = 'n'; break;
        case '\f': esc[1] = 'f'; break;
        case '\r': esc[1] = 'r'; break;
        default: memcpy(esc + 1, "u00", 3); esc[4] = HEX[ch >> 4]; esc[5] = HEX[ch & 15]; k = 6;
        }
        /* what is left of the input, plus this escape, plus the closing quote */
        if (reserve(o, (i - run) + k + (n - i) + 1) < 0) return -1;
        memcpy(o->p + o->len, s + run, i - run);
        o->len += i - run;
        memcpy(o->p + o->len, esc, k);
        o->len += k;
        run = ++i;
    }
    if (reserve(o, (n - run) + 1) < 0) return -1;
    memcpy(o->p + o->len, s + run, n - run);
    o->len += n - run;
    o->p[o->len++] = '"';
    return 0;
}

static int put_pystr(out_t *o, PyObject *str) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(str, &n);
    if (!u) { PyErr_Clear(); return 1; }  /* lone surrogates: the records path says what happens */
    return put_str(o, (const unsigned char *)u, n, 0);
}

static PyObject *float_dumps;  /* orjson.dumps: its float formatting is the one to match, and fast */

/* A Python value (a new reference, which this releases; NULL: the error of making it) as orjson
 * writes it, by orjson: doubles the shortest round trip, NaN and Infinity null. */
static int put_dumps(out_t *o, PyObject *x) {
    if (!x) return -1;
    PyObject *text = PyObject_CallOneArg(float_dumps, x);
    Py_DECREF(x);
    if (!text) return -1;
    int rc = PyBytes_Check(text) ? put(o, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text)) : 1;
    Py_DECREF(text);
    return rc;
}

static int put_double(out_t *o, double d) {
    return put_dumps(o, PyFloat_FromDouble(d));
}

#define TRY(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)

static int to_json(out_t *o, const value_t *v);

/* A JSON object or array as orjson writes what json_py gives: 0, 1 fall back, -1 error. */
static int json_put(out_t *o, const value_t *v) {
    int object = v->i <= J_LARGE_OBJECT;
    const unsigned char *prev = NULL;
    Py_ssize_t prevlen = 0;
    TRY(put(o, object ? "{" : "[", 1));
    for (Py_ssize_t i = 0; i < (Py_ssize_t)v->u; i++) {
        value_t child;
        const unsigned char *key = NULL;
        Py_ssize_t klen = 0;
        if (json_entry(v, i, &key, &klen, &child)) return 1;
        if (i) TRY(put(o, ",", 1));
        if (object) {
            if (!json_key_after(prev, prevlen, key, klen)) return 1;
            prev = key;
            prevlen = klen;
            TRY(put_str(o, key, klen, 1));  /* 1 when not UTF-8: the reference's base64 key */
            TRY(put(o, ":", 1));
        }
        TRY(to_json(o, &child));
    }
    return put(o, object ? "}" : "]", 1);
}

/* A value as JSON: what to_py gives, as orjson writes it. */
static int to_json(out_t *o, const value_t *v) {
    switch (v->type) {
    case V_INT: return put_i64(o, v->i);
    case V_UINT: return put_u64(o, v->u);
    case V_DOUBLE: return put_double(o, v->d);
    case V_TEXT: {
        if (reserve(o, v->len + 2) < 0) return -1;
        o->p[o->len++] = '"';
        memcpy(o->p + o->len, v->text, v->len);
        o->len += v->len;
        o->p[o->len++] = '"';
        return 0;
    }
    case V_CODEC: {
        PyObject *str = PyUnicode_Decode((const char *)v->s, v->n, v->codec, "strict");
        if (!str) { PyErr_Clear(); return 1; }
        int rc = put_pystr(o, str);
        Py_DECREF(str);
        return rc;
    }
    case V_UTF8: case V_GUESS: {
        Py_ssize_t mark = o->len;
        int rc = put_str(o, v->s, v->n, 1);
        if (rc != 1 || v->type == V_UTF8) return rc;
        o->len = mark;  /* not UTF-8: as bytes */
    }
    /* fall through */
    case V_BYTES: {
        unsigned char tmp[256];
        Py_ssize_t n;
        const unsigned char *b = binary_bytes(v, tmp, &n);
        Py_ssize_t m = 4 * ((n + 2) / 3);
        if (reserve(o, m + 9) < 0) return -1;
        memcpy(o->p + o->len, "\"base64:", 8);
        base64_into(o->p + o->len + 8, b, n);
        o->len += m + 8;
        o->p[o->len++] = '"';
        return 0;
    }
    case V_PYSTR: return put_pystr(o, v->obj);
    case V_SET: {
        TRY(put(o, "[", 1));
        if (v->obj != Py_None) {
            Py_ssize_t n = PyList_GET_SIZE(v->obj);
            int first = 1;
            for (Py_ssize_t i = 0; i < n && i < 64; i++) {
                if (!((v->u >> i) & 1)) continue;
                if (!first) TRY(put(o, ",", 1));
                first = 0;
                TRY(put_pystr(o, PyList_GET_ITEM(v->obj, i)));
            }
        }
        return put(o, "]", 1);
    }
    case V_NULL: return put(o, "null", 4);
    case V_BOOL: return v->i ? put(o, "true", 4) : put(o, "false", 5);
    case V_OPAQUE:
        if (reserve(o, 4 * ((v->n + 2) / 3) + 18) < 0) return -1;
        o->p[o->len++] = '"';
        o->len += opaque_head(v, o->p + o->len);
        base64_into(o->p + o->len, v->s, v->n);
        o->len += 4 * ((v->n + 2) / 3);
        o->p[o->len++] = '"';
        return 0;
    case V_JSON: return json_put(o, v);
    case V_GEOM: {
        text_t t = {NULL, 0, 0};
        int rc = geometry_text(&t, v->s, v->n);
        if (!rc) rc = reserve(o, t.len + 2);
        if (!rc) {  /* ASCII with nothing JSON escapes */
            o->p[o->len++] = '"';
            memcpy(o->p + o->len, t.p, (size_t)t.len);
            o->len += t.len;
            o->p[o->len++] = '"';
        }
        PyMem_Free(t.p);
        return rc;
    }
    case V_FLOATS: return put_dumps(o, to_py(v));  /* the list to_py gives, as orjson writes it */
    }
    return 1;
}

/* ---- Values counted, not written ---------------------------------------------------------------
 * The lane without rows (a scan without --rows, the Spark job's facts pass) only counts a
 * transaction's row changes, but must take it only where the walk, which decodes every value,
 * would: check_value refuses exactly what to_json refuses, and writes nothing. */

/* Whether s[0..n) is UTF-8 as Python's strict decoder takes it. */
static int utf8_valid(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint64_t w;
        if (i + 8 <= n && (memcpy(&w, s + i, 8), !(w & 0x8080808080808080ULL))) { i += 8; continue; }
        if (s[i] < 0x80) { i++; continue; }
        int k = utf8_len(s + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

/* put_pystr's refusal: a str with no UTF-8 (lone surrogates). */
static int pystr_refused(PyObject *str) {
    if (PyUnicode_AsUTF8AndSize(str, NULL)) return 0;
    PyErr_Clear();
    return 1;
}

static int check_value(const value_t *v);

/* json_put's refusals. */
static int check_json(const value_t *v) {
    int object = v->i <= J_LARGE_OBJECT;
    const unsigned char *prev = NULL;
    Py_ssize_t prevlen = 0;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)v->u; i++) {
        value_t child;
        const unsigned char *key = NULL;
        Py_ssize_t klen = 0;
        if (json_entry(v, i, &key, &klen, &child)) return 1;
        if (object) {
            if (!json_key_after(prev, prevlen, key, klen) || !utf8_valid(key, klen)) return 1;
            prev = key;
            prevlen = klen;
        }
        TRY(check_value(&child));
    }
    return 0;
}

/* to_json's answer for v, 0 or 1 fall back, without the writing. */
static int check_value(const value_t *v) {
    switch (v->type) {
    case V_INT: case V_UINT: case V_DOUBLE: case V_TEXT: case V_GUESS: case V_BYTES: case V_NULL: case V_BOOL:
    case V_OPAQUE: case V_FLOATS:
        return 0;
    case V_UTF8: return !utf8_valid(v->s, v->n);
    case V_CODEC: {
        PyObject *str = PyUnicode_Decode((const char *)v->s, v->n, v->codec, "strict");
        if (!str) { PyErr_Clear(); return 1; }
        int rc = pystr_refused(str);
        Py_DECREF(str);
        return rc;
    }
    case V_PYSTR: return pystr_refused(v->obj);
    case V_SET:
        for (Py_ssize_t i = 0; v->obj != Py_None && i < PyList_GET_SIZE(v->obj) && i < 64; i++)
            if (((v->u >> i) & 1) && pystr_refused(PyList_GET_ITEM(v->obj, i))) return 1;
        return 0;
    case V_JSON: return check_json(v);
    case V_GEOM: {
        text_t t = {NULL, 0, 0};
        int rc = geometry_text(&t, v->s, v->n);
        PyMem_Free(t.p);
        return rc;
    }
    }
    return 1;
}

/* put_image's answer for the image at c, the cursor moved past it as put_image moves it. */
static int check_image(cursor_t *c, const col_t *cols, Py_ssize_t ncols, const unsigned char *present,
                       Py_ssize_t npresent) {
    Py_ssize_t nb = (npresent + 7) / 8;
    if (c->end - c->p < nb) return 1;
    const unsigned char *nulls = c->p;
    c->p += nb;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        value_t v;
        if (!bit(present, i) || bit(nulls, k++)) continue;
        if (cols[i].kind == K_DECIMAL) {  /* checked, not written */
            if (decimal_text(c, cols[i].a, cols[i].b, NULL) < 0) return 1;
            continue;
        }
        if (scan_value(c, &cols[i], &v)) return 1;
        TRY(check_value(&v));
    }
    return 0;
}

/* One value as JSON: 0, 1 fall back, -1 error. */
static int put_value(out_t *o, cursor_t *c, const col_t *col) {
    value_t v;
    return scan_value(c, col, &v) ? 1 : to_json(o, &v);
}

/* One image as a JSON object, keys (`"name":`, from the caller) in column order. */
static int put_image(out_t *o, cursor_t *c, const col_t *cols, PyObject *keys, Py_ssize_t ncols,
                     const unsigned char *present, Py_ssize_t npresent) {
    Py_ssize_t nb = (npresent + 7) / 8;
    if (c->end - c->p < nb) return 1;
    const unsigned char *nulls = c->p;
    c->p += nb;
    TRY(put(o, "{", 1));
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        if (!bit(present, i)) continue;
        if (k) TRY(put(o, ",", 1));
        PyObject *key = PyTuple_GET_ITEM(keys, i);
        TRY(put(o, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)));
        if (bit(nulls, k++)) TRY(put(o, "null", 4));
        else TRY(put_value(o, c, &cols[i]));
    }
    return put(o, "}", 1);
}

/* Whether keys has a JSON key (bytes) per column of the plan; else a TypeError set. */
static int keys_fit(PyObject *plan, PyObject *keys) {
    Py_ssize_t ncols = PyTuple_GET_SIZE(plan);
    int fit = PyTuple_GET_SIZE(keys) == ncols;
    for (Py_ssize_t i = 0; fit && i < ncols; i++) fit = PyBytes_Check(PyTuple_GET_ITEM(keys, i));
    if (!fit) PyErr_SetString(PyExc_TypeError, "bad keys");
    return fit;
}

/* The plan's columns (PyMem_Free them) with the JSON key of each, for render() and columns();
 * NULL with an exception set. */
static col_t *keyed_plan(PyObject *plan, PyObject *keys, const Py_buffer *body, Py_ssize_t pos,
                         const Py_buffer *pr1, const Py_buffer *pr2, int op) {
    Py_ssize_t ncols = PyTuple_GET_SIZE(plan);
    if (!keys_fit(plan, keys)) return NULL;
    col_t *cols = PyMem_Calloc(ncols ? ncols : 1, sizeof(col_t));
    if (!cols) { PyErr_NoMemory(); return NULL; }
    if (load_plan(plan, cols, ncols, body, pos, pr1, pr2, op) < 0) { PyMem_Free(cols); return NULL; }
    return cols;
}

/* What each JSON line of a rows event is made of around its seq and images. */
typedef struct {
    const char *head;  /* up to `"seq":` */
    Py_ssize_t head_len;
    const char *mid;  /* after the seq, up to `"before":` */
    Py_ssize_t mid_len;
    const char *tail;  /* after the images, with the newline */
    Py_ssize_t tail_len;
} line_parts_t;

#define AFTER_KEY ",\"after\":" /* between a line's images */

/* The row changes of the images at c as JSON lines into o, numbered from seq; *rows counted.
 * Each: head, its seq, mid, before, AFTER_KEY, after, tail. 0 done, 1 fall back, -1 error. */
static int lines_into(out_t *o, cursor_t *c, const col_t *cols, PyObject *keys, Py_ssize_t ncols,
                      const unsigned char *p1, const unsigned char *p2, int op, const line_parts_t *parts,
                      long long seq, Py_ssize_t *rows) {
    Py_ssize_t n1 = count_bits(p1, ncols), n2 = op == 1 ? count_bits(p2, ncols) : 0;
    int rc = 0;
    while (c->p < c->end && !rc) {
        const unsigned char *row = c->p;
        if ((rc = put(o, parts->head, parts->head_len)) || (rc = put_i64(o, seq++)) ||
            (rc = put(o, parts->mid, parts->mid_len)))
            break;
        if (op == 0) rc = put(o, "null" AFTER_KEY, sizeof AFTER_KEY + 3);
        if (!rc) rc = put_image(o, c, cols, keys, ncols, p1, n1);
        if (!rc && op != 0) rc = put(o, AFTER_KEY, sizeof AFTER_KEY - 1);
        if (!rc) rc = op == 1 ? put_image(o, c, cols, keys, ncols, p2, n2) : op == 2 ? put(o, "null", 4) : 0;
        if (!rc) rc = put(o, parts->tail, parts->tail_len);
        if (!rc && c->p == row) rc = 1;  /* a row of no bytes (no column in the images): not MySQL's */
        (*rows)++;
    }
    return rc;
}

/* render(body, pos, plan, keys, present, present2, op, head, seq, mid, tail) -> (rows, lines)
 * Each row change: head, its seq, mid (ending `"before":`), before, `,"after":`, after, tail.
 * keys: per column `"name":` as JSON bytes. Raises Fallback where decode() would. */
static PyObject *render(PyObject *self, PyObject *args) {
    Py_buffer body, pr1, pr2, head, mid, tail;
    Py_ssize_t pos;
    long long seq;
    PyObject *plan, *keys;
    int op;
    if (!PyArg_ParseTuple(args, "y*nO!O!y*y*iy*Ly*y*", &body, &pos, &PyTuple_Type, &plan, &PyTuple_Type, &keys,
                          &pr1, &pr2, &op, &head, &seq, &mid, &tail)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t ncols = PyTuple_GET_SIZE(plan), rows = 0;
    out_t o = {NULL, NULL, 0, 0};
    col_t *cols = keyed_plan(plan, keys, &body, pos, &pr1, &pr2, op);
    if (!cols) goto done;
    const unsigned char *p1 = pr1.buf, *p2 = pr2.buf;
    cursor_t c = {(const unsigned char *)body.buf + pos, (const unsigned char *)body.buf + body.len};
    o.cap = 2 * (body.len - pos) + 1024;
    o.bytes = PyBytes_FromStringAndSize(NULL, o.cap);
    if (!o.bytes) goto done;
    o.p = PyBytes_AS_STRING(o.bytes);
    line_parts_t parts = {head.buf, head.len, mid.buf, mid.len, tail.buf, tail.len};
    int rc = lines_into(&o, &c, cols, keys, ncols, p1, p2, op, &parts, seq, &rows);
    if (rc > 0) PyErr_SetNone(Fallback);
    if (rc || _PyBytes_Resize(&o.bytes, o.len) < 0) goto done;
    result = Py_BuildValue("nO", rows, o.bytes);
done:
    Py_XDECREF(o.bytes);
    PyMem_Free(cols);
    PyBuffer_Release(&body);
    PyBuffer_Release(&pr1);
    PyBuffer_Release(&pr2);
    PyBuffer_Release(&head);
    PyBuffer_Release(&mid);
    PyBuffer_Release(&tail);
    return result;
}

/* One image per row, as JSON object texts in an Arrow string column's buffers: offsets (int32,
 * rows + 1 of them) and data. 0 done, 1 fall back (over 2 GiB: Arrow's string offsets), -1 error. */
typedef struct {
    out_t data, offsets;
} column_t;

static int column_start(column_t *col, Py_ssize_t rows_guess, Py_ssize_t data_guess) {
    col->offsets.cap = 4 * (rows_guess + 1);
    col->data.cap = data_guess;
    col->offsets.bytes = PyBytes_FromStringAndSize(NULL, col->offsets.cap);
    col->data.bytes = PyBytes_FromStringAndSize(NULL, col->data.cap);
    if (!col->offsets.bytes || !col->data.bytes) return -1;
    col->offsets.p = PyBytes_AS_STRING(col->offsets.bytes);
    col->data.p = PyBytes_AS_STRING(col->data.bytes);
    return put(&col->offsets, "\0\0\0\0", 4);
}

static int column_mark(column_t *col) {
    if (col->data.len > INT32_MAX) return 1;
    int32_t at = (int32_t)col->data.len;
    return put(&col->offsets, (const char *)&at, 4);  /* little-endian, as Arrow's buffers */
}

static PyObject *column_done(column_t *col) {
    if (_PyBytes_Resize(&col->offsets.bytes, col->offsets.len) < 0) return NULL;
    if (_PyBytes_Resize(&col->data.bytes, col->data.len) < 0) return NULL;
    return PyTuple_Pack(2, col->offsets.bytes, col->data.bytes);
}

static void columns_release(column_t *c1, column_t *c2) {
    Py_XDECREF(c1->data.bytes);
    Py_XDECREF(c1->offsets.bytes);
    Py_XDECREF(c2->data.bytes);
    Py_XDECREF(c2->offsets.bytes);
}

/* The images at c as columns: c1 the first image of each row (an insert's after, an update's or a
 * delete's before), c2 an update's after; *rows counted. 0 done, 1 fall back, -1 error. */
static int images_into(column_t *c1, column_t *c2, cursor_t *c, const col_t *cols, PyObject *keys, Py_ssize_t ncols,
                       const unsigned char *p1, const unsigned char *p2, int op, Py_ssize_t *rows) {
    Py_ssize_t n1 = count_bits(p1, ncols), n2 = op == 1 ? count_bits(p2, ncols) : 0;
    Py_ssize_t size = c->end - c->p, guess = size / 16 + 16;
    if (column_start(c1, guess, 2 * size + 64) < 0 || (op == 1 && column_start(c2, guess, 2 * size + 64) < 0))
        return -1;
    int rc = 0;
    while (c->p < c->end && !rc) {
        const unsigned char *row = c->p;
        rc = put_image(&c1->data, c, cols, keys, ncols, p1, n1);
        if (!rc) rc = column_mark(c1);
        if (!rc && op == 1) rc = put_image(&c2->data, c, cols, keys, ncols, p2, n2);
        if (!rc && op == 1) rc = column_mark(c2);
        if (!rc && c->p == row) rc = 1;  /* a row of no bytes (no column in the images): not MySQL's */
        (*rows)++;
    }
    return rc;
}

/* columns(body, pos, plan, keys, present, present2, op) -> (rows, before, after)
 * before / after: (offsets, data) of the images as JSON objects, the same text render() writes
 * in a line; None for the side the operation has none of (an insert's before, a delete's after).
 * The Spark job builds its Arrow batches from them. Raises Fallback where decode() would. */
static PyObject *columns(PyObject *self, PyObject *args) {
    Py_buffer body, pr1, pr2;
    Py_ssize_t pos;
    PyObject *plan, *keys;
    int op;
    if (!PyArg_ParseTuple(args, "y*nO!O!y*y*i", &body, &pos, &PyTuple_Type, &plan, &PyTuple_Type, &keys,
                          &pr1, &pr2, &op)) return NULL;
    PyObject *result = NULL, *first = NULL, *second = NULL;
    Py_ssize_t ncols = PyTuple_GET_SIZE(plan), rows = 0;
    column_t c1 = {{NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}}, c2 = c1;
    col_t *cols = keyed_plan(plan, keys, &body, pos, &pr1, &pr2, op);
    if (!cols) goto done;
    const unsigned char *p1 = pr1.buf, *p2 = pr2.buf;
    cursor_t c = {(const unsigned char *)body.buf + pos, (const unsigned char *)body.buf + body.len};
    int rc = images_into(&c1, &c2, &c, cols, keys, ncols, p1, p2, op, &rows);
    if (rc > 0) PyErr_SetNone(Fallback);
    if (rc || !(first = column_done(&c1)) || (op == 1 && !(second = column_done(&c2)))) goto done;
    if (op == 0) result = Py_BuildValue("nOO", rows, Py_None, first);
    else result = Py_BuildValue("nOO", rows, first, op == 1 ? second : Py_None);
done:
    Py_XDECREF(first);
    Py_XDECREF(second);
    columns_release(&c1, &c2);
    PyMem_Free(cols);
    PyBuffer_Release(&body);
    PyBuffer_Release(&pr1);
    PyBuffer_Release(&pr2);
    return result;
}

/* swap_heads(lines, old, new) -> lines with each line's first `old` bytes (its head) replaced by
 * new: the JSON lines of a segment whose end_segment was guessed wrong, mended in one copy. */
static PyObject *swap_heads(PyObject *self, PyObject *args) {
    Py_buffer in, head;
    Py_ssize_t old;
    if (!PyArg_ParseTuple(args, "y*ny*", &in, &old, &head)) return NULL;
    const char *p = in.buf, *end = p + in.len;
    Py_ssize_t lines = 0;
    for (const char *q = p; q < end && (q = memchr(q, '\n', end - q)); q++) lines++;
    PyObject *out = NULL;
    if (old < 0 || (in.len && end[-1] != '\n')) {
        PyErr_SetString(PyExc_ValueError, "not whole lines");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, in.len + lines * (head.len - old));
    if (!out) goto done;
    char *o = PyBytes_AS_STRING(out);
    while (p < end) {
        const char *nl = memchr(p, '\n', end - p);
        if (nl - p < old) { Py_CLEAR(out); PyErr_SetString(PyExc_ValueError, "a line shorter than its head"); goto done; }
        memcpy(o, head.buf, head.len);
        o += head.len;
        memcpy(o, p + old, nl + 1 - (p + old));
        o += nl + 1 - (p + old);
        p = nl + 1;
    }
done:
    PyBuffer_Release(&in);
    PyBuffer_Release(&head);
    return out;
}

/* ---- The lane (_lane.h) --------------------------------------------------------------------- */
#include "_lane.h"

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Row images of a rows event body from pos: [(before, after), ...]."},
    {"render", render, METH_VARARGS, "The row changes of a rows event body from pos as JSON lines: (rows, bytes)."},
    {"columns", columns, METH_VARARGS, "A rows event's images from pos as JSON texts in Arrow buffers: (rows, before, after)."},
    {"swap_heads", swap_heads, METH_VARARGS, "JSON lines with each line's first `old` bytes replaced."},
    {"compile", compile_plan, METH_VARARGS, "A plan and its JSON keys, loaded once for the lane."},
    {"lane", lane, METH_VARARGS, "A run of ordinary transactions as JSON lines: (lines, pos, txns, events, rows)."},
    {"lane_layouts", lane_layouts, METH_O, "What the lane writes: a record line, a row change line, column names."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rowdecode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rowdecode(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *orjson = PyImport_ImportModule("orjson");
    if (!orjson) return NULL;
    float_dumps = PyObject_GetAttrString(orjson, "dumps");
    Py_DECREF(orjson);
    if (!float_dumps) return NULL;
    walk_init();
    if (add_event_constants(m) < 0) return NULL;
    Fallback = PyErr_NewException("binlake.binlog._rowdecode.Fallback", NULL, NULL);
    if (!Fallback || PyModule_AddObject(m, "Fallback", Fallback) < 0) return NULL;
    Py_INCREF(Fallback);
#define K(n) PyModule_AddIntConstant(m, #n, n)
    K(K_INT8); K(K_UINT8); K(K_INT16); K(K_UINT16); K(K_INT24); K(K_UINT24); K(K_INT32); K(K_UINT32);
    K(K_INT64); K(K_UINT64); K(K_FLOAT); K(K_DOUBLE); K(K_YEAR); K(K_STR_UTF8); K(K_STR_BINARY);
    K(K_STR_GUESS); K(K_STR_CODEC); K(K_DECIMAL); K(K_DATETIME2); K(K_TIMESTAMP2); K(K_TIME2); K(K_DATE);
    K(K_ENUM); K(K_SET); K(K_BIT); K(K_JSON); K(K_GEOMETRY); K(K_VECTOR);
#undef K
    return m;
}
