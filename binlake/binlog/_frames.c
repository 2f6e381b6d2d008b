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
 * only what it recognises whole and leaves the rest, damage included, to the reference walk. What
 * an ordinary transaction is lives in _walk.h, which the lane (_rowdecode.c) shares.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_walk.h"

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
        txn_end_t t;
        long long end = transaction_end(&b, base, pos, stop, header_len, crc, query_phl, inside.buf, most_events, &t);
        if (end == 0) break;
        Py_ssize_t n = t.events;
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
        PyObject *txn = Py_BuildValue("(NK)", frames, t.xid);
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
    walk_init();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && add_event_constants(m) < 0) Py_CLEAR(m);
    return m;
}
