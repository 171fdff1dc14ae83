/*
 * The root set of a leak scan, taken the way LeakSanitizer takes it, from
 * what the kernel says is mapped (/proc/self/maps, read with raw syscalls
 * while the world is stopped: dl_iterate_phdr would take the loader's lock,
 * which a stopped thread may hold).
 *
 * Roots are:
 *  - every stopped thread's saved registers, and its stack from the saved
 *    stack pointer (less the 128-byte red zone) (a parked thread's, which
 *    blocks the stop signal: no registers, the whole stack) to the end of
 *    the stack's
 *    mapping, which for threads made by pthread also holds their static TLS
 *    and TCB (hence the DTV, hence dynamic TLS blocks);
 *  - the scanning thread's own stack from its current frame, when it is a
 *    program thread (a gcspy_scan() or exit-time caller);
 *  - every other private writable mapping: data and bss of every loaded
 *    object, the main thread's TLS, and anonymous memory the program manages
 *    itself (CPython's small-object arenas live there: without them every
 *    Python-owned block would look lost),
 * less what must never be a root:
 *  - gcspy's own memory (its tables point at every block) and its data/bss;
 *  - the heap: 64 KiB regions holding a tracked block smaller than 64 KiB,
 *    and the pages of every larger tracked block (those are scanned as
 *    blocks, from reachable pointers only; their free neighbours hold stale
 *    pointers that would hide leaks);
 *  - the whole of every malloc heap that holds a tracked block: the brk
 *    heap ("[heap]") and glibc's per-thread arena heaps (found by their
 *    64 MiB-aligned heap_info header). What lies there outside the tracked
 *    blocks is the allocator's: free chunks, whose stale contents (a freed
 *    tensor's numbers, an old array of pointers) would otherwise hide leaks
 *    as the regions above cannot (a freed multi-megabyte tensor spans many
 *    regions with no tracked block), and chunk headers, which point at
 *    nothing. This is memcheck's and LeakSanitizer's rule: only blocks are
 *    scanned in the heap. The price: a block malloc handed out while
 *    tracking was off (before gcspy saw the environment, or inside a signal
 *    handler that interrupted a hook) is not scanned;
 *  - stack memory below a thread's stack pointer (dead frames), the stacks
 *    of gcspy's own threads, and the stacks glibc caches for reuse after
 *    their threads exited, static TLS included (only the DTV pointer of
 *    their thread descriptors is a root).
 * Shared mappings are skipped (memory shared with other processes holds no
 * pointer of ours). Every root range is read with process_vm_readv (mark.c),
 * so a mapping that went away or ends early cannot fault the scan.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elfsym.h"
#include "mem.h"
#include "modules.h"
#include "pyarena.h"
#include "roots.h"

#define GS_REGION_SHIFT 16
#define GS_LARGE_BLOCK (1u << GS_REGION_SHIFT)

/* How much of the top of a cached thread stack holds the struct pthread
 * and the static TLS blocks of every module (add_cached_dtv looks there for
 * the descriptor): the size the loader reports (as LeakSanitizer asks it),
 * plus alignment slack; 32 KiB if the loader does not say. Looked up before
 * any stop (the lookup takes the loader's lock), in the symbol tables: a
 * dlsym would disturb the program's dlerror() state (pyapi.h says how). */
static size_t tls_static;

/* The dynamic loader's writable PT_LOAD segment, pages rounded out: found
 * once from _r_debug, which ld.so defines. */
static uintptr_t loader_lo, loader_hi;

static int find_loader_data(struct dl_phdr_info *info, size_t size, void *base)
{
    (void)size;
    if (info->dlpi_addr != (uintptr_t)base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        loader_lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
        loader_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
    }
    return 1;
}

void gs_roots_init(void)
{
    Dl_info di;
    if (dladdr(&_r_debug, &di) && di.dli_fbase)
        dl_iterate_phdr(find_loader_data, di.dli_fbase);
    void (*info)(size_t *, size_t *) =
        (void (*)(size_t *, size_t *))gs_elf_find("_dl_get_tls_static_info");
    size_t size = 0, align = 0;
    if (info)
        info(&size, &align);
    tls_static = size ? size + (align > 64 ? align : 64) : (32u << 10);
}

