/* lib._cells: the per-cell work of writing session graphs, in C.
 *
 * Each function does for the common case exactly what a pure-Python reference does,
 * and raises Unsupported for anything else, so the caller runs the reference for
 * that value (tests/fabric/test_cells_speedups.py holds the two equal):
 *
 *   fvj1_encode(value) -> object
 *       lib.fabric.values.encode for plain JSON, Links and UNDEFINED / HOLE: the same
 *       object when nothing needs a tag, else a copy with the tagged parts replaced
 *       (dicts keep their key order; a FrozenDict always becomes a plain dict copy).
 *       Unsupported for a key starting with "/", a
 *       non-str key, an int beyond 2**53, NaN / infinities / -0.0, a subclass of any
 *       built-in type, a Mapping that is not a dict, bytes, BigInt, nesting deeper than
 *       MAX_DEPTH: the reference writes those.
 *   shorten_links(text, head, tail) -> str
 *       lib.fabric.stored_values: every `head` + 43 base64url characters + `tail` in
 *       text replaced by U+0001 and the 43 characters (text itself when none is).
 *   cause_ids(prefix, encodings, suffix) -> list[str]
 *       "of:fid1:" + unpadded base64url of sha256(prefix + e + suffix) for each e
 *       (lib.fabric.graph_plan: the IDs of an array's element cells from their causes'
 *       encodings, one call per array). The SHA-256 is the one of the libcrypto that
 *       Python's hashlib already loaded, called directly (SHA256_Init / _Update /
 *       _Final, found with dlopen(RTLD_NOLOAD)): a hashlib object per element cost
 *       ten times the hashing of its few hundred bytes. Where no such libcrypto is
 *       loaded, hashlib.sha256 as before.
 *   native_sha256() -> bool
 *       Whether cause_ids found libcrypto's SHA-256 functions (for the tests).
 *   sha256(data) -> bytes
 *       The 32-byte digest cause_ids uses (hashlib's, through whichever path is in use).
 *   links(ids, space) -> list
 *       A Link (the registered link type) to each cell ID in space at no path, made as
 *       values.Link.trusted makes one: its fields set without the class's checks.
 *   flat_object(value) -> bool
 *       True when value is a dict whose subtree holds only dicts with str keys and
 *       str, int, float, bool and None values, all of exact built-in types: no arrays,
 *       so the planner leaves it as it is.
 *   nested_keys(value) -> list | None
 *       For a dict or a FrozenDict (set_types' frozen type): None when flat_object(value) is True, else the keys whose values are
 *       not of exactly str, int, float, bool or None, in the dict's order (the planner's
 *       `[k for k, v in value.items() if type(v) not in _LEAF_TYPES]`, and the flat
 *       check before it, in one call).
 *   stored_keys(ids) -> list
 *       lib.fabric.cell_keys.key of each cell ID: the 32 bytes a canonical
 *       content-derived ID names, any other ID as it is (the SQLite batch insert).
 *   load_isal(path) -> bool
 *       Finds isal_deflate_init / isal_deflate in python-isal's loaded isal_zlib extension
 *       (its ISA-L is linked statically and exported) with dlopen(RTLD_NOLOAD).
 *   deflate_many(texts, level) -> list[bytes | None]
 *       isal_zlib.compress(utf8, level) of each text, called as isal_zlib calls ISA-L,
 *       or None where that stream would be over nine tenths of the text; the GIL is
 *       released over the whole batch (lib.fabric.stored_values.encode_many, run by
 *       graph_batch.py's worker thread beside the main thread).
 *   element_identities(items, primary, identity_fields, encode) -> (list, list[int])
 *       lib.fabric.graph_plan's identities for the elements a primary field names:
 *       for each dict (or FrozenDict) element holding one of identity_fields, the first of `primary`
 *       whose value is a non-empty str, an int (not a bool) or a finite float gives
 *       ({"field": f, "value": v}, encode(that identity)); a dict holding none of
 *       identity_fields gives ({"contentHash": "sha256:" + hex of the SHA-256 of
 *       encode(element)}, encode(that identity)); a HOLE or UNDEFINED gives
 *       None; every other element is None too and its index is in the second list,
 *       for element_identity.natural_identity and the content hash in Python (also a
 *       value of a subclass, where the Python rules decide, and one encode refuses).
 *   set_types(link_type, frozen_type, hole, undefined, hole_tag, undefined_tag)
 *       What values.py's encoder knows: the Link class, lib.frozen.FrozenDict (written
 *       as a plain dict copy, as the reference's dict(v) is), the HOLE and UNDEFINED
 *       singletons and their tags.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 200
#define ID_CHARS 43

static PyObject *Unsupported;
static PyObject *sha256_func;
static PyTypeObject *link_type;
static PyTypeObject *frozen_type; /* lib.frozen.FrozenDict: written as a plain dict copy */
static PyObject *hole, *undefined, *hole_tag, *undefined_tag;
static PyObject *s_id, *s_space, *s_path, *s_quote, *s_slash, *s_link1, *s_digest;
static PyObject *s_field, *s_value, *s_content_hash; /* element_identities' identity keys */

static PyObject *
unsupported(const char *what)
{
    PyErr_SetString(Unsupported, what);
    return NULL;
}

/* ---- fvj1_encode ------------------------------------------------------------------ */

static PyObject *enc_value(PyObject *v, int depth, int in_array);

