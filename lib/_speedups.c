/* lib._speedups: the Common Fabric value-hash byte stream (lib/hashing.py) in C.
 *
 * Only plain JSON-typed values are handled here: None, bool, int (|n| <= 2**53),
 * float, str without lone surrogates, list, tuple, and dict (or the registered
 * FrozenDict type) with str keys, all of their exact built-in types. Anything else
 * (UNDEFINED, HOLE, bytes, BigInt, larger ints, subclasses, objects with
 * __fabric_json__ other than registered types, non-str keys, nesting deeper than
 * MAX_DEPTH, which includes cycles) raises Unsupported, and the caller runs the pure-Python reference for that
 * value. So for every value the result is either the reference's bytes or Unsupported.
 *
 *   encode(value, marks=None) -> bytes
 *       The stream. With a list as `marks`, (id(element), start, end) is appended for
 *       every dict/list/tuple element of an array (lib/fabric/graph_plan.py).
 *   encode_json(value) -> (stream: bytes, json: bytes, wide: bool)
 *       The stream and, in the same walk, compact JSON (UTF-8; keys in the stream's
 *       order; escapes exactly as json.dumps(ensure_ascii=False)); `wide` tells that
 *       a string or key holds a character >= U+007F. A non-finite float is Unsupported
 *       here (plain JSON cannot hold it).
 *   capture(value) -> (copy: Any, stream: bytes, wide: bool)
 *       lib.canonical's captured copy (dicts become FrozenDicts in canonical key order,
 *       lists tuples; immutable leaves shared) and the stream, in one walk.
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
    Buf json;
    int want_json;
    int wide;
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

/* ---- numbers ------------------------------------------------------------------ */

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
    if (put_double(e, (double)x) < 0)
        return -1;
    if (e->want_json) {
        char text[32];
        int n = snprintf(text, sizeof text, "%lld", x);
        if (buf_reserve(&e->json, n) < 0)
            return -1;
        put_mem(&e->json, text, n);
    }
    return 0;
}

static int
enc_float(Enc *e, PyObject *v)
{
    double d = PyFloat_AS_DOUBLE(v);
    if (e->want_json) {
        if (!isfinite(d))
            return unsupported("a non-finite number has no plain JSON form");
        /* float.__repr__, which is what json.dumps writes */
        char *text = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (text == NULL)
            return -1;
        Py_ssize_t n = (Py_ssize_t)strlen(text);
        if (buf_reserve(&e->json, n) < 0) {
            PyMem_Free(text);
            return -1;
        }
        put_mem(&e->json, text, n);
        PyMem_Free(text);
    }
    return put_double(e, d);
}

/* ---- strings ------------------------------------------------------------------ */

/* What json.dumps(ensure_ascii=False) writes for a byte of UTF-8: 0 = the byte as it
 * is, 'u' = \u00XX, otherwise a backslash and this letter. */
static char json_escape[256];

static void
init_escapes(void)
{
    for (int c = 0; c < 0x20; c++)
        json_escape[c] = 'u';
    json_escape['\b'] = 'b';
    json_escape['\f'] = 'f';
    json_escape['\n'] = 'n';
    json_escape['\r'] = 'r';
    json_escape['\t'] = 't';
    json_escape['"'] = '"';
    json_escape['\\'] = '\\';
}

static int
put_json_string(Buf *b, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(b, n + 2) < 0)
        return -1;
    put_byte(b, '"');
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* skip 8 bytes at a time while none of them is < 0x20, '"' or '\\' */
        while (i + 8 <= n) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            const uint64_t ones = UINT64_C(0x0101010101010101), high = UINT64_C(0x8080808080808080);
            uint64_t quote = x ^ (ones * '"'), slash = x ^ (ones * '\\');
            uint64_t hit = ((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash);
            if (hit & high)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        char esc = json_escape[s[i]];
        if (!esc)
            continue;
        put_mem(b, (const char *)s + run, i - run);
        run = i + 1;
        /* room for this escape and everything after it, unescaped */
        if (buf_reserve(b, 6 + (n - run) + 1) < 0)
            return -1;
        put_byte(b, '\\');
        if (esc == 'u') {
            put_mem(b, "u00", 3);
            put_byte(b, hex[s[i] >> 4]);
            put_byte(b, hex[s[i] & 0xF]);
        }
        else {
            put_byte(b, esc);
        }
    }
    put_mem(b, (const char *)s + run, n - run);
    put_byte(b, '"');
    return 0;
}