static size_t static_tls_size(void)
{
    return tls_static ? tls_static : (32u << 10);
}

static int push_range(struct gs_range **v, size_t *n, size_t *cap, uintptr_t lo, uintptr_t hi)
{
    if (lo >= hi)
        return 0;
    if (GS_GROW(*v, *cap, *n + 1, 4096))
        return -1;
    (*v)[(*n)++] = (struct gs_range){lo, hi};
    return 0;
}

/* Heap sort by lo (no allocation, no recursion). */
static void sift(struct gs_range *a, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && a[c + 1].lo > a[c].lo)
            c++;
        if (a[i].lo >= a[c].lo)
            return;
        struct gs_range t = a[i];
        a[i] = a[c];
        a[c] = t;
        i = c;
    }
}

static void sort_ranges(struct gs_range *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(a, i, n);
    for (size_t k = n; k-- > 1;) {
        struct gs_range t = a[0];
        a[0] = a[k];
        a[k] = t;
        sift(a, 0, k);
    }
}

/* Sorts and merges overlapping or touching ranges in place; returns count. */
static size_t merge_ranges(struct gs_range *a, size_t n)
{
    if (!n)
        return 0;
    sort_ranges(a, n);
    size_t o = 0;
    for (size_t i = 1; i < n; i++) {
        if (a[i].lo <= a[o].hi) {
            if (a[i].hi > a[o].hi)
                a[o].hi = a[i].hi;
        } else {
            a[++o] = a[i];
        }
    }
    return o + 1;
}

size_t gs_range_first_after(const struct gs_range *v, size_t n, uintptr_t lo)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (v[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Adds [lo, hi) minus the sorted, merged exclusions ex[] to the roots. */
static int add_minus(struct gs_roots *r, uintptr_t lo, uintptr_t hi, const struct gs_range *ex,
                     size_t nex)
{
    for (size_t i = gs_range_first_after(ex, nex, lo); i < nex && ex[i].lo < hi && lo < hi; i++) {
        if (ex[i].lo > lo && push_range(&r->r, &r->n, &r->cap, lo, ex[i].lo))
            return -1;
        if (ex[i].hi > lo)
            lo = ex[i].hi;
    }
    return lo < hi ? push_range(&r->r, &r->n, &r->cap, lo, hi) : 0;
}

static uintptr_t hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else
            return v;
    }
}

struct map {
    uintptr_t lo, hi;
    char perms[4];
    int special; /* [vvar], [vsyscall], [vdso]... */
    int file;    /* backed by a file: read through process_vm_readv */
    int brk;     /* the "[heap]" mapping: malloc's main arena */
};

/* Reads /proc/self/maps into an array of mappings (gcspy memory). */
static int read_maps(struct map **out, size_t *n, size_t *cap)
{
    size_t blen = 1 << 20, used = 0;
    char *buf = gs_pages_alloc(blen);
    if (!buf)
        return -1;
    /* thread-self: /proc/self/maps is empty once the main thread has ended
     * (pthread_exit in main: the kernel reads it through that thread) */
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        gs_pages_free(buf, blen);
        return -1;
    }
    for (;;) {
        if (GS_GROW(buf, blen, used + 4096, 1 << 20))
            break;
        long r = syscall(SYS_read, fd, buf + used, blen - used - 1);
        if (r <= 0)
            break;
        used += (size_t)r;
    }
    syscall(SYS_close, fd);
    buf[used] = 0;
    *n = 0;
    for (const char *p = buf; *p;) {
        struct map m;
        memset(&m, 0, sizeof m);
        m.lo = hex(&p);
        if (*p == '-')
            p++;
        m.hi = hex(&p);
        while (*p == ' ')
            p++;
        for (int i = 0; i < 4 && *p && *p != ' '; i++)
            m.perms[i] = *p++;
        /* offset, device, inode: a non-zero inode means a file. */
        for (int f = 0; f < 3; f++) {
            while (*p == ' ')
                p++;
            const char *st = p;
            while (*p && *p != ' ' && *p != '\n')
                p++;
            if (f == 2)
                m.file = !(p - st == 1 && *st == '0');
        }
        const char *eol = strchr(p, '\n');
        if (!eol)
            eol = p + strlen(p);
        const char *br = memchr(p, '[', (size_t)(eol - p));
        if (br && (!strncmp(br, "[vvar]", 6) || !strncmp(br, "[vsyscall]", 10) ||
                   !strncmp(br, "[vdso]", 6)))
            m.special = 1;
        if (br && !strncmp(br, "[heap]", 6))
            m.brk = 1;
        p = *eol ? eol + 1 : eol;
        if (GS_GROW(*out, *cap, *n + 1, 4096))
            break;
        (*out)[(*n)++] = m;
    }
    gs_pages_free(buf, blen);
    return 0;
}

