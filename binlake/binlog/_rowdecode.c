/* Row images of a rows event decoded in one pass, straight to binlake's JSON-typed values.
 *
 * The compiled twin of binlake/binlog/rows.py's reference path (mysql-replication's decoders
 * plus _Converter): for every column kind it handles it must give the very same Python values,
 * and tests/test_rowdecode.py compares the two on every rows event of the test data and the
 * public fixtures. Anything it does not handle, or any byte it does not expect, raises
 * Fallback: the caller then decodes the event with the reference path, which also words the
 * error when the event is really broken. So this file never decides what an error says.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *Fallback;

enum kind {
    K_INT8 = 1, K_UINT8, K_INT16, K_UINT16, K_INT24, K_UINT24, K_INT32, K_UINT32, K_INT64, K_UINT64,
    K_FLOAT, K_DOUBLE, K_YEAR,
    K_STR_UTF8,    /* a = length bytes (1..4) */
    K_STR_BINARY,  /* "base64:..." */
    K_STR_GUESS,   /* no charset in the metadata: UTF-8 when it is, else base64 */
    K_STR_CODEC,   /* extra = Python codec name */
    K_DECIMAL,     /* a = precision, b = scale */
    K_DATETIME2, K_TIMESTAMP2, K_TIME2,  /* a = fsp */
    K_DATE,
    K_ENUM, K_SET, /* a = size in bytes, extra = list of names (ENUM: [""] + names) */
    K_BIT,         /* a = bytes, b = bits */
};

typedef struct {
    int kind, a, b;
    PyObject *name;   /* borrowed from the plan tuple */
    PyObject *extra;  /* borrowed */
} col_t;

typedef struct {
    const unsigned char *p, *end;
} cursor_t;

#define NEED(c, n) do { if ((c)->end - (c)->p < (Py_ssize_t)(n)) goto fallback; } while (0)

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

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

/* "YYYY-MM-DD HH:MM:SS[.ffffff]" cut to fsp digits, as rows._fmt_datetime gives it. */
static PyObject *fmt_datetime(long y, int mo, int d, int h, int mi, int s, long us, int fsp) {
    char buf[40];
    int n = snprintf(buf, sizeof buf, "%04ld-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, s);
    if (fsp) {
        char frac[8];
        snprintf(frac, sizeof frac, "%06ld", us);
        buf[n++] = '.';
        memcpy(buf + n, frac, fsp);
        n += fsp;
    }
    return PyUnicode_FromStringAndSize(buf, n);
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

static PyObject *base64_str(const unsigned char *p, Py_ssize_t n) {
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Py_ssize_t out_len = 7 + 4 * ((n + 2) / 3);
    PyObject *s = PyUnicode_New(out_len, 127);
    if (!s) return NULL;
    char *o = (char *)PyUnicode_DATA(s);
    memcpy(o, "base64:", 7);
    o += 7;
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
    return s;
}

/* NEWDECIMAL: sign, integer digits without leading zeros, exactly `scale` fraction digits. */
static PyObject *read_decimal(cursor_t *c, int precision, int scale) {
    int intg = precision - scale;
    int intg0 = intg / 9, frac0 = scale / 9;
    int intg0x = intg - intg0 * 9, frac0x = scale - frac0 * 9;
    int size = intg0 * 4 + DIG2BYTES[intg0x] + frac0 * 4 + DIG2BYTES[frac0x];
    if (precision < 1 || precision > 65 || scale > 30 || scale > precision || size < 1) return NULL;
    if (c->end - c->p < size) return NULL;
    unsigned char b[40];
    memcpy(b, c->p, size);
    c->p += size;
    int negative = !(b[0] & 0x80);
    b[0] ^= 0x80;
    if (negative) for (int i = 0; i < size; i++) b[i] = ~b[i];
    char digits[100];
    int n = 0, pos = 0;
    uint64_t v;
    if (DIG2BYTES[intg0x]) {
        v = be(b + pos, DIG2BYTES[intg0x]);
        pos += DIG2BYTES[intg0x];
        if (v >= 1000000000) return NULL;
        n += snprintf(digits + n, sizeof digits - n, "%0*u", intg0x, (unsigned)v);
    }
    for (int i = 0; i < intg0; i++, pos += 4) {
        v = be(b + pos, 4);
        if (v > 999999999) return NULL;
        n += snprintf(digits + n, sizeof digits - n, "%09u", (unsigned)v);
    }
    char out[110];
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
            if (v > 999999999) return NULL;
            o += snprintf(out + o, sizeof out - o, "%09u", (unsigned)v);
        }
        if (frac0x) {
            v = be(b + pos, DIG2BYTES[frac0x]);
            uint64_t lim = 1;
            for (int i = 0; i < frac0x; i++) lim *= 10;
            if (v >= lim) return NULL;
            o += snprintf(out + o, sizeof out - o, "%0*u", frac0x, (unsigned)v);
        }
    }
    return PyUnicode_FromStringAndSize(out, o);
}

