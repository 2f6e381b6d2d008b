/* The archive's copy loop over runs of ordinary events, in one compiled pass.
 *
 * `binlake archive` verifies every event it copies. Done in Python, the copy cost more per event
 * (protocol header, CRC32, positions, the index) than the bytes themselves (bench/RESULTS.md).
 * These two functions take the common case off Python's hands, many events per call:
 *
 *   packets()  cuts the events out of a binlog dump's protocol packets, back to back;
 *   checked()  walks events inside a transaction whose GTID event vouched for its length,
 *              checking each one's CRC32 and positions.
 *
 * Both only ever say "these are fine" and stop before anything else: a special packet (EOF,
 * error, heartbeat, ROTATE, a packet split over 16 MiB), an incomplete one, a bad CRC or
 * position, an event that runs past its transaction's length. Python then takes that one
 * packet or event through the reference path (binlake/archive/sources.py, verify.py), which
 * also words the error when there is one. So this file never decides what an error says,
 * and the tests compare its archives with the reference path's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "../binlog/_crc32.h"
#include "../binlog/_events.h"
#include "../binlog/_gtid.h"

#define MAX_PACKET 0xFFFFFF

static uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int range_ok(Py_buffer *b, Py_ssize_t off, Py_ssize_t end) {
    if (off < 0 || end < off || end > b->len) {
        PyErr_SetString(PyExc_ValueError, "offsets outside the buffer");
        return 0;
    }
    return 1;
}

/* The size of the event at e (avail bytes there, at file position pos) if it is whole, not a
 * FORMAT_DESCRIPTION, ends no later than `until`, matches its CRC32 (checksum, unless not `verify`)
 * and ends where its header's log_pos says (0 and artificial events aside); else 0. */
static Py_ssize_t event_ok(const unsigned char *e, Py_ssize_t avail, long long pos, int checksum, long long until,
                           int verify) {
    if (avail < HEADER_LEN) return 0;
    Py_ssize_t size = u32(e + 9);
    uint32_t log_pos = u32(e + 13);
    int flags = e[17] | e[18] << 8;
    if (size < HEADER_LEN + (checksum ? 4 : 0) || size > avail || e[4] == FORMAT_DESCRIPTION_EVENT ||
        pos + size > until)
        return 0;
    if (log_pos && log_pos != (uint32_t)(pos + size) && !(flags & LOG_EVENT_ARTIFICIAL_F)) return 0;
    if (checksum && verify && crc32_of(e, (size_t)(size - 4)) != u32(e + size - 4)) return 0;
    return size;
}

/* checked(buf, off, end, pos, checksum, until) -> (off, pos, last_ts, last_type)
 *
 * Walks the events of buf[off:end], the first at file position pos, while event_ok says so. It
 * stops after the event that ends right at `until` (the transaction's last: pos == until tells
 * the caller), and before one that would run past it. Gives where it stopped and the timestamp
 * and type of the last event it walked (-1, -1: none). */