static const struct map *map_of(const struct map *m, size_t n, uintptr_t a)
{
    for (size_t i = 0; i < n; i++)
        if (a >= m[i].lo && a < m[i].hi)
            return &m[i];
    return NULL;
}

/* Whether a tracked host block lies in [lo, hi): heap[] is sorted, merged. */
static int holds_tracked(const struct gs_range *heap, size_t nheap, uintptr_t lo, uintptr_t hi)
{
    size_t a = gs_range_first_after(heap, nheap, lo);
    return a < nheap && heap[a].lo < hi;
}

/* glibc's non-main arenas live in heaps of at most 64 MiB (HEAP_MAX_SIZE on
 * 64-bit), each mapped at a multiple of its size and opening with heap_info:
 * the arena (the first heap holds it right after its heap_info, 32 to 64
 * bytes in depending on the glibc version), the previous heap of the same
 * arena (NULL for the first), the size in use and the size made writable.
 * Read with process_vm_readv: a bad guess must not fault. */
#define GS_ARENA_HEAP (64u << 20)

static uintptr_t arena_heap_end(uintptr_t a, uintptr_t map_hi)
{
    uintptr_t h[4];
    struct iovec l = {h, sizeof h}, r = {(void *)a, sizeof h};
    if (process_vm_readv(gs_raw_gettid(), &l, 1, &r, 1, 0) != (ssize_t)sizeof h)
        return 0;
    uintptr_t ar = h[0], prev = h[1], size = h[2], mprot = h[3];
    uintptr_t first = ar & ~(uintptr_t)(GS_ARENA_HEAP - 1);
    if (ar - first < 32 || ar - first > 64 || (ar & 15))
        return 0;
    if (prev ? (prev & (GS_ARENA_HEAP - 1)) || first == a : first != a)
        return 0;
    if (size < 4096 || size > mprot || mprot > GS_ARENA_HEAP)
        return 0;
    uintptr_t end = a + GS_ARENA_HEAP;
    return end < map_hi ? end : map_hi;
}

static int is_live_stack(const struct map *m, const struct gs_stopped *th, int nth,
                         uintptr_t self_sp)
{
    if (self_sp >= m->lo && self_sp < m->hi)
        return 1;
    for (int i = 0; i < nth; i++)
        if (th[i].sp >= m->lo && th[i].sp < m->hi)
            return 1;
    for (size_t i = 0; i < sizeof gs_own_stack_hint / sizeof gs_own_stack_hint[0]; i++)
        if (gs_own_stack_hint[i] >= m->lo && gs_own_stack_hint[i] < m->hi)
            return 1;
    return 0;
}

/* What a collection works from: the mappings, and the exclusions (sorted
 * and merged before the last pass). */
struct collect {
    struct map *maps;
    size_t nmaps, mcap;
    struct gs_range *ex;
    size_t nex, xcap;
};

static int exclude(struct collect *c, uintptr_t lo, uintptr_t hi)
{
    return push_range(&c->ex, &c->nex, &c->xcap, lo, hi);
}

/* A module's data: a file-backed writable mapping, and the anonymous one
 * right after it (its .bss beyond the file's last page). */
static int module_data(const struct collect *c, size_t i)
{
    const struct map *m = &c->maps[i], *p = i ? &c->maps[i - 1] : NULL;
    if (m->perms[1] != 'w')
        return 0;
    return m->file || (p && p->file && p->perms[1] == 'w' && p->hi == m->lo && !m->brk);
}

