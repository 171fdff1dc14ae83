/*
 * PyTorch-aware mode: tensor-level leaks with PyTorch's CUDA caching
 * allocator on.
 *
 * The caching allocator calls cudaMalloc for segments and hands tensors out
 * from inside them; its own bookkeeping (Block objects on the C++ heap, maps
 * keyed by device pointers) points at every segment and every block, so a
 * plain conservative scan finds everything reachable. This file does three
 * things about it:
 *
 *  1. Weak metadata. Host blocks allocated from the allocator's own frames
 *     are scanned, but the device and interior pointers in them keep
 *     nothing alive (mark.c): they hold the allocator's own objects, never a
 *     segment or a tensor's block. "The allocator's frames" are the code
 *     ranges named by GCSPY_TORCH_WEAK: a module (a token with ".so": every
 *     executable segment of a module whose file name starts with it) or a
 *     symbol (any other token: every function in a module's dynamic symbol
 *     table whose mangled name contains it). Before each scan the stack tree
 *     is walked once (incrementally: only nodes new since the last scan) to
 *     give every stack id a weak bit: a frame in a weak range, or a weak
 *     parent. Device blocks with weak stacks are the allocator's segments:
 *     never leak candidates themselves (their memory is reserved).
 *     The same walk sets a data bit where the stack's innermost frame is in
 *     code named by GCSPY_TORCH_DATA (same token rules; by default
 *     c10::alloc_cpu, which allocates every CPU tensor's storage): such a
 *     block holds numbers, never pointers, and is not scanned at all.
 *     Unscanned, a training job's activations cannot pose as pointers (a
 *     float in (0, 2) next to a 0.0 reads as an address in a non-PIE
 *     Python's brk heap), and the scan skips most of a CPU job's bytes.
 *     This rule holds in any process that loaded those modules, CUDA or
 *     not.
 *  2. The allocator's view. When the process runs torch and torch.cuda is
 *     initialized, a scan is preceded, in a thread holding the GIL, by a
 *     call to torch.cuda.memory._snapshot(). Its segments and blocks are
 *     written as POOL_* records and handed to the scanner: each active block
 *     is a device leaf of its own, reachable through any pointer into it
 *     (a tensor's StorageImpl points at its block's first byte), and an
 *     active block nothing reaches is reported as a leak of its own, with
 *     the Python stack PyTorch recorded for it (its memory history, which
 *     gcspy turns on when it first sees torch.cuda in use; the history's
 *     events are imported as POOL_EVENT records with each snapshot). Cached
 *     free blocks are reserved memory, never leaks.
 *  3. Where the scans run. The snapshot needs the GIL: periodic, signal and
 *     byte-count scans of such a process are handed to the main thread as a
 *     pending call (Py_AddPendingCall) instead of running on the writer
 *     thread, which must never wait for the GIL (a program thread holding it
 *     may be waiting for the writer). gcspy_scan() takes the GIL with
 *     PyGILState_Ensure (ctypes calls release it). At exit the scan runs
 *     from Python's atexit, while the interpreter and torch still work; the
 *     on_exit scan is then skipped.
 *
 * None of this is called by name from below: gs_torch_init registers the
 * stack-bits provider with the scan (1), the scan policy with the triggers
 * (3: route and gcspy_scan()) and the exit step with python.c (3: atexit);
 * the CUDA hooks and the bridge, above, tell it of device blocks
 * (gs_torch_note_device, for 2).
 *
 * Caveats (docs/gpu.md): the weak rule needs the allocator's frame in the
 * stack: with the frame-pointer walker and a libtorch built without frame
 * pointers, metadata allocated through operator new may be missed (the
 * blocks then stay reachable: false negatives, never false leaks); use
 * GCSPY_UNWIND=libunwind. The snapshot and the stop are not one instant:
 * a block freed by a thread running without the GIL in between may show as
 * unreachable in a periodic scan; the exit scan has no such window in
 * practice.
 *
 * Locking: everything here that touches Python runs with the GIL held and
 * the recursion flag clear (Python's own allocations are the program's and
 * are traced as such); gcspy's own work (stack interning, records) runs with
 * the flag set, like any other gcspy code.
 */
#define _GNU_SOURCE
#include <Python.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "elfsym.h"
#include "emit.h"
#include "mem.h"
#include "pyapi.h"
#include "pyframes.h"
#include "python.h"
#include "scan.h"
#include "scan_trigger.h"
#include "stack.h"
#include "torch.h"

