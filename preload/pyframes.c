/*
 * Python frames in allocation stacks, with LD_PRELOAD alone: no Python
 * package, no code change, one build for CPython 3.10 to 3.14.
 *
 * Each thread's Python frames form a chain: PyFrameObjects in 3.10, one per
 * C-level evaluation; _PyInterpreterFrames from 3.11 on (code object,
 * instruction pointer, previous frame), several per evaluation, whose first
 * one carries is_entry (3.11) or follows an entry frame owned by the C stack
 * or the interpreter (3.12+). At an allocation the shim reads that chain
 * directly (a few loads per frame, no call into the interpreter, no
 * allocation) and turns each frame into a synthetic ip:
 * GS_IP_PYFRAME | code id << 32 | line. Where each field lies comes from
 * pylayout.c, chosen for the running interpreter at start (python.c); no
 * Python struct is compiled in. Code objects are interned like stack
 * nodes: a PYCODE record (file, qualified name, first line; 3.10 has only
 * the plain name) is written the first time one is seen, before any stack
 * that uses it. A fork's child starts a trace of its own, whose inherited
 * stacks name the parent's code ids: the names are copied when a code is
 * interned, and the child writes every PYCODE again from that copy
 * (gs_py_codes_reemit), since a code object may be gone by the fork (a
 * DataLoader worker's report named its inherited frames "<python code
 * 39>" before). Lines come from PyCode_Addr2Line through a per-thread cache
 * keyed by (code, offset).
 * The Python frames replace the interpreter's own frames in the native stack:
 * each native frame inside _PyEval_EvalFrameDefault stands for the Python
 * frames of one C-level evaluation; with the frame-pointer walker, which
 * stops at the interpreter (Debian's python is built without frame
 * pointers), they follow the native frames it found.
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
#include <Python.h>

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
static int (*p_addr2line)(void *, int);
static uintptr_t p_code_type; /* &PyCode_Type */

int gs_py_on;
#define py_on gs_py_on
static uintptr_t eval_lo, eval_hi;
/* Where the native walk stops (gs_py_stop_range): the evaluator, or, in an
 * interpreter whose evaluator is a small dispatcher (3.14's tail-calling
 * build, sid's: 1184 bytes, the opcode handlers and the evaluation loop
 * inlined into its callers), the interpreter module's whole code. There no
 * frame lies in the evaluator, so the walk went on through every
 * interpreter frame to _start (built with frame pointers: Python 3.14 is),
 * a rule lookup each, for frames the analyzer drops from Python stacks
 * anyway; sid's train.py ran 2.2x its bare step time, where a walk that
 * stops at the interpreter, as Debian 3.11's (no frame pointers) does,
 * costs less. The Python frames then follow the native ones, as there. */
static uintptr_t stop_lo, stop_hi;
#define GS_SMALL_EVAL 16384u /* the computed-goto evaluators are 50 KiB and more */

static atomic_uint_fast64_t steps;
/* The running interpreter's layout: set once before py_on, read-only after. */
static struct gs_pylayout L;

/* Loads from the interpreter's structs, at offsets from L. */
static inline uintptr_t ld_ptr(uintptr_t base, int off)
{
    return *(const uintptr_t *)(base + (unsigned)off);
}
static inline int ld_int(uintptr_t base, int off)
{
    return *(const int *)(base + (unsigned)off);
}
static inline unsigned ld_u8(uintptr_t base, int off)
{
    return *(const unsigned char *)(base + (unsigned)off);
}

/* ---- code objects ---- */

#define GS_PYCODES (1u << 20)
struct pycode {
    _Atomic uintptr_t code; /* published last */
    uint32_t id;
    int32_t firstline;
    /* A code object freed and its address reused by another is told apart
     * by its first line and the addresses of its names. */
    uintptr_t file, name;
    uint8_t is_step;
};
static struct pycode *codes;
static atomic_int codes_lock;
static uint32_t next_code = 1;

/* Each code id's PYCODE fields, by id, their bytes in one arena, appended
 * under codes_lock (a file's name is shared by the codes that follow it
 * while the same str is theirs). Virtual reservations: only what is used
 * is touched. An id whose names did not fit keeps len 0 and is not
 * re-emitted. */