/* A region of tracked blocks less the modules' data it overlaps. Regions
 * are 64 KiB-aligned and a block's neighbour may be a library: a page of
 * pinned memory the CUDA runtime mapped right below libcuda.so held the
 * library's data in its region, and the scan skipped the table of
 * allocations libcuda's .data points to (issue 16's cuda_shim failure,
 * one run in four once a 4 MiB mapping of gcspy's moved the layout). The
 * maps are in address order. */
static int exclude_heap(struct collect *c, uintptr_t lo, uintptr_t hi)
{
    _Static_assert(offsetof(struct map, lo) == 0 && sizeof(uintptr_t) == 8, "keyed by lo");
    /* from the last mapping that starts at or below lo */
    size_t a = gs_keyed_upto(c->maps, c->nmaps, sizeof *c->maps, lo);
    for (size_t i = a ? a - 1 : 0; i < c->nmaps && lo < hi && c->maps[i].lo < hi; i++) {
        const struct map *m = &c->maps[i];
        if (m->hi <= lo || m->lo >= hi || !module_data(c, i))
            continue;
        if (m->lo > lo && exclude(c, lo, m->lo))
            return -1;
        lo = m->hi;
    }
    return lo < hi ? exclude(c, lo, hi) : 0;
}

/* Our own memory, and the heap: the regions of tracked blocks, and the
 * malloc heaps that hold one. */
static int exclude_own_and_heap(struct collect *c, const struct gs_range *heap, size_t nheap)
{
    struct gs_range *own = gs_pages_alloc(65536 * sizeof *own);
    if (!own)
        return -1;
    int nown = gs_pages_ranges(own, 65536);
    for (int i = 0; i < nown; i++)
        if (exclude(c, own[i].lo, own[i].hi))
            break;
    gs_pages_free(own, 65536 * sizeof *own);
    if (gs_self_data_hi && exclude(c, gs_self_data_lo, gs_self_data_hi))
        return -1;
    for (size_t i = 0; i < nheap; i++)
        if (exclude_heap(c, heap[i].lo, heap[i].hi))
            return -1;
    for (size_t i = 0; i < c->nmaps; i++) {
        const struct map *m = &c->maps[i];
        if (m->file || m->perms[0] != 'r' || m->perms[1] != 'w')
            continue;
        if (m->brk) {
            if (holds_tracked(heap, nheap, m->lo, m->hi) && exclude(c, m->lo, m->hi))
                return -1;
            continue;
        }
        /* Every 64 MiB boundary inside the mapping: the kernel merges an
         * arena heap with anonymous neighbours of the same protection. */
        for (uintptr_t a = (m->lo + GS_ARENA_HEAP - 1) & ~(uintptr_t)(GS_ARENA_HEAP - 1);
             a >= m->lo && a < m->hi; a += GS_ARENA_HEAP) {
            uintptr_t end = arena_heap_end(a, m->hi);
            if (end && holds_tracked(heap, nheap, a, end) && exclude(c, a, end))
                return -1;
        }
    }
    return 0;
}

/* Stacks: the live part of stopped threads' (and ours) is a root, with the
 * saved registers; the whole of each stack mapping, and of gcspy's own
 * threads' stacks, is excluded from the pass over the mappings. */