/* ---- the interpreter's functions (found at run time; the ones other files
 * also call are pyapi.h's) ---- */

static PyObject *(*p_modules)(void);
static PyObject *(*p_call0)(PyObject *);
static PyObject *(*p_str)(const char *);
static int (*p_truth)(PyObject *);
static Py_ssize_t (*p_seq_len)(PyObject *);
static PyObject *(*p_seq_get)(PyObject *, Py_ssize_t);
static unsigned long long (*p_as_u64)(PyObject *);
static double (*p_as_double)(PyObject *);
static PyObject *(*p_build)(const char *, ...);
static PyObject *(*p_call)(PyObject *, PyObject *, PyObject *);
static int (*p_gil_ensure)(void);
static void (*p_gil_release)(int);
static PyObject *p_true;

static int torch_on;              /* functions found, option on */
static atomic_int torch_wanted;   /* device memory was allocated under Python */
static atomic_int torch_active;   /* ... and torch.cuda is initialized */
static atomic_int history_on;     /* memory history switched on (or tried) */
static atomic_int pending_scan;   /* a scan handed to the main thread */
static uint64_t snap_seq;

static void stack_bits(const uint8_t **bits, uint32_t *nbits);
static void at_exit(void);
static int route_scan(int trigger);
static int api_scan(void);

/* At start (life.c), after gs_py_init: registers what the layers below ask
 * of this mode. The stack bits serve any process that loaded the
 * allocator's modules, Python or not; the exit step, once Python mode is on;
 * the scan policy, once the interpreter's functions are found. */
void gs_torch_init(void)
{
    gs_scan_set_stack_bits(stack_bits);
    if (!gs_opt.torch || !gs_py_active())
        return;
    gs_py_at_exit(at_exit);
    /* The functions pyapi.h shares are found: Python mode is on. */
    if (!GS_PY_SYM(p_modules, "PyImport_GetModuleDict") || !GS_PY_SYM(p_call0, "PyObject_CallNoArgs") ||
        !GS_PY_SYM(p_str, "PyUnicode_FromString") || !GS_PY_SYM(p_truth, "PyObject_IsTrue") ||
        !GS_PY_SYM(p_seq_len, "PySequence_Size") || !GS_PY_SYM(p_seq_get, "PySequence_GetItem") ||
        !GS_PY_SYM(p_as_u64, "PyLong_AsUnsignedLongLongMask") || !GS_PY_SYM(p_as_double, "PyFloat_AsDouble") ||
        !GS_PY_SYM(p_build, "Py_BuildValue") || !GS_PY_SYM(p_call, "PyObject_Call") ||
        !GS_PY_SYM(p_gil_ensure, "PyGILState_Ensure") || !GS_PY_SYM(p_gil_release, "PyGILState_Release") ||
        !GS_PY_SYM(p_true, "_Py_TrueStruct"))
        return;
    torch_on = 1;
    gs_scan_set_policy(route_scan, api_scan);
}

static void history_start(PyObject *cuda);
static PyObject *torch_cuda(void);

static int history_cb(void *arg)
{
    (void)arg;
    PyObject *cuda = torch_cuda();
    if (cuda) {
        atomic_store(&torch_active, 1);
        history_start(cuda);
    }
    gs_py_decref(cuda);
    return 0; /* never raise into the program */
}

/* The first device block under Python: the main thread, at its next safe
 * point (Py_AddPendingCall may be called from any thread without the GIL),
 * looks for torch.cuda; when it is there, scans want snapshots from then
 * on, and PyTorch's memory history is switched on as early as possible, so
 * the stacks of the tensors allocated after this one are recorded. Device
 * memory without torch (ctypes, other frameworks) changes nothing. */
void gs_torch_note_device(void)
{
    if (!torch_on || atomic_load_explicit(&torch_wanted, memory_order_relaxed) ||
        atomic_exchange(&torch_wanted, 1))
        return;
    if (gs_py_initialized() && !gs_py_finalizing())
        gs_py_pending(history_cb, NULL);
}

/* ---- weak and data code ranges ---- */