static int
put_long_string_hash(Enc *e, const char *s, Py_ssize_t n, PyObject *owner)
{
    /* hashlib reads the bytes through a memoryview (no copy); `owner` keeps them alive */
    (void)owner;
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
        if (!e->wide && memchr(data, 0x7F, (size_t)n) != NULL)
            e->wide = 1;
    }
    else {
        e->wide = 1;
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
        rc = put_long_string_hash(e, data, n, utf8 ? utf8 : s);
    }
    if (rc == 0 && e->want_json)
        rc = put_json_string(&e->json, (const unsigned char *)data, n);
    Py_XDECREF(utf8);
    return rc;
}

/* ---- containers --------------------------------------------------------------- */

/* Each enc_* writes v's stream (and JSON); with `out` non-NULL it also sets *out to
 * v's captured copy (lib/canonical.py): a dict becomes a FrozenDict in canonical key
 * order, a list a tuple; immutable leaves are shared. */
static int enc_value(Enc *e, PyObject *v, PyObject **out);

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

static inline int
put_both(Enc *e, char stream_byte, char json_byte)
{
    if (buf_reserve(&e->stream, 1) < 0 || (e->want_json && buf_reserve(&e->json, 1) < 0))
        return -1;
    put_byte(&e->stream, stream_byte);
    if (e->want_json)
        put_byte(&e->json, json_byte);
    return 0;
}

static inline int
put_json_byte(Enc *e, char c)
{
    if (!e->want_json)
        return 0;
    if (buf_reserve(&e->json, 1) < 0)
        return -1;
    put_byte(&e->json, c);
    return 0;
}

static PyObject *
new_frozen(void)
{
    static PyObject *no_args;
    if (no_args == NULL && (no_args = PyTuple_New(0)) == NULL)
        return NULL;
    return PyDict_Type.tp_new(frozen_type, no_args, NULL);
}

static int
enc_dict(Enc *e, PyObject *d, PyObject **out)
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
    PyObject *k, *v, *copy = NULL;
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
    if (rc == 0 && out != NULL) {
        if (frozen_type == NULL)
            rc = unsupported("no FrozenDict type registered");
        else if ((copy = new_frozen()) == NULL)
            rc = -1;
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
        rc = put_both(e, 0x11, '{');
        for (Py_ssize_t i = 0; rc == 0 && i < count; i++) {
            if (i)
                rc = put_json_byte(e, ',');
            if (rc == 0)
                rc = enc_str(e, pairs[i].key);
            if (rc == 0)
                rc = put_json_byte(e, ':');
            if (rc == 0) {
                PyObject *item = NULL;
                rc = enc_value(e, pairs[i].value, copy ? &item : NULL);
                /* PyDict_SetItem on the dict itself: FrozenDict's own __setitem__ refuses */
                if (rc == 0 && copy != NULL) {
                    rc = PyDict_SetItem(copy, pairs[i].key, item);
                    Py_DECREF(item);
                }
            }
        }
        if (rc == 0)
            rc = put_both(e, 0x00, '}');
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_DECREF(pairs[i].key);
        Py_DECREF(pairs[i].value);
    }
    if (pairs != small)
        PyMem_Free(pairs);
    if (rc == 0 && out != NULL)
        *out = copy;
    else
        Py_XDECREF(copy);
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
enc_array(Enc *e, PyObject *a, PyObject **out)
{
    int is_list = PyList_CheckExact(a);
    PyObject *items = NULL;
    if (out != NULL && (items = PyList_New(0)) == NULL)
        return -1;
    int rc = put_both(e, 0x10, '[');
    /* a list is re-measured every step: hashlib may let another thread change it */
    for (Py_ssize_t i = 0; rc == 0 && i < (is_list ? PyList_GET_SIZE(a) : PyTuple_GET_SIZE(a)); i++) {
        PyObject *item = is_list ? PyList_GET_ITEM(a, i) : PyTuple_GET_ITEM(a, i);
        if (i)
            rc = put_json_byte(e, ',');
        if (rc < 0)
            break;
        Py_INCREF(item);
        Py_ssize_t start = e->stream.len;
        PyObject *copy = NULL;
        rc = enc_value(e, item, items ? &copy : NULL);
        if (rc == 0 && e->marks != NULL && is_container(item)) {
            PyObject *mark = Py_BuildValue("(Nnn)", PyLong_FromVoidPtr(item), start, e->stream.len);
            if (mark == NULL || PyList_Append(e->marks, mark) < 0)
                rc = -1;
            Py_XDECREF(mark);
        }
        if (rc == 0 && items != NULL)
            rc = PyList_Append(items, copy);
        Py_XDECREF(copy);
        Py_DECREF(item);
    }
    if (rc == 0)
        rc = put_both(e, 0x00, ']');
    if (rc == 0 && out != NULL) {
        *out = PyList_AsTuple(items);
        if (*out == NULL)
            rc = -1;
    }
    Py_XDECREF(items);
    return rc;
}

