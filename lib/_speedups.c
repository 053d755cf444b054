/* lib._speedups: the Common Fabric value-hash byte stream (lib/hashing.py) in C.
 *
 * Only plain JSON-typed values are handled here: None, bool, int (|n| <= 2**53),
 * float, str without lone surrogates, list, tuple, and dict (or the registered
 * FrozenDict type) with str keys, all of their exact built-in types. Anything else
 * (UNDEFINED, HOLE, bytes, BigInt, larger ints, subclasses, objects with
 * __fabric_json__ other than registered types, non-str keys, nesting deeper than
 * MAX_DEPTH, which includes cycles) raises Unsupported, and the caller runs the
 * pure-Python reference for that value. So for every value the result is either the
 * reference's bytes or Unsupported.
 *
 *   encode(value, marks=None) -> bytes
 *       The stream. With a list as `marks`, (id(element), start, end) is appended for
 *       every dict/list/tuple element of an array (lib/fabric/graph_plan.py).
 *   encode_json(value) -> bytes
 *       The same stream, for a value whose JSON text orjson then writes (lib/chunking.py):
 *       also Unsupported for a float that JSON cannot hold (NaN, infinities) or that
 *       orjson writes otherwise than json.dumps (0 < |x| < 1e-4), and for registered
 *       __fabric_json__ types. So a value this accepts has exactly json.dumps's text in
 *       orjson.dumps(value, option=OPT_SORT_KEYS).
 *   capture(value) -> (captured, odd_floats)
 *       lib.canonical's capture of a plain value: dicts become FrozenDicts (keys sorted,
 *       which is canonical order for the ASCII keys taken here), lists and tuples become
 *       tuples, scalars stay. odd_floats counts the floats orjson writes otherwise than
 *       json.dumps (not 0 and not 1e-4 <= |x| < inf). Unsupported for a non-ASCII or
 *       non-str key, and for any value not of an exact built-in JSON type (the Python
 *       walk takes those, and too-deep nesting).
 *   set_frozen_type(type)  the FrozenDict class (a dict subclass read as a dict).
 *   add_fabric_type(type)  objects of exactly this type are encoded as the value their
 *       __fabric_json__() returns (lib.hashing registers the types its walk meets so).
 *
 * Long strings (> 64 UTF-8 bytes) are hashed with hashlib's sha256 (OpenSSL, which
 * uses the CPU's SHA instructions), called once per such string.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 200
#define SHORT_LIMIT 64
#define SMALL_DICT 16

static PyObject *Unsupported;       /* the fall-back signal */
static PyObject *sha256_func;       /* hashlib.sha256 */
static PyTypeObject *frozen_type;   /* lib.frozen.FrozenDict, once registered */
static PyObject *fabric_types;      /* types hashed as their __fabric_json__() (a set) */
static PyObject *fabric_json_name;  /* "__fabric_json__" */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

typedef struct {
    Buf stream;
    int for_json; /* encode_json: refuse what orjson would not write as json.dumps does */
    int depth;
    PyObject *marks;
} Enc;

static int
buf_grow(Buf *b, Py_ssize_t extra)
{
    Py_ssize_t need = b->len + extra;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    return (b->len + extra <= b->cap) ? 0 : buf_grow(b, extra);
}

/* Callers reserve first; these only write. */
static inline void
put_byte(Buf *b, char c)
{
    b->data[b->len++] = c;
}

static inline void
put_mem(Buf *b, const char *p, Py_ssize_t n)
{
    memcpy(b->data + b->len, p, (size_t)n);
    b->len += n;
}

static inline void
put_leb128(Buf *b, size_t n)
{
    do {
        unsigned char byte = n & 0x7F;
        n >>= 7;
        put_byte(b, (char)(n ? (byte | 0x80) : byte));
    } while (n);
}

static int
unsupported(const char *what)
{
    PyErr_SetString(Unsupported, what);
    return -1;
}

/* ---- leaves ------------------------------------------------------------------- */

