/* lib._claude_rows: the Claude driver's mapping of SDK records to values, in C.
 *
 * Each function does exactly what its pure-Python reference in
 * lib/drivers/claude_sessions.py does, for the inputs it recognises, and returns None
 * for anything else, so the caller runs the reference on the whole input
 * (tests/drivers/test_claude_rows_speedups.py holds the two equal). Recognised: values
 * of exactly the JSON types the SDK parses (dict, list, str, int, float, bool, None),
 * never a subclass, and str() taken only of a scalar, so no user code runs here and a
 * fallback repeats nothing.
 *
 *   normalized_rows(events) -> list | None
 *       claude_sessions.reference_normalized_rows: one row dict per event.
 *   record_dicts(records, cls, count) -> list | None
 *       Each record's own instance dict, when every record is exactly of type cls and
 *       its dict holds exactly count entries (claude_sessions.message_events).
 *   summary_fields(info, cls, count, active, started_as) -> dict | None
 *       claude_sessions.reference_summary_fields, for an info of exactly type cls
 *       whose instance dict holds count entries, times that are None or integer
 *       milliseconds in _iso_ms's range, and exact str (or None) text fields.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define PREVIEW_LIMIT 500
#define MS_FLOOR 100000000000LL
#define MS_CEILING (4294967296LL * 1000LL)
#define DAY_MS 86400000LL

static PyObject *s_type, *s_message, *s_content, *s_uuid, *s_text, *s_tool_use, *s_tool_result,
    *s_name, *s_id, *s_role, *s_kind, *s_timestamp, *s_event_index, *s_unknown, *s_assistant,
    *s_user, *s_tool, *s_other, *s_empty, *s_newline, *s_strip, *s_head;
static PyObject *s_native_session_id, *s_title, *s_cwd, *s_created_at, *s_updated_at,
    *s_archived, *s_active, *s_git_branch, *s_started_as, *s_raw;
/* Every row and every summary's fields are copies of these, their keys in order: a copy
 * of a small dict is a copy of its table, where inserting six or ten keys into a new
 * dict grows its table twice. */
static PyObject *row_template, *summary_template;
static PyObject *a_session_id, *a_custom_title, *a_summary, *a_git_branch, *a_cwd,
    *a_created_at, *a_last_modified;

/* JSON-typed: exactly one of the types json.loads makes. */
static int
is_json(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    return v == Py_None || t == &PyUnicode_Type || t == &PyList_Type || t == &PyDict_Type ||
           t == &PyLong_Type || t == &PyBool_Type || t == &PyFloat_Type;
}

/* dict.get(key): a borrowed value or Py_None; NULL with an error set. */
static PyObject *
get(PyObject *dict, PyObject *key)
{
    PyObject *v = PyDict_GetItemWithError(dict, key);
    if (v == NULL && !PyErr_Occurred())
        return Py_None;
    return v;
}

#define UNRECOGNISED ((PyObject *)1)

/* `str(value)` of a JSON value: itself for a str, str() of a scalar; UNRECOGNISED for
 * a list or dict (whose str() would call their items' own repr). */
static PyObject *
json_str(PyObject *value)
{
    if (PyUnicode_CheckExact(value))
        return Py_NewRef(value);
    if (PyList_CheckExact(value) || PyDict_CheckExact(value))
        return UNRECOGNISED;
    return PyObject_Str(value);
}

/* `str(value or "")` of a JSON value: a new reference, NULL on error, or UNRECOGNISED. */
static PyObject *
str_or_empty(PyObject *value)
{
    int truth = PyObject_IsTrue(value);
    if (truth < 0)
        return NULL;
    return truth ? json_str(value) : Py_NewRef(s_empty);
}

static PyObject *content_text(PyObject *content);