/* One value; NULL with no exception set means "fall back". */
static PyObject *read_value(cursor_t *c, const col_t *col) {
    const unsigned char *p = c->p;
    Py_ssize_t left = c->end - p;
    switch (col->kind) {
    case K_INT8: NEED(c, 1); c->p += 1; return PyLong_FromLong((int8_t)p[0]);
    case K_UINT8: NEED(c, 1); c->p += 1; return PyLong_FromLong(p[0]);
    case K_INT16: NEED(c, 2); c->p += 2; return PyLong_FromLong((int16_t)le(p, 2));
    case K_UINT16: NEED(c, 2); c->p += 2; return PyLong_FromLong((long)le(p, 2));
    case K_INT24: {
        NEED(c, 3); c->p += 3;
        long v = (long)le(p, 3);
        return PyLong_FromLong(v >= 0x800000 ? v - 0x1000000 : v);
    }
    case K_UINT24: NEED(c, 3); c->p += 3; return PyLong_FromLong((long)le(p, 3));
    case K_INT32: NEED(c, 4); c->p += 4; return PyLong_FromLong((int32_t)le(p, 4));
    case K_UINT32: NEED(c, 4); c->p += 4; return PyLong_FromUnsignedLong((unsigned long)le(p, 4));
    case K_INT64: NEED(c, 8); c->p += 8; return PyLong_FromLongLong((int64_t)le(p, 8));
    case K_UINT64: NEED(c, 8); c->p += 8; return PyLong_FromUnsignedLongLong(le(p, 8));
    case K_FLOAT: {
        NEED(c, 4); c->p += 4;
        float f; uint32_t u = (uint32_t)le(p, 4);
        memcpy(&f, &u, 4);
        return PyFloat_FromDouble((double)f);
    }
    case K_DOUBLE: {
        NEED(c, 8); c->p += 8;
        double d; uint64_t u = le(p, 8);
        memcpy(&d, &u, 8);
        return PyFloat_FromDouble(d);
    }
    case K_YEAR: NEED(c, 1); c->p += 1; return PyLong_FromLong(p[0] + 1900);
    case K_STR_UTF8: case K_STR_BINARY: case K_STR_GUESS: case K_STR_CODEC: {
        NEED(c, col->a);
        uint64_t n = le(p, col->a);
        if ((uint64_t)(left - col->a) < n) goto fallback;
        const unsigned char *s = p + col->a;
        c->p = s + n;
        if (col->kind == K_STR_BINARY) return base64_str(s, (Py_ssize_t)n);
        if (col->kind == K_STR_CODEC) {
            PyObject *r = PyUnicode_Decode((const char *)s, (Py_ssize_t)n, PyUnicode_AsUTF8(col->extra), "strict");
            if (!r) PyErr_Clear();
            return r;
        }
        PyObject *r = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)n, "strict");
        if (!r) {
            PyErr_Clear();
            if (col->kind == K_STR_GUESS) return base64_str(s, (Py_ssize_t)n);
        }
        return r;
    }
    case K_DECIMAL: return read_decimal(c, col->a, col->b);
    case K_DATETIME2: {
        NEED(c, 5); c->p += 5;
        uint64_t v = be(p, 5);
        long ym = (long)((v >> 22) & 0x1FFFF);
        long y = ym / 13; int mo = ym % 13;
        int d = (v >> 17) & 31, h = (v >> 12) & 31, mi = (v >> 6) & 63, s = v & 63;
        long us;
        if (read_fsp(c, col->a, &us) < 0) goto fallback;
        if (!(v >> 39)) goto fallback;  /* negative: never written by MySQL */
        if (y < 1 || y > 9999 || mo < 1 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59)
            return PyUnicode_FromString("0000-00-00 00:00:00");
        if (y < 1000) goto fallback;  /* strftime's %Y does not pad: leave it to the reference */
        return fmt_datetime(y, mo, d, h, mi, s, us, col->a);
    }
    case K_TIMESTAMP2: {
        NEED(c, 4); c->p += 4;
        int32_t t = (int32_t)be(p, 4);
        long us;
        if (read_fsp(c, col->a, &us) < 0 || t < 0) goto fallback;
        long y; int mo, d;
        civil(t / 86400, &y, &mo, &d);
        long sec = t % 86400;
        return fmt_datetime(y, mo, d, (int)(sec / 3600), (int)(sec / 60 % 60), (int)(sec % 60), us, col->a);
    }
    case K_DATE: {
        NEED(c, 3); c->p += 3;
        long v = (long)le(p, 3);
        long y = (v >> 9) & 0x7FFF; int mo = (v >> 5) & 15, d = v & 31;
        if (y == 0 || mo == 0 || d == 0) return PyUnicode_FromString("0000-00-00");
        if (y > 9999 || mo > 12 || d > days_in_month(y, mo)) goto fallback;
        char buf[16];
        int n = snprintf(buf, sizeof buf, "%04ld-%02d-%02d", y, mo, d);
        return PyUnicode_FromStringAndSize(buf, n);
    }
    case K_TIME2: {
        NEED(c, 3); c->p += 3;
        uint32_t v = (uint32_t)be(p, 3);
        long us;
        if (read_fsp(c, col->a, &us) < 0) goto fallback;
        if (!(v & 0x800000)) goto fallback;  /* negative TIME: the reference's borrow rule */
        int h = (v >> 12) & 0x3FF, mi = (v >> 6) & 63, s = v & 63;
        if (mi > 59 || s > 59) goto fallback;
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%02d:%02d:%02d", h, mi, s);
        if (col->a) {
            char frac[8];
            snprintf(frac, sizeof frac, "%06ld", us);
            buf[n++] = '.';
            memcpy(buf + n, frac, col->a);
            n += col->a;
        }
        return PyUnicode_FromStringAndSize(buf, n);
    }
    case K_ENUM: {
        NEED(c, col->a); c->p += col->a;
        if (col->extra == Py_None) Py_RETURN_NONE;
        uint64_t i = le(p, col->a);
        if (i >= (uint64_t)PyList_GET_SIZE(col->extra)) goto fallback;
        PyObject *r = PyList_GET_ITEM(col->extra, (Py_ssize_t)i);
        Py_INCREF(r);
        return r;
    }
    case K_SET: {
        NEED(c, col->a); c->p += col->a;
        uint64_t mask = le(p, col->a);
        PyObject *r = PyList_New(0);
        if (!r || col->extra == Py_None) return r;
        Py_ssize_t n = PyList_GET_SIZE(col->extra);
        for (Py_ssize_t i = 0; i < n && i < 64; i++) {
            if ((mask >> i) & 1) {
                if (PyList_Append(r, PyList_GET_ITEM(col->extra, i)) < 0) { Py_DECREF(r); return NULL; }
            }
        }
        return r;
    }
    case K_BIT: {
        NEED(c, col->a); c->p += col->a;
        if (col->a > 8) goto fallback;
        uint64_t v = be(p, col->a);
        int top = col->b % 8;
        if (col->a == 1) top = col->b;
        if (top && top < 8) {
            int shift = (col->a - 1) * 8 + top;
            if (shift < 64) v &= (((uint64_t)1) << shift) - 1;
        }
        return PyLong_FromUnsignedLongLong(v);
    }
    }
