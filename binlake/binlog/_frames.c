/* The frame walk (binlake/binlog/framing.py, BinlogReader.frames) over runs of ordinary events.
 *
 * Every pass of a scan cuts each event out of the file: its header, its CRC32, a Frame. Done in
 * Python that is a dozen bytecodes and a copy of the event (for zlib.crc32) per event, twice per
 * event (the look-ahead to a transaction's end, then the main pass). cut() does it for a run of
 * events in one call and hands back the same Frame objects the reference loop makes.
 *
 * Contract: the same frames as the reference loop, field for field; it only ever says "these
 * are ordinary" and stops before anything else (a FORMAT_DESCRIPTION event, a header that
 * cannot be one, an event running past the walk's end, the walk's next page release). The
 * reference loop then takes that one event, and words the error when there is one: this file
 * never does. BINLAKE_PURE_PYTHON=1 turns it off (framing.py).
 *
 * skim() goes one step further for the transactions production writes most (a GTID, BEGIN, table
 * maps and rows, XID): it finds where each ends and its xid, so that the walk (binlake.assemble)
 * needs neither its look-ahead nor a boundary decision per event for them. Same contract: it takes
 * only what it recognises whole and leaves the rest, damage included, to the reference walk.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#define HEADER_LEN 19 /* what the reference unpacks of a header (v3/v4 files) */
#define FORMAT_DESCRIPTION_EVENT 15

/* The binlog's checksum is zlib's crc32, as zlib.crc32 computes it. */
typedef unsigned long (*zlib_crc32_t)(unsigned long, const unsigned char *, unsigned int);
static zlib_crc32_t zlib_crc32;

static uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A Frame of the event at file offset pos (data's index i), as the reference loop makes it. */
static PyObject *frame_at(PyObject *frame_cls, PyObject *data, const unsigned char *e, long long pos, long long i,
                          long long size, Py_ssize_t header_len, int crc, int ok) {
    long long body_end = i + size - (crc ? 4 : 0);
    PyObject *a[11] = {
        PyLong_FromLongLong(pos), PyLong_FromLong(e[4]), PyLong_FromUnsignedLong(u32(e)),
        PyLong_FromUnsignedLong(u32(e + 5)), PyLong_FromLongLong(size), PyLong_FromUnsignedLong(u32(e + 13)),
        PyLong_FromLong(e[17] | e[18] << 8), Py_NewRef(data), PyLong_FromLongLong(i + header_len),
        PyLong_FromLongLong(body_end), Py_NewRef(ok ? Py_True : Py_False)};
    PyObject *frame = NULL;
    int made = 1;
    for (int k = 0; k < 11; k++) made &= a[k] != NULL;
    if (made) frame = PyObject_Vectorcall(frame_cls, a, 11, NULL);
    for (int k = 0; k < 11; k++) Py_XDECREF(a[k]);
    return frame;
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
    return (uint32_t)zlib_crc32(0, e, (unsigned int)(size - 4)) == u32(e + size - 4);
}

/* cut(frame_cls, data, base, pos, stop, limit, header_len, crc, verify, most) -> (frames, pos)
 *
 * Frames of the events from file offset pos (data[0] is at offset base), at most `most` of them,
 * none starting at or past `limit` nor running past `stop`; and the offset after the last. */
static PyObject *cut(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *frame_cls, *data;
    long long base, pos, stop, limit;
    Py_ssize_t header_len, most;
    int crc, verify;
    if (!PyArg_ParseTuple(args, "OOLLLLnppn", &frame_cls, &data, &base, &pos, &stop, &limit, &header_len, &crc,
                          &verify, &most))
        return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(data, &b, PyBUF_SIMPLE) < 0) { /* not bytes-like: the reference loop reads it */
        PyErr_Clear();
        return Py_BuildValue("([]L)", pos);
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    const unsigned char *buf = b.buf;
    long long min_size = header_len + (crc ? 4 : 0);
    while (PyList_GET_SIZE(out) < most && pos < limit) {
        long long i = pos - base;
        long long size = ordinary(&b, i, pos, stop, min_size);
        if (size == 0) break;
        const unsigned char *e = buf + i;
        int ok = !(crc && verify) || crc_matches(e, size);
        PyObject *frame = frame_at(frame_cls, data, e, pos, i, size, header_len, crc, ok);
        if (frame == NULL || PyList_Append(out, frame) < 0) {
            Py_XDECREF(frame);
            goto fail;
        }
        Py_DECREF(frame);
        pos += size;
    }
    PyBuffer_Release(&b);
    return Py_BuildValue("(NL)", out, pos);
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&b);
    return NULL;
}

