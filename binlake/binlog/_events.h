/* The event type numbers and flags the compiled loops know: one home in C for the three
 * extensions (_frames.c, _rowdecode.c, archive/_eventruns.c). binlake/binlog/constants.py is
 * their definition: each extension exports what it was compiled with as EVENT_CONSTANTS, and
 * binlake.binlog.builds refuses to load one that disagrees with constants.py. */
#ifndef BINLAKE_EVENTS_H
#define BINLAKE_EVENTS_H

#include <Python.h>

#define HEADER_LEN 19 /* the common header of binlog v3/v4 events, what the compiled loops read */

#define BINLAKE_EVENT_CONSTANTS(X)                                                                \
    X(QUERY_EVENT, 2) X(STOP_EVENT, 3) X(ROTATE_EVENT, 4) X(FORMAT_DESCRIPTION_EVENT, 15)        \
    X(XID_EVENT, 16) X(TABLE_MAP_EVENT, 19) X(WRITE_ROWS_EVENT_V1, 23) X(DELETE_ROWS_EVENT_V1, 25) \
    X(HEARTBEAT_LOG_EVENT, 27) X(ROWS_QUERY_LOG_EVENT, 29) X(WRITE_ROWS_EVENT, 30)                \
    X(DELETE_ROWS_EVENT, 32) X(GTID_LOG_EVENT, 33) X(ANONYMOUS_GTID_LOG_EVENT, 34)                \
    X(HEARTBEAT_LOG_EVENT_V2, 41) X(GTID_TAGGED_LOG_EVENT, 42) X(ANNOTATE_ROWS_EVENT, 160)        \
    X(MARIA_GTID_EVENT, 162)                                                                      \
    X(LOG_EVENT_ARTIFICIAL_F, 0x20) X(STMT_END_F, 1)                                              \
    X(FL_STANDALONE, 1) X(FL_PREPARED_XA, 64) X(FL_COMPLETED_XA, 128)

#define BINLAKE_EVENT_ENUM(name, value) name = value,
enum { BINLAKE_EVENT_CONSTANTS(BINLAKE_EVENT_ENUM) };
#undef BINLAKE_EVENT_ENUM

/* The module's EVENT_CONSTANTS: {name: value} of the list above. 0, or -1 with an exception set. */
static int add_event_constants(PyObject *m) {
    PyObject *d = PyDict_New();
    if (d == NULL) return -1;
#define BINLAKE_EVENT_ITEM(name, value)                                         \
    {                                                                           \
        PyObject *v = PyLong_FromLong(value);                                   \
        if (v == NULL || PyDict_SetItemString(d, #name, v) < 0) {               \
            Py_XDECREF(v);                                                      \
            Py_DECREF(d);                                                       \
            return -1;                                                          \
        }                                                                       \
        Py_DECREF(v);                                                           \
    }
    BINLAKE_EVENT_CONSTANTS(BINLAKE_EVENT_ITEM)
#undef BINLAKE_EVENT_ITEM
    if (PyModule_AddObject(m, "EVENT_CONSTANTS", d) < 0) {
        Py_DECREF(d);
        return -1;
    }
    return 0;
}

#endif