static PyObject *
enc_link(PyObject *v)
{
    /* {"/quote": {"/": {"link@1": {"id": .., "path": list(path), "space": ..}}}} */
    PyObject *id = PyObject_GetAttr(v, s_id);
    PyObject *space = id ? PyObject_GetAttr(v, s_space) : NULL;
    PyObject *path = space ? PyObject_GetAttr(v, s_path) : NULL;
    PyObject *path_list = path ? PySequence_List(path) : NULL;
    PyObject *body = NULL, *inner = NULL, *outer = NULL, *quote = NULL;
    if (path_list == NULL)
        goto done;
    body = PyDict_New();
    if (body == NULL || PyDict_SetItem(body, s_id, id) < 0 ||
        PyDict_SetItem(body, s_path, path_list) < 0 || PyDict_SetItem(body, s_space, space) < 0)
        goto done;
    inner = PyDict_New();
    if (inner == NULL || PyDict_SetItem(inner, s_link1, body) < 0)
        goto done;
    outer = PyDict_New();
    if (outer == NULL || PyDict_SetItem(outer, s_slash, inner) < 0)
        goto done;
    quote = PyDict_New();
    if (quote != NULL && PyDict_SetItem(quote, s_quote, outer) < 0)
        Py_CLEAR(quote);
done:
    Py_XDECREF(id);
    Py_XDECREF(space);
    Py_XDECREF(path);
    Py_XDECREF(path_list);
    Py_XDECREF(body);
    Py_XDECREF(inner);
    Py_XDECREF(outer);
    return quote;
}

static PyObject *
enc_dict(PyObject *d, int depth)
{
    PyObject *out = NULL, *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k))
            goto unsupported_key;
        if (PyUnicode_GET_LENGTH(k) > 0 && PyUnicode_READ_CHAR(k, 0) == '/')
            goto unsupported_key;
        Py_INCREF(v); /* the dict may change under a callback; hold what we encode */
        PyObject *e = enc_value(v, depth, 0);
        if (e == NULL) {
            Py_DECREF(v);
            Py_XDECREF(out);
            return NULL;
        }
        if (e != v) {
            if (out == NULL && (out = PyDict_Copy(d)) == NULL) {
                Py_DECREF(e);
                Py_DECREF(v);
                return NULL;
            }
            if (PyDict_SetItem(out, k, e) < 0) { /* an existing key keeps its place */
                Py_DECREF(e);
                Py_DECREF(v);
                Py_DECREF(out);
                return NULL;
            }
        }
        Py_DECREF(e);
        Py_DECREF(v);
    }
    if (out != NULL)
        return out;
    Py_INCREF(d);
    return d;
unsupported_key:
    Py_XDECREF(out);
    return unsupported("a key the reference escapes or refuses");
}

static PyObject *
enc_array(PyObject *a, int depth)
{
    int is_list = PyList_CheckExact(a);
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < (is_list ? PyList_GET_SIZE(a) : PyTuple_GET_SIZE(a)); i++) {
        PyObject *v = is_list ? PyList_GET_ITEM(a, i) : PyTuple_GET_ITEM(a, i);
        Py_INCREF(v);
        PyObject *e = enc_value(v, depth, 1);
        Py_DECREF(v);
        if (e == NULL) {
            Py_XDECREF(out);
            return NULL;
        }
        if (e != v && out == NULL) {
            /* the reference builds a new list holding the unchanged items as they are */
            Py_ssize_t n = is_list ? PyList_GET_SIZE(a) : PyTuple_GET_SIZE(a);
            out = PyList_New(n);
            if (out == NULL) {
                Py_DECREF(e);
                return NULL;
            }
            for (Py_ssize_t j = 0; j < n; j++) {
                PyObject *x = is_list ? PyList_GET_ITEM(a, j) : PyTuple_GET_ITEM(a, j);
                Py_INCREF(x);
                PyList_SET_ITEM(out, j, x);
            }
        }
        if (out != NULL) {
            if (i >= PyList_GET_SIZE(out)) { /* the list grew meanwhile */
                Py_DECREF(e);
                Py_DECREF(out);
                return unsupported("the list changed while it was encoded");
            }
            PyObject *old = PyList_GET_ITEM(out, i);
            PyList_SET_ITEM(out, i, e); /* steals e */
            Py_DECREF(old);
        }
        else {
            Py_DECREF(e);
        }
    }
    if (out != NULL) {
        if (PyList_GET_SIZE(out) != (is_list ? PyList_GET_SIZE(a) : PyTuple_GET_SIZE(a))) {
            Py_DECREF(out);
            return unsupported("the list changed while it was encoded");
        }
        return out;
    }
    Py_INCREF(a);
    return a;
}

static PyObject *
enc_value(PyObject *v, int depth, int in_array)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type || t == &PyBool_Type || v == Py_None) {
        Py_INCREF(v);
        return v;
    }
    if (t == &PyLong_Type) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return NULL;
        const long long limit = (long long)1 << 53;
        if (overflow || x > limit || x < -limit)
            return unsupported("an int beyond 2**53 is a bigint");
        Py_INCREF(v);
        return v;
    }
    if (t == &PyFloat_Type) {
        double d = PyFloat_AS_DOUBLE(v);
        if (!isfinite(d) || (d == 0.0 && signbit(d)))
            return unsupported("a special number");
        Py_INCREF(v);
        return v;
    }
    if (t == &PyDict_Type || t == &PyList_Type || t == &PyTuple_Type) {
        if (depth >= MAX_DEPTH)
            return unsupported("nested too deeply for the fast path");
        return t == &PyDict_Type ? enc_dict(v, depth + 1) : enc_array(v, depth + 1);
    }
    if (frozen_type != NULL && t == frozen_type) {
        /* the reference encodes dict(v): a plain copy, whether or not a tag changed it */
        if (depth >= MAX_DEPTH)
            return unsupported("nested too deeply for the fast path");
        PyObject *e = enc_dict(v, depth + 1);
        if (e != v)
            return e;
        Py_DECREF(e);
        return PyDict_Copy(v);
    }
    if (link_type != NULL && t == link_type)
        return enc_link(v);
    if (v == undefined && undefined_tag != NULL) {
        Py_INCREF(undefined_tag);
        return undefined_tag;
    }
    if (in_array && v == hole && hole_tag != NULL) {
        Py_INCREF(hole_tag);
        return hole_tag;
    }
    return unsupported("a value outside the fast path");
}