#define GS_PYNAME_BYTES (64u << 20)
struct code_names {
    uint32_t foff, flen, noff, nlen;
    int32_t firstline;
};
static struct code_names *names_of;
static char *name_bytes;
static uint32_t name_used, last_foff, last_flen;
static uintptr_t last_file;

static uint32_t keep_bytes(const char *s, size_t n)
{
    if (n > GS_PYNAME_BYTES - name_used)
        return UINT32_MAX;
    uint32_t off = name_used;
    memcpy(name_bytes + off, s, n);
    name_used += (uint32_t)n;
    return off;
}

/* Under codes_lock. cfile: the file's str (0 when not from a code object). */
static void keep_names(uint32_t id, uintptr_t cfile, const char *file, size_t flen,
                       const char *name, size_t nlen, int firstline)
{
    if (!names_of || id >= GS_PYCODES || !flen || !nlen)
        return;
    uint32_t foff = last_foff;
    if (!cfile || cfile != last_file || flen != last_flen ||
        memcmp(name_bytes + last_foff, file, flen)) {
        foff = keep_bytes(file, flen);
        if (foff == UINT32_MAX)
            return;
        last_file = cfile;
        last_foff = foff;
        last_flen = (uint32_t)flen;
    }
    uint32_t noff = keep_bytes(name, nlen);
    if (noff == UINT32_MAX)
        return;
    names_of[id] = (struct code_names){foff, (uint32_t)flen, noff, (uint32_t)nlen, firstline};
}

void gs_py_codes_reemit(void)
{
    atomic_store(&codes_lock, 0); /* a thread that held it does not exist here */
    if (!names_of)
        return;
    for (uint32_t id = 1; id < next_code && id < GS_PYCODES; id++) {
        const struct code_names *k = &names_of[id];
        if (k->nlen && gs_emit_pycode(id, name_bytes + k->foff, k->flen, name_bytes + k->noff,
                                      k->nlen, k->firstline))
            return;
    }
}

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
 * changes. Others need the str API, hence the GIL. The state bits compact
 * (5) and ascii (6) are the same in every version; the length follows the
 * object header (16 bytes) in all of them. */
static const char *str_bytes(uintptr_t s, Py_ssize_t *len, int gil)
{
    PyObject *o = (PyObject *)s;
    if (!o || !(Py_TYPE(o)->tp_flags & Py_TPFLAGS_UNICODE_SUBCLASS))
        return NULL;
    if ((ld_int(s, L.str_state) & 0x60) == 0x60) {
        *len = *(const Py_ssize_t *)(s + 16);
        return (const char *)(s + (unsigned)L.str_data);
    }
    return gil ? gs_py_utf8(o, len) : NULL;
}

static inline int same_code(const struct pycode *e, uintptr_t c, int firstline, uintptr_t file,
                            uintptr_t name, uintptr_t k)
{
    return k == c && e->firstline == firstline && e->file == file && e->name == name;
}

/* Python 3.10 knows only the plain name: profile_hook_step's wrapper is the
 * wrapper(*args, **kwargs) in optimizer.py (the decorators' wrapper(func)
 * there is not). CO_VARARGS | CO_VARKEYWORDS. */
static int is_step_code(uintptr_t co, const char *file, size_t flen, const char *name, size_t nlen)
{
    if (!ends_with(file, flen, "optim/optimizer.py"))
        return 0;
    /* torch 1.13: Optimizer._hook_for_profile.<locals>.profile_hook_step.
     * <locals>.wrapper; torch 2.x: Optimizer.profile_hook_step.<locals>.wrapper */
    if (L.co_flags < 0)
        return ends_with(name, nlen, "profile_hook_step.<locals>.wrapper");
    return nlen == 7 && !memcmp(name, "wrapper", 7) && (ld_int(co, L.co_flags) & 0xc) == 0xc;
}

/* Returns the entry of a code object, interning it when new; NULL when it
 * cannot be interned now (table full, or a non-ASCII name without the GIL). */
