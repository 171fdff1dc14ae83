/*
 * Python frames in allocation stacks, with LD_PRELOAD alone: no Python
 * package, no code change.
 *
 * CPython 3.11 keeps each thread's frames as a chain of _PyInterpreterFrame
 * (code object, last instruction, previous frame, and is_entry on the first
 * frame of each C-level evaluation). At an allocation the shim reads that
 * chain directly (a few loads per frame, no call into the interpreter, no
 * allocation) and turns each frame into a synthetic ip:
 * GS_IP_PYFRAME | code id << 32 | line. Code objects are interned like stack
 * nodes: a PYCODE record (file, qualified name, first line) is written the
 * first time one is seen, before any stack that uses it. Lines come from
 * PyCode_Addr2Line through a per-thread cache keyed by (code, offset).
 * The Python frames replace the interpreter's own frames in the native stack:
 * each native frame inside _PyEval_EvalFrameDefault stands for the Python
 * frames of one C-level evaluation (up to the next is_entry frame); with the
 * frame-pointer walker, which stops at the interpreter (Debian's python is
 * built without frame pointers), they follow the native frames it found.
 * Struct layouts come from Python 3.11's own headers at build time; python.c
 * checks the interpreter's version at run time before this file starts.
 *
 * Thread safety: a thread reads only its own frame chain. A code object's
 * names are read in place when they are compact ASCII strings (immutable, so
 * no GIL is needed), through the str API otherwise, which only the GIL
 * holder may call: a thread running without the GIL (C code that released
 * it, ctypes calls) records a frame whose code has a non-ASCII name and was
 * not seen before as code id 0 (file unknown), with its line.
 *
 * Steps: PyTorch wraps every Optimizer.step in profile_hook_step's wrapper
 * (torch 1.13 and 2.x; the qualified names differ, the suffix does not). A
 * thread whose allocation stack contains that wrapper's frame when its
 * previous allocation's did not has started a step: a MARKER of kind STEP
 * is written. No hook is installed into torch.
 */
#define _GNU_SOURCE
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "emit.h"
#include "mem.h"
#include "pyapi.h"
#include "pyframes.h"

/* The interpreter's functions only frame reading needs. */
static PyThreadState *(*p_this_tstate)(void);
static PyThreadState *(*p_gil_holder)(void);
static int (*p_addr2line)(PyCodeObject *, int);

int gs_py_on;
#define py_on gs_py_on
static uintptr_t eval_lo, eval_hi;
static atomic_uint_fast64_t steps;

/* ---- code objects ---- */

#define GS_PYCODES (1u << 20)
struct pycode {
    _Atomic uintptr_t code; /* published last */
    uint32_t id;
    int32_t firstline;
    uint8_t is_step;
};
static struct pycode *codes;
static atomic_int codes_lock;
static uint32_t next_code = 1;

