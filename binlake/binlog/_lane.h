/* The lane: the last part of _rowdecode.c, in a file of its own. It is included by _rowdecode.c
 * after the decoder it writes with (scan_value, put_image, check_image, lines_into, the out_t and
 * column_t buffers), and needs _walk.h (what an ordinary transaction is) and _gtid.h (a GTID
 * event's facts and texts) before it.
 *
 * lane() writes runs of ordinary transactions (a GTID, BEGIN, table maps and rows of tables the
 * compiled decoder takes, an XID) straight as the JSON lines `binlake scan` prints: each one's row
 * changes, then its record, byte for byte what the walk of binlake.assemble writes for them
 * (tests/test_lane.py compares the two on the test data and the public fixtures). Python is called
 * once per run, and once per table map the run has not seen before; the framing, CRC32s, commit
 * facts, images and record are done here. Same contract as the walk (_walk.h): it takes only what
 * it recognises whole and stops before anything else, including a transaction it would have to say
 * something unusual about (a length that disagrees, a segment that fills, an image the decoder
 * falls back on, a tagged GTID); binlake.assemble's walk then takes that one. For the Spark job it
 * hands columns on instead of lines: a run's row changes (columns mode, binlake.assemble.sinks.RowRun), its
 * records (records mode, binlake.assemble.lane.RecordRun), each made into an Arrow batch in one call. */

#ifndef BINLAKE_LANE_H
#define BINLAKE_LANE_H

#define LANE_TABLES 64     /* table maps (and tables) one transaction may have in the lane */
#define LANE_EVENTS 4096   /* events of one transaction in the lane (skim's bound too) */
#define LANE_BYTES (8 << 20)  /* lines one call writes, about */

/* A table's plan with its columns loaded once, for every rows event of the table. */
typedef struct {
    Py_ssize_t ncols;
    col_t *cols;
    PyObject *plan, *keys;
} compiled_t;

static void compiled_free(PyObject *capsule) {
    compiled_t *t = PyCapsule_GetPointer(capsule, "binlake.compiled");
    if (t == NULL) return;
    PyMem_Free(t->cols);
    Py_XDECREF(t->plan);
    Py_XDECREF(t->keys);
    PyMem_Free(t);
}

/* compile(plan, keys) -> the plan (fastrows.plan) and its JSON keys (fastrows.json_keys), loaded. */
static PyObject *compile_plan(PyObject *self, PyObject *args) {
    PyObject *plan, *keys;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &plan, &PyTuple_Type, &keys) || !keys_fit(plan, keys))
        return NULL;
    compiled_t *t = PyMem_Calloc(1, sizeof *t);
    if (t == NULL) return PyErr_NoMemory();
    t->ncols = PyTuple_GET_SIZE(plan);
    t->cols = PyMem_Calloc(t->ncols ? t->ncols : 1, sizeof(col_t));
    t->plan = Py_NewRef(plan);
    t->keys = Py_NewRef(keys);
    PyObject *capsule = NULL;
    if (t->cols == NULL) PyErr_NoMemory();
    else if (plan_columns(plan, t->cols, t->ncols) == 0) capsule = PyCapsule_New(t, "binlake.compiled", compiled_free);
    if (capsule == NULL) {
        PyMem_Free(t->cols);
        Py_DECREF(plan);
        Py_DECREF(keys);
        PyMem_Free(t);
    }
    return capsule;
}

/* What a call of lane() is given: the file's format, the texts every line shares, and where the
 * table maps are kept. */
typedef struct {
    Py_ssize_t header_len, query_phl;
    int crc, rows;
    long long seg_rows, seg_bytes;
    const unsigned char *inside;
    PyObject *source, *file;  /* their JSON texts (bytes) */
    const char *file_name;  /* the file's name as UTF-8, and the namespace of derived ids (16 bytes) */
    Py_ssize_t file_name_len, namespace_len;
    const unsigned char *namespace;
    PyObject *maps;  /* TABLE_MAP body -> entry (binlake.assemble.lane), None where the walk must take it */
    PyObject *learn;  /* body -> entry or None, for a body maps does not have */
    PyObject *table_maps;  /* the walk's table id -> TableMap, kept as the walk keeps it */
    out_t tail;  /* the lines' tail while a statement's rows are read: its text in it */
    /* Columns mode (the Spark job's rows pass): the run's row changes as columns, not lines. */
    PyObject *runs;  /* a list the run is appended to (lane_columns); NULL: lines */
    column_t before, after;  /* each row's images' JSON texts (an empty one where it has none) */
    out_t valid;  /* per row: 1 it has a before image, 2 an after image */
    out_t blocks;  /* per rows event, BLOCK_FIELDS int64s */
    PyObject *txn_ids, *tables, *statements;  /* what the blocks' indexes name */
    /* Records as columns (the Spark job's facts pass), not lines. */
    PyObject *records;  /* a list the run's records are appended to (records_done); NULL: lines */
    out_t fields;  /* per transaction, RECORD_FIELDS int64s */
    column_t ids;  /* each transaction's txn_id */
    out_t named;  /* each transaction's tables in its record's order: int32 indexes into record_tables */
    PyObject *record_tables, *table_index;  /* the run's TableMaps named; entry's address -> index */
} lane_t;

/* A transaction's record in columns mode, each an int64 (binlake.assemble.lane.RecordRun reads them,
 * by the names lane_layouts() gives); R_NULLS: which are null (1 gtid: anonymous, 2
 * transaction_length, 4 original_commit_ts, 8 last_committed and sequence_number). */