static int
put_double(Enc *e, double d)
{
    uint64_t bits;
    if (d != d) {
        bits = UINT64_C(0x7FF8000000000000);
    }
    else {
        memcpy(&bits, &d, 8);
    }
    if (buf_reserve(&e->stream, 9) < 0)
        return -1;
    put_byte(&e->stream, 0x23);
    for (int shift = 56; shift >= 0; shift -= 8)
        put_byte(&e->stream, (char)((bits >> shift) & 0xFF));
    return 0;
}

static int
enc_int(Enc *e, PyObject *v)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return -1;
    const long long limit = (long long)1 << 53;
    if (overflow || x > limit || x < -limit)
        return unsupported("an int beyond 2**53 is a bigint");
    return put_double(e, (double)x);
}

static int
enc_float(Enc *e, PyObject *v)
{
    double d = PyFloat_AS_DOUBLE(v);
    if (e->for_json) {
        if (!isfinite(d))
            return unsupported("a non-finite number has no plain JSON form");
        /* orjson writes 1e-05 as 0.00001 and 1.5e-07 as 1.5e-7; from 1e-4 up, as repr */
        if (d != 0.0 && fabs(d) < 1e-4)
            return unsupported("orjson and json.dumps write this number differently");
    }
    return put_double(e, d);
}

static int
put_long_string_hash(Enc *e, const char *s, Py_ssize_t n)
{
    /* hashlib reads the bytes through a memoryview (no copy); the caller keeps them alive */
    PyObject *view = PyMemoryView_FromMemory((char *)s, n, PyBUF_READ);
    if (view == NULL)
        return -1;
    PyObject *hasher = PyObject_CallOneArg(sha256_func, view);
    Py_DECREF(view);
    if (hasher == NULL)
        return -1;
    PyObject *digest = PyObject_CallMethod(hasher, "digest", NULL);
    Py_DECREF(hasher);
    if (digest == NULL)
        return -1;
    if (!PyBytes_Check(digest) || PyBytes_GET_SIZE(digest) != 32) {
        Py_DECREF(digest);
        PyErr_SetString(PyExc_RuntimeError, "sha256 digest is not 32 bytes");
        return -1;
    }
    if (buf_reserve(&e->stream, 33) < 0) {
        Py_DECREF(digest);
        return -1;
    }
    put_byte(&e->stream, (char)0xF0);
    put_mem(&e->stream, PyBytes_AS_STRING(digest), 32);
    Py_DECREF(digest);
    return 0;
}

static int
enc_str(Enc *e, PyObject *s)
{
    const char *data;
    Py_ssize_t n;
    PyObject *utf8 = NULL;
    if (PyUnicode_IS_ASCII(s)) {
        data = (const char *)PyUnicode_DATA(s);
        n = PyUnicode_GET_LENGTH(s);
    }
    else {
        utf8 = PyUnicode_AsUTF8String(s);
        if (utf8 == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
                PyErr_Clear();
                return unsupported("a string with a lone surrogate");
            }
            return -1;
        }
        data = PyBytes_AS_STRING(utf8);
        n = PyBytes_GET_SIZE(utf8);
    }
    int rc = 0;
    if (n <= SHORT_LIMIT) {
        if (buf_reserve(&e->stream, n + 2) < 0)
            rc = -1;
        else {
            put_byte(&e->stream, 0x24);
            put_leb128(&e->stream, (size_t)n);
            put_mem(&e->stream, data, n);
        }
    }
    else {
        rc = put_long_string_hash(e, data, n);
    }
    Py_XDECREF(utf8);
    return rc;
}

static int
put_literal(Enc *e, const char *stream, Py_ssize_t n)
{
    if (buf_reserve(&e->stream, n) < 0)
        return -1;
    put_mem(&e->stream, stream, n);
    return 0;
}

/* ---- containers --------------------------------------------------------------- */

static int enc_value(Enc *e, PyObject *v);

typedef struct {
    PyObject *key;
    PyObject *value;
} Pair;

/* Code point order, which is UTF-8 byte order for strings without lone surrogates
 * (a key holding one is Unsupported when it is encoded, whatever its place). */