static PyObject *
py_fvj1_encode(PyObject *self, PyObject *value)
{
    return enc_value(value, 0, 0);
}

/* ---- flat_object ------------------------------------------------------------------ */

/* A dict, or a FrozenDict (a dict subclass overriding only the mutators, so reading it
 * as a dict is reading it as Python does): the planner's captured messages are those. */
static inline int
plain_dict(PyObject *v)
{
    return PyDict_CheckExact(v) || (frozen_type != NULL && Py_TYPE(v) == frozen_type);
}

static int
flat(PyObject *d, int depth)
{
    if (depth >= MAX_DEPTH)
        return 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k))
            return 0; /* the planner sorts keys, and refuses what cannot be sorted */
        PyTypeObject *t = Py_TYPE(v);
        if (t == &PyUnicode_Type || t == &PyLong_Type || t == &PyFloat_Type ||
            t == &PyBool_Type || v == Py_None)
            continue;
        if (t == &PyDict_Type && flat(v, depth + 1))
            continue;
        return 0;
    }
    return 1;
}

static PyObject *
py_flat_object(PyObject *self, PyObject *value)
{
    return PyBool_FromLong(PyDict_CheckExact(value) && flat(value, 0));
}

static PyObject *
py_nested_keys(PyObject *self, PyObject *value)
{
    if (!plain_dict(value)) {
        PyErr_SetString(PyExc_TypeError, "nested_keys takes a dict or a FrozenDict");
        return NULL;
    }
    if (flat(value, 0))
        Py_RETURN_NONE;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(value, &pos, &k, &v)) {
        PyTypeObject *t = Py_TYPE(v);
        if (t == &PyUnicode_Type || t == &PyLong_Type || t == &PyFloat_Type ||
            t == &PyBool_Type || v == Py_None)
            continue;
        if (PyList_Append(out, k) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* ---- shorten_links ---------------------------------------------------------------- */

static inline int
id_char(Py_UCS4 c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

static PyObject *
py_shorten_links(PyObject *self, PyObject *args)
{
    PyObject *text, *head, *tail;
    if (!PyArg_ParseTuple(args, "UUU:shorten_links", &text, &head, &tail))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t nh = PyUnicode_GET_LENGTH(head), nt = PyUnicode_GET_LENGTH(tail);
    if (nh == 0)
        return unsupported("an empty head");
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *pieces = NULL;
    Py_ssize_t pos = 0, last = 0;
    while (pos + nh <= n) {
        Py_ssize_t i = PyUnicode_Find(text, head, pos, n, 1);
        if (i == -2)
            goto fail;
        if (i < 0)
            break;
        Py_ssize_t j = i + nh;
        int match = j + ID_CHARS + nt <= n;
        for (Py_ssize_t c = 0; match && c < ID_CHARS; c++)
            match = id_char(PyUnicode_READ(kind, data, j + c));
        if (match) {
            int m = PyUnicode_Tailmatch(text, tail, j + ID_CHARS, n, -1);
            if (m < 0)
                goto fail;
            match = m;
        }
        if (!match) {
            pos = i + 1;
            continue;
        }
        if (pieces == NULL && (pieces = PyList_New(0)) == NULL)
            goto fail;
        PyObject *before = PyUnicode_Substring(text, last, i);
        PyObject *marker = PyUnicode_FromOrdinal(1);
        PyObject *idpart = PyUnicode_Substring(text, j, j + ID_CHARS);
        int bad = before == NULL || marker == NULL || idpart == NULL ||
                  PyList_Append(pieces, before) < 0 || PyList_Append(pieces, marker) < 0 ||
                  PyList_Append(pieces, idpart) < 0;
        Py_XDECREF(before);
        Py_XDECREF(marker);
        Py_XDECREF(idpart);
        if (bad)
            goto fail;
        last = pos = j + ID_CHARS + nt;
    }
    if (pieces == NULL) {
        Py_INCREF(text);
        return text;
    }
    PyObject *rest = PyUnicode_Substring(text, last, n);
    if (rest == NULL || PyList_Append(pieces, rest) < 0) {
        Py_XDECREF(rest);
        goto fail;
    }
    Py_DECREF(rest);
    PyObject *empty = PyUnicode_New(0, 0);
    PyObject *out = empty ? PyUnicode_Join(empty, pieces) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(pieces);
    return out;
fail:
    Py_XDECREF(pieces);
    return NULL;
}

/* ---- cause_ids -------------------------------------------------------------------- */

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static PyObject *
id_from_digest(const unsigned char *d)
{
    /* "of:fid1:" + 43 characters: 32 bytes as unpadded base64url */
    char out[8 + ID_CHARS];
    memcpy(out, "of:fid1:", 8);
    char *p = out + 8;
    int i = 0;
    for (; i + 3 <= 30; i += 3) {
        unsigned v = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
        *p++ = B64URL[(v >> 18) & 63];
        *p++ = B64URL[(v >> 12) & 63];
        *p++ = B64URL[(v >> 6) & 63];
        *p++ = B64URL[v & 63];
    }
    unsigned v = (d[30] << 16) | (d[31] << 8); /* the last two bytes: three characters */
    *p++ = B64URL[(v >> 18) & 63];
    *p++ = B64URL[(v >> 12) & 63];
    *p++ = B64URL[(v >> 6) & 63];
    return PyUnicode_FromStringAndSize(out, 8 + ID_CHARS);
}

/* libcrypto's SHA-256, when the libcrypto hashlib uses is loaded (see the top). The
 * context is opaque here: SHA256_CTX is 112 bytes in every OpenSSL since 0.9.8. */
typedef int (*sha_init_fn)(void *);
typedef int (*sha_update_fn)(void *, const void *, size_t);
typedef int (*sha_final_fn)(unsigned char *, void *);
static sha_init_fn sha_init;
static sha_update_fn sha_update;
static sha_final_fn sha_final;

static void
find_native_sha256(void)
{
    static const char *names[] = {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so", NULL};
    for (int i = 0; names[i] != NULL; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD); /* only one already loaded */
        if (lib == NULL)
            continue;
        sha_init = (sha_init_fn)dlsym(lib, "SHA256_Init");
        sha_update = (sha_update_fn)dlsym(lib, "SHA256_Update");
        sha_final = (sha_final_fn)dlsym(lib, "SHA256_Final");
        if (sha_init && sha_update && sha_final)
            return; /* the handle stays open: the functions are used for the process's life */
        sha_init = NULL;
        sha_update = NULL;
        sha_final = NULL;
        dlclose(lib);
    }
}

/* sha256 of buf into out (32 bytes): libcrypto directly, else hashlib. 0, or -1 with an
 * exception set. */
static int
sha256_into(const char *buf, Py_ssize_t n, unsigned char *out)
{
    if (sha_final != NULL) {
        _Alignas(16) unsigned char ctx[256];
        if (sha_init(ctx) == 1 && sha_update(ctx, buf, (size_t)n) == 1 && sha_final(out, ctx) == 1)
            return 0;
        PyErr_SetString(PyExc_RuntimeError, "libcrypto SHA-256 failed");
        return -1;
    }
    PyObject *view = PyMemoryView_FromMemory((char *)buf, n, PyBUF_READ);
    PyObject *hasher = view ? PyObject_CallOneArg(sha256_func, view) : NULL;
    Py_XDECREF(view);
    PyObject *digest = hasher ? PyObject_CallMethodNoArgs(hasher, s_digest) : NULL;
    Py_XDECREF(hasher);
    if (digest == NULL)
        return -1;
    if (!PyBytes_Check(digest) || PyBytes_GET_SIZE(digest) != 32) {
        Py_DECREF(digest);
        PyErr_SetString(PyExc_RuntimeError, "sha256 digest is not 32 bytes");
        return -1;
    }
    memcpy(out, PyBytes_AS_STRING(digest), 32);
    Py_DECREF(digest);
    return 0;
}

static PyObject *
py_native_sha256(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(sha_final != NULL);
}

static PyObject *
py_sha256(PyObject *self, PyObject *arg)
{
    Py_buffer data;
    unsigned char out[32];
    if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0)
        return NULL;
    int rc = sha256_into(data.buf, data.len, out);
    PyBuffer_Release(&data);
    return rc < 0 ? NULL : PyBytes_FromStringAndSize((const char *)out, 32);
}

static PyObject *
py_cause_ids(PyObject *self, PyObject *args)
{
    Py_buffer prefix, suffix;
    PyObject *encodings;
    if (!PyArg_ParseTuple(args, "y*O!y*:cause_ids", &prefix, &PyList_Type, &encodings, &suffix))
        return NULL;
    PyObject *out = PyList_New(0);
    char *buf = NULL;
    Py_ssize_t cap = 0;
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(encodings); i++) {
        PyObject *e = PyList_GET_ITEM(encodings, i);
        if (!PyBytes_CheckExact(e)) {
            PyErr_SetString(PyExc_TypeError, "encodings are bytes");
            goto fail;
        }
        Py_ssize_t n = prefix.len + PyBytes_GET_SIZE(e) + suffix.len;
        if (n > cap) {
            char *grown = PyMem_Realloc(buf, (size_t)n);
            if (grown == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            buf = grown;
            cap = n;
        }
        memcpy(buf, prefix.buf, (size_t)prefix.len);
        memcpy(buf + prefix.len, PyBytes_AS_STRING(e), (size_t)PyBytes_GET_SIZE(e));
        memcpy(buf + prefix.len + PyBytes_GET_SIZE(e), suffix.buf, (size_t)suffix.len);
        unsigned char digest[32];
        if (sha256_into(buf, n, digest) < 0)
            goto fail;
        PyObject *id = id_from_digest(digest);
        if (id == NULL || PyList_Append(out, id) < 0) {
            Py_XDECREF(id);
            goto fail;
        }
        Py_DECREF(id);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyMem_Free(buf);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&suffix);
    return out;
}

/* ---- links ------------------------------------------------------------------------ */

static PyObject *
py_links(PyObject *self, PyObject *args)
{
    PyObject *ids, *space;
    if (!PyArg_ParseTuple(args, "O!U:links", &PyList_Type, &ids, &space))
        return NULL;
    if (link_type == NULL)
        return unsupported("no link type registered");
    Py_ssize_t n = PyList_GET_SIZE(ids);
    PyObject *out = PyList_New(n);
    PyObject *empty = PyTuple_New(0);
    if (out == NULL || empty == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *link = link_type->tp_alloc(link_type, 0);
        if (link == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, link);
        /* object.__setattr__, as Link.trusted does: the slots, past the frozen guard */
        if (PyObject_GenericSetAttr(link, s_id, PyList_GET_ITEM(ids, i)) < 0 ||
            PyObject_GenericSetAttr(link, s_space, space) < 0 ||
            PyObject_GenericSetAttr(link, s_path, empty) < 0)
            goto fail;
    }
    Py_DECREF(empty);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    return NULL;
}

/* ---- stored_keys ------------------------------------------------------------------ */

static int
b64url_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

/* The 32 bytes of a canonical "of:fid1:" + 43-character ID, or NULL with no error set
 * when id is not one (the last character's two padding bits must be zero). */
static PyObject *
stored_key(PyObject *id)
{
    if (!PyUnicode_IS_ASCII(id) || PyUnicode_GET_LENGTH(id) != 8 + ID_CHARS)
        return NULL;
    const unsigned char *s = (const unsigned char *)PyUnicode_DATA(id);
    if (memcmp(s, "of:fid1:", 8) != 0)
        return NULL;
    int v[ID_CHARS];
    for (int i = 0; i < ID_CHARS; i++)
        if ((v[i] = b64url_value(s[8 + i])) < 0)
            return NULL;
    if (v[ID_CHARS - 1] & 3)
        return NULL;
    unsigned char out[32];
    int o = 0, i = 0;
    for (; i + 4 <= 40; i += 4) {
        unsigned x = (v[i] << 18) | (v[i + 1] << 12) | (v[i + 2] << 6) | v[i + 3];
        out[o++] = (x >> 16) & 0xFF;
        out[o++] = (x >> 8) & 0xFF;
        out[o++] = x & 0xFF;
    }
    unsigned x = (v[40] << 18) | (v[41] << 12) | (v[42] << 6);
    out[o++] = (x >> 16) & 0xFF;
    out[o++] = (x >> 8) & 0xFF;
    return PyBytes_FromStringAndSize((const char *)out, 32);
}

static PyObject *
py_stored_keys(PyObject *self, PyObject *ids)
{
    if (!PyList_CheckExact(ids)) {
        PyErr_SetString(PyExc_TypeError, "ids is a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(ids);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = PyList_GET_ITEM(ids, i);
        if (!PyUnicode_CheckExact(id)) {
            Py_DECREF(out);
            return unsupported("a cell ID that is not a str");
        }
        PyObject *k = stored_key(id);
        if (k == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(out);
                return NULL;
            }
            Py_INCREF(id);
            k = id;
        }
        PyList_SET_ITEM(out, i, k);
    }
    return out;
}

/* ---- deflate_many: ISA-L's deflate over a batch, the GIL released ------------------ */

/* The public head of ISA-L's struct isal_zstream (igzip_lib.h, the same in ISA-L 2.28
 * to 2.32); its internal state follows it, opaque here: ZSTREAM_BYTES is room to spare
 * for the whole struct (about 82 KiB). isal_deflate_init and isal_deflate are those of
 * the ISA-L that python-isal's isal_zlib links statically and exports, found with
 * dlopen(RTLD_NOLOAD) of that extension's file (load_isal), so the bytes are
 * isal_zlib.compress's own: the same calls, the same parameters. */
struct zstream_head {
    uint8_t *next_in;
    uint32_t avail_in;
    uint32_t total_in;
    uint8_t *next_out;
    uint32_t avail_out;
    uint32_t total_out;
    void *hufftables;
    uint32_t level;
    uint32_t level_buf_size;
    uint8_t *level_buf;
    uint16_t end_of_stream;
    uint16_t flush;
    uint16_t gzip_flag;
    uint16_t hist_bits;
};
#define ZSTREAM_BYTES (256 * 1024)
#define ISAL_FULL_FLUSH 2
#define ISAL_IGZIP_ZLIB 3
#define ISAL_HIST_BITS 15 /* isal_zlib.compress's default wbits (MAX_WBITS) */
/* ISAL_DEF_LVLn_DEFAULT: the level buffer isal_zlib.compress allocates per level */
static const uint32_t LEVEL_BUF_BYTES[4] = {
    0,
    4 * 1024 + 2 * 8 * 1024 + 4 * 64 * 1024,
    4 * 1024 + 2 * 32 * 1024 + 4 * 64 * 1024,
    4 * 1024 + 4 * 4 * 1024 + 2 * 32 * 1024 + 4 * 64 * 1024,
};

typedef void (*isal_init_fn)(void *);
typedef int (*isal_deflate_fn)(void *);
static isal_init_fn isal_init;
static isal_deflate_fn isal_deflate_call;

static PyObject *
py_load_isal(PyObject *self, PyObject *path)
{
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(path, &bytes))
        return NULL;
    void *lib = dlopen(PyBytes_AS_STRING(bytes), RTLD_NOW | RTLD_NOLOAD); /* already imported */
    Py_DECREF(bytes);
    if (lib == NULL)
        Py_RETURN_FALSE;
    isal_init_fn init = (isal_init_fn)dlsym(lib, "isal_deflate_init");
    isal_deflate_fn deflate = (isal_deflate_fn)dlsym(lib, "isal_deflate");
    if (init == NULL || deflate == NULL) {
        dlclose(lib);
        Py_RETURN_FALSE;
    }
    isal_init = init; /* the handle stays open, as the module that holds it stays imported */
    isal_deflate_call = deflate;
    Py_RETURN_TRUE;
}

/* isal_zlib.compress's first output buffer; it doubles the buffer each time a call fills
 * it (isal_shared.h, arrange_output_buffer). Where a stream ends depends on how its
 * output was split between calls (not on the input alone), so the calls made here give
 * ISA-L the very same output room, call by call. */
#define ISAL_FIRST_OUT (16 * 1024)

/* Deflate n inputs as isal_zlib.compress(input, level) does; sizes[i] is the zlib
 * stream's length (copied to out[i]), or -1 when it is over nine tenths of the input
 * (out[i] has room for exactly that much). `scratch` is the growing output buffer
 * (*scratch_len bytes). 0, or an ISA-L error code, or -100 when out of memory. Runs
 * without the GIL: it touches no Python object. */
static int
deflate_all(Py_ssize_t n, const char **in, const Py_ssize_t *in_len, char **out,
            Py_ssize_t *sizes, int level, uint8_t *stream, uint8_t *level_buf,
            uint8_t **scratch, size_t *scratch_len)
{
    struct zstream_head *zs = (struct zstream_head *)stream;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t keep = in_len[i] * 9 / 10; /* longest stream worth storing */
        isal_init(stream);
        zs->level = (uint32_t)level;
        zs->level_buf = level_buf;
        zs->level_buf_size = LEVEL_BUF_BYTES[level];
        zs->hist_bits = ISAL_HIST_BITS;
        zs->gzip_flag = ISAL_IGZIP_ZLIB;
        zs->next_in = (uint8_t *)in[i];
        zs->avail_in = (uint32_t)in_len[i];
        zs->flush = ISAL_FULL_FLUSH;
        zs->end_of_stream = 1;
        size_t length = ISAL_FIRST_OUT, occupied = 0;
        sizes[i] = -1;
        for (;;) {
            if (*scratch_len < length) {
                uint8_t *grown = PyMem_RawRealloc(*scratch, length);
                if (grown == NULL)
                    return -100;
                *scratch = grown;
                *scratch_len = length;
            }
            zs->next_out = *scratch + occupied;
            zs->avail_out = (uint32_t)(length - occupied);
            int rc = isal_deflate_call(stream);
            if (rc != 0)
                return rc;
            if (zs->avail_out != 0) { /* the stream is complete */
                size_t size = length - zs->avail_out;
                if ((Py_ssize_t)size <= keep) {
                    memcpy(out[i], *scratch, size);
                    sizes[i] = (Py_ssize_t)size;
                }
                break;
            }
            occupied = length;
            if ((Py_ssize_t)occupied > keep)
                break; /* already longer than worth storing */
            length <<= 1;
        }
    }
    return 0;
}