#define RECORD_COLUMNS(X)                                                                                    \
    X(R_START, start_pos) X(R_END, end_pos) X(R_LENGTH, transaction_length) X(R_SERVER_ID, server_id)        \
    X(R_XID, xid) X(R_COMMIT_US, commit_us) X(R_ORIGINAL_US, original_us) X(R_FIRST_US, first_us)            \
    X(R_LAST_COMMITTED, last_committed) X(R_SEQUENCE_NUMBER, sequence_number) X(R_EVENTS, event_count)       \
    X(R_ROWS, row_count) X(R_INSERTED, rows_inserted) X(R_UPDATED, rows_updated) X(R_DELETED, rows_deleted) \
    X(R_TABLES, tables) X(R_NULLS, nulls)

/* A rows event's fields in columns mode, each an int64 (binlake.assemble.lane.RowRun reads them). */
#define BLOCK_COLUMNS(X)                                                                                     \
    X(B_SEQ, seq) X(B_EVENT_POS, event_pos) X(B_COMMIT_US, commit_us) X(B_EVENT_US, event_us) X(B_XID, xid) \
    X(B_ROWS, rows) X(B_OP, op) X(B_TXN, txn) X(B_TABLE, table) X(B_STATEMENT, statement)

#define COLUMN_ENUM(tag, name) tag,
enum { RECORD_COLUMNS(COLUMN_ENUM) RECORD_FIELDS };
enum { BLOCK_COLUMNS(COLUMN_ENUM) BLOCK_FIELDS };
#undef COLUMN_ENUM

/* In columns mode, where a transaction's blocks point: indexes into the run's lists. */
typedef struct {
    long long txn, statement, commit_us;  /* statement: -1 when none was logged */
} shared_t;

/* Where the run's columns and lists stood before a transaction, to go back to if it is the walk's. */
typedef struct {
    Py_ssize_t before_offsets, before_data, after_offsets, after_data, valid, blocks, txn_ids, tables, statements;
} run_mark_t;

static void run_marked(const lane_t *L, run_mark_t *m) {
    *m = (run_mark_t){L->before.offsets.len, L->before.data.len, L->after.offsets.len, L->after.data.len,
                      L->valid.len, L->blocks.len, PyList_GET_SIZE(L->txn_ids), PyList_GET_SIZE(L->tables),
                      PyList_GET_SIZE(L->statements)};
}

static int run_back(lane_t *L, const run_mark_t *m) {
    L->before.offsets.len = m->before_offsets, L->before.data.len = m->before_data;
    L->after.offsets.len = m->after_offsets, L->after.data.len = m->after_data;
    L->valid.len = m->valid, L->blocks.len = m->blocks;
    return PyList_SetSlice(L->txn_ids, m->txn_ids, PY_SSIZE_T_MAX, NULL) < 0 ||
           PyList_SetSlice(L->tables, m->tables, PY_SSIZE_T_MAX, NULL) < 0 ||
           PyList_SetSlice(L->statements, m->statements, PY_SSIZE_T_MAX, NULL) < 0 ? -1 : 0;
}

/* An entry: (compiled, TableMap, "schema.table" as UTF-8, its JSON text, `"schema":…,"table":…,`). */
#define E_COMPILED 0
#define E_TABLE_MAP 1
#define E_NAME 2
#define E_NAME_JSON 3
#define E_MEMBERS 4

/* The entry of the table map whose body is given, learnt the first time: borrowed; Py_None where
 * the walk must take the transaction; NULL with an exception set. */
static PyObject *known_map(const lane_t *L, const unsigned char *body, long long n) {
    PyObject *key = PyBytes_FromStringAndSize((const char *)body, n);
    if (key == NULL) return NULL;
    PyObject *entry = PyDict_GetItemWithError(L->maps, key);
    if (entry == NULL && !PyErr_Occurred()) {
        PyObject *learnt = PyObject_CallOneArg(L->learn, key);
        if (learnt != NULL && learnt != Py_None &&
            (!PyTuple_Check(learnt) || PyTuple_GET_SIZE(learnt) != 5 ||
             !PyCapsule_IsValid(PyTuple_GET_ITEM(learnt, E_COMPILED), "binlake.compiled") ||
             !PyBytes_Check(PyTuple_GET_ITEM(learnt, E_NAME)) || !PyBytes_Check(PyTuple_GET_ITEM(learnt, E_NAME_JSON)) ||
             !PyBytes_Check(PyTuple_GET_ITEM(learnt, E_MEMBERS)))) {
            PyErr_SetString(PyExc_TypeError, "learn: (compiled, table map, name, its JSON, members) or None");
            Py_CLEAR(learnt);
        }
        if (learnt != NULL && PyDict_SetItem(L->maps, key, learnt) == 0) entry = learnt;
        Py_XDECREF(learnt);  /* maps holds it */
    }
    Py_DECREF(key);
    return entry;
}

/* Entries in the order of their "schema.table" names: UTF-8's byte order is the code points'
 * (Python's sorted()). */
static int by_name(const void *a, const void *b) {
    PyObject *x = PyTuple_GET_ITEM(*(PyObject *const *)a, E_NAME), *y = PyTuple_GET_ITEM(*(PyObject *const *)b, E_NAME);
    Py_ssize_t nx = PyBytes_GET_SIZE(x), ny = PyBytes_GET_SIZE(y);
    int c = memcmp(PyBytes_AS_STRING(x), PyBytes_AS_STRING(y), nx < ny ? nx : ny);
    return c ? c : (nx > ny) - (nx < ny);
}

static int put_bytes(out_t *o, PyObject *b) { return put(o, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)); }