static inline int
key_less(PyObject *a, PyObject *b)
{
    if (PyUnicode_IS_ASCII(a) && PyUnicode_IS_ASCII(b)) {
        Py_ssize_t na = PyUnicode_GET_LENGTH(a), nb = PyUnicode_GET_LENGTH(b);
        int c = memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)(na < nb ? na : nb));
        return c < 0 || (c == 0 && na < nb);
    }
    return PyUnicode_Compare(a, b) < 0;
}

static int
pair_cmp(const void *x, const void *y)
{
    const Pair *a = x, *b = y;
    if (a->key == b->key)
        return 0;
    return key_less(a->key, b->key) ? -1 : 1; /* keys are distinct */
}

static int
enc_dict(Enc *e, PyObject *d)
{
    Py_ssize_t n = PyDict_GET_SIZE(d);
    Pair small[SMALL_DICT];
    Pair *pairs = small;
    if (n > SMALL_DICT) {
        pairs = PyMem_Malloc(sizeof(Pair) * (size_t)n);
        if (pairs == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    Py_ssize_t count = 0, pos = 0;
    PyObject *k, *v;
    int rc = 0;
    while (count < n && PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) {
            rc = unsupported("an object key that is not a str");
            break;
        }
        Py_INCREF(k);
        Py_INCREF(v);
        pairs[count].key = k;
        pairs[count].value = v;
        count++;
    }
    if (rc == 0) {
        if (count <= SMALL_DICT) {
            for (Py_ssize_t i = 1; i < count; i++) {
                Pair p = pairs[i];
                Py_ssize_t j = i;
                while (j > 0 && key_less(p.key, pairs[j - 1].key)) {
                    pairs[j] = pairs[j - 1];
                    j--;
                }
                pairs[j] = p;
            }
        }
        else {
            qsort(pairs, (size_t)count, sizeof(Pair), pair_cmp);
        }
        rc = put_literal(e, "\x11", 1);
        for (Py_ssize_t i = 0; rc == 0 && i < count; i++) {
            rc = enc_str(e, pairs[i].key);
            if (rc == 0)
                rc = enc_value(e, pairs[i].value);
        }
        if (rc == 0)
            rc = put_literal(e, "\x00", 1);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_DECREF(pairs[i].key);
        Py_DECREF(pairs[i].value);
    }
    if (pairs != small)
        PyMem_Free(pairs);
    return rc;
}

static inline int
is_container(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    return t == &PyDict_Type || t == &PyList_Type || t == &PyTuple_Type ||
           (frozen_type && t == frozen_type);
}

static int
enc_array(Enc *e, PyObject *a)
{
    int is_list = PyList_CheckExact(a);
    int rc = put_literal(e, "\x10", 1);
    /* a list is re-measured every step: hashlib may let another thread change it */
    for (Py_ssize_t i = 0; rc == 0 && i < (is_list ? PyList_GET_SIZE(a) : PyTuple_GET_SIZE(a)); i++) {
        PyObject *item = is_list ? PyList_GET_ITEM(a, i) : PyTuple_GET_ITEM(a, i);
        Py_INCREF(item);
        Py_ssize_t start = e->stream.len;
        rc = enc_value(e, item);
        if (rc == 0 && e->marks != NULL && is_container(item)) {
            PyObject *mark = Py_BuildValue("(Nnn)", PyLong_FromVoidPtr(item), start, e->stream.len);
            if (mark == NULL || PyList_Append(e->marks, mark) < 0)
                rc = -1;
            Py_XDECREF(mark);
        }
        Py_DECREF(item);
    }
    if (rc == 0)
        rc = put_literal(e, "\x00", 1);
    return rc;
}

static int
enc_leaf(Enc *e, PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type)
        return enc_str(e, v);
    if (t == &PyLong_Type)
        return enc_int(e, v);
    if (v == Py_None)
        return put_literal(e, "\x20", 1);
    if (v == Py_True)
        return put_literal(e, "\x22\x01", 2);
    if (v == Py_False)
        return put_literal(e, "\x22\x00", 2);
    if (t == &PyFloat_Type)
        return enc_float(e, v);
    return unsupported("a value outside plain JSON types");
}

/* An object of a registered type (a Link) hashes as its __fabric_json__() value, as in
 * the reference. Only the plain stream has it: JSON text leaves it to Python. */