static PyObject *
py_deflate_many(PyObject *self, PyObject *args)
{
    PyObject *texts;
    int level;
    if (!PyArg_ParseTuple(args, "O!i:deflate_many", &PyList_Type, &texts, &level))
        return NULL;
    if (isal_deflate_call == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ISA-L is not loaded (load_isal)");
        return NULL;
    }
    if (level < 0 || level > 3) {
        PyErr_SetString(PyExc_ValueError, "level is 0 to 3");
        return NULL;
    }
    /* the items are held by this tuple while the GIL is released */
    PyObject *held = PyList_AsTuple(texts);
    if (held == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(held);
    PyObject *result = NULL;
    const char **in = PyMem_Calloc(n ? n : 1, sizeof(char *));
    Py_ssize_t *in_len = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    char **out = PyMem_Calloc(n ? n : 1, sizeof(char *));
    Py_ssize_t *sizes = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    char *arena = NULL;
    uint8_t *stream = NULL, *level_buf = NULL;
    if (in == NULL || in_len == NULL || out == NULL || sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(held, i);
        if (PyUnicode_CheckExact(t)) {
            in[i] = PyUnicode_AsUTF8AndSize(t, &in_len[i]);
            if (in[i] == NULL)
                goto done;
        } else if (PyBytes_CheckExact(t)) {
            in[i] = PyBytes_AS_STRING(t);
            in_len[i] = PyBytes_GET_SIZE(t);
        } else {
            PyErr_SetString(PyExc_TypeError, "deflate_many takes a list of str or bytes");
            goto done;
        }
        if ((size_t)in_len[i] > UINT32_MAX / 2) {
            PyErr_SetString(PyExc_OverflowError, "an input of 2 GiB or more");
            goto done;
        }
        total += (size_t)(in_len[i] * 9 / 10);
    }
    arena = PyMem_RawMalloc(total ? total : 1);
    stream = PyMem_RawCalloc(1, ZSTREAM_BYTES);
    /* zeroed once per batch, then reused text after text: ISA-L reads hash entries it
     * did not write in it, so its bytes (not what they decompress to) depend on what the
     * buffer held: here the previous text of the batch, as isal_zlib.compress gets when
     * malloc hands back the buffer its last call freed */
    level_buf = PyMem_RawCalloc(1, LEVEL_BUF_BYTES[level] ? LEVEL_BUF_BYTES[level] : 1);
    if (arena == NULL || stream == NULL || level_buf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = arena + at;
        at += (size_t)(in_len[i] * 9 / 10);
    }
    int rc;
    uint8_t *scratch = NULL;
    size_t scratch_len = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = deflate_all(n, in, in_len, out, sizes, level, stream, level_buf, &scratch, &scratch_len);
    PyMem_RawFree(scratch);
    Py_END_ALLOW_THREADS
    if (rc == -100) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "ISA-L deflate failed with error %d", rc);
        goto done;
    }
    result = PyList_New(n);
    if (result == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item;
        if (sizes[i] < 0) {
            item = Py_None;
            Py_INCREF(item);
        } else if ((item = PyBytes_FromStringAndSize(out[i], sizes[i])) == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, item);
    }