/* A transaction's facts, as records.transaction_record words them. */
typedef struct {
    char id[96], commit[32], original[32], first[32];
    int id_len, commit_len, original_len, first_len;  /* original_len 0: null */
    int anonymous;  /* no GTID: its id is derived (records.derived_txn_id) */
    long long commit_us, first_us;
    gtid_body_t g;
} facts_t;

/* The facts of the transaction [start, end) whose XID is at te->last: 0, or 1 where the walk must
 * take it. */
static int txn_facts(const lane_t *L, const unsigned char *buf, long long base, long long start, long long end,
                     const txn_end_t *te, facts_t *f) {
    const unsigned char *e = buf + (start - base), *body = e + L->header_len;
    long long n = u32(e + 9) - L->header_len - (L->crc ? 4 : 0);
    memset(&f->g, 0, sizeof f->g);
    f->anonymous = e[4] == ANONYMOUS_GTID_LOG_EVENT;
    if (e[4] == GTID_LOG_EVENT || f->anonymous) {
        if (!gtid_read(body, n, &f->g) || (f->g.has_length && f->g.length && f->g.length != (uint64_t)(end - start)))
            return 1;
        if (!f->anonymous) f->id_len = gtid_text_into(f->id, f->g.sid, f->g.gno);
        else if (derived_id(f->id, L->namespace, (unsigned long)u32(e + 5), L->file_name, L->file_name_len, start) < 0)
            return 1;
        else f->id_len = 36;
    } else if (e[4] == MARIA_GTID_EVENT) {  /* seq, domain, flags (transaction_end checked the size) */
        if (body[12] & (FL_PREPARED_XA | FL_COMPLETED_XA)) return 1;
        f->id_len = snprintf(f->id, sizeof f->id, "%lu-%lu-%llu", (unsigned long)u32(body + 8),
                             (unsigned long)u32(e + 5), (unsigned long long)le(body, 8));
    } else {
        return 1;
    }
    long long commit_us = f->g.immediate_us ? f->g.immediate_us : (long long)u32(buf + (te->last - base)) * 1000000;
    f->commit_us = commit_us;
    f->first_us = (long long)u32(e) * 1000000;
    f->original_len = 0;
    if (L->records && (L->runs || !L->rows))  /* no lines: the times' columns, their texts' refusals */
        return !ts_written(commit_us) || !ts_written(f->first_us) ||
               (f->g.original_us != f->g.immediate_us && f->g.original_us && !ts_written(f->g.original_us));
    f->commit_len = gtid_ts_into(f->commit, commit_us);
    f->first_len = gtid_ts_into(f->first, f->first_us);
    if (f->g.original_us == f->g.immediate_us && f->g.original_us) {
        memcpy(f->original, f->commit, f->commit_len);
        f->original_len = f->commit_len;
    } else if (f->g.original_us && !(f->original_len = gtid_ts_into(f->original, f->g.original_us))) {
        return 1;
    }
    return f->commit_len && f->first_len ? 0 : 1;
}

/* A rows event's images appended to the run's columns, and its block (BLOCK_FIELDS): 0, 1 fall
 * back, -1 error. */
static int lane_block(lane_t *L, const shared_t *shared, cursor_t *c, const compiled_t *plan,
                      const unsigned char *p1, const unsigned char *p2, int op, long long table, long long seq,
                      long long pos, long long event_us, unsigned long long xid, Py_ssize_t *got) {
    Py_ssize_t n1 = count_bits(p1, plan->ncols), n2 = op == 1 ? count_bits(p2, plan->ncols) : 0;
    int rc = 0;
    while (c->p < c->end && !rc) {
        const unsigned char *row = c->p;
        char v = op == 0 ? 2 : op == 1 ? 3 : 1;
        if (op != 0) rc = put_image(&L->before.data, c, plan->cols, plan->keys, plan->ncols, p1, n1);
        if (!rc) rc = column_mark(&L->before);
        if (!rc && op != 2)
            rc = put_image(&L->after.data, c, plan->cols, plan->keys, plan->ncols, op == 1 ? p2 : p1, op == 1 ? n2 : n1);
        if (!rc) rc = column_mark(&L->after);
        if (!rc) rc = put(&L->valid, &v, 1);
        if (!rc && c->p == row) rc = 1;  /* a row of no bytes (no column in the images): not MySQL's */
        (*got)++;
    }
    if (rc) return rc;
    int64_t f[BLOCK_FIELDS] = {seq, pos, shared->commit_us, event_us, (int64_t)xid, *got, op, shared->txn, table,
                               shared->statement};
    return put(&L->blocks, (const char *)f, sizeof f);
}

/* A rows event's row changes counted into *got, each image checked as it would be written: 0, 1
 * fall back, -1 error. */
static int rows_counted(cursor_t *c, const compiled_t *plan, const unsigned char *p1, const unsigned char *p2, int op,
                        Py_ssize_t *got) {
    Py_ssize_t n1 = count_bits(p1, plan->ncols), n2 = op == 1 ? count_bits(p2, plan->ncols) : 0;
    int rc = 0;
    while (c->p < c->end && !rc) {
        const unsigned char *row = c->p;
        rc = check_image(c, plan->cols, plan->ncols, p1, n1);
        if (!rc && op == 1) rc = check_image(c, plan->cols, plan->ncols, p2, n2);
        if (!rc && c->p == row) rc = 1;  /* a row of no bytes (no column in the images): not MySQL's */
        (*got)++;
    }
    return rc;
}

