/*
 * The CPython functions shared by the files that read or call into the
 * interpreter (pyapi.h), found at run time: nothing links libpython.
 */
#define _GNU_SOURCE
#include <Python.h>

#include "pyapi.h"

const char *(*gs_py_utf8)(PyObject *, Py_ssize_t *);
int (*gs_py_initialized)(void);
int (*gs_py_finalizing)(void);
int (*gs_py_pending)(int (*)(void *), void *);
PyObject *(*gs_py_getattr)(PyObject *, const char *);
PyObject *(*gs_py_dict_get)(PyObject *, const char *);
void (*gs_py_incref)(PyObject *);
void (*gs_py_decref_fn)(PyObject *);
PyObject *(*gs_py_call1)(PyObject *, PyObject *);
void (*gs_py_err_clear)(void);

uintptr_t gs_py_freelist_types[GS_PY_MAX_FREELIST_TYPES];
int gs_py_nfreelist_types;
uintptr_t gs_py_list_type;

/* The exact types CPython 3.10-3.14 keep dead objects of on a free list
 * (the Objects/ files, the WITH_FREELISTS paths; 3.14's _Py_FREELIST_FREE). The
 * ones with pointers or pointer-sized data matter: a dead list's ob_item, a
 * dead tuple's items and a dead int's digits still hold what they last held
 * (docs/python.md, "Limits"). */
static const char *const freelist_type_names[] = {
    "PyList_Type",  "PyTuple_Type",    "PyDict_Type",   "PyLong_Type",
    "PyFloat_Type", "PyComplex_Type",  "PySlice_Type",  "PyRangeIter_Type",
    "PyMethod_Type", "PyCFunction_Type", "PyCMethod_Type", "PyContext_Type",
};
_Static_assert(sizeof freelist_type_names / sizeof freelist_type_names[0] <=
                   GS_PY_MAX_FREELIST_TYPES,
               "room for every free-list type");

static void resolve_freelist_types(void)
{
    int n = 0;
    for (size_t i = 0; i < sizeof freelist_type_names / sizeof freelist_type_names[0]; i++) {
        void *t = gs_elf_find(freelist_type_names[i]);
        if (t)
            gs_py_freelist_types[n++] = (uintptr_t)t;
    }
    gs_py_nfreelist_types = n;
    gs_py_list_type = (uintptr_t)gs_elf_find("PyList_Type");
}

/* 3.10 has PyObject_CallOneArg as an inline function only. */
static PyObject *(*p_call_objargs)(PyObject *, ...);
static PyObject *call1_objargs(PyObject *f, PyObject *a)
{
    return p_call_objargs(f, a, NULL);
}

int gs_pyapi_resolve(void)
{
    if (!GS_PY_SYM(gs_py_call1, "PyObject_CallOneArg") &&
        GS_PY_SYM(p_call_objargs, "PyObject_CallFunctionObjArgs"))
        gs_py_call1 = call1_objargs;
    if (!GS_PY_SYM(gs_py_utf8, "PyUnicode_AsUTF8AndSize") ||
        !GS_PY_SYM(gs_py_initialized, "Py_IsInitialized") ||
        (!GS_PY_SYM(gs_py_finalizing, "Py_IsFinalizing") &&
         !GS_PY_SYM(gs_py_finalizing, "_Py_IsFinalizing")) ||
        !GS_PY_SYM(gs_py_pending, "Py_AddPendingCall") ||
        !GS_PY_SYM(gs_py_getattr, "PyObject_GetAttrString") ||
        !GS_PY_SYM(gs_py_dict_get, "PyDict_GetItemString") ||
        !GS_PY_SYM(gs_py_incref, "Py_IncRef") || !GS_PY_SYM(gs_py_decref_fn, "Py_DecRef") ||
        !gs_py_call1 || !GS_PY_SYM(gs_py_err_clear, "PyErr_Clear"))
        return -1;
    resolve_freelist_types();
    return 0;
}
