/*
 * The CPython C-API functions that both python.c and torch.c call. gcspy is
 * never linked against libpython (a program that is not Python must load
 * it unchanged), so python.c finds them with dlsym when it starts Python
 * mode, and torch.c, which runs only once Python mode is on
 * (gs_py_active()), uses the same pointers instead of resolving its own.
 * Include after <Python.h>.
 */
#ifndef GCSPY_PYAPI_H
#define GCSPY_PYAPI_H

extern const char *(*gs_py_utf8)(PyObject *, Py_ssize_t *);
extern int (*gs_py_initialized)(void);
extern int (*gs_py_finalizing)(void);
extern int (*gs_py_pending)(int (*)(void *), void *);
extern PyObject *(*gs_py_getattr)(PyObject *, const char *);
extern PyObject *(*gs_py_dict_get)(PyObject *, const char *);
extern void (*gs_py_dealloc)(PyObject *);
extern PyObject *(*gs_py_call1)(PyObject *, PyObject *);
extern void (*gs_py_err_clear)(void);

#endif