done:
    PyMem_RawFree(level_buf);
    PyMem_RawFree(stream);
    PyMem_RawFree(arena);
    PyMem_Free(sizes);
    PyMem_Free(out);
    PyMem_Free(in_len);
    PyMem_Free(in);
    Py_DECREF(held);
    return result;
}

/* ---- element_identities (session 25, plan25) --------------------------------------- */

/* 1: a usable identity value (element_identity._usable), 0: not usable, -1: a type only
 * the Python rules judge (a subclass: an Enum member, an int subclass). */
static int
usable_identity(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type)
        return PyUnicode_GET_LENGTH(v) > 0;
    if (t == &PyBool_Type)
        return 0;
    if (t == &PyLong_Type)
        return 1;
    if (t == &PyFloat_Type)
        return isfinite(PyFloat_AS_DOUBLE(v)) ? 1 : 0;
    return -1;
}

/* The identity of one element by its first usable primary field, with its encoding:
 * a new (identity, encoding) tuple, Py_None (borrowed) when the Python rules decide, or
 * NULL with an error set. */
static PyObject *
identity_pair(PyObject *identity, PyObject *encode);

/* An element no identity field names: {"contentHash": "sha256:" + hex of the SHA-256 of
 * its value-hash stream} (graph_plan's digest and digest_to_content_hash) with its
 * encoding; Py_None (borrowed) when the encoder leaves the element to Python. */