static int
put_literal(Enc *e, const char *stream, Py_ssize_t ns, const char *json, Py_ssize_t nj)
{
    if (buf_reserve(&e->stream, ns) < 0)
        return -1;
    put_mem(&e->stream, stream, ns);
    if (e->want_json) {
        if (buf_reserve(&e->json, nj) < 0)
            return -1;
        put_mem(&e->json, json, nj);
    }
    return 0;
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
        return put_literal(e, "\x20", 1, "null", 4);
    if (v == Py_True)
        return put_literal(e, "\x22\x01", 2, "true", 4);
    if (v == Py_False)
        return put_literal(e, "\x22\x00", 2, "false", 5);
    if (t == &PyFloat_Type)
        return enc_float(e, v);
    return unsupported("a value outside plain JSON types");
}

/* An object of a registered type (a Link) hashes as its __fabric_json__() value, as in
 * the reference. Only the plain stream has it: capture and JSON leave it to Python. */
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
        rc = enc_value(e, json, NULL);
        Py_DECREF(json);
    }
    e->depth--;
    return rc;
}

static int
enc_value(Enc *e, PyObject *v, PyObject **out)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyDict_Type || (frozen_type != NULL && t == frozen_type) || t == &PyList_Type ||
        t == &PyTuple_Type) {
        if (++e->depth > MAX_DEPTH) {
            e->depth--;
            return unsupported("nested too deeply for the fast path");
        }
        int rc = (t == &PyList_Type || t == &PyTuple_Type) ? enc_array(e, v, out) : enc_dict(e, v, out);
        e->depth--;
        return rc;
    }
    if (out == NULL && !e->want_json && fabric_types != NULL && PySet_GET_SIZE(fabric_types) &&
        !PyUnicode_Check(v) && PySet_Contains(fabric_types, (PyObject *)t) == 1)
        return enc_fabric(e, v);
    if (enc_leaf(e, v) < 0)
        return -1;
    if (out != NULL)
        *out = Py_NewRef(v);
    return 0;
}

/* ---- module functions ----------------------------------------------------------- */

static void
enc_free(Enc *e)
{
    PyMem_Free(e->stream.data);
    PyMem_Free(e->json.data);
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
    Enc e = {{NULL, 0, 0}, {NULL, 0, 0}, 0, 0, 0, marks == Py_None ? NULL : marks};
    if (enc_value(&e, value, NULL) < 0) {
        enc_free(&e);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(e.stream.data, e.stream.len);
    enc_free(&e);
    return out;
}

static PyObject *
py_encode_json(PyObject *self, PyObject *value)
{
    Enc e = {{NULL, 0, 0}, {NULL, 0, 0}, 1, 0, 0, NULL};
    if (enc_value(&e, value, NULL) < 0) {
        enc_free(&e);
        return NULL;
    }
    PyObject *out = Py_BuildValue("(y#y#O)", e.stream.data, e.stream.len, e.json.data, e.json.len,
                                  e.wide ? Py_True : Py_False);
    enc_free(&e);
    return out;
}

static PyObject *
py_capture(PyObject *self, PyObject *value)
{
    Enc e = {{NULL, 0, 0}, {NULL, 0, 0}, 0, 0, 0, NULL};
    PyObject *copy = NULL;
    if (enc_value(&e, value, &copy) < 0) {
        enc_free(&e);
        return NULL;
    }
    PyObject *out = Py_BuildValue("(Ny#O)", copy, e.stream.data, e.stream.len, e.wide ? Py_True : Py_False);
    enc_free(&e);
    return out;
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
     "encode_json(value) -> (stream, compact UTF-8 JSON, wide): one walk, both outputs."},
    {"capture", py_capture, METH_O,
     "capture(value) -> (captured copy, stream, wide): lib.canonical's capture in one walk."},
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
    init_escapes();
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
