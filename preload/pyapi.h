/*
 * The CPython C-API functions that pyframes.c, python.c and torch.c share
 * (pyapi.c). gcspy is never linked against libpython (a program that is not
 * Python must load it unchanged), so they are found with dlsym when Python
 * mode starts (python.c's gs_py_init), and the files that run only once
 * Python mode is on (gs_py_active()) use these pointers instead of
 * resolving their own. They are looked up in the modules' symbol tables
 * (elfsym.h), never with dlsym: a failed dlsym leaves an error pending for
 * the program's next dlerror(), in a block glibc mallocs, and a successful
 * one clears the error the program had left there. Include after
 * <Python.h>.
 */
#ifndef GCSPY_PYAPI_H
#define GCSPY_PYAPI_H

#include "elfsym.h"
#include "shim.h"

extern const char *(*gs_py_utf8)(PyObject *, Py_ssize_t *);
extern int (*gs_py_initialized)(void);
extern int (*gs_py_finalizing)(void);
extern int (*gs_py_pending)(int (*)(void *), void *);
extern PyObject *(*gs_py_getattr)(PyObject *, const char *);
extern PyObject *(*gs_py_dict_get)(PyObject *, const char *);
extern void (*gs_py_incref)(PyObject *);
extern void (*gs_py_decref_fn)(PyObject *);
extern PyObject *(*gs_py_call1)(PyObject *, PyObject *);
extern void (*gs_py_err_clear)(void);

/* CPython's types whose dead objects stay allocated on a free list (3.10
 * to 3.14: list, tuple, dict, int (3.14), float, ...), by address, for
 * pyarena.c; those the interpreter does not export are left out. Filled by
 * gs_pyapi_resolve, read under the stop. */
#define GS_PY_MAX_FREELIST_TYPES 16
extern uintptr_t gs_py_freelist_types[GS_PY_MAX_FREELIST_TYPES];
extern int gs_py_nfreelist_types;
/* PyList_Type's address (0 when not exported): a live list's unused
 * capacity is not a root (pyarena.c). */
extern uintptr_t gs_py_list_type;

/* Finds the functions above: 0, or -1 when one is missing. Where a
 * function was renamed across 3.10-3.14 (3.13's Py_IsFinalizing) or is
 * missing from one (3.10 exports no PyObject_CallOneArg), the other name or
 * an equivalent is taken. */
int gs_pyapi_resolve(void);

/* One interpreter symbol into var, by name; true when found. */
#define GS_PY_SYM(var, name) (var = (__typeof__(var))gs_elf_find(name))

/* Py_DECREF through the interpreter's own Py_DecRef: reference counts
 * are counted differently across versions (3.12's immortal objects), so
 * they are never touched here directly. NULL is allowed. */
static inline void gs_py_decref(PyObject *o)
{
    if (o)
        gs_py_decref_fn(o);
}

#endif /* GCSPY_PYAPI_H */