/* `_block_text`: a new reference, NULL on error, UNRECOGNISED for a non-JSON value. */
static PyObject *
block_text(PyObject *block)
{
    if (!is_json(block))
        return UNRECOGNISED;
    if (PyUnicode_CheckExact(block))
        return Py_NewRef(block);
    if (!PyDict_CheckExact(block))
        return Py_NewRef(s_empty);
    PyObject *kind = get(block, s_type);
    if (kind == NULL)
        return NULL;
    if (!is_json(kind))
        return UNRECOGNISED;
    if (!PyUnicode_CheckExact(kind))
        return Py_NewRef(s_empty);
    PyObject *value;
    if (PyUnicode_Compare(kind, s_text) == 0) {
        if ((value = get(block, s_text)) == NULL)
            return NULL;
        return is_json(value) ? str_or_empty(value) : UNRECOGNISED;
    }
    if (PyUnicode_Compare(kind, s_tool_use) == 0) {
        if ((value = get(block, s_name)) == NULL)
            return NULL;
        return is_json(value) ? str_or_empty(value) : UNRECOGNISED;
    }
    if (PyUnicode_Compare(kind, s_tool_result) == 0) {
        if ((value = get(block, s_content)) == NULL)
            return NULL;
        return content_text(value);
    }
    return Py_NewRef(s_empty);
}

/* `_content_text`: a new reference, NULL on error, UNRECOGNISED for a non-JSON value. */
static PyObject *
content_text(PyObject *content)
{
    if (!is_json(content))
        return UNRECOGNISED;
    if (PyUnicode_CheckExact(content))
        return Py_NewRef(content);
    if (!PyList_CheckExact(content))
        return Py_NewRef(s_empty);
    if (PyList_GET_SIZE(content) == 1) {
        PyObject *block = PyList_GET_ITEM(content, 0);
        Py_INCREF(block);
        PyObject *text = block_text(block);
        Py_DECREF(block);
        return text;
    }
    PyObject *texts = PyList_New(0);
    if (texts == NULL)
        return NULL;
    /* The list may change under us only through user code, which never runs here. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content); i++) {
        PyObject *text = block_text(PyList_GET_ITEM(content, i));
        if (text == NULL || text == UNRECOGNISED) {
            Py_DECREF(texts);
            return text;
        }
        /* block_text makes only exact strs, so `if text` is a length test */
        if (PyUnicode_GET_LENGTH(text) > 0 && PyList_Append(texts, text) < 0) {
            Py_DECREF(text);
            Py_DECREF(texts);
            return NULL;
        }
        Py_DECREF(text);
    }
    PyObject *joined = PyUnicode_Join(s_newline, texts);
    Py_DECREF(texts);
    return joined;
}

/* `_only_tool_results` of a JSON content: 1, 0, -1 on error, -2 unrecognised. */
static int
only_tool_results(PyObject *content)
{
    if (!PyList_CheckExact(content) || PyList_GET_SIZE(content) == 0)
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content); i++) {
        PyObject *block = PyList_GET_ITEM(content, i);
        if (!is_json(block))
            return -2;
        if (!PyDict_CheckExact(block))
            return 0;
        PyObject *kind = get(block, s_type);
        if (kind == NULL)
            return -1;
        if (!is_json(kind))
            return -2;
        if (!PyUnicode_CheckExact(kind) || PyUnicode_Compare(kind, s_tool_result) != 0)
            return 0;
    }
    return 1;
}

static int
equals(PyObject *str, PyObject *constant)
{
    return PyUnicode_GET_LENGTH(str) == PyUnicode_GET_LENGTH(constant) && PyUnicode_Compare(str, constant) == 0;
}