static int add_stacks(struct gs_roots *r, struct collect *c, const struct gs_stopped *th,
                      int nth, uintptr_t self_sp, int self_is_program, const uintptr_t *self_regs,
                      size_t nself_regs)
{
    r->regs_bytes = (((size_t)nth + 1) * GS_NREGS + nself_regs) * sizeof(uintptr_t);
    r->regs = gs_pages_alloc(r->regs_bytes);
    if (!r->regs)
        return -1;
    for (size_t i = 0; i < nself_regs; i++)
        r->regs[r->nregs++] = self_regs[i];
    for (int i = 0; i < nth; i++) {
        int st = atomic_load(&th[i].state);
        if (st != GS_STOP_STOPPED && st != GS_STOP_PARKED)
            continue;
        if (st == GS_STOP_STOPPED) {
            memcpy(r->regs + r->nregs, th[i].regs, sizeof th[i].regs);
            r->nregs += GS_NREGS;
        }
        const struct map *m = map_of(c->maps, c->nmaps, th[i].sp);
        if (!m)
            continue;
        /* A parked thread (stop.c) may wake and move its stack pointer: its
         * whole stack mapping is scanned. */
        uintptr_t lo = st == GS_STOP_PARKED ? m->lo
                       : th[i].sp - 128 > m->lo ? th[i].sp - 128 : m->lo;
        if (push_range(&r->r, &r->n, &r->cap, lo & ~(uintptr_t)7, m->hi) ||
            exclude(c, m->lo, m->hi))
            return -1;
    }
    const struct map *sm = map_of(c->maps, c->nmaps, self_sp);
    if (sm) {
        if (self_is_program &&
            push_range(&r->r, &r->n, &r->cap, self_sp & ~(uintptr_t)7, sm->hi))
            return -1;
        if (exclude(c, sm->lo, sm->hi))
            return -1;
    }
    for (size_t i = 0; i < sizeof gs_own_stack_hint / sizeof gs_own_stack_hint[0]; i++) {
        const struct map *m =
            gs_own_stack_hint[i] ? map_of(c->maps, c->nmaps, gs_own_stack_hint[i]) : NULL;
        if (m && exclude(c, m->lo, m->hi))
            return -1;
    }
    return 0;
}

/* A cached thread stack's descriptor: x86-64's tcbhead_t opens struct
 * pthread with {tcb, dtv, self}, tcb and self both its own address, at the
 * top of the mapping above the static TLS (within static_tls_size() and a
 * page of the end). Its dtv word is a root: the DTV (calloc'd, reached
 * through dtv + 1, possibly lost as in memcheck) waits there for the stack's
 * reuse. Read with process_vm_readv; nothing found, nothing added.
 * Returns 1 when found (and added), 0 when not, -1 on no memory. */
static int add_cached_dtv(struct gs_roots *r, const struct map *m)
{
    uintptr_t buf[512];
    size_t span = static_tls_size() + 4096;
    uintptr_t lo = m->hi - m->lo > span ? m->hi - span : m->lo;
    pid_t pid = gs_raw_gettid(); /* not the pid: see mark.c's mark_range */
    for (uintptr_t end = m->hi; end > lo;) {
        uintptr_t a = end - lo > sizeof buf ? end - sizeof buf : lo;
        struct iovec l = {buf, end - a}, rv = {(void *)a, end - a};
        ssize_t got = process_vm_readv(pid, &l, 1, &rv, 1, 0);
        if (got != (ssize_t)(end - a))
            return 0;
        size_t n = (size_t)got / sizeof buf[0];
        for (size_t k = 0; k + 2 < n; k++) {
            uintptr_t here = a + k * sizeof buf[0];
            if (buf[k] == here && buf[k + 2] == here)
                return push_range(&r->r, &r->n, &r->cap, here + 8, here + 16) ? -1 : 1;
        }
        if (a == lo)
            break;
        end = a + 2 * sizeof buf[0]; /* a descriptor across the border */
    }
    return 0;
}

/* Whether the first page of [lo, ...) is a guard region (madvise
 * MADV_GUARD_INSTALL, Linux 6.13+): glibc 2.42 and later guard a thread
 * stack that way when the kernel can, so the stack is one mapping with no
 * PROT_NONE mapping below it to tell it by. Linux 6.14+ says so in
 * /proc/self/pagemap (bit 58, PM_GUARD_REGION); an older kernel, or a
 * pagemap that cannot be read, answers no (the mapping stays a root: stale
 * frames may hide a leak, never invent one). pagemap_fd: opened once per
 * scan, -1 when it cannot be. */
#define GS_PM_GUARD_REGION (1ull << 58)
static int guard_page_at(int pagemap_fd, uintptr_t lo)
{
    uint64_t e = 0;
    if (pagemap_fd < 0)
        return 0;
    long got = syscall(SYS_pread64, pagemap_fd, &e, sizeof e, (off_t)((lo >> 12) * sizeof e));
    return got == (long)sizeof e && (e & GS_PM_GUARD_REGION);
}