/* A row change line's parts around its seq and images (lines_into puts them together): its head up
 * to `"seq":`, its mid from binlog_file up to `"before":` (members: `"schema":…,"table":…,`), its
 * tail from rows_query to the newline (said: the statement, NULL where none was logged). In the
 * order of binlake.records.RowChangeRecord: the lane checks it when it loads (lane_layouts). */
static inline int row_head(char *head, size_t n, const char *id, int id_len) {
    return snprintf(head, n, "{\"record\":\"row_change\",\"txn_id\":\"%.*s\",\"segment_id\":1,\"end_segment\":true,"
                    "\"seq\":", id_len, id);
}

static inline int row_mid(char *mid, size_t n, PyObject *file, long long pos, const char *commit, int commit_len,
                   const char *ts, int tsn, PyObject *members, int op) {
    static const char *ops[3] = {"insert", "update", "delete"};
    int mn = snprintf(mid, n, ",\"binlog_file\":%s,\"event_pos\":%lld,\"commit_ts\":\"%.*s\",\"event_ts\":\"%.*s\",",
                      PyBytes_AS_STRING(file), pos, commit_len, commit, tsn, ts);
    memcpy(mid + mn, PyBytes_AS_STRING(members), PyBytes_GET_SIZE(members));
    mn += (int)PyBytes_GET_SIZE(members);
    return mn + snprintf(mid + mn, n - mn, "\"op\":\"%s\",\"before\":", ops[op]);
}

static inline int xid_tail(char *xid, size_t n, unsigned long long value) {
    return snprintf(xid, n, ",\"xid\":%llu}\n", value);
}

static inline int row_tail(out_t *tail, const unsigned char *said, long long said_len, const char *xid, int xid_len) {
    tail->len = 0;
    int rc = put(tail, ",\"rows_query\":", 14);
    if (!rc) rc = said ? put_str(tail, said, said_len, UTF8_REPLACE) : put(tail, "null", 4);
    return rc ? rc : put(tail, xid, xid_len);
}

/* Its rows event at e as lines into o (only counted when the call writes no rows), or in columns mode into
 * the run's columns; seq on from *seq. 0 done, 1 the walk must take the transaction, -1 an
 * exception set. */
static int lane_rows(lane_t *L, const unsigned char *e, long long pos, const facts_t *f, PyObject *entry,
                     long long table, unsigned long long xid, line_parts_t *parts, shared_t *shared, out_t *o,
                     long long *seq, Py_ssize_t *got) {
    long long size = u32(e + 9), n = size - L->header_len - (L->crc ? 4 : 0);
    const unsigned char *body = e + L->header_len;
    int t = e[4], op = t - (t >= WRITE_ROWS_EVENT ? WRITE_ROWS_EVENT : WRITE_ROWS_EVENT_V1);
    const compiled_t *plan = PyCapsule_GetPointer(PyTuple_GET_ITEM(entry, E_COMPILED), "binlake.compiled");
    long long p = 8;
    if (t >= WRITE_ROWS_EVENT) {  /* v2: its extra data's length (itself included) */
        if (n < 10) return 1;
        p = 8 + (long long)le(body + 8, 2);
    }
    uint64_t ncols;  /* then the images' bitmaps */
    if (!packed_int(body, n, &p, &ncols) || ncols != (uint64_t)plan->ncols) return 1;
    long long nb = (plan->ncols + 7) / 8;
    const unsigned char *p1 = body + p, *p2 = op == 1 ? body + p + nb : p1;
    p += op == 1 ? 2 * nb : nb;
    if (p > n) return 1;
    cursor_t c = {body + p, body + n};
    int rc = 0;
    if (L->runs) rc = lane_block(L, shared, &c, plan, p1, p2, op, table, *seq, pos, (long long)u32(e) * 1000000, xid, got);
    else if (!L->rows) rc = rows_counted(&c, plan, p1, p2, op, got);
    if (L->runs || !L->rows) {
        *seq += *got;
        return rc;
    }
    char ts[32], mid[1024];
    int tsn = gtid_ts_into(ts, (long long)u32(e) * 1000000);
    PyObject *members = PyTuple_GET_ITEM(entry, E_MEMBERS);
    if (!tsn || PyBytes_GET_SIZE(L->file) + PyBytes_GET_SIZE(members) > 800) return 1;
    parts->mid = mid;
    parts->mid_len = row_mid(mid, sizeof mid, L->file, pos, f->commit, f->commit_len, ts, tsn, members, op);
    rc = lines_into(o, &c, plan->cols, plan->keys, plan->ncols, p1, p2, op, parts, *seq, got);
    *seq += *got;
    parts->mid = NULL;
    return rc;
}

/* A transaction's record appended to the run's columns (the lines' record, transaction_record's
 * fields that vary); tables: its tables' entries in the record's order. 0, or -1 an exception set. */