struct range { uintptr_t lo, hi; };
struct ranges {
    struct range *v;
    size_t n, cap;
};
static struct ranges wr, dr; /* GCSPY_TORCH_WEAK's, GCSPY_TORCH_DATA's */
static uintptr_t *seen; /* module load addresses already looked at */
static size_t nseen, seen_cap;

static void add_range(struct ranges *r, uintptr_t lo, uintptr_t hi)
{
    if (lo < hi && GS_GROW(r->v, r->cap, r->n + 1, 256) == 0)
        r->v[r->n++] = (struct range){lo, hi};
}

/* The tokens of GCSPY_TORCH_WEAK or _DATA, one at a time: returns the next token's
 * length (0 at the end) and its start in *tok. */
static size_t next_token(const char **cur, const char **tok)
{
    const char *s = *cur;
    while (*s == ',' || *s == ' ')
        s++;
    const char *e = s;
    while (*e && *e != ',')
        e++;
    *tok = s;
    *cur = e;
    return (size_t)(e - s);
}

static int is_module_token(const char *t, size_t n)
{
    return memmem(t, n, ".so", 3) != NULL;
}

static void module_symbols(struct ranges *r, struct dl_phdr_info *info, const char *pat,
                           size_t plen)
{
    struct gs_dynsyms d;
    if (gs_elf_dynsyms(info, &d))
        return;
    const ElfW(Sym) *symtab = d.symtab;
    for (size_t i = 0; i < d.nsyms; i++) {
        const ElfW(Sym) *s = &symtab[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || !s->st_value || !s->st_size ||
            s->st_shndx == SHN_UNDEF || s->st_name >= d.strsz)
            continue;
        const char *name = d.strtab + s->st_name;
        if (memmem(name, strnlen(name, d.strsz - s->st_name), pat, plen))
            add_range(r, d.base + s->st_value, d.base + s->st_value + s->st_size);
    }
}

/* The ranges one option's tokens name in one module. */
static void module_ranges(struct ranges *r, const char *list, struct dl_phdr_info *info)
{
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    const char *slash = strrchr(path, '/');
    const char *file = slash ? slash + 1 : path;
    const char *cur = list ? list : "", *tok;
    size_t n;
    while ((n = next_token(&cur, &tok))) {
        if (is_module_token(tok, n)) {
            if (strncmp(file, tok, n))
                continue;
            for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
                    add_range(r, info->dlpi_addr + ph->p_vaddr,
                              info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
            }
        } else {
            module_symbols(r, info, tok, n);
        }
    }
}

static int module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (size_t i = 0; i < nseen; i++)
        if (seen[i] == info->dlpi_addr)
            return 0;
    if (GS_GROW(seen, seen_cap, nseen + 1, 256))
        return 0;
    seen[nseen++] = info->dlpi_addr;
    module_ranges(&wr, gs_opt.torch_weak, info);
    module_ranges(&dr, gs_opt.torch_data, info);
    return 0;
}

/* Shell sort of records that start with a u64 key (ranges, segments,
 * blocks): no allocation, and there are few enough of them. */
_Static_assert(sizeof(struct gs_pool_blk) <= 32 && sizeof(struct range) <= 32, "sort_by_key's buffer");
static void sort_by_key(void *base, size_t n, size_t size)
{
    char *v = base, t[32];
    for (size_t gap = n / 2; gap; gap /= 2)
        for (size_t i = gap; i < n; i++)
            for (size_t j = i; j >= gap; j -= gap) {
                uint64_t a, b;
                memcpy(&a, v + (j - gap) * size, 8);
                memcpy(&b, v + j * size, 8);
                if (a <= b)
                    break;
                memcpy(t, v + j * size, size);
                memcpy(v + j * size, v + (j - gap) * size, size);
                memcpy(v + (j - gap) * size, t, size);
            }
}

/* ip is a return address: it points just past the call, so ip - 1 is the
 * caller's. */
static int in_ranges(const struct ranges *r, uint64_t ip)
{
    _Static_assert(offsetof(struct range, lo) == 0 && sizeof(uintptr_t) == 8, "keyed by lo");
    size_t i = gs_keyed_upto(r->v, r->n, sizeof *r->v, ip - 1);
    return i && ip - 1 < r->v[i - 1].hi;
}

static uint8_t bits_of(uint64_t ip)
{
    if (ip & GS_IP_PYFRAME)
        return 0;
    return (uint8_t)((in_ranges(&wr, ip) ? GS_SB_WEAK : 0) | (in_ranges(&dr, ip) ? GS_SB_DATA : 0));
}

