/*
 * Python integration, with LD_PRELOAD alone: no Python package, no code
 * change. Python mode starts here (gs_py_init: the interpreter must be
 * CPython 3.10 to 3.14 with the GIL, whose layout pylayout.c knows; a
 * free-threaded build or any other version gets one line and native stacks
 * only), and this file adds what needs the interpreter to run code:
 *
 * GC pauses. Once the interpreter runs, the writer thread's tick (a step
 * registered with daemon.c) schedules one pending call (Py_AddPendingCall:
 * the main thread runs it at a safe point with the GIL held) that appends a
 * C function to gc.callbacks; it records a PAUSE of kind PYTHON_GC per
 * collection (generation, objects collected).
 *
 * The exit scan. The same pending call registers a function with Python's
 * atexit that runs the process's exit scan there, while the interpreter
 * still runs: first the step another integration asked for (gs_py_at_exit:
 * torch.c's exit scan with the caching allocator's snapshot), else a plain
 * one. The module teardown that follows frees every global's object, so a
 * scan after it (the on_exit scan) must take freed pymalloc blocks for
 * roots, and dead objects on CPython's free lists with them (pyarena.c):
 * a dropped buffer whose address a dead int still held (sid's 3.14) stayed
 * reachable there. Scanned at atexit, the globals are alive and pools are
 * scanned precisely. The scan sets gs_exit_scan_done, so the on_exit scan
 * does not run again; a program that ends before the first tick installed
 * the function, or through os._exit, keeps the scan on its own exit path.
 */
#define _GNU_SOURCE
#include <Python.h>

#include <string.h>

#include "daemon.h"
#include "emit.h"
#include "mem.h"
#include "pyapi.h"
#include "pyframes.h"
#include "python.h"
#include "scan.h"

/* The interpreter's functions only this file calls. */
static PyObject *(*p_import)(const char *);
static int (*p_list_append)(PyObject *, PyObject *);
static PyObject *(*p_cfunc_new)(PyMethodDef *, PyObject *, PyObject *);
static long (*p_as_long)(PyObject *);
static int (*p_str_eq)(PyObject *, const char *);
static Py_ssize_t (*p_tuple_size)(PyObject *);
static PyObject *(*p_tuple_item)(PyObject *, Py_ssize_t);
static PyObject *p_none;

static atomic_int install_state; /* 0 not yet, 1 scheduled, 2 installed */

/* ---- GC pauses ---- */

static __thread uint64_t gc_t0;

static PyObject *gc_callback(PyObject *self, PyObject *args)
{
    (void)self;
    /* The tuple's items through the API: 3.14's tuples cache their hash
     * before the items, so PyTuple_GET_ITEM of another version's headers
     * reads the wrong word. */
    PyObject *phase = PyTuple_Check(args) && p_tuple_size(args) == 2 ? p_tuple_item(args, 0) : NULL;
    PyObject *info = phase ? p_tuple_item(args, 1) : NULL;
    if (phase && p_str_eq(phase, "start") == 0) {
        gc_t0 = gs_now_fine();
    } else if (phase && info && gc_t0 && gs_tracing()) {
        PyObject *gen = gs_py_dict_get(info, "generation");
        PyObject *col = gs_py_dict_get(info, "collected");
        int saved = gs_tls.in_hook;
        gs_tls.in_hook = 1;
        gs_emit_pause(gc_t0, gs_now_fine(), GS_PAUSE_PYTHON_GC,
                      gen ? (uint64_t)p_as_long(gen) : 0, col ? (uint64_t)p_as_long(col) : 0);
        gs_restore(saved);
        gc_t0 = 0;
    }
    gs_py_incref(p_none);
    return p_none;
}

static PyMethodDef gc_def = {"gcspy_gc_callback", gc_callback, METH_VARARGS,
                             "gcspy: records Python GC collections as pauses"};

/* Python's atexit: the exit scan (the registered step, PyTorch-aware mode's
 * scan with a snapshot, else a plain one). atexit runs handlers
 * last-registered first, so the program's own handlers, registered later,
 * have run when this one does. */
static void (*exit_step)(void);

void gs_py_at_exit(void (*step)(void))
{
    exit_step = step;
}

static PyObject *exit_callback(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (exit_step)
        exit_step(); /* a scan that ran sets gs_exit_scan_done */
    if (!gs_exit_scan_done && gs_opt.scan_at_exit)
        gs_scan_program(GS_SCAN_TRIG_EXIT, NULL);
    gs_py_incref(p_none);
    return p_none;
}