static int record_columns(lane_t *L, long long server_id, long long start, long long end, const txn_end_t *te,
                          const facts_t *f, long long rows, const Py_ssize_t counts[3], PyObject *const *tables,
                          Py_ssize_t ntables) {
    for (Py_ssize_t j = 0; j < ntables; j++) {
        PyObject *key = PyLong_FromVoidPtr(tables[j]);
        if (key == NULL) return -1;
        PyObject *at = PyDict_GetItemWithError(L->table_index, key);
        long i = at ? PyLong_AsLong(at) : PyList_GET_SIZE(L->record_tables);
        int ok = !PyErr_Occurred();
        if (ok && at == NULL) {
            PyObject *index = PyLong_FromLong(i);
            ok = index != NULL && PyDict_SetItem(L->table_index, key, index) == 0 &&
                 PyList_Append(L->record_tables, PyTuple_GET_ITEM(tables[j], E_TABLE_MAP)) == 0;
            Py_XDECREF(index);
        }
        Py_DECREF(key);
        int32_t i32 = (int32_t)i;
        if (!ok || put(&L->named, (const char *)&i32, 4) < 0) return -1;
    }
    int has_length = f->g.has_length && f->g.length;
    int64_t r[RECORD_FIELDS] = {
        start, end, has_length ? (int64_t)f->g.length : 0, server_id, (int64_t)te->xid, f->commit_us,
        f->g.original_us, f->first_us, f->g.last_committed, f->g.sequence_number,
        te->events, rows, counts[0], counts[1], counts[2], ntables,
        (f->anonymous ? 1 : 0) | (has_length ? 0 : 2) | (f->g.original_us ? 0 : 4) | (f->g.logical ? 0 : 8)};
    if (put(&L->ids.data, f->id, f->id_len) < 0 || column_mark(&L->ids) != 0) return -1;
    return put(&L->fields, (const char *)r, sizeof r);
}

/* A transaction's record as its JSON line into o: binlake.records.TransactionRecord's fields in
 * order, as transaction_record words them (the lane checks the order when it loads: lane_layouts).
 * tables: its tables' entries in the record's order. 0, or -1 an exception set. */
static inline int record_line(out_t *o, const lane_t *L, const facts_t *f, long long server_id, long long start,
                       long long end, const txn_end_t *te, long long rows, const Py_ssize_t counts[3],
                       PyObject *const *tables, Py_ssize_t ntables) {
#define P(x) do { if ((x) < 0) return -1; } while (0)
#define S(lit) P(put(o, lit, sizeof lit - 1))
    S("{\"record\":\"transaction\",\"txn_id\":\""); P(put(o, f->id, f->id_len));
    if (f->anonymous) S("\",\"gtid\":null");
    else { S("\",\"gtid\":\""); P(put(o, f->id, f->id_len)); S("\""); }
    S(",\"source\":"); P(put_bytes(o, L->source));
    S(",\"server_id\":"); P(put_u64(o, (unsigned long long)server_id));
    S(",\"binlog_file\":"); P(put_bytes(o, L->file));
    S(",\"start_pos\":"); P(put_i64(o, start));
    S(",\"end_pos\":"); P(put_i64(o, end));
    S(",\"transaction_length\":");
    if (f->g.has_length && f->g.length) P(put_u64(o, f->g.length)); else S("null");
    S(",\"kind\":\"dml\",\"outcome\":\"committed\",\"end_event\":\"XID\",\"synthetic_boundary\":false,\"xid\":");
    P(put_u64(o, te->xid));
    S(",\"xa_xid\":null,\"commit_ts\":\""); P(put(o, f->commit, f->commit_len));
    S("\",\"original_commit_ts\":");
    if (f->original_len) { S("\""); P(put(o, f->original, f->original_len)); S("\""); } else S("null");
    S(",\"first_event_ts\":\""); P(put(o, f->first, f->first_len));
    S("\",\"last_committed\":");
    if (f->g.logical) { P(put_i64(o, f->g.last_committed)); S(",\"sequence_number\":"); P(put_i64(o, f->g.sequence_number)); }
    else S("null,\"sequence_number\":null");
    S(",\"compressed\":false,\"event_count\":"); P(put_i64(o, te->events));
    S(",\"row_count\":"); P(put_i64(o, rows));
    S(",\"rows_inserted\":"); P(put_i64(o, counts[0]));
    S(",\"rows_updated\":"); P(put_i64(o, counts[1]));
    S(",\"rows_deleted\":"); P(put_i64(o, counts[2]));
    S(",\"tables\":[");
    for (Py_ssize_t j = 0; j < ntables; j++) {
        if (j) S(",");
        P(put_bytes(o, PyTuple_GET_ITEM(tables[j], E_NAME_JSON)));
    }
    S("],\"statement\":null,\"segment_count\":1}\n");
#undef S
#undef P
    return 0;
}

/* The ordinary transaction [start, end) (transaction_end's te) as lines into o: 0 done, 1 the walk
 * must take it (o as it was), -1 an exception set. *rows: its row changes. */