static uint8_t *sb_bits;
static uint64_t sb_cap;
static uint32_t sb_done = 1;

/* The stack-bits provider (gs_scan_set_stack_bits): before a scan, by the
 * thread that owns it (scan.c), world running, recursion flag set: new
 * modules' ranges, then new stacks' bits. */
static void stack_bits(const uint8_t **bits, uint32_t *nbits)
{
    *bits = NULL;
    *nbits = 0;
    if (!gs_opt.torch || ((!gs_opt.torch_weak || !*gs_opt.torch_weak) &&
                          (!gs_opt.torch_data || !*gs_opt.torch_data)))
        return;
    size_t before = wr.n + dr.n;
    dl_iterate_phdr(module_cb, NULL);
    if (wr.n + dr.n != before) {
        sort_by_key(wr.v, wr.n, sizeof *wr.v);
        sort_by_key(dr.v, dr.n, sizeof *dr.v);
        sb_done = 1; /* new ranges: recompute every stack */
    }
    if (!wr.n && !dr.n)
        return;
    sb_done = gs_stack_bits_fill(&sb_bits, &sb_cap, sb_done, bits_of);
    *bits = sb_bits;
    *nbits = sb_done;
}

/* ---- Python helpers (GIL held) ---- */

static PyObject *dget(PyObject *d, const char *k)
{
    if (!d || !(Py_TYPE(d)->tp_flags & Py_TPFLAGS_DICT_SUBCLASS))
        return NULL;
    return gs_py_dict_get(d, k); /* borrowed */
}

static uint64_t u64_of(PyObject *o)
{
    if (!o)
        return 0;
    uint64_t v = 0;
    if (Py_TYPE(o)->tp_flags & Py_TPFLAGS_LONG_SUBCLASS)
        v = p_as_u64(o);
    else if (!strcmp(Py_TYPE(o)->tp_name, "float")) {
        double d = p_as_double(o);
        v = d > 0 ? (uint64_t)d : 0;
    }
    gs_py_err_clear();
    return v;
}

static int str_is(PyObject *o, const char *s)
{
    Py_ssize_t n = 0;
    const char *b = o && (Py_TYPE(o)->tp_flags & Py_TPFLAGS_UNICODE_SUBCLASS) ? gs_py_utf8(o, &n) : NULL;
    if (!b) {
        gs_py_err_clear();
        return 0;
    }
    return (size_t)n == strlen(s) && !memcmp(b, s, (size_t)n);
}

/* torch, when it is imported and torch.cuda is initialized (new ref). */
static PyObject *torch_cuda(void)
{
    PyObject *mods = p_modules();
    PyObject *torch = mods ? gs_py_dict_get(mods, "torch") : NULL;
    if (!torch)
        return NULL;
    PyObject *cuda = gs_py_getattr(torch, "cuda");
    PyObject *init = cuda ? gs_py_getattr(cuda, "is_initialized") : NULL;
    PyObject *r = init ? p_call0(init) : NULL;
    int yes = r && p_truth(r) == 1;
    gs_py_decref(r);
    gs_py_decref(init);
    gs_py_err_clear();
    if (!yes) {
        gs_py_decref(cuda);
        return NULL;
    }
    return cuda;
}

/* The history PyTorch keeps is a ring of this many events: its default
 * (sys.maxsize) grows without end in a long job. */
#define HISTORY_MAX_ENTRIES 65536

/* torch.cuda.memory._record_memory_history: torch 2.1+ takes enabled="all"
 * with context, stacks and max_entries; its defaults (C++ stacks, context
 * for frees too, no bound) cost an unwind per event and unbounded memory,
 * so ask for Python stacks of allocations in a bounded ring. 1.13 and 2.0
 * take a bool (a TypeError for the keywords). */