static PyObject *
content_identity(PyObject *item, PyObject *encode)
{
    PyObject *stream = PyObject_CallOneArg(encode, item);
    if (stream == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear(); /* outside the encoder's fast path: Python hashes it */
        return Py_None;
    }
    if (!PyBytes_Check(stream)) {
        Py_DECREF(stream);
        PyErr_SetString(PyExc_TypeError, "the encoder returns bytes");
        return NULL;
    }
    unsigned char d[32];
    int rc = sha256_into(PyBytes_AS_STRING(stream), PyBytes_GET_SIZE(stream), d);
    Py_DECREF(stream);
    if (rc < 0)
        return NULL;
    static const char hexdigits[] = "0123456789abcdef";
    char text[7 + 64];
    memcpy(text, "sha256:", 7);
    for (int i = 0; i < 32; i++) {
        text[7 + 2 * i] = hexdigits[d[i] >> 4];
        text[8 + 2 * i] = hexdigits[d[i] & 15];
    }
    PyObject *hash = PyUnicode_FromStringAndSize(text, sizeof text);
    PyObject *identity = hash == NULL ? NULL : PyDict_New();
    if (identity == NULL || PyDict_SetItem(identity, s_content_hash, hash) < 0) {
        Py_XDECREF(hash);
        Py_XDECREF(identity);
        return NULL;
    }
    Py_DECREF(hash);
    return identity_pair(identity, encode);
}