static int lane_txn(lane_t *L, const Py_buffer *b, long long base, long long start, long long end,
                    const txn_end_t *te, out_t *o, Py_ssize_t *rows) {
    const unsigned char *buf = b->buf;
    facts_t f;
    if (txn_facts(L, buf, base, start, end, te, &f)) return 1;
    char head[160], xid[40];
    line_parts_t parts = {head, 0, NULL, 0, NULL, 0};
    parts.head_len = row_head(head, sizeof head, f.id, f.id_len);
    int xid_len = xid_tail(xid, sizeof xid, te->xid);
    out_t *tail = &L->tail;
    shared_t shared = {-1, -1, f.commit_us};
    run_mark_t run_mark;
    if (L->runs) {
        run_marked(L, &run_mark);
        shared.txn = PyList_GET_SIZE(L->txn_ids);
        PyObject *id = PyUnicode_FromStringAndSize(f.id, f.id_len);
        int added = id != NULL && PyList_Append(L->txn_ids, id) == 0;
        Py_XDECREF(id);
        if (!added) return -1;
    }
    const unsigned char *said = NULL;  /* the statement whose rows are being read (ROWS_QUERY, ANNOTATE_ROWS) */
    long long said_len = 0;
    int told = 0;  /* the tail says it */

    Py_ssize_t mark = o->len, counts[3] = {0, 0, 0}, ntables = 0, nmapped = 0;
    PyObject *tables[LANE_TABLES], *mapped[LANE_TABLES];
    long long listed[LANE_TABLES];  /* columns mode: each map's index in the run's tables, -1 not yet */
    uint64_t ids[LANE_TABLES];
    long long seq = 0, seg_bytes = 0, pos = start;
    int rc = 0;
    for (Py_ssize_t k = 0; k < te->events && !rc; k++) {
        const unsigned char *e = buf + (pos - base), *body = e + L->header_len;
        long long size = u32(e + 9), n = size - L->header_len - (L->crc ? 4 : 0), at = pos;
        int t = e[4];
        pos += size;
        if (t == TABLE_MAP_EVENT) {
            PyObject *entry = n < 8 ? Py_None : known_map(L, body, n);
            if (entry == NULL) rc = -1;
            else if (entry == Py_None) rc = 1;
            if (rc) break;
            uint64_t id = le(body, 6);
            Py_ssize_t i = 0;
            while (i < nmapped && ids[i] != id) i++;
            if (i == LANE_TABLES) { rc = 1; break; }
            ids[i] = id;
            mapped[i] = entry;
            listed[i] = -1;
            nmapped += i == nmapped;
            PyObject *key = PyLong_FromUnsignedLongLong(id);  /* the walk's table maps, as it keeps them */
            if (key == NULL || PyDict_SetItem(L->table_maps, key, PyTuple_GET_ITEM(entry, E_TABLE_MAP)) < 0) rc = -1;
            Py_XDECREF(key);
            continue;
        }
        if (t == ROWS_QUERY_LOG_EVENT || t == ANNOTATE_ROWS_EVENT) {  /* events.decode_rows_query, decode_annotate_rows */
            int skip = t == ROWS_QUERY_LOG_EVENT && n > 0;  /* a length byte that overflows: the text is the rest */
            said = body + skip;
            said_len = n - skip;
            told = 0;
            continue;
        }
        if (t < WRITE_ROWS_EVENT_V1 || t > DELETE_ROWS_EVENT || (t > DELETE_ROWS_EVENT_V1 && t < WRITE_ROWS_EVENT))
            continue;  /* its GTID, BEGIN, XID */
        if (!told && L->runs) {  /* the statement as events.decode_rows_query gives it */
            shared.statement = -1;
            if (said) {
                shared.statement = PyList_GET_SIZE(L->statements);
                PyObject *text = PyUnicode_DecodeUTF8((const char *)said, said_len, "replace");
                int added = text != NULL && PyList_Append(L->statements, text) == 0;
                Py_XDECREF(text);
                if (!added) { rc = -1; break; }
            }
            told = 1;
        }
        if (!told) {  /* `,"rows_query":…,"xid":…}` and the newline */
            if ((rc = row_tail(tail, said, said_len, xid, xid_len))) break;
            parts.tail = tail->p;
            parts.tail_len = tail->len;
            told = 1;
        }
        /* a segment that is full at a rows event ends there (segments.Segmenter): not the lane's */
        if (n < 8 || (seq && (seq >= L->seg_rows || seg_bytes >= L->seg_bytes))) { rc = 1; break; }
        uint64_t id = le(body, 6);
        Py_ssize_t i = 0, got = 0;
        while (i < nmapped && ids[i] != id) i++;
        if (i == nmapped) { rc = 1; break; }  /* mapped before the transaction, or not at all */
        if (L->runs && listed[i] < 0) {
            listed[i] = PyList_GET_SIZE(L->tables);
            if (PyList_Append(L->tables, PyTuple_GET_ITEM(mapped[i], E_TABLE_MAP)) < 0) { rc = -1; break; }
        }
        if ((rc = lane_rows(L, e, at, &f, mapped[i], listed[i], te->xid, &parts, &shared, o, &seq, &got))) break;
        if (le(body + 6, 2) & STMT_END_F) said = NULL, told = 0;  /* the statement's last rows event */
        counts[t - (t >= WRITE_ROWS_EVENT ? WRITE_ROWS_EVENT : WRITE_ROWS_EVENT_V1)] += got;
        seg_bytes += size;
        Py_ssize_t j = 0;
        while (j < ntables && by_name(&tables[j], &mapped[i]) != 0) j++;
        if (j == LANE_TABLES) { rc = 1; break; }
        if (j == ntables) tables[ntables++] = mapped[i];
    }
    if (rc) {
        o->len = mark;
        if (L->runs && run_back(L, &run_mark) < 0) return -1;
        return rc;
    }
    *rows = (Py_ssize_t)seq;
    qsort(tables, ntables, sizeof tables[0], by_name);
    if (L->records)
        return record_columns(L, u32(buf + (start - base) + 5), start, end, te, &f, seq, counts, tables, ntables);
    return record_line(o, L, &f, u32(buf + (start - base) + 5), start, end, te, seq, counts, tables, ntables);
}

/* Columns mode: the run's columns and lists, empty. */
static int run_start(lane_t *L) {
    L->valid = (out_t){PyBytes_FromStringAndSize(NULL, 1 << 12), NULL, 0, 1 << 12};
    L->blocks = (out_t){PyBytes_FromStringAndSize(NULL, 1 << 14), NULL, 0, 1 << 14};
    L->txn_ids = PyList_New(0);
    L->tables = PyList_New(0);
    L->statements = PyList_New(0);
    if (!L->valid.bytes || !L->blocks.bytes || !L->txn_ids || !L->tables || !L->statements ||
        column_start(&L->before, 1 << 12, 1 << 16) < 0 || column_start(&L->after, 1 << 12, 1 << 16) < 0)
        return -1;
    L->valid.p = PyBytes_AS_STRING(L->valid.bytes);
    L->blocks.p = PyBytes_AS_STRING(L->blocks.bytes);
    return 0;
}