static PyMethodDef exit_def = {"gcspy_exit_scan", exit_callback, METH_NOARGS,
                               "gcspy: the exit scan while the interpreter still runs"};

/* Runs in the main thread, GIL held, at a point the interpreter chose. */
static int install(void *arg)
{
    (void)arg;
    PyObject *gc = p_import("gc");
    PyObject *cbs = gc ? gs_py_getattr(gc, "callbacks") : NULL;
    PyObject *fn = cbs ? p_cfunc_new(&gc_def, NULL, NULL) : NULL;
    int ok = fn && p_list_append(cbs, fn) == 0;
    gs_py_decref(fn);
    gs_py_decref(cbs);
    gs_py_decref(gc);
    if (gs_opt.scan_at_exit) {
        PyObject *ax = p_import("atexit");
        PyObject *reg = ax ? gs_py_getattr(ax, "register") : NULL;
        PyObject *efn = reg ? p_cfunc_new(&exit_def, NULL, NULL) : NULL;
        PyObject *r = efn ? gs_py_call1(reg, efn) : NULL;
        gs_py_decref(r);
        gs_py_decref(efn);
        gs_py_decref(reg);
        gs_py_decref(ax);
        gs_py_err_clear();
    }
    atomic_store(&install_state, ok ? 2 : 0);
    return 0; /* never raise into the program */
}

/* The writer thread's tick (daemon.c): installs the callbacks once the
 * interpreter runs. */
static void py_tick(void)
{
    if (!gs_py_active() || atomic_load(&install_state) || !gs_py_initialized() || gs_py_finalizing())
        return;
    atomic_store(&install_state, 1);
    if (gs_py_pending(install, NULL) != 0)
        atomic_store(&install_state, 0);
}

/* ---- start-up ---- */

/* The running interpreter's version as PY_VERSION_HEX: Py_Version (3.11+),
 * else Py_GetVersion's "3.10.13 (main, ...)"; 0 when this is no Python. */
static unsigned long py_version(const char *vs)
{
    const unsigned long *ver = gs_elf_find("Py_Version");
    if (ver)
        return *ver;
    unsigned long part[3] = {0, 0, 0};
    for (int i = 0; vs && i < 3; i++) {
        if (*vs < '0' || *vs > '9')
            return 0;
        while (*vs >= '0' && *vs <= '9')
            part[i] = part[i] * 10 + (unsigned long)(*vs++ - '0');
        if (*vs == '.')
            vs++;
    }
    return vs ? part[0] << 24 | part[1] << 16 | part[2] << 8 : 0;
}

void gs_py_init(void)
{
    if (!gs_opt.python)
        return;
    /* Every program is probed, Python or not: the probes must leave its
     * dlerror() state alone (pyapi.h). */
    const char *(*getver)(void) = (const char *(*)(void))gs_elf_find("Py_GetVersion");
    const char *vs = getver ? getver() : NULL;
    unsigned long hex = py_version(vs);
    if (!hex)
        return; /* not Python */
    /* A free-threaded build (3.13t, 3.14t) says so in its version string
     * ("free-threading build"); its objects and frames are laid out
     * otherwise, and its debug offsets say so too (pylayout.c). */
    const char *why = vs && strstr(vs, "free-threading") ? "a free-threaded build" : NULL;
    struct gs_pylayout layout;
    if (why || gs_pylayout_find(hex, gs_elf_find("_PyRuntime"), &layout, &why)) {
        gs_log("Python %lu.%lu: %s; Python frames, steps, GC pauses and PyTorch-aware mode "
               "need CPython 3.10 to 3.14 with the GIL: native stacks only",
               hex >> 24 & 0xff, hex >> 16 & 0xff, why);
        return;
    }
    if (gs_pyframes_resolve(&layout) || gs_pyapi_resolve() || !GS_PY_SYM(p_import, "PyImport_ImportModule") ||
        !GS_PY_SYM(p_list_append, "PyList_Append") || !GS_PY_SYM(p_cfunc_new, "PyCFunction_NewEx") ||
        !GS_PY_SYM(p_as_long, "PyLong_AsLong") ||
        !GS_PY_SYM(p_str_eq, "PyUnicode_CompareWithASCIIString") ||
        !GS_PY_SYM(p_tuple_size, "PyTuple_Size") || !GS_PY_SYM(p_tuple_item, "PyTuple_GetItem") ||
        !GS_PY_SYM(p_none, "_Py_NoneStruct")) {
        gs_log("Python: an interpreter function is missing; native stacks only");
        return;
    }
    if (gs_pyframes_start())
        return;
    gs_daemon_add_step(py_tick);
}