static struct pycode *code_get(uintptr_t c, int may_intern)
{
    int firstline = ld_int(c, L.co_firstlineno);
    uintptr_t cfile = ld_ptr(c, L.co_filename), cname = ld_ptr(c, L.co_name);
    uint64_t mask = GS_PYCODES - 1, j = code_hash(c) & mask;
    for (;;) {
        uintptr_t k = atomic_load_explicit(&codes[j].code, memory_order_acquire);
        if (same_code(&codes[j], c, firstline, cfile, cname, k))
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
        if (same_code(&codes[j], c, firstline, cfile, cname, k)) {
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
    const char *file = str_bytes(cfile, &flen, may_intern);
    const char *name = str_bytes(cname, &nlen, may_intern);
    if ((!file && cfile) || (!name && cname)) {
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
    e->firstline = firstline;
    e->file = cfile;
    e->name = cname;
    e->is_step = (uint8_t)is_step_code(c, file, (size_t)flen, name, (size_t)nlen);
    keep_names(e->id, cfile, file, (size_t)flen, name, (size_t)nlen, firstline);
    gs_emit_pycode(e->id, file, (size_t)flen, name, (size_t)nlen, firstline);
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
    if (id)
        keep_names(id, 0, file, flen, fn, fnlen, 0);
    gs_spin_unlock(&codes_lock);
    if (id && gs_emit_pycode(id, file, flen, fn, fnlen, 0))
        return 0;
    return id;
}

/* ---- frames ---- */

static int frame_line(struct gs_thread *th, uintptr_t co, int off)
{
    uint64_t key = co ^ ((uint64_t)(unsigned)off << 48);
    unsigned slot = (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 55) & 511;
    if (th && th->py_line_key[slot] == key)
        return th->py_line[slot];
    int line = p_addr2line((void *)co, off);
    if (th) {
        th->py_line_key[slot] = key;
        th->py_line[slot] = line;
    }
    return line;
}

static inline uintptr_t frame_prev(uintptr_t f)
{
    return ld_ptr(f, L.f_prev);
}

/* 3.12+: the frame an evaluation pushes first, owned by the C stack (or by
 * the interpreter, 3.14): no Python code of its own, it ends the frames of
 * that evaluation. */
static inline int frame_is_shim(uintptr_t f)
{
    return L.owner_entry_min >= 0 && (int)ld_u8(f, L.f_owner) >= L.owner_entry_min;
}

/* One Python frame as a synthetic ip, or 0 to skip it. */
static uintptr_t frame_ip(struct gs_thread *th, uintptr_t f, int may_intern, int *is_step)
{
    uintptr_t co = ld_ptr(f, L.f_code);
    if (L.code_tagged)
        co &= ~(uintptr_t)7;
    /* 3.13+: f_executable may be None (an entry frame) or another object */
    if (!co || ld_ptr(co, offsetof(PyObject, ob_type)) != p_code_type)
        return 0;
    int off;
    if (L.kind == GS_PYF_FRAMEOBJ) {
        int lasti = ld_int(f, L.f_instr); /* code units; -1: not started */
        if (lasti < 0)
            return 0;
        off = lasti * 2;
    } else {
        uintptr_t first = co + (unsigned)L.co_code, instr = ld_ptr(f, L.f_instr);
        if (L.co_firsttraceable >= 0 && (int)ld_u8(f, L.f_owner) != L.owner_generator &&
            instr < first + 2 * (unsigned)ld_int(co, L.co_firsttraceable))
            return 0; /* not started yet */
        off = instr > first ? (int)(instr - first) : 0;
    }
    struct pycode *pc = code_get(co, may_intern);
    int line = frame_line(th, co, off);
    if (pc && pc->is_step)
        *is_step = 1;
    return GS_IP_PYFRAME | (uint64_t)(pc ? pc->id : 0) << 32 | (uint32_t)(line > 0 ? line : 0);
}

void gs_py_stop_range(uintptr_t *lo, uintptr_t *hi)
{
    *lo = stop_lo;
    *hi = stop_hi;
}

/* The Python frames of one C-level evaluation, from f, into out[*o..max);
 * returns the frame after them (the caller evaluation's innermost). */
static uintptr_t take_evaluation(struct gs_thread *th, uintptr_t f, uintptr_t *out, int *o, int max,
                                 int may_intern, int *is_step)
{
    while (f && *o < max) {
        if (frame_is_shim(f))
            return frame_prev(f);
        /* 3.10: one frame per evaluation; 3.11: is_entry marks the last */
        int last = L.kind == GS_PYF_FRAMEOBJ || (L.f_is_entry >= 0 && ld_u8(f, L.f_is_entry));
        uintptr_t ip = frame_ip(th, f, may_intern, is_step);
        if (ip)
            out[(*o)++] = ip;
        f = frame_prev(f);
        if (last)
            break;
    }
    return f;
}

int gs_py_merge(uintptr_t *ips, int n, int max)
{
    if (!py_on)
        return n;
    uintptr_t ts = (uintptr_t)p_this_tstate();
    if (!ts)
        return n;
    uintptr_t f = ld_ptr(ts, L.ts_frame);
    if (f && L.cframe_current >= 0) /* 3.11, 3.12: through the _PyCFrame */
        f = ld_ptr(f, L.cframe_current);
    if (!f)
        return n;
    struct gs_thread *th = gs_tls.th;
    int may_intern = (uintptr_t)p_gil_holder() == ts;
    int is_step = 0;
    uintptr_t out[GS_MAX_DEPTH];
    int o = 0, i = 0;
    /* Native frames; each one inside the evaluator takes the Python frames
     * of its evaluation. */
    for (; i < n && o < max; i++) {
        if (ips[i] >= eval_lo && ips[i] < eval_hi && f) {
            f = take_evaluation(th, f, out, &o, max, may_intern, &is_step);
            continue;
        }
        out[o++] = ips[i];
    }
    /* Frames the native walk did not reach follow it. A native walk that
     * filled the stack before it reached the evaluator (sid's PyTorch 2.14:
     * 64 frames of libtorch below a module's forward) would leave them no
     * room, and the stack would name no line of the program: the walk's
     * outermost native frames give way to up to half a stack of Python
     * frames, the frames that name the user's code. Only native frames go:
     * a Python frame already taken is followed by its callers in f. */
    if (f && o == max) {
        int want = 0, seen = 0;
        for (uintptr_t g = f; g && want < max / 2 && seen < max; g = frame_prev(g), seen++)
            want += !frame_is_shim(g);
        for (; want > 0 && o > 0 && !(out[o - 1] & GS_IP_PYFRAME); want--)
            o--;
    }
    for (; f && o < max; f = frame_prev(f)) {
        if (frame_is_shim(f))
            continue;
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

int gs_pyframes_resolve(const struct gs_pylayout *layout)
{
    if (!GS_PY_SYM(p_this_tstate, "PyGILState_GetThisThreadState") ||
        (!GS_PY_SYM(p_gil_holder, "PyThreadState_GetUnchecked") && /* 3.13+ */
         !GS_PY_SYM(p_gil_holder, "_PyThreadState_UncheckedGet")) ||
        !GS_PY_SYM(p_addr2line, "PyCode_Addr2Line") ||
        !(p_code_type = (uintptr_t)gs_elf_find("PyCode_Type")))
        return -1;
    L = *layout;
    return 0;
}

/* The executable segment of the module that holds t->at (dl_iterate_phdr). */
struct text_of {
    uintptr_t at, lo, hi;
};

static int text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct text_of *t = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && t->at >= lo && t->at < hi) {
            t->lo = lo;
            t->hi = hi;
            return 1;
        }
    }
    return 0;
}

int gs_pyframes_start(void)
{
    codes = gs_pages_alloc(GS_PYCODES * sizeof *codes);
    if (!codes)
        return -1;
    /* without room for the names, a fork's child only names its new codes */
    names_of = gs_pages_alloc(GS_PYCODES * sizeof *names_of);
    name_bytes = names_of ? gs_pages_alloc(GS_PYNAME_BYTES) : NULL;
    if (!name_bytes) {
        gs_pages_free(names_of, GS_PYCODES * sizeof *names_of);
        names_of = NULL;
    }
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    void *eval = gs_elf_find("_PyEval_EvalFrameDefault");
    if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym) {
        eval_lo = (uintptr_t)eval;
        eval_hi = eval_lo + sym->st_size;
    }
    stop_lo = eval_lo;
    stop_hi = eval_hi;
    struct text_of t = {eval_lo, 0, 0};
    if (eval_lo && eval_hi - eval_lo < GS_SMALL_EVAL && dl_iterate_phdr(text_cb, &t) == 1) {
        stop_lo = t.lo;
        stop_hi = t.hi;
    }
    py_on = 1;
    return 0;
}