static void history_start(PyObject *cuda)
{
    if (!gs_opt.torch_history || atomic_exchange(&history_on, 1))
        return;
    PyObject *mem = gs_py_getattr(cuda, "memory");
    PyObject *rec = mem ? gs_py_getattr(mem, "_record_memory_history") : NULL;
    PyObject *r = NULL;
    if (rec) {
        PyObject *args = p_build("()");
        PyObject *kw = p_build("{s:s,s:s,s:s,s:i}", "enabled", "all", "context", "alloc", "stacks",
                               "python", "max_entries", HISTORY_MAX_ENTRIES);
        r = args && kw ? p_call(rec, args, kw) : NULL;
        gs_py_decref(args);
        gs_py_decref(kw);
        if (!r) {
            gs_py_err_clear();
            r = gs_py_call1(rec, p_true);
        }
    }
    gs_py_decref(r);
    gs_py_decref(rec);
    gs_py_decref(mem);
    gs_py_err_clear();
}

/* ---- code ids and stacks for PyTorch's frames ---- */

#define NAMED_CAP (1u << 16)
struct named { uint64_t key; uint32_t id; };
static struct named *named;

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001B3ull;
    return h;
}

static uint32_t code_named(const char *file, size_t flen, const char *fn, size_t fnlen)
{
    if (!named && !(named = gs_pages_alloc(NAMED_CAP * sizeof *named)))
        return 0;
    uint64_t key = fnv(fnv(0xCBF29CE484222325ull, file, flen) ^ 0xFF, fn, fnlen) | 1;
    uint32_t j = (uint32_t)(key >> 40) & (NAMED_CAP - 1);
    for (uint32_t n = 0; n < NAMED_CAP; n++, j = (j + 1) & (NAMED_CAP - 1)) {
        if (named[j].key == key)
            return named[j].id;
        if (!named[j].key) {
            uint32_t id = gs_py_code_new(file, flen, fn, fnlen);
            if (id) {
                named[j].key = key;
                named[j].id = id;
            }
            return id;
        }
    }
    return 0;
}

/* PyTorch's frames (innermost first: filename, line, name) as a stack id. */
static uint32_t frames_stack(PyObject *frames)
{
    if (!frames)
        return 0;
    Py_ssize_t n = p_seq_len(frames);
    if (n <= 0) {
        gs_py_err_clear();
        return 0;
    }
    uintptr_t ips[GS_MAX_DEPTH];
    int k = 0, max = (int)(gs_opt.depth < GS_MAX_DEPTH ? gs_opt.depth : GS_MAX_DEPTH);
    for (Py_ssize_t i = 0; i < n && k < max; i++) {
        PyObject *f = p_seq_get(frames, i);
        PyObject *file = dget(f, "filename"), *name = dget(f, "name"), *line = dget(f, "line");
        Py_ssize_t fl = 0, nl = 0;
        const char *fs = file ? gs_py_utf8(file, &fl) : NULL;
        const char *ns = name ? gs_py_utf8(name, &nl) : NULL;
        gs_py_err_clear();
        if (fs && ns) {
            int saved = gs_tls.in_hook;
            gs_tls.in_hook = 1;
            uint32_t id = code_named(fs, (size_t)fl, ns, (size_t)nl);
            gs_restore(saved);
            ips[k++] = GS_IP_PYFRAME | (uint64_t)id << 32 | (uint32_t)u64_of(line);
        }
        gs_py_decref(f);
    }
    if (!k)
        return 0;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    uint32_t id = gs_stack_intern(ips, k);
    gs_restore(saved);
    return id;
}

/* The frames of a snapshot block: torch 2.1+ "frames", 2.0 and 1.13 the
 * last "history" entry's. */
static uint32_t block_stack(PyObject *blk)
{
    PyObject *fr = dget(blk, "frames");
    if (fr)
        return frames_stack(fr);
    PyObject *hist = dget(blk, "history");
    Py_ssize_t n = hist ? p_seq_len(hist) : 0;
    if (n <= 0) {
        gs_py_err_clear();
        return 0;
    }
    PyObject *last = p_seq_get(hist, n - 1);
    uint32_t id = frames_stack(dget(last, "frames"));
    gs_py_decref(last);
    return id;
}

/* ---- the snapshot ---- */

static struct gs_pool_view view;
static size_t seg_cap, blk_cap;

/* gcspy's own work inside a Python call: the records are written with the
 * recursion flag set, and the flag restored after. */
static int flag_set(void)
{
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    return saved;
}

static unsigned block_state(PyObject *st)
{
    if (str_is(st, "active_allocated"))
        return GS_PBLK_ACTIVE;
    if (str_is(st, "active_pending_free"))
        return GS_PBLK_PENDING_FREE;
    return GS_PBLK_INACTIVE;
}