fallback:
    return NULL;
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
    if (pr1.len * 8 < ncols || (op == 1 && pr2.len * 8 < ncols) || pos < 0 || pos > body.len) {
        PyErr_SetNone(Fallback);
        goto done;
    }
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *t = PyTuple_GET_ITEM(plan, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5) { PyErr_SetString(PyExc_TypeError, "bad plan"); goto done; }
        cols[i].name = PyTuple_GET_ITEM(t, 0);
        cols[i].kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        cols[i].a = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
        cols[i].b = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 3));
        cols[i].extra = PyTuple_GET_ITEM(t, 4);
        if (PyErr_Occurred()) goto done;
    }
    const unsigned char *p1 = pr1.buf, *p2 = pr2.buf;
    Py_ssize_t n1 = count_bits(p1, ncols), n2 = op == 1 ? count_bits(p2, ncols) : 0;
    cursor_t c = {(const unsigned char *)body.buf + pos, (const unsigned char *)body.buf + body.len};
    out = PyList_New(0);
    if (!out) goto done;
    while (c.p < c.end) {
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

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Row images of a rows event body from pos: [(before, after), ...]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rowdecode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rowdecode(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Fallback = PyErr_NewException("binlake.binlog._rowdecode.Fallback", NULL, NULL);
    if (!Fallback || PyModule_AddObject(m, "Fallback", Fallback) < 0) return NULL;
    Py_INCREF(Fallback);
#define K(n) PyModule_AddIntConstant(m, #n, n)
    K(K_INT8); K(K_UINT8); K(K_INT16); K(K_UINT16); K(K_INT24); K(K_UINT24); K(K_INT32); K(K_UINT32);
    K(K_INT64); K(K_UINT64); K(K_FLOAT); K(K_DOUBLE); K(K_YEAR); K(K_STR_UTF8); K(K_STR_BINARY);
    K(K_STR_GUESS); K(K_STR_CODEC); K(K_DECIMAL); K(K_DATETIME2); K(K_TIMESTAMP2); K(K_TIME2); K(K_DATE);
    K(K_ENUM); K(K_SET); K(K_BIT);
#undef K
    return m;
}