/* One event's row, or NULL (error) or UNRECOGNISED. */
static PyObject *
event_row(PyObject *event, Py_ssize_t index, PyObject *seen)
{
    PyObject *kind = NULL, *message_id = NULL, *text = NULL, *row = NULL, *result = NULL;
    if (!PyDict_CheckExact(event))
        return UNRECOGNISED;
    PyObject *value = get(event, s_type);
    if (value == NULL)
        return NULL;
    if (!is_json(value))
        return UNRECOGNISED;
    int truth = PyObject_IsTrue(value);
    if (truth < 0)
        return NULL;
    kind = truth ? json_str(value) : Py_NewRef(s_unknown);
    if (kind == NULL || kind == UNRECOGNISED)
        return kind;

    PyObject *body = get(event, s_message);
    if (body == NULL)
        goto done;
    if (!is_json(body)) {
        result = UNRECOGNISED;
        goto done;
    }
    PyObject *content = Py_None;
    if (PyDict_CheckExact(body) && (content = get(body, s_content)) == NULL)
        goto done;
    if (!is_json(content)) {
        result = UNRECOGNISED;
        goto done;
    }

    value = get(event, s_uuid);
    if (value == NULL)
        goto done;
    if (!is_json(value)) {
        result = UNRECOGNISED;
        goto done;
    }
    if ((truth = PyObject_IsTrue(value)) < 0)
        goto done;
    message_id = truth ? json_str(value) : PyUnicode_FromFormat("message-%zd", index);
    if (message_id == NULL || message_id == UNRECOGNISED) {
        result = message_id;
        message_id = NULL;
        goto done;
    }
    int known = PySet_Contains(seen, message_id);
    if (known < 0)
        goto done;
    if (known) {
        Py_SETREF(message_id, PyUnicode_FromFormat("%U/%zd", message_id, index));
        if (message_id == NULL)
            goto done;
    }
    if (PySet_Add(seen, message_id) < 0)
        goto done;

    PyObject *role;
    Py_INCREF(content); /* held while its text is taken */
    if (PyUnicode_CheckExact(content)) {
        text = Py_NewRef(content);
        role = equals(kind, s_assistant) ? s_assistant : equals(kind, s_user) ? s_user : s_other;
    } else {
        text = content_text(content);
        if (text == NULL || text == UNRECOGNISED) {
            result = text;
            text = NULL;
            Py_DECREF(content);
            goto done;
        }
        if (equals(kind, s_assistant))
            role = s_assistant;
        else if (equals(kind, s_user)) {
            int tools = only_tool_results(content);
            if (tools < 0) {
                result = tools == -2 ? UNRECOGNISED : NULL;
                Py_DECREF(content);
                goto done;
            }
            role = tools ? s_tool : s_user;
        } else
            role = s_other;
    }
    Py_DECREF(content);

    PyObject *event_index = PyLong_FromSsize_t(index);
    if (event_index == NULL)
        goto done;
    row = PyDict_Copy(row_template);
    if (row == NULL || PyDict_SetItem(row, s_id, message_id) < 0 || PyDict_SetItem(row, s_role, role) < 0 ||
        PyDict_SetItem(row, s_kind, kind) < 0 || PyDict_SetItem(row, s_timestamp, Py_None) < 0 ||
        PyDict_SetItem(row, s_text, text) < 0 || PyDict_SetItem(row, s_event_index, event_index) < 0) {
        Py_DECREF(event_index);
        goto done;
    }
    Py_DECREF(event_index);
    result = row;
    row = NULL;
done:
    Py_XDECREF(kind);
    Py_XDECREF(message_id);
    Py_XDECREF(text);
    Py_XDECREF(row);
    return result;
}

static PyObject *
normalized_rows(PyObject *module, PyObject *events)
{
    if (!PyList_CheckExact(events))
        Py_RETURN_NONE;
    PyObject *seen = PySet_New(NULL);
    if (seen == NULL)
        return NULL;
    PyObject *rows = PyList_New(0);
    if (rows == NULL) {
        Py_DECREF(seen);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        Py_INCREF(event);
        PyObject *row = event_row(event, i, seen);
        Py_DECREF(event);
        if (row == NULL || row == UNRECOGNISED || PyList_Append(rows, row) < 0) {
            if (row != NULL && row != UNRECOGNISED)
                Py_DECREF(row);
            Py_DECREF(rows);
            Py_DECREF(seen);
            if (row == UNRECOGNISED)
                Py_RETURN_NONE;
            return NULL;
        }
        Py_DECREF(row);
    }
    Py_DECREF(seen);
    return rows;
}

/* The record's own instance dict when it is exactly of type cls with count entries:
 * a new reference, or NULL with no error set when it is not. */