/* Event types skim() knows by number (binlake/binlog/constants.py). */
#define QUERY_EVENT 2
#define XID_EVENT 16
#define GTID_LOG_EVENT 33
#define ANONYMOUS_GTID_LOG_EVENT 34
#define GTID_TAGGED_LOG_EVENT 42
#define MARIA_GTID_EVENT 162
#define FL_STANDALONE 1
#define FL_COMPLETED_XA 128

/* Whether a QUERY event's text is exactly "BEGIN" (what the servers log after a GTID), its status
 * variables and database name inside the event as check_query() wants them. */
static int is_begin(const unsigned char *body, long long body_len, Py_ssize_t phl) {
    if (phl < 11 || body_len < phl) return 0;
    long long status_len = phl >= 13 ? (body[11] | body[12] << 8) : 0;
    long long text = phl + status_len + body[8] + 1;
    return text + 5 == body_len && memcmp(body + text, "BEGIN", 5) == 0;
}

/* The end of the ordinary transaction at pos and its xid, or 0 where the reference walk must take
 * it. Ordinary: a GTID (MySQL's, then a QUERY "BEGIN"; MariaDB's without FL_STANDALONE, which is its
 * BEGIN), then only events `inside` allows (table maps, rows, their statements), then an XID; every
 * event whole in [pos, stop), its CRC32 matching, at most `most_events` of them. */
static long long transaction_end(const Py_buffer *b, long long base, long long pos, long long stop, Py_ssize_t header_len,
                                 int crc, Py_ssize_t query_phl, const unsigned char *inside, Py_ssize_t most_events,
                                 unsigned long long *xid, Py_ssize_t *events) {
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
            *xid = (unsigned long long)u32(body) | (unsigned long long)u32(body + 4) << 32;
            *events = n + 1;
            return pos + size;
        } else if (!inside[t]) {
            return 0;
        }
        pos += size;
    }
    return 0;
}

/* skim(frame_cls, data, base, pos, stop, header_len, crc, query_phl, inside, most, most_events) -> (txns, pos)
 *
 * The ordinary transactions from file offset pos on (transaction_end), at most `most` of them, each
 * as (its frames, its xid), no more once they hold `most_events` events; and the offset after the last. The walk of binlake.assemble takes the
 * first transaction that is not ordinary, and what follows it, event by event. */
static PyObject *skim(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *frame_cls, *data;
    long long base, pos, stop;
    Py_ssize_t header_len, query_phl, most, most_events;
    int crc;
    Py_buffer inside;
    if (!PyArg_ParseTuple(args, "OOLLLnpny*nn", &frame_cls, &data, &base, &pos, &stop, &header_len, &crc, &query_phl,
                          &inside, &most, &most_events))
        return NULL;
    if (inside.len != 256) {
        PyBuffer_Release(&inside);
        PyErr_SetString(PyExc_ValueError, "inside: 256 bytes, one per event type");
        return NULL;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(data, &b, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&inside);
        return Py_BuildValue("([]L)", pos);
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    const unsigned char *buf = b.buf;
    Py_ssize_t events = 0;
    while (PyList_GET_SIZE(out) < most && events < most_events) {
        unsigned long long xid;
        Py_ssize_t n;
        long long end = transaction_end(&b, base, pos, stop, header_len, crc, query_phl, inside.buf, most_events,
                                        &xid, &n);
        if (end == 0) break;
        events += n;
        PyObject *frames = PyList_New(n);
        if (frames == NULL) goto fail;
        for (Py_ssize_t k = 0; k < n; k++) {
            long long i = pos - base, size = u32(buf + i + 9);
            PyObject *frame = frame_at(frame_cls, data, buf + i, pos, i, size, header_len, crc, 1);
            if (frame == NULL) {
                Py_DECREF(frames);
                goto fail;
            }
            PyList_SET_ITEM(frames, k, frame);
            pos += size;
        }
        PyObject *txn = Py_BuildValue("(NK)", frames, xid);
        if (txn == NULL || PyList_Append(out, txn) < 0) {
            Py_XDECREF(txn);
            goto fail;
        }
        Py_DECREF(txn);
    }
    PyBuffer_Release(&b);
    PyBuffer_Release(&inside);
    return Py_BuildValue("(NL)", out, pos);
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&b);
    PyBuffer_Release(&inside);
    return NULL;
}

static PyMethodDef methods[] = {
    {"cut", cut, METH_VARARGS, "Frames of a run of ordinary events: (frames, the offset after them)."},
    {"skim", skim, METH_VARARGS, "A run of ordinary transactions: ([(frames, xid)], the offset after them)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_frames", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__frames(void) {
    void *libz = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (libz != NULL) zlib_crc32 = (zlib_crc32_t)dlsym(libz, "crc32");
    if (zlib_crc32 == NULL) { /* no zlib to match zlib.crc32 with: the reference loop does all */
        PyErr_SetString(PyExc_ImportError, "libz.so.1 (crc32) not found");
        return NULL;
    }
    return PyModule_Create(&module);
}