static int
enc_fabric(Enc *e, PyObject *v)
{
    if (++e->depth > MAX_DEPTH) {
        e->depth--;
        return unsupported("nested too deeply for the fast path");
    }
    int rc = -1;
    PyObject *json = PyObject_CallMethodNoArgs(v, fabric_json_name);
    if (json == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            rc = unsupported("no __fabric_json__ on this object");
        }
    }
    else {
        rc = enc_value(e, json);
        Py_DECREF(json);
    }
    e->depth--;
    return rc;
}

static int
enc_value(Enc *e, PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyDict_Type || (frozen_type != NULL && t == frozen_type) || t == &PyList_Type ||
        t == &PyTuple_Type) {
        if (++e->depth > MAX_DEPTH) {
            e->depth--;
            return unsupported("nested too deeply for the fast path");
        }
        int rc = (t == &PyList_Type || t == &PyTuple_Type) ? enc_array(e, v) : enc_dict(e, v);
        e->depth--;
        return rc;
    }
    if (!e->for_json && fabric_types != NULL && PySet_GET_SIZE(fabric_types) &&
        !PyUnicode_Check(v) && PySet_Contains(fabric_types, (PyObject *)t) == 1)
        return enc_fabric(e, v);
    return enc_leaf(e, v);
}

/* ---- capture ---------------------------------------------------------------------- */

static PyObject *cap_value(PyObject *v, int depth, Py_ssize_t *odd);

static PyObject *
cap_dict(PyObject *d, int depth, Py_ssize_t *odd)
{
    PyObject *keys = PyDict_Keys(d);
    if (keys == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(keys);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        if (!PyUnicode_CheckExact(k) || !PyUnicode_IS_ASCII(k)) {
            Py_DECREF(keys);
            unsupported("a key the Python capture orders");
            return NULL;
        }
    }
    if (PyList_Sort(keys) < 0) {
        Py_DECREF(keys);
        return NULL;
    }
    /* a FrozenDict filled as a dict (its __init__ would sort again; its mutators refuse) */
    PyObject *empty = PyTuple_New(0);
    PyObject *out = empty == NULL ? NULL : PyDict_Type.tp_new(frozen_type, empty, NULL);
    Py_XDECREF(empty);
    if (out == NULL) {
        Py_DECREF(keys);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        PyObject *v = PyDict_GetItemWithError(d, k);
        PyObject *c = v == NULL ? NULL : cap_value(v, depth, odd);
        if (c == NULL || PyDict_SetItem(out, k, c) < 0) {
            if (v == NULL && !PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "a dict changed while it was captured");
            Py_XDECREF(c);
            Py_DECREF(out);
            Py_DECREF(keys);
            return NULL;
        }
        Py_DECREF(c);
    }
    Py_DECREF(keys);
    return out;
}

static PyObject *
cap_array(PyObject *a, int depth, Py_ssize_t *odd)
{
    Py_ssize_t n = PyList_Check(a) ? PyList_GET_SIZE(a) : PyTuple_GET_SIZE(a);
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* a list read by index each time: a shorter list is refused, never overrun */
        if (PyList_Check(a) && i >= PyList_GET_SIZE(a)) {
            PyErr_SetString(PyExc_RuntimeError, "a list changed while it was captured");
            Py_DECREF(out);
            return NULL;
        }
        PyObject *v = PyList_Check(a) ? PyList_GET_ITEM(a, i) : PyTuple_GET_ITEM(a, i);
        PyObject *c = cap_value(v, depth, odd);
        if (c == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, c);
    }
    return out;
}

static PyObject *
cap_value(PyObject *v, int depth, Py_ssize_t *odd)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type || t == &PyLong_Type || t == &PyBool_Type || v == Py_None) {
        Py_INCREF(v);
        return v;
    }
    if (t == &PyFloat_Type) {
        double x = fabs(PyFloat_AS_DOUBLE(v));
        if (!((1e-4 <= x && x < INFINITY) || x == 0.0)) /* NaN fails both */
            (*odd)++;
        Py_INCREF(v);
        return v;
    }
    if (t == &PyDict_Type || t == &PyList_Type || t == &PyTuple_Type) {
        if (depth >= MAX_DEPTH) {
            unsupported("nested too deeply for the fast path");
            return NULL;
        }
        return t == &PyDict_Type ? cap_dict(v, depth + 1, odd) : cap_array(v, depth + 1, odd);
    }
    unsupported("a value outside the fast path");
    return NULL;
}