static PyObject *checked(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t off, end, size;
    long long pos, until;
    int checksum;
    if (!PyArg_ParseTuple(args, "y*nnLpL", &b, &off, &end, &pos, &checksum, &until)) return NULL;
    if (!range_ok(&b, off, end)) {
        PyBuffer_Release(&b);
        return NULL;
    }
    const unsigned char *buf = b.buf;
    long long last_ts = -1, last_type = -1;
    Py_BEGIN_ALLOW_THREADS
    while (pos < until && (size = event_ok(buf + off, end - off, pos, checksum, until, 1)) > 0) {
        last_ts = u32(buf + off);
        last_type = buf[off + 4];
        off += size;
        pos += size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return Py_BuildValue("nLLL", off, pos, last_ts, last_type);
}

/* A transaction txns() counted off whole. */
typedef struct {
    long long start, length, gno, commit_us;
    uint32_t server_id;
    int anonymous;
    unsigned char sid[16];
} counted_t;

/* What a MySQL 8.0.2+ GTID or ANONYMOUS_GTID event's body (n bytes) says of its transaction
 * (_gtid.h); 0 when it gives no length or commit time, or reads oddly (the reference path then
 * takes it). */
static int gtid_facts(const unsigned char *b, Py_ssize_t n, counted_t *t) {
    gtid_body_t g;
    if (!gtid_read(b, n, &g) || !g.has_length || !g.stamped || g.length == 0 || g.immediate_us == 0 ||
        g.length > (uint64_t)1 << 62)
        return 0;
    memcpy(t->sid, g.sid, 16);
    t->gno = g.gno;
    t->length = (long long)g.length;
    t->commit_us = g.immediate_us;
    return 1;
}

static PyObject *gtid_text(const counted_t *t) {
    char s[64];
    return PyUnicode_FromStringAndSize(s, gtid_text_into(s, t->sid, t->gno));
}

static PyObject *ts_text(long long us) {
    char s[32];
    int n = gtid_ts_into(s, us);
    return n ? PyUnicode_FromStringAndSize(s, n) : NULL;
}

/* txns(buf, off, end, pos, checksum[, verify]) -> (off, pos, last_ts, last_type, [(start, length, gtid,
 * commit_ts, server_id), ...])
 *
 * Walks whole transactions, each opened by a GTID or ANONYMOUS_GTID event that gives its length
 * and commit time, all its events in buf[off:end] and event_ok, its last ending right at that
 * length. Stops before anything else, a transaction it cannot finish included, so the reference
 * path takes that from its GTID event on. gtid is None for an anonymous one. With verify false the
 * CRC32s are not computed (a walk that only needs where transactions lie). */
static PyObject *txns(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t off, end, size;
    long long pos;
    int checksum, verify = 1;
    if (!PyArg_ParseTuple(args, "y*nnLp|p", &b, &off, &end, &pos, &checksum, &verify)) return NULL;
    if (!range_ok(&b, off, end)) {
        PyBuffer_Release(&b);
        return NULL;
    }
    const unsigned char *buf = b.buf;
    long long last_ts = -1, last_type = -1;
    Py_ssize_t cap = 0, count = 0;
    counted_t *found = NULL;
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    while (end - off >= HEADER_LEN) {
        const unsigned char *g = buf + off;
        counted_t t;
        if (g[4] != GTID_LOG_EVENT && g[4] != ANONYMOUS_GTID_LOG_EVENT) break;
        size = u32(g + 9);
        if (size < HEADER_LEN + (checksum ? 4 : 0) || size > end - off ||
            !gtid_facts(g + HEADER_LEN, size - HEADER_LEN - (checksum ? 4 : 0), &t))
            break;
        long long until = pos + t.length;
        if (until - pos > end - off || !event_ok(g, end - off, pos, checksum, until, verify)) break;
        Py_ssize_t at = off + size;
        long long p = pos + size, ts = u32(g), type = g[4];
        while (p < until && (size = event_ok(buf + at, end - at, p, checksum, until, verify)) > 0) {
            ts = u32(buf + at);
            type = buf[at + 4];
            at += size;
            p += size;
        }
        if (p != until) break;
        if (count == cap) {
            Py_ssize_t more = cap ? cap * 2 : 256;
            counted_t *grown = realloc(found, (size_t)more * sizeof *found);
            if (grown == NULL) {
                nomem = 1;
                break;
            }
            found = grown;
            cap = more;
        }
        t.start = pos;
        t.server_id = u32(g + 5);
        t.anonymous = g[4] == ANONYMOUS_GTID_LOG_EVENT;
        found[count++] = t;
        off = at;
        pos = p;
        last_ts = ts;
        last_type = type;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    PyObject *list = nomem ? PyErr_NoMemory() : PyList_New(count);
    for (Py_ssize_t i = 0; list != NULL && i < count; i++) {
        counted_t *t = &found[i];
        PyObject *gtid = t->anonymous ? Py_NewRef(Py_None) : gtid_text(t);
        PyObject *ts = ts_text(t->commit_us);
        PyObject *item = gtid && ts ? Py_BuildValue("LLOOk", t->start, t->length, gtid, ts,
                                                     (unsigned long)t->server_id) : NULL;
        Py_XDECREF(gtid);
        Py_XDECREF(ts);
        if (item == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_OverflowError, "commit time out of range");
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    free(found);
    if (list == NULL) return NULL;
    return Py_BuildValue("nLLLN", off, pos, last_ts, last_type, list);
}

/* Whether the packet at p (avail bytes) is an ordinary event's, whole: the next sequence
 * number, under 16 MiB, an OK byte, and an event whose header's size is the payload's. */
static Py_ssize_t ordinary(const unsigned char *p, Py_ssize_t avail, int seq) {
    if (avail < 4) return 0;
    Py_ssize_t n = p[0] | p[1] << 8 | p[2] << 16;
    if (p[3] != seq || n >= MAX_PACKET || n < 1 + HEADER_LEN || avail < 4 + n || p[4] != 0) return 0;
    const unsigned char *e = p + 5;
    int type = e[4];
    if (type == HEARTBEAT_LOG_EVENT || type == HEARTBEAT_LOG_EVENT_V2 || type == ROTATE_EVENT ||
        type == STOP_EVENT || u32(e + 9) != (uint32_t)(n - 1))
        return 0;
    return n;
}

/* packets(buf, off, end, seq, limit) -> (off, seq, events, whole)
 *
 * The run of ordinary event packets at buf[off:end], their events back to back in one bytes
 * object, up to the first event that brings the run to `limit` bytes. `whole` says whether the
 * packet it stopped before is all in the buffer (or is one Python must take anyway); when it is
 * not, the caller reads more. */
static PyObject *packets(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t off, end, limit;
    int seq;
    if (!PyArg_ParseTuple(args, "y*nnin", &b, &off, &end, &seq, &limit)) return NULL;
    if (!range_ok(&b, off, end)) {
        PyBuffer_Release(&b);
        return NULL;
    }
    const unsigned char *buf = b.buf;
    Py_ssize_t at = off, total = 0, n;
    int s = seq & 0xFF;
    Py_BEGIN_ALLOW_THREADS  /* the buffer is held (Py_buffer): it cannot move or resize meanwhile */
    while (total < limit && (n = ordinary(buf + at, end - at, s)) > 0) {
        total += n - 1;
        at += 4 + n;
        s = (s + 1) & 0xFF;
    }
    Py_END_ALLOW_THREADS
    int whole = 1;
    if (total < limit && end - at < 4) {
        whole = 0;
    } else if (total < limit) {
        const unsigned char *p = buf + at;
        Py_ssize_t len = p[0] | p[1] << 8 | p[2] << 16;
        whole = len >= MAX_PACKET || p[3] != s || end - at >= 4 + len;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) {
        PyBuffer_Release(&b);
        return NULL;
    }
    char *w = PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t p = off; p < at; p += 4 + n) {
        n = buf[p] | buf[p + 1] << 8 | buf[p + 2] << 16;
        memcpy(w, buf + p + 5, n - 1);
        w += n - 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return Py_BuildValue("niNi", at, s, out, whole);
}

/* tables([use]) -> whether CRC32 is computed by the tables alone; tables(True) makes it so,
 * tables(False) goes back to folding where the CPU can (the tests check both against zlib). */
static PyObject *tables(PyObject *self, PyObject *args) {
    int use = -1;
    if (!PyArg_ParseTuple(args, "|p", &use)) return NULL;
    return PyBool_FromLong(!crc32_use(use == -1 ? crc32_folding : !use));
}

/* crc32(data) -> zlib.crc32(data), computed as the loop computes it (for the tests). */
static PyObject *crc32(PyObject *self, PyObject *args) {
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*", &b)) return NULL;
    uint32_t c = crc32_of((const unsigned char *)b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"crc32", crc32, METH_VARARGS, "zlib.crc32(data), as the loop computes it."},
    {"tables", tables, METH_VARARGS, "Whether CRC32 comes from the built-in tables; tables(True/False) sets it."},
    {"checked", checked, METH_VARARGS, "Walk events whose CRC32 and positions check out: (off, pos, last_ts, last_type)."},
    {"txns", txns, METH_VARARGS,
     "Whole transactions counted off by their GTID events' lengths: (off, pos, last_ts, last_type, entries)."},
    {"packets", packets, METH_VARARGS, "The events of a run of ordinary dump packets: (off, seq, events, whole)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_eventruns", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__eventruns(void) {
    crc32_init();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && add_event_constants(m) < 0) Py_CLEAR(m);
    return m;
}