static unsigned action_of(PyObject *a)
{
    static const char *names[] = {
        [GS_PEV_ALLOC] = "alloc", [GS_PEV_FREE_REQUESTED] = "free_requested",
        [GS_PEV_FREE_COMPLETED] = "free_completed", [GS_PEV_SEGMENT_ALLOC] = "segment_alloc",
        [GS_PEV_SEGMENT_FREE] = "segment_free", [GS_PEV_SEGMENT_MAP] = "segment_map",
        [GS_PEV_SEGMENT_UNMAP] = "segment_unmap", [GS_PEV_SNAPSHOT] = "snapshot",
        [GS_PEV_OOM] = "oom"};
    for (unsigned i = 0; i < GS_PEV_OTHER; i++)
        if (str_is(a, names[i]))
            return i;
    return GS_PEV_OTHER;
}

struct counts { uint64_t segs, blks, events; };

/* The segments and their blocks: counts, or records and the view. */
static void walk_segments(PyObject *segs, uint64_t id, int out, struct counts *c)
{
    Py_ssize_t ns = segs ? p_seq_len(segs) : 0;
    for (Py_ssize_t i = 0; i < ns; i++) {
        PyObject *seg = p_seq_get(segs, i);
        uint64_t addr = u64_of(dget(seg, "address")), size = u64_of(dget(seg, "total_size"));
        PyObject *blocks = dget(seg, "blocks");
        Py_ssize_t nb = blocks ? p_seq_len(blocks) : 0;
        if (!addr || !size) {
            gs_py_decref(seg);
            continue;
        }
        c->segs++;
        if (out) {
            PyObject *type = dget(seg, "segment_type");
            uint64_t device = u64_of(dget(seg, "device")), stream = u64_of(dget(seg, "stream"));
            unsigned kind = str_is(type, "large")   ? GS_POOL_LARGE
                          : str_is(type, "small") ? GS_POOL_SMALL
                                                  : GS_POOL_OTHER;
            int saved = flag_set();
            gs_emit_pool_segment(id, device, addr, size, stream, kind);
            gs_restore(saved);
            if (GS_GROW(view.seg, seg_cap, view.nseg + 1, 256) == 0)
                view.seg[view.nseg++] = (struct gs_pool_seg){addr, size};
        }
        uint64_t at = addr; /* 1.13 gives no block addresses: they tile the segment */
        for (Py_ssize_t j = 0; j < nb; j++) {
            PyObject *blk = p_seq_get(blocks, j);
            PyObject *a = dget(blk, "address");
            uint64_t baddr = a ? u64_of(a) : at, bsize = u64_of(dget(blk, "size"));
            at = baddr + bsize;
            c->blks++;
            if (out) {
                PyObject *rq = dget(blk, "requested_size");
                unsigned st = block_state(dget(blk, "state"));
                uint32_t stack = st == GS_PBLK_INACTIVE ? 0 : block_stack(blk);
                uint64_t requested = rq ? u64_of(rq) : bsize;
                int saved = flag_set();
                gs_emit_pool_block(id, baddr, bsize, requested, st, stack);
                gs_restore(saved);
                if (st != GS_PBLK_INACTIVE &&
                    GS_GROW(view.blk, blk_cap, view.nblk + 1, 256) == 0)
                    view.blk[view.nblk++] = (struct gs_pool_blk){baddr, bsize, stack,
                                                                  (uint8_t)st, 0, {0}};
            }
            gs_py_decref(blk);
        }
        gs_py_err_clear();
        gs_py_decref(seg);
    }
}

/* Every snapshot hands out the whole history ring again; each is written
 * with only the events newer than the last one written for its device
 * (trace-format.md), so periodic scans do not grow the trace with the square
 * of the job's length. An event is known again by its time, action, address
 * and size; when the ring has moved past it, every event is new. */
#define HIST_DEVICES 64
struct ev_key { uint64_t us, addr, size; unsigned action; };
static struct ev_key last_ev[HIST_DEVICES];

static struct ev_key ev_key_of(PyObject *ev)
{
    struct ev_key k = {u64_of(dget(ev, "time_us")), u64_of(dget(ev, "addr")), u64_of(dget(ev, "size")),
                       action_of(dget(ev, "action"))};
    return k;
}

static int ev_key_eq(const struct ev_key *a, const struct ev_key *b)
{
    return a->us == b->us && a->addr == b->addr && a->size == b->size && a->action == b->action;
}