static PyObject *
record_dict(PyObject *record, PyObject *cls, Py_ssize_t count)
{
    if ((PyObject *)Py_TYPE(record) != cls)
        return NULL;
    PyObject *dict = PyObject_GenericGetDict(record, NULL);
    if (dict == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyDict_CheckExact(dict) || PyDict_GET_SIZE(dict) != count) {
        Py_DECREF(dict);
        return NULL;
    }
    return dict;
}

static PyObject *
record_dicts(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "record_dicts(records: list, cls, count: int)");
        return NULL;
    }
    PyObject *records = args[0], *cls = args[1];
    Py_ssize_t count = PyLong_AsSsize_t(args[2]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t size = PyList_GET_SIZE(records);
    PyObject *dicts = PyList_New(size);
    if (dicts == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *dict = record_dict(PyList_GET_ITEM(records, i), cls, count);
        if (dict == NULL) {
            Py_DECREF(dicts);
            Py_RETURN_NONE;
        }
        PyList_SET_ITEM(dicts, i, dict);
    }
    return dicts;
}

/* Whitespace as str.strip() sees it, and line boundaries as str.splitlines() does,
 * for ASCII characters. */
#define SPACE 1
#define BOUNDARY 2
static unsigned char ascii_class[128];

static void
set_ascii_classes(void)
{
    for (int c = 0; c < 128; c++) {
        int space = (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
        int boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E;
        ascii_class[c] = (unsigned char)((space ? SPACE : 0) | (boundary ? BOUNDARY : 0));
    }
}

#define ascii_space(c) (ascii_class[c] & SPACE)
#define ascii_boundary(c) (ascii_class[c] & BOUNDARY)

/* `_first_line(text)`: a new reference (Py_None for none), NULL on error,
 * UNRECOGNISED for a value that is not None or an exact str. */
static PyObject *
first_line(PyObject *text)
{
    if (text == Py_None || (is_json(text) && !PyUnicode_CheckExact(text)))
        return Py_NewRef(Py_None);
    if (!PyUnicode_CheckExact(text))
        return UNRECOGNISED;
    Py_ssize_t start, end, size = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_ASCII(text)) {
        const Py_UCS1 *chars = PyUnicode_1BYTE_DATA(text);
        for (Py_ssize_t at = 0; at < size;) {
            Py_ssize_t stop = at;
            while (stop < size && !ascii_boundary(chars[stop]))
                stop++;
            start = at;
            end = stop;
            while (start < end && ascii_space(chars[start]))
                start++;
            while (end > start && ascii_space(chars[end - 1]))
                end--;
            if (end > start) {
                if (end - start > PREVIEW_LIMIT)
                    end = start + PREVIEW_LIMIT;
                return PyUnicode_Substring(text, start, end);
            }
            at = stop + (stop < size && chars[stop] == '\r' && stop + 1 < size && chars[stop + 1] == '\n') + 1;
        }
        return Py_NewRef(Py_None);
    }
    /* Other text: the very calls the reference makes. */
    PyObject *lines = PyUnicode_Splitlines(text, 0);
    if (lines == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
        PyObject *line = PyObject_CallMethodNoArgs(PyList_GET_ITEM(lines, i), s_strip);
        if (line == NULL) {
            Py_DECREF(lines);
            return NULL;
        }
        if (PyUnicode_GET_LENGTH(line) > 0) {
            Py_DECREF(lines);
            if (PyUnicode_GET_LENGTH(line) <= PREVIEW_LIMIT)
                return line;
            Py_SETREF(line, PyUnicode_Substring(line, 0, PREVIEW_LIMIT));
            return line;
        }
        Py_DECREF(line);
    }
    Py_DECREF(lines);
    return Py_NewRef(Py_None);
}

/* A proleptic Gregorian date from days since 1970-01-01 (days >= 0). */
static void
civil(long long days, int *year, int *month, int *day)
{
    long long z = days + 719468;
    long long era = z / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = (int)(yoe + era * 400 + (*month <= 2));
}

static void
digits(char *at, long long value, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        at[i] = (char)('0' + value % 10);
        value /= 10;
    }
}

/* `_iso_ms(value)` for None (None) and an exact int in (MS_FLOOR, MS_CEILING): a new
 * reference; UNRECOGNISED for anything else (the reference's iso_time formats it). */