/* (identity, encode(identity)), taking the identity's reference; Py_None (borrowed) when
 * the encoder refuses it, NULL with an error set. */
static PyObject *
identity_pair(PyObject *identity, PyObject *encode)
{
    PyObject *encoded = PyObject_CallOneArg(encode, identity);
    if (encoded == NULL) {
        Py_DECREF(identity);
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear(); /* outside the encoder's fast path: Python encodes it */
        return Py_None;
    }
    PyObject *pair = PyTuple_Pack(2, identity, encoded);
    Py_DECREF(identity);
    Py_DECREF(encoded);
    return pair;
}

static PyObject *
primary_identity(PyObject *item, PyObject *primary, PyObject *identity_fields, PyObject *encode)
{
    Py_ssize_t n = PyTuple_GET_SIZE(identity_fields);
    int any = 0;
    for (Py_ssize_t i = 0; i < n && !any; i++) {
        PyObject *v = PyDict_GetItemWithError(item, PyTuple_GET_ITEM(identity_fields, i));
        if (v != NULL)
            any = 1;
        else if (PyErr_Occurred())
            return NULL;
    }
    if (!any)
        return content_identity(item, encode); /* no identity field: the content hash */
    Py_ssize_t np = PyTuple_GET_SIZE(primary);
    for (Py_ssize_t i = 0; i < np; i++) {
        PyObject *field = PyTuple_GET_ITEM(primary, i);
        PyObject *v = PyDict_GetItemWithError(item, field);
        if (v == NULL) {
            if (PyErr_Occurred())
                return NULL;
            continue;
        }
        if (v == Py_None)
            continue;
        int ok = usable_identity(v);
        if (ok < 0)
            return Py_None;
        if (!ok)
            continue;
        PyObject *identity = PyDict_New();
        if (identity == NULL)
            return NULL;
        if (PyDict_SetItem(identity, s_field, field) < 0 || PyDict_SetItem(identity, s_value, v) < 0) {
            Py_DECREF(identity);
            return NULL;
        }
        return identity_pair(identity, encode);
    }
    return Py_None; /* no usable primary field: the pair and secondary rules, in Python */
}