/* The index of the first event of `evs` (ne of them) not yet written. */
static Py_ssize_t first_new(PyObject *evs, Py_ssize_t ne, Py_ssize_t d)
{
    if (d >= HIST_DEVICES || !last_ev[d].us)
        return 0;
    for (Py_ssize_t j = ne - 1; j >= 0; j--) {
        PyObject *ev = p_seq_get(evs, j);
        struct ev_key k = ev ? ev_key_of(ev) : (struct ev_key){0};
        gs_py_decref(ev);
        if (ev_key_eq(&k, &last_ev[d]))
            return j + 1;
    }
    gs_py_err_clear();
    return 0;
}

/* device_traces, one list per device: counts, or POOL_EVENT records. */
static void walk_traces(PyObject *traces, uint64_t id, int out, struct counts *c)
{
    Py_ssize_t nd = traces ? p_seq_len(traces) : 0;
    uint64_t wall0 = gs_mono_ns(CLOCK_REALTIME) - gs_now_fine();
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *evs = p_seq_get(traces, d);
        Py_ssize_t ne = evs ? p_seq_len(evs) : 0;
        for (Py_ssize_t j = first_new(evs, ne, d); j < ne; j++) {
            PyObject *ev = p_seq_get(evs, j);
            c->events++;
            if (out && j == ne - 1 && d < HIST_DEVICES && ev)
                last_ev[d] = ev_key_of(ev);
            if (out) {
                uint64_t us = u64_of(dget(ev, "time_us")), t = 0;
                if (us && us * 1000 > wall0 && us * 1000 - wall0 <= gs_now_fine())
                    t = us * 1000 - wall0;
                unsigned action = action_of(dget(ev, "action"));
                uint64_t addr = u64_of(dget(ev, "addr")), size = u64_of(dget(ev, "size"));
                uint64_t stream = u64_of(dget(ev, "stream"));
                uint32_t stack = frames_stack(dget(ev, "frames"));
                int saved = flag_set();
                gs_emit_pool_event(id, t, (uint64_t)d, action, addr, size, stream, stack);
                gs_restore(saved);
            }
            gs_py_decref(ev);
        }
        gs_py_err_clear();
        gs_py_decref(evs);
    }
}

/* One pass over the snapshot: counts only (out 0), or records and the view
 * (out 1). The counts go first in POOL_SNAPSHOT, so the snapshot is walked
 * twice rather than buffered. */
static void walk(PyObject *segs, PyObject *traces, uint64_t id, int out, struct counts *c)
{
    memset(c, 0, sizeof *c);
    walk_segments(segs, id, out, c);
    walk_traces(traces, id, out, c);
    gs_py_err_clear();
}

/* torch.cuda.memory.get_allocator_backend() is "cudaMallocAsync"
 * (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync): every tensor is a
 * cudaMallocAsync block of its own, the allocator keeps no segments and
 * _snapshot() raises. The backend is fixed once CUDA is initialized, so the
 * first answer is kept. GIL held. */
static int async_backend(PyObject *mem)
{
    static int known = -1;
    if (known < 0) {
        PyObject *fn = gs_py_getattr(mem, "get_allocator_backend");
        PyObject *r = fn ? p_call0(fn) : NULL;
        if (r)
            known = str_is(r, "cudaMallocAsync");
        gs_py_decref(r);
        gs_py_decref(fn);
        gs_py_err_clear();
    }
    return known > 0;
}

/* GIL held, recursion flag clear. Takes a snapshot when torch.cuda is in
 * use: writes it and fills `view`. Returns 1 when it did; 2 when the
 * allocator has no snapshot to give because it keeps no segments
 * (backend:cudaMallocAsync): `view` is empty and says so, and the scan
 * takes its device blocks for tensors (plain leaves, reported at their
 * allocation), not for segments. */