static PyObject *
py_capture(PyObject *self, PyObject *value)
{
    if (frozen_type == NULL) {
        unsupported("no FrozenDict type registered");
        return NULL;
    }
    Py_ssize_t odd = 0;
    PyObject *captured = cap_value(value, 0, &odd);
    if (captured == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(Nn)", captured, odd);
    return out;
}

/* ---- module functions ----------------------------------------------------------- */

static PyObject *
finish(Enc *e, int rc)
{
    PyObject *out = rc < 0 ? NULL : PyBytes_FromStringAndSize(e->stream.data, e->stream.len);
    PyMem_Free(e->stream.data);
    return out;
}

static PyObject *
py_encode(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"value", "marks", NULL};
    PyObject *value, *marks = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:encode", names, &value, &marks))
        return NULL;
    if (marks != Py_None && !PyList_Check(marks)) {
        PyErr_SetString(PyExc_TypeError, "marks must be a list or None");
        return NULL;
    }
    Enc e = {{NULL, 0, 0}, 0, 0, marks == Py_None ? NULL : marks};
    return finish(&e, enc_value(&e, value));
}

static PyObject *
py_encode_json(PyObject *self, PyObject *value)
{
    Enc e = {{NULL, 0, 0}, 1, 0, NULL};
    return finish(&e, enc_value(&e, value));
}

static PyObject *
py_set_frozen_type(PyObject *self, PyObject *type)
{
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyDict_Type)) {
        PyErr_SetString(PyExc_TypeError, "the frozen type must be a dict subclass");
        return NULL;
    }
    Py_INCREF(type);
    Py_XDECREF(frozen_type);
    frozen_type = (PyTypeObject *)type;
    Py_RETURN_NONE;
}

static PyObject *
py_add_fabric_type(PyObject *self, PyObject *type)
{
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "a fabric type must be a type");
        return NULL;
    }
    if (PySet_Add(fabric_types, type) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"encode", (PyCFunction)(void (*)(void))py_encode, METH_VARARGS | METH_KEYWORDS,
     "encode(value, marks=None) -> bytes: the value-hash byte stream of a plain value."},
    {"encode_json", py_encode_json, METH_O,
     "encode_json(value) -> bytes: the stream of a value orjson writes as json.dumps does."},
    {"capture", py_capture, METH_O,
     "capture(value) -> (captured, odd_floats): lib.canonical's capture of a plain value."},
    {"add_fabric_type", py_add_fabric_type, METH_O,
     "Hash objects of exactly this type as their __fabric_json__() (encode only)."},
    {"set_frozen_type", py_set_frozen_type, METH_O, "Register the FrozenDict class."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lib._speedups",
    "C fast path of lib.hashing for plain JSON values (see lib/_speedups.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *hashlib = PyImport_ImportModule("hashlib");
    if (hashlib == NULL)
        goto fail;
    sha256_func = PyObject_GetAttrString(hashlib, "sha256");
    Py_DECREF(hashlib);
    if (sha256_func == NULL)
        goto fail;
    fabric_types = PySet_New(NULL);
    fabric_json_name = PyUnicode_InternFromString("__fabric_json__");
    if (fabric_types == NULL || fabric_json_name == NULL)
        goto fail;
    Unsupported = PyErr_NewExceptionWithDoc(
        "lib._speedups.Unsupported",
        "The value is outside the fast path; use the pure-Python reference for it.", NULL, NULL);
    if (Unsupported == NULL)
        goto fail;
    Py_INCREF(Unsupported);
    if (PyModule_AddObject(m, "Unsupported", Unsupported) < 0) {
        Py_DECREF(Unsupported);
        goto fail;
    }
    if (PyModule_AddIntConstant(m, "MAX_DEPTH", MAX_DEPTH) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