/* The run appended to L->runs: (blocks, txn_ids, tables, statements, before, after, valid), before
 * and after an Arrow string column's (offsets, data) (binlake.assemble.sinks.RowRun). */
static int run_done(lane_t *L) {
    PyObject *before = column_done(&L->before), *after = before ? column_done(&L->after) : NULL, *run = NULL;
    if (after && _PyBytes_Resize(&L->valid.bytes, L->valid.len) == 0 &&
        _PyBytes_Resize(&L->blocks.bytes, L->blocks.len) == 0)
        run = PyTuple_Pack(7, L->blocks.bytes, L->txn_ids, L->tables, L->statements, before, after, L->valid.bytes);
    int rc = run != NULL && PyList_Append(L->runs, run) == 0 ? 0 : -1;
    Py_XDECREF(run);
    Py_XDECREF(before);
    Py_XDECREF(after);
    return rc;
}

/* Records mode: the run's columns, empty. */
static int records_start(lane_t *L) {
    L->fields = (out_t){PyBytes_FromStringAndSize(NULL, 1 << 14), NULL, 0, 1 << 14};
    L->named = (out_t){PyBytes_FromStringAndSize(NULL, 1 << 12), NULL, 0, 1 << 12};
    L->record_tables = PyList_New(0);
    L->table_index = PyDict_New();
    if (!L->fields.bytes || !L->named.bytes || !L->record_tables || !L->table_index ||
        column_start(&L->ids, 1 << 10, 1 << 15) < 0)
        return -1;
    L->fields.p = PyBytes_AS_STRING(L->fields.bytes);
    L->named.p = PyBytes_AS_STRING(L->named.bytes);
    return 0;
}

/* The run's records appended to L->records: (fields, ids, named, tables), ids an Arrow string
 * column's (offsets, data) (binlake.assemble.lane.RecordRun). */
static int records_done(lane_t *L) {
    PyObject *ids = column_done(&L->ids), *run = NULL;
    if (ids && _PyBytes_Resize(&L->fields.bytes, L->fields.len) == 0 &&
        _PyBytes_Resize(&L->named.bytes, L->named.len) == 0)
        run = PyTuple_Pack(4, L->fields.bytes, ids, L->named.bytes, L->record_tables);
    int rc = run != NULL && PyList_Append(L->records, run) == 0 ? 0 : -1;
    Py_XDECREF(run);
    Py_XDECREF(ids);
    return rc;
}

static void records_release(lane_t *L) {
    Py_XDECREF(L->fields.bytes);
    Py_XDECREF(L->named.bytes);
    Py_XDECREF(L->ids.offsets.bytes);
    Py_XDECREF(L->ids.data.bytes);
    Py_XDECREF(L->record_tables);
    Py_XDECREF(L->table_index);
}

static void run_release(lane_t *L) {
    columns_release(&L->before, &L->after);
    Py_XDECREF(L->valid.bytes);
    Py_XDECREF(L->blocks.bytes);
    Py_XDECREF(L->txn_ids);
    Py_XDECREF(L->tables);
    Py_XDECREF(L->statements);
}

/* lane(data, base, pos, stop, fixed, maps, learn, table_maps, most[, runs[, records]]) -> (lines, pos, txns, events, rows)
 * fixed: (header_len, crc, query_phl, inside, source, file, rows, seg_rows, seg_bytes, file_name,
 * namespace), a file's;
 * inside: 256 bytes, the types an ordinary transaction may hold (table maps, v1 and v2 rows);
 * source, file: JSON texts; rows: whether row changes are written (they are counted either way).
 * At most `most` transactions; pos: the offset after the last. With `runs` (a list), the row
 * changes are not lines but columns, the run appended to it (run_done); with `records` (a list),
 * the transactions' records are not lines either but columns (records_done). None: lines. */
