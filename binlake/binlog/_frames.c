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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>

#define HEADER_LEN 19 /* what the reference unpacks of a header (v3/v4 files) */
#define FORMAT_DESCRIPTION_EVENT 15

/* The binlog's checksum is zlib's crc32, as zlib.crc32 computes it. */
typedef unsigned long (*zlib_crc32_t)(unsigned long, const unsigned char *, unsigned int);
static zlib_crc32_t zlib_crc32;

static uint32_t u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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
    while (PyList_GET_SIZE(out) < most && pos < limit && stop - pos >= HEADER_LEN) {
        long long i = pos - base;
        if (i < 0 || i + HEADER_LEN > b.len) break;
        const unsigned char *e = buf + i;
        long long size = u32(e + 9);
        if (e[4] == FORMAT_DESCRIPTION_EVENT || size < min_size || pos + size > stop || i + size > b.len) break;
        long long body_end = i + size - (crc ? 4 : 0);
        int ok = 1;
        if (crc && verify) ok = (uint32_t)zlib_crc32(0, e, (unsigned int)(size - 4)) == u32(buf + body_end);
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

static PyMethodDef methods[] = {
    {"cut", cut, METH_VARARGS, "Frames of a run of ordinary events: (frames, the offset after them)."},
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