static PyObject *
iso_ms(PyObject *value)
{
    if (value == Py_None)
        return Py_NewRef(Py_None);
    if (!PyLong_CheckExact(value))
        return UNRECOGNISED;
    int overflow;
    long long ms = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || !(MS_FLOOR < ms && ms < MS_CEILING))
        return UNRECOGNISED;
    int year, month, day;
    civil(ms / DAY_MS, &year, &month, &day);
    long long rest = ms % DAY_MS;
    char text[24]; /* YYYY-MM-DDTHH:MM:SS.mmmZ */
    digits(text, year, 4);
    text[4] = '-';
    digits(text + 5, month, 2);
    text[7] = '-';
    digits(text + 8, day, 2);
    text[10] = 'T';
    digits(text + 11, rest / 3600000, 2);
    text[13] = ':';
    digits(text + 14, rest / 60000 % 60, 2);
    text[16] = ':';
    digits(text + 17, rest / 1000 % 60, 2);
    text[19] = '.';
    digits(text + 20, rest % 1000, 3);
    text[23] = 'Z';
    return PyUnicode_FromStringAndSize(text, 24);
}

static PyObject *
attribute(PyObject *dict, PyObject *name)
{
    /* The instance dict holds every field (count checked), so this is getattr. */
    return PyDict_GetItemWithError(dict, name);
}

static PyObject *
summary_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "summary_fields(info, cls, count, active, started_as)");
        return NULL;
    }
    PyObject *info = args[0], *cls = args[1], *active = args[3], *started_as = args[4];
    Py_ssize_t count = PyLong_AsSsize_t(args[2]);
    if (count == -1 && PyErr_Occurred())
        return NULL;
    PyObject *raw = record_dict(info, cls, count);
    if (raw == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *result = NULL, *title = NULL, *updated = NULL, *created = NULL, *fields = NULL;
    PyObject *session_id = attribute(raw, a_session_id), *custom = attribute(raw, a_custom_title),
             *summary = attribute(raw, a_summary), *branch = attribute(raw, a_git_branch),
             *cwd = attribute(raw, a_cwd), *created_at = attribute(raw, a_created_at),
             *modified = attribute(raw, a_last_modified);
    if (session_id == NULL || custom == NULL || summary == NULL || branch == NULL || cwd == NULL ||
        created_at == NULL || modified == NULL) {
        if (!PyErr_Occurred())
            result = Py_None;
        goto done;
    }
    /* Only exact strs or None in the text fields: the reference's isinstance checks and
     * str() then need no user code. */
    if (!PyUnicode_CheckExact(session_id) || (branch != Py_None && !PyUnicode_CheckExact(branch)) ||
        (cwd != Py_None && !PyUnicode_CheckExact(cwd))) {
        result = Py_None;
        goto done;
    }
    title = first_line(custom);
    if (title == Py_None) {
        Py_DECREF(title);
        title = first_line(summary);
    }
    if (title == NULL || title == UNRECOGNISED) {
        result = title == NULL ? NULL : Py_None;
        title = NULL;
        goto done;
    }
    updated = iso_ms(modified);
    if (updated == NULL || updated == UNRECOGNISED) {
        result = updated == NULL ? NULL : Py_None;
        updated = NULL;
        goto done;
    }
    int same = 0;
    if (Py_TYPE(created_at) == Py_TYPE(modified)) {
        if ((same = PyObject_RichCompareBool(created_at, modified, Py_EQ)) < 0)
            goto done;
    }
    created = same ? Py_NewRef(updated) : iso_ms(created_at);
    if (created == NULL || created == UNRECOGNISED) {
        result = created == NULL ? NULL : Py_None;
        created = NULL;
        goto done;
    }
    int truth = PyObject_IsTrue(active);
    if (truth < 0)
        goto done;
    PyObject *cwd_value = cwd != Py_None && PyUnicode_GET_LENGTH(cwd) > 0 ? cwd : Py_None;
    PyObject *branch_value = branch != Py_None && !equals(branch, s_head) ? branch : Py_None;
    fields = PyDict_Copy(summary_template);
    if (fields == NULL || PyDict_SetItem(fields, s_native_session_id, session_id) < 0 ||
        PyDict_SetItem(fields, s_title, title) < 0 || PyDict_SetItem(fields, s_cwd, cwd_value) < 0 ||
        PyDict_SetItem(fields, s_created_at, created) < 0 || PyDict_SetItem(fields, s_updated_at, updated) < 0 ||
        PyDict_SetItem(fields, s_archived, Py_None) < 0 ||
        PyDict_SetItem(fields, s_active, truth ? Py_True : Py_None) < 0 ||
        PyDict_SetItem(fields, s_git_branch, branch_value) < 0 ||
        PyDict_SetItem(fields, s_started_as, started_as) < 0 || PyDict_SetItem(fields, s_raw, raw) < 0)
        goto done;
    result = fields;
    fields = NULL;
done:
    Py_XINCREF(result == Py_None ? result : NULL);
    Py_DECREF(raw);
    Py_XDECREF(title);
    Py_XDECREF(updated);
    Py_XDECREF(created);
    Py_XDECREF(fields);
    return result;
}