static PyObject *lane(PyObject *self, PyObject *args) {
    PyObject *data, *fixed;
    long long base, pos, stop;
    Py_ssize_t most, inside_len;
    lane_t L;
    memset(&L, 0, sizeof L);
    if (!PyArg_ParseTuple(args, "OLLLO!O!OO!n|OO", &data, &base, &pos, &stop, &PyTuple_Type, &fixed, &PyDict_Type,
                          &L.maps, &L.learn, &PyDict_Type, &L.table_maps, &most, &L.runs, &L.records))
        return NULL;
    if (L.runs == Py_None) L.runs = NULL;
    if (L.records == Py_None) L.records = NULL;
    if ((L.runs && !PyList_Check(L.runs)) || (L.records && !PyList_Check(L.records))) {
        PyErr_SetString(PyExc_TypeError, "runs, records: a list or None");
        return NULL;
    }
    if (!PyArg_ParseTuple(fixed, "npny#O!O!pLLy#y#", &L.header_len, &L.crc, &L.query_phl, &L.inside, &inside_len,
                          &PyBytes_Type, &L.source, &PyBytes_Type, &L.file, &L.rows, &L.seg_rows, &L.seg_bytes,
                          &L.file_name, &L.file_name_len, &L.namespace, &L.namespace_len))
        return NULL;
    if (inside_len != 256 || L.namespace_len != 16) {
        PyErr_SetString(PyExc_ValueError, "inside: 256 bytes, one per event type; namespace: 16 bytes");
        return NULL;
    }
    Py_ssize_t txns = 0, events = 0, rows = 0;
    Py_buffer b;
    if (PyObject_GetBuffer(data, &b, PyBUF_SIMPLE) < 0) {  /* the walk takes it all */
        PyErr_Clear();
        return Py_BuildValue("(yLnnn)", "", pos, txns, events, rows);
    }
    out_t o = {PyBytes_FromStringAndSize(NULL, 1 << 16), NULL, 0, 1 << 16};
    L.tail = (out_t){PyBytes_FromStringAndSize(NULL, 1 << 10), NULL, 0, 1 << 10};
    PyObject *result = NULL;
    if (o.bytes == NULL || L.tail.bytes == NULL || (L.runs && run_start(&L) < 0) ||
        (L.records && records_start(&L) < 0))
        goto done;
    o.p = PyBytes_AS_STRING(o.bytes);
    L.tail.p = PyBytes_AS_STRING(L.tail.bytes);
    while (txns < most && o.len + L.before.data.len + L.after.data.len < LANE_BYTES) {
        txn_end_t te;
        long long end = transaction_end(&b, base, pos, stop, L.header_len, L.crc, L.query_phl, L.inside, LANE_EVENTS,
                                        &te);
        Py_ssize_t n = 0;
        int rc = end ? lane_txn(&L, &b, base, pos, end, &te, &o, &n) : 1;
        if (rc < 0) goto done;
        if (rc) break;
        txns++;
        events += te.events;
        rows += L.rows ? n : 0;
        pos = end;
    }
    if (L.runs && L.blocks.len && run_done(&L) < 0) goto done;
    if (L.records && txns && records_done(&L) < 0) goto done;
    if (_PyBytes_Resize(&o.bytes, o.len) == 0) result = Py_BuildValue("(OLnnn)", o.bytes, pos, txns, events, rows);
done:
    Py_XDECREF(o.bytes);
    Py_XDECREF(L.tail.bytes);
    if (L.runs) run_release(&L);
    if (L.records) records_release(&L);
    PyBuffer_Release(&b);
    return result;
}

/* lane_layouts(members) -> (a record line, a row change line, RECORD_COLUMNS' names, BLOCK_COLUMNS'
 * names): what the writers above write, for an empty transaction (members: a table's
 * `"schema":…,"table":…,`, as binlake.assemble.lane learns it). binlake.assemble.lane holds them
 * to binlake.records' shapes and its own columns when it loads. */
static PyObject *lane_layouts(PyObject *self, PyObject *members) {
    if (!PyBytes_Check(members)) {
        PyErr_SetString(PyExc_TypeError, "members: bytes");
        return NULL;
    }
    lane_t L;
    memset(&L, 0, sizeof L);
    facts_t f;
    memset(&f, 0, sizeof f);
    txn_end_t te;
    memset(&te, 0, sizeof te);
    Py_ssize_t counts[3] = {0, 0, 0};
    char head[160], mid[1024], xid[40];
    PyObject *empty = PyBytes_FromString("\"\""), *result = NULL, *names = NULL, *blocks = NULL;
    out_t rec = {PyBytes_FromStringAndSize(NULL, 1 << 10), NULL, 0, 1 << 10};
    out_t row = {PyBytes_FromStringAndSize(NULL, 1 << 10), NULL, 0, 1 << 10};
    out_t tail = {PyBytes_FromStringAndSize(NULL, 1 << 8), NULL, 0, 1 << 8};
    if (!empty || !rec.bytes || !row.bytes || !tail.bytes || PyBytes_GET_SIZE(members) > 800) goto done;
    rec.p = PyBytes_AS_STRING(rec.bytes);
    row.p = PyBytes_AS_STRING(row.bytes);
    tail.p = PyBytes_AS_STRING(tail.bytes);
    L.source = L.file = empty;
    int hn = row_head(head, sizeof head, "", 0), mn = row_mid(mid, sizeof mid, empty, 0, "", 0, "", 0, members, 0);
    if (record_line(&rec, &L, &f, 0, 0, 0, &te, 0, counts, NULL, 0) < 0 || put(&row, head, hn) < 0 ||
        put(&row, "0", 1) < 0 || put(&row, mid, mn) < 0 || put(&row, "null" AFTER_KEY "null", sizeof AFTER_KEY + 7) < 0 ||
        row_tail(&tail, NULL, 0, xid, xid_tail(xid, sizeof xid, 0)) < 0 || put(&row, tail.p, tail.len) < 0)
        goto done;
#define COLUMN_NAME(tag, name) #name,
    static const char *const record_names[] = {RECORD_COLUMNS(COLUMN_NAME)}, *const block_names[] = {BLOCK_COLUMNS(COLUMN_NAME)};
#undef COLUMN_NAME
    names = PyTuple_New(RECORD_FIELDS);
    blocks = PyTuple_New(BLOCK_FIELDS);
    if (!names || !blocks) goto done;
    for (int i = 0; i < RECORD_FIELDS; i++) {
        PyObject *name = PyUnicode_FromString(record_names[i]);
        if (!name) goto done;
        PyTuple_SET_ITEM(names, i, name);
    }
    for (int i = 0; i < BLOCK_FIELDS; i++) {
        PyObject *name = PyUnicode_FromString(block_names[i]);
        if (!name) goto done;
        PyTuple_SET_ITEM(blocks, i, name);
    }
    result = Py_BuildValue("(y#y#OO)", rec.p, rec.len, row.p, row.len, names, blocks);
done:
    Py_XDECREF(empty);
    Py_XDECREF(rec.bytes);
    Py_XDECREF(row.bytes);
    Py_XDECREF(tail.bytes);
    Py_XDECREF(names);
    Py_XDECREF(blocks);
    return result;
}

#endif