static inline uint64_t code_hash(uintptr_t c)
{
    return (c >> 4) * 0x9E3779B97F4A7C15ull >> 44;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

/* The bytes of a str. Compact ASCII strings (file and function names almost
 * always are) are read in place, which is safe without the GIL: a str never
 * changes. Others need the str API, hence the GIL. */
static const char *str_bytes(PyObject *o, Py_ssize_t *len, int gil)
{
    if (!o || !(Py_TYPE(o)->tp_flags & Py_TPFLAGS_UNICODE_SUBCLASS))
        return NULL;
    PyASCIIObject *a = (PyASCIIObject *)o;
    if (a->state.compact && a->state.ascii && a->state.ready) {
        *len = a->length;
        return (const char *)(a + 1);
    }
    return gil ? gs_py_utf8(o, len) : NULL;
}

/* Returns the entry of a code object, interning it when new; NULL when it
 * cannot be interned now (table full, or a non-ASCII name without the GIL). */
static struct pycode *code_get(PyCodeObject *co, int may_intern)
{
    uintptr_t c = (uintptr_t)co;
    uint64_t mask = GS_PYCODES - 1, j = code_hash(c) & mask;
    for (;;) {
        uintptr_t k = atomic_load_explicit(&codes[j].code, memory_order_acquire);
        /* A code object freed and its address reused by another is told
         * apart by its first line. */
        if (k == c && codes[j].firstline == co->co_firstlineno)
            return &codes[j];
        if (!k)
            break;
        j = (j + 1) & mask;
    }
    gs_spin_lock(&codes_lock);
    /* Re-probe under the lock, then insert. */
    j = code_hash(c) & mask;
    for (uint64_t n = 0; n <= mask; n++, j = (j + 1) & mask) {
        uintptr_t k = atomic_load_explicit(&codes[j].code, memory_order_relaxed);
        if (k == c && codes[j].firstline == co->co_firstlineno) {
            gs_spin_unlock(&codes_lock);
            return &codes[j];
        }
        if (!k)
            break;
    }
    struct pycode *e = &codes[j];
    if (atomic_load(&e->code) || next_code >= (1u << 30)) {
        gs_spin_unlock(&codes_lock);
        return NULL; /* table full: frames of new code objects stay anonymous */
    }
    Py_ssize_t flen = 0, nlen = 0;
    const char *file = str_bytes(co->co_filename, &flen, may_intern);
    const char *name = str_bytes(co->co_qualname, &nlen, may_intern);
    if ((!file && co->co_filename) || (!name && co->co_qualname)) {
        gs_spin_unlock(&codes_lock);
        return NULL; /* a non-ASCII name, and no GIL to convert it */
    }
    if (!file) {
        file = "?";
        flen = 1;
    }
    if (!name) {
        name = "?";
        nlen = 1;
    }
    e->id = next_code++;
    e->firstline = co->co_firstlineno;
    /* torch 1.13: Optimizer._hook_for_profile.<locals>.profile_hook_step.
     * <locals>.wrapper; torch 2.x: Optimizer.profile_hook_step.<locals>.wrapper */
    e->is_step = ends_with(name, (size_t)nlen, "profile_hook_step.<locals>.wrapper") &&
                 ends_with(file, (size_t)flen, "optim/optimizer.py");
    gs_emit_pycode(e->id, file, (size_t)flen, name, (size_t)nlen, co->co_firstlineno);
    atomic_store_explicit(&e->code, c, memory_order_release);
    gs_spin_unlock(&codes_lock);
    return e;
}

uint32_t gs_py_code_new(const char *file, size_t flen, const char *fn, size_t fnlen)
{
    if (!py_on)
        return 0;
    gs_spin_lock(&codes_lock);
    uint32_t id = next_code < (1u << 30) ? next_code++ : 0;
    gs_spin_unlock(&codes_lock);
    if (id && gs_emit_pycode(id, file, flen, fn, fnlen, 0))
        return 0;
    return id;
}

/* ---- frames ---- */

static int frame_line(struct gs_thread *th, PyCodeObject *co, int off)
{
    uint64_t key = (uintptr_t)co ^ ((uint64_t)(unsigned)off << 48);
    unsigned slot = (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 55) & 511;
    if (th && th->py_line_key[slot] == key)
        return th->py_line[slot];
    int line = p_addr2line(co, off);
    if (th) {
        th->py_line_key[slot] = key;
        th->py_line[slot] = line;
    }
    return line;
}

/* One Python frame as a synthetic ip, or 0 to skip it. */
static uintptr_t frame_ip(struct gs_thread *th, _PyInterpreterFrame *f, int may_intern,
                          int *is_step)
{
    PyCodeObject *co = f->f_code;
    if (!co)
        return 0;
    _Py_CODEUNIT *first = _PyCode_CODE(co);
    if (f->owner != FRAME_OWNED_BY_GENERATOR && f->prev_instr < first + co->_co_firsttraceable)
        return 0; /* not started yet */
    int off = (int)(f->prev_instr - first);
    if (off < 0)
        off = 0;
    struct pycode *pc = code_get(co, may_intern);
    int line = frame_line(th, co, off * (int)sizeof(_Py_CODEUNIT));
    if (pc && pc->is_step)
        *is_step = 1;
    return GS_IP_PYFRAME | (uint64_t)(pc ? pc->id : 0) << 32 | (uint32_t)(line > 0 ? line : 0);
}

void gs_py_eval_range(uintptr_t *lo, uintptr_t *hi)
{
    *lo = eval_lo;
    *hi = eval_hi;
}

int gs_py_merge(uintptr_t *ips, int n, int max)
{
    if (!py_on)
        return n;
    PyThreadState *ts = p_this_tstate();
    if (!ts || !ts->cframe)
        return n;
    _PyInterpreterFrame *f = ts->cframe->current_frame;
    if (!f)
        return n;
    struct gs_thread *th = gs_tls.th;
    int may_intern = p_gil_holder() == ts;
    int is_step = 0;
    uintptr_t out[GS_MAX_DEPTH];
    int o = 0, i = 0;
    /* Native frames; each one inside the evaluator takes the Python frames
     * of its evaluation (down to the entry frame). */
    for (; i < n && o < max; i++) {
        if (ips[i] >= eval_lo && ips[i] < eval_hi && f) {
            while (f && o < max) {
                int entry = f->is_entry;
                uintptr_t ip = frame_ip(th, f, may_intern, &is_step);
                if (ip)
                    out[o++] = ip;
                f = f->previous;
                if (entry)
                    break;
            }
            continue;
        }
        out[o++] = ips[i];
    }
    /* Frames the native walk did not reach follow it. */
    for (; f && o < max; f = f->previous) {
        uintptr_t ip = frame_ip(th, f, may_intern, &is_step);
        if (ip)
            out[o++] = ip;
    }
    memcpy(ips, out, (size_t)o * sizeof *ips);
    if (th) {
        if (is_step && !th->py_in_step) {
            char label[32];
            gs_fmt(label, sizeof label, "step %llu",
                   (unsigned long long)atomic_fetch_add(&steps, 1) + 1);
            gs_emit_marker(th->index, GS_MARK_STEP, label);
        }
        th->py_in_step = is_step;
    }
    return o;
}

/* ---- start-up ---- */

int gs_pyframes_resolve(void)
{
    if (!GS_PY_SYM(p_this_tstate, "PyGILState_GetThisThreadState") ||
        !GS_PY_SYM(p_gil_holder, "_PyThreadState_UncheckedGet") ||
        !GS_PY_SYM(p_addr2line, "PyCode_Addr2Line"))
        return -1;
    return 0;
}

int gs_pyframes_start(void)
{
    codes = gs_pages_alloc(GS_PYCODES * sizeof *codes);
    if (!codes)
        return -1;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    void *eval = gs_elf_find("_PyEval_EvalFrameDefault");
    if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym) {
        eval_lo = (uintptr_t)eval;
        eval_hi = eval_lo + sym->st_size;
    }
    py_on = 1;
    return 0;
}