/* The stacks of one mapping whose first page is a guard region: each runs
 * from the start of a run of guard pages to the next. glibc guards every
 * stack so, and the kernel merges adjacent anonymous mappings of the same
 * protection, so two cached stacks (or a cached and a live one) can be one
 * line of /proc/self/maps: sid's DataLoader feeder threads' were, and only
 * the upper one's descriptor was found, the lower one's DTV then came out
 * definitely lost (672 bytes from Thread.start). Fills starts[] (starts[0]
 * is lo) and returns how many; a mapping with more stacks than max keeps
 * the rest in its last one. */
static int guard_segments(int pagemap_fd, uintptr_t lo, uintptr_t hi, uintptr_t *starts, int max)
{
    uint64_t e[512];
    int n = 0, prev = 0;
    starts[n++] = lo;
    for (uintptr_t a = lo; a < hi && n < max;) {
        size_t want = (hi - a) >> 12 < 512 ? (size_t)((hi - a) >> 12) : 512;
        long got = syscall(SYS_pread64, pagemap_fd, e, want * sizeof e[0],
                           (off_t)((a >> 12) * sizeof e[0]));
        if (got <= 0)
            break;
        size_t k = (size_t)got / sizeof e[0];
        for (size_t i = 0; i < k && n < max; i++) {
            int g = (e[i] & GS_PM_GUARD_REGION) != 0;
            uintptr_t at = a + (i << 12);
            if (g && !prev && at != lo)
                starts[n++] = at;
            prev = g;
        }
        a += (uintptr_t)k << 12;
    }
    return n;
}

/* add_minus for pyarena.c, which hands on the parts of a mapping. */
struct minus_ctx {
    struct gs_roots *r;
    const struct collect *c;
};

static int add_minus_cb(void *ctx, uintptr_t lo, uintptr_t hi)
{
    const struct minus_ctx *m = ctx;
    return add_minus(m->r, lo, hi, m->c->ex, m->c->nex);
}

static int add_slack_cb(void *ctx, uintptr_t lo, uintptr_t hi)
{
    struct gs_roots *r = ((const struct minus_ctx *)ctx)->r;
    return push_range(&r->slack, &r->nslack, &r->slack_cap, lo, hi);
}

/* A mapping that is a root, less the exclusions (and, while the
 * interpreter runs, less the free parts of CPython's pools). */
static int add_plain(struct gs_roots *r, const struct collect *c, const struct map *m, int precise)
{
    struct minus_ctx mc = {r, c};
    return !m->file && precise ? gs_pyarena_split(m->lo, m->hi, add_minus_cb, add_slack_cb, &mc)
                               : add_minus(r, m->lo, m->hi, c->ex, c->nex);
}

/* Every private writable mapping, less the (sorted, merged) exclusions; of
 * a cached thread stack only its descriptor's DTV pointer; of CPython's
 * small-object pools in anonymous memory only the allocated blocks, while
 * the interpreter runs (pyarena.c says why not after). */
