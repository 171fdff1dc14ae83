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
void (*gs_py_dealloc)(PyObject *);
PyObject *(*gs_py_call1)(PyObject *, PyObject *);
void (*gs_py_err_clear)(void);

int gs_pyapi_resolve(void)
{
    if (!GS_PY_SYM(gs_py_utf8, "PyUnicode_AsUTF8AndSize") ||
        !GS_PY_SYM(gs_py_initialized, "Py_IsInitialized") ||
        !GS_PY_SYM(gs_py_finalizing, "_Py_IsFinalizing") ||
        !GS_PY_SYM(gs_py_pending, "Py_AddPendingCall") ||
        !GS_PY_SYM(gs_py_getattr, "PyObject_GetAttrString") ||
        !GS_PY_SYM(gs_py_dict_get, "PyDict_GetItemString") ||
        !GS_PY_SYM(gs_py_dealloc, "_Py_Dealloc") ||
        !GS_PY_SYM(gs_py_call1, "PyObject_CallOneArg") ||
        !GS_PY_SYM(gs_py_err_clear, "PyErr_Clear"))
        return -1;
    return 0;
}