static int snapshot(unsigned why)
{
    if (!torch_on || !gs_tracing() || gs_py_finalizing())
        return 0;
    PyObject *cuda = torch_cuda();
    if (!cuda)
        return 0;
    atomic_store(&torch_active, 1);
    history_start(cuda);
    PyObject *mem = gs_py_getattr(cuda, "memory");
    view.no_segments = 0;
    if (mem && async_backend(mem)) {
        gs_py_decref(mem);
        gs_py_decref(cuda);
        view.nseg = view.nblk = 0;
        view.no_segments = 1;
        return 2;
    }
    PyObject *fn = mem ? gs_py_getattr(mem, "_snapshot") : NULL;
    PyObject *snap = fn ? p_call0(fn) : NULL;
    gs_py_decref(fn);
    gs_py_decref(mem);
    gs_py_decref(cuda);
    if (!snap) {
        gs_py_err_clear();
        return 0;
    }
    /* torch 2.x: {"segments": [...], "device_traces": [[...], ...]};
     * 1.13: the list of segments */
    PyObject *segs = snap, *traces = NULL;
    if (Py_TYPE(snap)->tp_flags & Py_TPFLAGS_DICT_SUBCLASS) {
        segs = dget(snap, "segments");
        traces = dget(snap, "device_traces");
    }
    struct counts c;
    walk(segs, traces, 0, 0, &c);
    uint64_t id = ++snap_seq;
    int saved = flag_set();
    gs_emit_pool_snapshot(id, gs_now_fine(), why, c.segs, c.blks, c.events);
    gs_restore(saved);
    view.nseg = view.nblk = 0;
    walk(segs, traces, id, 1, &c);
    gs_py_decref(snap);
    sort_by_key(view.seg, view.nseg, sizeof *view.seg);
    sort_by_key(view.blk, view.nblk, sizeof *view.blk);
    return 1;
}

/* ---- scans ---- */

/* torch uses CUDA here and the interpreter can run a call now. */
static int torch_usable(void)
{
    return torch_on && atomic_load(&torch_active) && gs_py_initialized() && !gs_py_finalizing();
}

/* GIL held, flag clear: snapshot, then the scan with its view. */
static int scan_with_snapshot(int trigger)
{
    unsigned why = trigger == GS_SCAN_TRIG_EXIT  ? GS_POOL_WHY_EXIT
                 : trigger == GS_SCAN_TRIG_API   ? GS_POOL_WHY_API
                                                 : GS_POOL_WHY_SCAN;
    int have = snapshot(why);
    gs_scrub_stack(); /* the walk's device addresses, before the scan reads the stack */
    return gs_scan_program(trigger, have ? &view : NULL);
}

static int pending_scan_cb(void *arg)
{
    atomic_store(&pending_scan, 0);
    scan_with_snapshot((int)(intptr_t)arg);
    return 0; /* never raise into the program */
}

/* The scan policy's route (gs_scan_set_policy), on the writer thread: a
 * scan due for a process whose torch uses CUDA is handed to the main
 * thread. Returns 1 when it was (or one is already queued). */
static int route_scan(int trigger)
{
    if (!torch_usable())
        return 0;
    if (atomic_exchange(&pending_scan, 1))
        return 1;
    if (gs_py_pending(pending_scan_cb, (void *)(intptr_t)trigger) != 0) {
        atomic_store(&pending_scan, 0);
        return 0;
    }
    return 1;
}

/* The scan policy's gcspy_scan(): from any program thread; ctypes calls
 * come without the GIL, so it is taken here. Returns -2 when this path does
 * not apply. */
static int api_scan(void)
{
    if (!torch_usable())
        return -2;
    int g = p_gil_ensure();
    int rc = scan_with_snapshot(GS_SCAN_TRIG_API);
    p_gil_release(g);
    return rc;
}

/* Python's atexit (the step gs_py_at_exit registers; python.c hands it to
 * atexit once the interpreter runs): the exit scan, while torch still works. */
static void at_exit(void)
{
    if (!torch_on || !atomic_load(&torch_wanted) || !gs_opt.scan_at_exit)
        return;
    PyObject *cuda = torch_cuda();
    if (!cuda)
        return;
    gs_py_decref(cuda);
    scan_with_snapshot(GS_SCAN_TRIG_EXIT);
}

/* Taken on demand: gcspy_pool_snapshot() (include/gcspy.h). */
__attribute__((visibility("default"))) int gcspy_pool_snapshot(void)
{
    if (!torch_on || gs_tls.in_hook || !gs_py_initialized() || gs_py_finalizing())
        return -1;
    int g = p_gil_ensure();
    int rc = snapshot(GS_POOL_WHY_API) == 1 ? 0 : -1;
    gs_scrub_stack();
    p_gil_release(g);
    return rc;
}