static int add_mappings(struct gs_roots *r, const struct collect *c, const struct gs_stopped *th,
                        int nth, uintptr_t self_sp)
{
    const struct map *maps = c->maps;
    int pagemap = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    int precise = gs_pyarena_precise();
    int rc = 0;
    for (size_t i = 0; i < c->nmaps && rc == 0; i++) {
        const struct map *m = &maps[i];
        if (m->perms[0] != 'r' || m->perms[1] != 'w' || m->perms[3] != 'p' || m->special)
            continue;
        /* A thread stack glibc keeps cached after its thread exited: an
         * anonymous mapping right above a small guard mapping, holding no
         * live thread's stack pointer (those were excluded above). It is
         * not a root: its stale frames, and its static TLS (what the dead
         * thread's __thread variables last held), would keep alive what
         * memcheck and LeakSanitizer call definitely lost. Only the DTV
         * pointer of its thread descriptor is, which glibc keeps for reuse.
         * Its guard is that small mapping, or (glibc 2.42+ on Linux 6.13+)
         * a guard region in its own first page (guard_page_at): without
         * that, sid's Python 3.14 kept a dead thread's stale frames as roots
         * and every block whose address they held reachable. A guard
         * region is anyone's to install, so that kind counts only where a
         * thread descriptor sits at the top: anything else stays a root. */
        int guarded = i > 0 && maps[i - 1].hi == m->lo && maps[i - 1].perms[0] == '-' &&
                      maps[i - 1].perms[1] == '-' && maps[i - 1].hi - maps[i - 1].lo <= (64u << 10);
        if (!m->file && m->hi - m->lo >= (64u << 10) && guarded &&
            !is_live_stack(m, th, nth, self_sp)) {
            if (add_cached_dtv(r, m) < 0)
                rc = -1;
            continue;
        }
        if (!m->file && m->hi - m->lo >= (64u << 10) && guard_page_at(pagemap, m->lo)) {
            /* each stack of the mapping on its own (guard_segments) */
            uintptr_t starts[64];
            int ns = guard_segments(pagemap, m->lo, m->hi, starts, 64);
            for (int k = 0; k < ns && rc == 0; k++) {
                struct map seg = *m;
                seg.lo = starts[k];
                seg.hi = k + 1 < ns ? starts[k + 1] : m->hi;
                int found = is_live_stack(&seg, th, nth, self_sp) ? 0 : add_cached_dtv(r, &seg);
                if (found < 0)
                    rc = -1;
                else if (found == 0 && add_plain(r, c, &seg, precise))
                    rc = -1;
            }
            continue;
        }
        if (add_plain(r, c, m, precise))
            rc = -1;
    }
    if (pagemap >= 0)
        syscall(SYS_close, pagemap);
    return rc;
}

/* The mappings without read permission that overlap the tracked heap (a
 * block's pages the program protected): marking must not read them. Reading
 * one would fault the scanning thread, which is the program's, and a scan
 * must never crash the program. */
static int list_unreadable(struct gs_roots *r, const struct collect *c, const struct gs_range *heap,
                           size_t nheap)
{
    for (size_t i = 0; i < c->nmaps; i++) {
        const struct map *m = &c->maps[i];
        if (m->perms[0] == 'r' || !holds_tracked(heap, nheap, m->lo, m->hi))
            continue;
        if (push_range(&r->noread, &r->nnoread, &r->noread_cap, m->lo, m->hi))
            return -1;
    }
    r->nnoread = merge_ranges(r->noread, r->nnoread);
    return 0;
}

int gs_roots_collect(struct gs_roots *r, const struct gs_stopped *th, int nth,
                     uintptr_t self_sp, int self_is_program, const uintptr_t *self_regs,
                     size_t nself_regs, const struct gs_range *heap, size_t nheap)
{
    memset(r, 0, sizeof *r);
    r->loader_lo = loader_lo;
    r->loader_hi = loader_hi;
    struct collect c = {0};
    int rc = -1;
    if (read_maps(&c.maps, &c.nmaps, &c.mcap) == 0 && list_unreadable(r, &c, heap, nheap) == 0 &&
        exclude_own_and_heap(&c, heap, nheap) == 0 &&
        add_stacks(r, &c, th, nth, self_sp, self_is_program, self_regs, nself_regs) == 0) {
        c.nex = merge_ranges(c.ex, c.nex);
        rc = add_mappings(r, &c, th, nth, self_sp);
        r->nslack = merge_ranges(r->slack, r->nslack);
    }
    gs_pages_free(c.maps, c.mcap * sizeof *c.maps);
    gs_pages_free(c.ex, c.xcap * sizeof *c.ex);
    return rc;
}

void gs_roots_free(struct gs_roots *r)
{
    gs_pages_free(r->r, r->cap * sizeof *r->r);
    gs_pages_free(r->regs, r->regs_bytes);
    gs_pages_free(r->noread, r->noread_cap * sizeof *r->noread);
    gs_pages_free(r->slack, r->slack_cap * sizeof *r->slack);
    memset(r, 0, sizeof *r);
}

/* Exposed for mark.c, which builds the heap exclusions. */
int gs_range_push(struct gs_range **v, size_t *n, size_t *cap, uintptr_t lo, uintptr_t hi)
{
    return push_range(v, n, cap, lo, hi);
}

size_t gs_range_merge(struct gs_range *a, size_t n)
{
    return merge_ranges(a, n);
}