static PyObject *
py_element_identities(PyObject *self, PyObject *args)
{
    PyObject *items, *primary, *identity_fields, *encode;
    if (!PyArg_ParseTuple(args, "OO!O!O:element_identities", &items, &PyTuple_Type, &primary,
                          &PyTuple_Type, &identity_fields, &encode))
        return NULL;
    PyObject *seq = PySequence_Fast(items, "element_identities takes a list or tuple");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    PyObject *pending = PyList_New(0);
    if (out == NULL || pending == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *found = Py_None;
        if (item == hole || item == undefined) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(out, i, Py_None);
            continue;
        }
        if (plain_dict(item)) {
            found = primary_identity(item, primary, identity_fields, encode);
            if (found == NULL)
                goto fail;
        }
        if (found == Py_None) {
            PyObject *index = PyLong_FromSsize_t(i);
            if (index == NULL || PyList_Append(pending, index) < 0) {
                Py_XDECREF(index);
                goto fail;
            }
            Py_DECREF(index);
            Py_INCREF(Py_None);
        }
        PyList_SET_ITEM(out, i, found);
    }
    Py_DECREF(seq);
    PyObject *result = PyTuple_Pack(2, out, pending);
    Py_DECREF(out);
    Py_DECREF(pending);
    return result;
fail:
    Py_DECREF(seq);
    Py_XDECREF(out);
    Py_XDECREF(pending);
    return NULL;
}

/* ---- module ----------------------------------------------------------------------- */

static PyObject *
py_set_types(PyObject *self, PyObject *args)
{
    PyObject *lt, *ft, *h, *u, *ht, *ut;
    if (!PyArg_ParseTuple(args, "O!O!OOO!O!:set_types", &PyType_Type, &lt, &PyType_Type, &ft, &h,
                          &u, &PyDict_Type, &ht, &PyDict_Type, &ut))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)ft, &PyDict_Type)) {
        PyErr_SetString(PyExc_TypeError, "the frozen type must be a dict subclass");
        return NULL;
    }
    Py_INCREF(ft);
    Py_XSETREF(frozen_type, (PyTypeObject *)ft);
    Py_INCREF(lt);
    Py_INCREF(h);
    Py_INCREF(u);
    Py_INCREF(ht);
    Py_INCREF(ut);
    Py_XSETREF(link_type, (PyTypeObject *)lt);
    Py_XSETREF(hole, h);
    Py_XSETREF(undefined, u);
    Py_XSETREF(hole_tag, ht);
    Py_XSETREF(undefined_tag, ut);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fvj1_encode", py_fvj1_encode, METH_O,
     "fvj1_encode(value) -> object: values.encode for the common case, else Unsupported."},
    {"flat_object", py_flat_object, METH_O,
     "flat_object(value) -> bool: a dict tree of plain scalars only (no arrays)."},
    {"nested_keys", py_nested_keys, METH_O,
     "nested_keys(dict) -> list | None: None when flat_object, else the keys whose "
     "values are not of an exact scalar type, in the dict's order."},
    {"shorten_links", py_shorten_links, METH_VARARGS,
     "shorten_links(text, head, tail) -> str: same-space links as U+0001 and the ID."},
    {"cause_ids", py_cause_ids, METH_VARARGS,
     "cause_ids(prefix, encodings, suffix) -> list[str]: cell IDs of encoded causes."},
    {"links", py_links, METH_VARARGS,
     "links(ids, space) -> list: a Link to each cell ID, as Link.trusted makes one."},
    {"native_sha256", py_native_sha256, METH_NOARGS,
     "native_sha256() -> bool: whether libcrypto's SHA-256 is called directly."},
    {"sha256", py_sha256, METH_O, "sha256(data) -> bytes: the digest cause_ids uses."},
    {"stored_keys", py_stored_keys, METH_O,
     "stored_keys(ids) -> list: cell_keys.key of each cell ID."},
    {"load_isal", py_load_isal, METH_O,
     "load_isal(path) -> bool: find ISA-L's deflate in isal_zlib's loaded extension file."},
    {"deflate_many", py_deflate_many, METH_VARARGS,
     "deflate_many(texts, level) -> list[bytes | None]: isal_zlib.compress(t, level) of "
     "each UTF-8 text, or None where that is over nine tenths of it; the GIL released."},
    {"element_identities", py_element_identities, METH_VARARGS,
     "element_identities(items, primary, identity_fields, encode) -> (list, list[int]): "
     "each element's primary-field identity and its encoding, None for a hole; the "
     "indices the Python rules decide."},
    {"set_types", py_set_types, METH_VARARGS,
     "set_types(link_type, frozen_type, hole, undefined, hole_tag, undefined_tag)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lib._cells",
    "The per-cell work of writing session graphs, in C (see lib/_cells.c).", -1, methods,
};

#define INTERN(var, text)                                  \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        goto fail;

PyMODINIT_FUNC
PyInit__cells(void)
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
    find_native_sha256(); /* after hashlib: its libcrypto is loaded by now */
    INTERN(s_id, "id");
    INTERN(s_space, "space");
    INTERN(s_path, "path");
    INTERN(s_quote, "/quote");
    INTERN(s_slash, "/");
    INTERN(s_link1, "link@1");
    INTERN(s_digest, "digest");
    INTERN(s_field, "field");
    INTERN(s_content_hash, "contentHash");
    INTERN(s_value, "value");
    Unsupported = PyErr_NewExceptionWithDoc(
        "lib._cells.Unsupported",
        "The value is outside the fast path; use the pure-Python reference for it.", NULL, NULL);
    if (Unsupported == NULL)
        goto fail;
    Py_INCREF(Unsupported);
    if (PyModule_AddObject(m, "Unsupported", Unsupported) < 0) {
        Py_DECREF(Unsupported);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