static PyMethodDef methods[] = {
    {"normalized_rows", normalized_rows, METH_O, "claude_sessions.reference_normalized_rows, or None"},
    {"record_dicts", (PyCFunction)(void (*)(void))record_dicts, METH_FASTCALL, "each record's own instance dict, or None"},
    {"summary_fields", (PyCFunction)(void (*)(void))summary_fields, METH_FASTCALL, "claude_sessions.reference_summary_fields, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_claude_rows", NULL, -1, methods};

static int
intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC
PyInit__claude_rows(void)
{
    if (intern(&s_type, "type") || intern(&s_message, "message") || intern(&s_content, "content") ||
        intern(&s_uuid, "uuid") || intern(&s_text, "text") || intern(&s_tool_use, "tool_use") ||
        intern(&s_tool_result, "tool_result") || intern(&s_name, "name") || intern(&s_id, "id") ||
        intern(&s_role, "role") || intern(&s_kind, "kind") || intern(&s_timestamp, "timestamp") ||
        intern(&s_event_index, "eventIndex") || intern(&s_unknown, "unknown") ||
        intern(&s_assistant, "assistant") || intern(&s_user, "user") || intern(&s_tool, "tool") ||
        intern(&s_other, "other") || intern(&s_empty, "") || intern(&s_newline, "\n") ||
        intern(&s_strip, "strip") || intern(&s_head, "HEAD") ||
        intern(&s_native_session_id, "nativeSessionId") || intern(&s_title, "title") ||
        intern(&s_cwd, "cwd") || intern(&s_created_at, "createdAt") || intern(&s_updated_at, "updatedAt") ||
        intern(&s_archived, "archived") || intern(&s_active, "active") || intern(&s_git_branch, "gitBranch") ||
        intern(&s_started_as, "startedAs") || intern(&s_raw, "raw") || intern(&a_session_id, "session_id") ||
        intern(&a_custom_title, "custom_title") || intern(&a_summary, "summary") ||
        intern(&a_git_branch, "git_branch") || intern(&a_cwd, "cwd") || intern(&a_created_at, "created_at") ||
        intern(&a_last_modified, "last_modified"))
        return NULL;
    set_ascii_classes();
    PyObject *row_keys[] = {s_id, s_role, s_kind, s_timestamp, s_text, s_event_index};
    PyObject *summary_keys[] = {s_native_session_id, s_title, s_cwd, s_created_at, s_updated_at,
                                s_archived, s_active, s_git_branch, s_started_as, s_raw};
    if ((row_template = PyDict_New()) == NULL || (summary_template = PyDict_New()) == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof row_keys / sizeof *row_keys; i++)
        if (PyDict_SetItem(row_template, row_keys[i], Py_None) < 0)
            return NULL;
    for (size_t i = 0; i < sizeof summary_keys / sizeof *summary_keys; i++)
        if (PyDict_SetItem(summary_template, summary_keys[i], Py_None) < 0)
            return NULL;
    return PyModule_Create(&module_def);
}
