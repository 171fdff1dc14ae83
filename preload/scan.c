/*
 * The leak scan: conservative mark-sweep over the live-block table,
 * classified like valgrind memcheck.
 *
 *  1. Stop the world (stop.c). In fork mode, fork right away (a raw clone
 *     with no exit signal, so the program's waitpid never sees it), restart
 *     the world, and do the rest in the child, which writes its results to a
 *     shared mapping and exits.
 *  2. One pass over the table: the regions that hold tracked blocks (what a
 *     word must point into to be worth a lookup, and the heap that is not a
 *     root), and the list of large blocks.
 *  3. Roots (roots.c). Mark from them following start pointers only: what is
 *     reached is REACHABLE. Interior pointers met on the way are remembered.
 *  4. From the remembered interior pointers, mark again following start and
 *     interior pointers: what is newly reached is POSSIBLE (reached only
 *     through a chain with an interior pointer). A device or VMM block is a
 *     leaf, never scanned, and reachable through any pointer into it.
 *  5. Every block still unmarked is lost. Taking them in table order, each
 *     one not yet claimed leads a clique: everything reachable from it (any
 *     pointer) that is lost becomes INDIRECT, a former leader included. The
 *     leaders left are DEFINITE: a leaked tree is 1 definite + N indirect, a
 *     leaked cycle 1 definite + the rest indirect, as memcheck reports them.
 *  6. Collect the results, reset the marks, restart the world, and only then
 *     write SCAN_BEGIN, one SCAN_BLOCK per unreachable block (and per
 *     reachable one in exit scans, as memcheck's still-reachable), SCAN_END
 *     with the pause's timings.
 *
 * Everything between stop and restart uses only gcspy's own memory and raw
 * syscalls, and never recurses: the mark stack is an explicit array with room
 * for every live block.
 *
 * PyTorch-aware mode (torch.c) adds two things. Host blocks whose stacks
 * are weak (allocated by the caching allocator's code) are scanned, but
 * the device pointers in them count for nothing: they keep the allocator's
 * own objects reachable, never a segment or a tensor's block. Device blocks that are the allocator's
 * segments (weak stacks, or listed in the snapshot the scan was given) are
 * M_POOL: never results, and a pointer into one is resolved to the
 * snapshot's active block that holds it, which is then marked as a device
 * leaf would be. Active blocks left unmarked are lost, classified and
 * written like other blocks (kind device, fn torch, the snapshot's stack).
 * Class counts in SCAN_END count those blocks and leave the segments out.
 * Host blocks with the data bit (a CPU tensor's storage) are leaves: marked
 * like any block, never scanned, since what they hold is numbers.
 *
 * Interior lookups need the block that contains an address. The table is a
 * hash on addresses, but its slot function keeps every block of one 4 KiB
 * page in one aligned window of 256 slots (shim.h), so the blocks of a page
 * are found by reading that window; a small block (< 64 KiB) starts at most
 * 16 pages back. Blocks of 64 KiB and more are kept in a sorted array.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gcspy.h"
#include "scan.h"

enum { M_NONE = 0, M_REACH = 1, M_POSS = 2, M_IND = 3, M_LEAD = 4, M_POOL = 5 };
#define GS_REGION_SHIFT 16
#define GS_LARGE (1ull << GS_REGION_SHIFT)

struct result {
    uint64_t addr, size;
    uint32_t stack;
    uint8_t kind, cls, fn, pad;
};

struct scan {
    /* plausibility: a hash set of 64 KiB regions holding any tracked byte */
    uint64_t *regions;
    uint64_t rmask;
    uintptr_t lo, hi;
    uintptr_t large_lo, large_hi;
    /* blocks >= 64 KiB, sorted by address */
    struct gs_block **large;
    size_t nlarge, large_cap;
    /* mark stack */
    struct gs_block **stack;
    size_t sp, stack_cap;
    /* interior pointers met while marking REACHABLE */
    uintptr_t *interior;
    size_t ninterior, interior_cap;
    int interior_overflow;
    /* counters */
    uint64_t bytes_scanned, visited, live_blocks, live_bytes;
    int cur_weak; /* the words being scanned are a weak block's */
    uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
    /* results */
    struct result *res;
    size_t nres, res_cap;
    int with_reachable;
};

static atomic_int scanning;
/* PyTorch-aware mode, for the scan in progress (set by its owner): */
static struct gs_pool_view *pool;   /* the allocator's blocks, or NULL */
static const uint8_t *weak;         /* per stack id: GS_SB_* bits */
static uint32_t nweak;

/* allocator metadata: scanned, its device and interior pointers ignored */
static inline int is_weak(const struct gs_block *b)
{
    return weak && b->stack < nweak && (weak[b->stack] & GS_SB_WEAK);
}

/* pointer-free (a CPU tensor's storage): never scanned */
static inline int is_data(const struct gs_block *b)
{
    return weak && b->stack < nweak && (weak[b->stack] & GS_SB_DATA);
}
static uint64_t scan_seq;
static uint64_t last_scan_ns;
static atomic_int scan_requested;
static atomic_uint_fast64_t bytes_since_scan;

/* ---- regions ---- */

static inline uint64_t rhash(uint64_t r)
{
    return (r * 0x9E3779B97F4A7C15ull) >> 20;
}

/* Returns 1 when the region is new. */
static int region_add(struct scan *s, uint64_t r)
{
    uint64_t j = rhash(r) & s->rmask;
    while (s->regions[j]) {
        if (s->regions[j] == r + 1)
            return 0;
        j = (j + 1) & s->rmask;
    }
    s->regions[j] = r + 1;
    return 1;
}

static inline int region_has(const struct scan *s, uint64_t r)
{
    uint64_t j = rhash(r) & s->rmask;
    for (;;) {
        uint64_t v = s->regions[j];
        if (v == r + 1)
            return 1;
        if (!v)
            return 0;
        j = (j + 1) & s->rmask;
    }
}

static struct gs_block *find_large(const struct scan *s, uintptr_t w);

/* Cheap tests first: the span of all blocks, then the region set of small
 * blocks, then (rarely) the sorted large blocks. */
static inline int plausible(const struct scan *s, uintptr_t w)
{
    if (w < s->lo || w >= s->hi)
        return 0;
    if (region_has(s, w >> GS_REGION_SHIFT))
        return 1;
    return w >= s->large_lo && w < s->large_hi && find_large(s, w);
}

/* ---- lookups ---- */

static struct gs_block *find_large(const struct scan *s, uintptr_t w)
{
    size_t a = 0, b = s->nlarge;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (s->large[m]->addr <= w)
            a = m + 1;
        else
            b = m;
    }
    if (a == 0)
        return NULL;
    struct gs_block *blk = s->large[a - 1];
    return w < blk->addr + blk->size ? blk : NULL;
}

/* The blocks that start in one 4 KiB page, sorted, built on first use during
 * a scan: all of them have their home slot in one aligned window of 256
 * slots (shim.h), so one pass over that window (and the probe cluster that
 * runs past its end) finds them. */
struct page_list {
    uint64_t page1;          /* page + 1; 0 = empty slot */
    uint32_t start, n;       /* into pages_pool */
};
static struct page_list *pages;
static uint64_t pages_mask;
static struct gs_block **pages_pool;
static size_t pages_used, pages_pool_cap;

static const struct page_list *page_blocks(uintptr_t page)
{
    uint64_t j = (page * 0x9E3779B97F4A7C15ull >> 30) & pages_mask;
    for (uint64_t n = 0; pages[j].page1; j = (j + 1) & pages_mask, n++) {
        if (pages[j].page1 == page + 1)
            return &pages[j];
        if (n > pages_mask)
            return NULL;
    }
    /* Build: scan the window, keep this page's blocks, sort them. */
    uintptr_t pa = page << 12;
    const struct gs_shard *sh = gs_shard_of(pa);
    uint64_t mask = sh->cap - 1;
    uint64_t w0 = gs_slot_of(pa, mask) & ~(uint64_t)255 & mask;
    uint32_t start = (uint32_t)pages_used, n = 0;
    for (uint64_t k = 0; k <= mask; k++) {
        struct gs_block *b = &sh->slots[(w0 + k) & mask];
        if (k >= 256 && !b->addr)
            break;
        if (!b->addr || (b->addr >> 12) != page)
            continue;
        if (pages_used >= pages_pool_cap)
            return NULL;
        uint32_t i = n++;
        pages_pool[start + i] = b;
        pages_used++;
        while (i && pages_pool[start + i - 1]->addr > b->addr) {
            pages_pool[start + i] = pages_pool[start + i - 1];
            i--;
        }
        pages_pool[start + i] = b;
    }
    pages[j] = (struct page_list){page + 1, start, n};
    return &pages[j];
}

/* The small block whose bytes contain w (w not a block start), or NULL: the
 * last block starting at or before w, in w's page or (a block is below
 * 64 KiB) one of the 16 before it. */
static struct gs_block *find_small(uintptr_t w)
{
    uintptr_t page = w >> 12;
    for (int back = 0; back < 17; back++, page--) {
        const struct page_list *pl = page_blocks(page);
        if (!pl)
            return NULL;
        struct gs_block *const *v = pages_pool + pl->start;
        size_t a = 0, b = pl->n;
        while (a < b) { /* first block starting after w */
            size_t m = (a + b) / 2;
            if (v[m]->addr <= w)
                a = m + 1;
            else
                b = m;
        }
        if (a) {
            struct gs_block *best = v[a - 1];
            return w < best->addr + (best->size ? best->size : 1) ? best : NULL;
        }
    }
    return NULL;
}

static struct gs_block *find_containing(const struct scan *s, uintptr_t w)
{
    struct gs_block *b = find_large(s, w);
    return b ? b : find_small(w);
}

static inline struct gs_block *find_start(uintptr_t w)
{
    return gs_table_lookup(gs_shard_of(w), w);
}

/* glibc lends a chunk's last 8 bytes to the block before it: for a request
 * of n bytes with n % 16 in 1..8, the next chunk's header starts inside the
 * block's last bytes, and the allocator's own state (the top chunk, free
 * lists: roots in libc's data) points there. Such a pointer is about the
 * next chunk, not the block: it must not make a leaked block "possible".
 * Chunk size = request + 8 rounded up to 16, at least 32; the chunk starts
 * 16 bytes before the block. */
static inline int is_next_chunk(const struct gs_block *b, uintptr_t w)
{
    if (b->kind != GS_MEM_HOST || b->fn == GS_FN_MEMALIGN || b->fn == GS_FN_VALLOC)
        return 0;
    uint64_t chunk = (b->size + 8 + 15) & ~(uint64_t)15;
    if (chunk < 32)
        chunk = 32;
    return w == b->addr - 16 + chunk;
}

/* ---- marking ---- */

static inline void push(struct scan *s, struct gs_block *b, uint8_t m)
{
    b->mark = m;
    if (b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM || is_data(b))
        return; /* leaves: reachable, never scanned */
    if (s->sp < s->stack_cap)
        s->stack[s->sp++] = b;
}

static void note_interior(struct scan *s, uintptr_t w)
{
    if (s->ninterior < s->interior_cap)
        s->interior[s->ninterior++] = w;
    else
        s->interior_overflow = 1;
}

/* A pointer into a caching-allocator segment: the snapshot's active block
 * that holds it is reached, as a device leaf is (any pointer into it). */
static void pool_visit(uintptr_t w, uint8_t mode)
{
    if (!pool || !pool->nblk)
        return;
    size_t a = gs_keyed_upto(pool->blk, pool->nblk, sizeof *pool->blk, w);
    if (!a)
        return;
    struct gs_pool_blk *pb = &pool->blk[a - 1];
    if (w >= pb->addr + (pb->size ? pb->size : 1))
        return;
    if (mode == M_IND) {
        if (pb->mark == M_NONE || pb->mark == M_LEAD)
            pb->mark = M_IND;
    } else if (pb->mark == M_NONE) {
        pb->mark = mode;
    }
}

/* One word. mode: M_REACH follows start pointers (device blocks: any),
 * remembering interior ones; M_POSS and M_IND follow every pointer. */
static inline void visit_word(struct scan *s, uintptr_t w, uint8_t mode, struct gs_block *leader)
{
    if (!plausible(s, w))
        return;
    /* The block's bytes will be read next if w is a block: start fetching
     * them now, so that miss overlaps the table lookup's (pointer chasing
     * through a list then costs one memory latency per block, not two). A
     * prefetch of a bad address does nothing. */
    __builtin_prefetch((const void *)w);
    struct gs_block *b = find_start(w);
    if (!b) {
        if (mode == M_REACH) {
            /* Interior pointers are resolved later, without knowing where
             * they came from: those of allocator metadata are dropped now. */
            if (!s->cur_weak)
                note_interior(s, w);
            return;
        }
        b = find_containing(s, w);
        if (!b || is_next_chunk(b, w))
            return;
    }
    if (GS_UNLIKELY(b->mark == M_POOL)) {
        if (!s->cur_weak)
            pool_visit(w, mode);
        return;
    }
    if (GS_UNLIKELY(s->cur_weak) && (b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM))
        return;
    if (mode == M_IND) {
        if (b == leader || b->mark == M_IND || b->mark == M_REACH || b->mark == M_POSS)
            return;
        if (b->mark == M_LEAD) { /* a former leader joins this clique */
            b->mark = M_IND;
            return;
        }
        push(s, b, M_IND);
        return;
    }
    if (b->mark == M_NONE)
        push(s, b, mode);
}

static void scan_words(struct scan *s, const uintptr_t *p, size_t n, uint8_t mode,
                       struct gs_block *leader)
{
    s->bytes_scanned += n * sizeof *p;
    for (size_t i = 0; i < n; i++)
        visit_word(s, p[i], mode, leader);
}

/* Root ranges are copied out with process_vm_readv, which returns an error
 * instead of faulting: a file mapping may end before its last page, and
 * gcspy's writer thread, which runs on during a scan, may map and unmap its
 * own scratch memory (zstd's workspace) after /proc/self/maps was read. A
 * scan must never crash the program. */
static void scan_range(struct scan *s, uintptr_t lo, uintptr_t hi, uint8_t mode)
{
    s->cur_weak = 0;
    lo &= ~(uintptr_t)7;
    static uintptr_t buf[8192];
    pid_t pid = getpid();
    while (lo < hi) {
        size_t n = hi - lo < sizeof buf ? hi - lo : sizeof buf;
        struct iovec l = {buf, n}, r = {(void *)lo, n};
        ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0) {
            lo = (lo + 4096) & ~(uintptr_t)4095; /* skip the page that failed */
            continue;
        }
        scan_words(s, buf, (size_t)got / 8, mode, NULL);
        lo += (uintptr_t)got;
    }
}

static void drain(struct scan *s, uint8_t mode, struct gs_block *leader)
{
    while (s->sp) {
        struct gs_block *b = s->stack[--s->sp];
        s->visited++;
        s->cur_weak = is_weak(b);
        scan_words(s, (const uintptr_t *)b->addr, b->size / 8, mode, leader);
    }
}

/* ---- setup ---- */

static int grow_large(struct scan *s)
{
    size_t ncap = s->large_cap ? s->large_cap * 2 : 1024;
    struct gs_block **n = gs_pages_alloc(ncap * sizeof *n);
    if (!n)
        return -1;
    if (s->large) {
        memcpy(n, s->large, s->nlarge * sizeof *n);
        gs_pages_free(s->large, s->large_cap * sizeof *n);
    }
    s->large = n;
    s->large_cap = ncap;
    return 0;
}

/* Pass over the table: regions, large blocks, heap exclusions, totals. */
/* A device block the caching allocator owns: allocated from its code, or a
 * segment of the snapshot. */
static int is_segment(const struct gs_block *b)
{
    if (is_weak(b))
        return 1;
    if (!pool)
        return 0;
    size_t a = gs_keyed_upto(pool->seg, pool->nseg, sizeof *pool->seg, b->addr);
    return a && pool->seg[a - 1].addr == b->addr;
}

static int prepass(struct scan *s, struct gs_range **heap, size_t *nheap, size_t *heap_cap)
{
    uint64_t nregions_max = 0;
    for (int i = 0; i < GS_SHARDS; i++)
        nregions_max += gs_shards[i].count;
    uint64_t cap = 1024;
    while (cap < 2 * nregions_max + 64)
        cap *= 2;
    s->regions = gs_pages_alloc(cap * sizeof *s->regions);
    if (!s->regions)
        return -1;
    s->rmask = cap - 1;
    s->lo = UINTPTR_MAX;
    s->hi = 0;
    uintptr_t last = ~(uintptr_t)0;
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        for (uint64_t j = 0; j < sh->cap; j++) {
            struct gs_block *b = &sh->slots[j];
            if (!b->addr)
                continue;
            b->mark = M_NONE;
            if (b->kind == GS_MEM_DEVICE && (weak || pool) && is_segment(b))
                b->mark = M_POOL;
            s->live_blocks++;
            s->live_bytes += b->size;
            uintptr_t end = b->addr + (b->size ? b->size : 1);
            if (b->addr < s->lo)
                s->lo = b->addr;
            if (end > s->hi)
                s->hi = end;
            int host = b->kind != GS_MEM_DEVICE && b->kind != GS_MEM_VMM;
            if (b->size >= GS_LARGE) {
                if (s->nlarge == s->large_cap && grow_large(s))
                    return -1;
                s->large[s->nlarge++] = b;
                if (b->addr < s->large_lo || !s->large_lo)
                    s->large_lo = b->addr;
                if (end > s->large_hi)
                    s->large_hi = end;
                if (host && gs_range_push(heap, nheap, heap_cap, b->addr & ~(uintptr_t)4095,
                                          (end + 4095) & ~(uintptr_t)4095))
                    return -1;
                continue;
            }
            uintptr_t r = b->addr >> GS_REGION_SHIFT, r2 = (end - 1) >> GS_REGION_SHIFT;
            if (r == last && r2 == r)
                continue;
            last = r;
            int fresh = region_add(s, r);
            if (r2 != r)
                fresh |= region_add(s, r2);
            if (host && fresh) {
                if (gs_range_push(heap, nheap, heap_cap, r << GS_REGION_SHIFT,
                                  (r2 + 1) << GS_REGION_SHIFT))
                    return -1;
                if (*nheap == *heap_cap)
                    *nheap = gs_range_merge(*heap, *nheap);
            }
        }
    }
    /* sort large blocks by address (insertion sort: there are few) */
    for (size_t i = 1; i < s->nlarge; i++) {
        struct gs_block *b = s->large[i];
        size_t k = i;
        while (k && s->large[k - 1]->addr > b->addr) {
            s->large[k] = s->large[k - 1];
            k--;
        }
        s->large[k] = b;
    }
    *nheap = gs_range_merge(*heap, *nheap);
    return 0;
}

static void classify(struct scan *s)
{
    /* 5. cliques of lost blocks */
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        for (uint64_t j = 0; j < sh->cap; j++) {
            struct gs_block *b = &sh->slots[j];
            if (!b->addr || b->mark != M_NONE)
                continue;
            b->mark = M_LEAD;
            if (b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM || is_data(b))
                continue;
            s->visited++;
            s->cur_weak = is_weak(b);
            scan_words(s, (const uintptr_t *)b->addr, b->size / 8, M_IND, b);
            drain(s, M_IND, b);
        }
    }
    /* 6. collect and reset */
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        for (uint64_t j = 0; j < sh->cap; j++) {
            struct gs_block *b = &sh->slots[j];
            if (!b->addr)
                continue;
            if (b->mark == M_POOL) { /* a segment: reserved, its blocks count */
                b->mark = M_NONE;
                continue;
            }
            int cls = b->mark == M_REACH ? GS_CLASS_REACHABLE
                    : b->mark == M_POSS  ? GS_CLASS_POSSIBLE
                    : b->mark == M_IND   ? GS_CLASS_INDIRECT
                                         : GS_CLASS_DEFINITE;
            b->mark = M_NONE;
            s->cls_blocks[cls]++;
            s->cls_bytes[cls] += b->size;
            if (cls == GS_CLASS_REACHABLE && !s->with_reachable)
                continue;
            if (s->nres < s->res_cap)
                s->res[s->nres++] = (struct result){b->addr, b->size, b->stack, b->kind,
                                                    (uint8_t)cls, b->fn, 0};
        }
    }
    /* the caching allocator's active blocks; pending-free ones are being
     * freed (their stream has not caught up): never results */
    for (size_t i = 0; pool && i < pool->nblk; i++) {
        struct gs_pool_blk *pb = &pool->blk[i];
        int cls = pb->mark == M_REACH ? GS_CLASS_REACHABLE
                : pb->mark == M_POSS  ? GS_CLASS_POSSIBLE
                : pb->mark == M_IND   ? GS_CLASS_INDIRECT
                                      : GS_CLASS_DEFINITE;
        pb->mark = M_NONE;
        if (pb->state != GS_PBLK_ACTIVE)
            continue;
        s->cls_blocks[cls]++;
        s->cls_bytes[cls] += pb->size;
        if (cls == GS_CLASS_REACHABLE && !s->with_reachable)
            continue;
        if (s->nres < s->res_cap)
            s->res[s->nres++] = (struct result){pb->addr, pb->size, pb->stack, GS_MEM_DEVICE,
                                                (uint8_t)cls, GS_FN_TORCH, 0};
    }
}

static void mark_all(struct scan *s, const struct gs_roots *roots)
{
    /* 3. roots, start pointers */
    scan_words(s, roots->regs, roots->nregs, M_REACH, NULL);
    for (size_t i = 0; i < roots->n; i++) {
        scan_range(s, roots->r[i].lo, roots->r[i].hi, M_REACH);
        drain(s, M_REACH, NULL);
    }
    drain(s, M_REACH, NULL);
    /* 4. interior pointers: device blocks reachable, others possible */
    for (size_t i = 0; i < s->ninterior; i++) {
        struct gs_block *b = find_containing(s, s->interior[i]);
        if (b && b->mark == M_POOL) {
            pool_visit(s->interior[i], M_REACH);
            continue;
        }
        if (!b || b->mark != M_NONE || is_next_chunk(b, s->interior[i]))
            continue;
        int leaf = b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM;
        push(s, b, leaf ? M_REACH : M_POSS);
        drain(s, M_POSS, NULL);
    }
    if (s->interior_overflow) {
        /* Too many to remember: rescan the roots following every pointer. */
        s->ninterior = 0;
        for (size_t i = 0; i < roots->n; i++) {
            scan_range(s, roots->r[i].lo, roots->r[i].hi, M_POSS);
            drain(s, M_POSS, NULL);
        }
    }
    classify(s);
}

static int pages_init(uint64_t total)
{
    uint64_t cap = 1 << 12;
    while (cap < 2 * total && cap < (1u << 22))
        cap *= 2;
    pages_mask = cap - 1;
    pages_pool_cap = total + 1024;
    pages_used = 0;
    pages = gs_pages_alloc(cap * sizeof *pages);
    pages_pool = gs_pages_alloc(pages_pool_cap * sizeof *pages_pool);
    return pages && pages_pool ? 0 : -1;
}

static void free_scan(struct scan *s)
{
    gs_pages_free(pages, (pages_mask + 1) * sizeof *pages);
    gs_pages_free(pages_pool, pages_pool_cap * sizeof *pages_pool);
    pages = NULL;
    pages_pool = NULL;
    gs_pages_free(s->regions, (s->rmask + 1) * sizeof *s->regions);
    gs_pages_free(s->large, s->large_cap * sizeof *s->large);
    gs_pages_free(s->stack, s->stack_cap * sizeof *s->stack);
    gs_pages_free(s->interior, s->interior_cap * sizeof *s->interior);
}

struct shared_out {
    uint64_t done, nres, bytes_scanned, visited, live_blocks, live_bytes, t_marked;
    uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
    struct result res[];
};

/* ---- the scan ---- */

/* Scan state lives in gcspy's bss, not on the stack: the scanning thread's
 * own frames must hold no copy of a block address (s.lo is one). */
static struct scan s;
static struct gs_roots roots;

static int run_scan(int trigger, uintptr_t self_sp)
{
    char why[160] = "";
    uint64_t t_start = gs_now_fine();
    int fork_mode = gs_opt.scan_mode && !strcmp(gs_opt.scan_mode, "fork");
    memset(&s, 0, sizeof s);
    s.with_reachable = trigger == GS_SCAN_TRIG_EXIT && gs_opt.scan_report_reachable;
    uint64_t id = ++scan_seq;

    uint64_t total = 0;
    for (int i = 0; i < GS_SHARDS; i++)
        total += gs_shards[i].count;
    /* Everything the stopped section needs is allocated before the stop
     * where its size is known; growth inside uses mmap only. */
    s.stack_cap = total + 1024;
    s.stack = gs_pages_alloc(s.stack_cap * sizeof *s.stack);
    s.interior_cap = 1 << 20;
    s.interior = gs_pages_alloc(s.interior_cap * sizeof *s.interior);
    uint64_t npool = pool ? pool->nblk : 0;
    size_t out_bytes = sizeof(struct shared_out) + (total + npool + 4096) * sizeof(struct result);
    struct shared_out *out = NULL;
    if (fork_mode) {
        void *m = mmap(NULL, out_bytes, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        out = m == MAP_FAILED ? NULL : m;
    } else {
        out = gs_pages_alloc(out_bytes);
    }
    if (!s.stack || !s.interior || !out || pages_init(total)) {
        gs_log("scan skipped: out of memory");
        free_scan(&s);
        return -1;
    }
    s.res = out->res;
    s.res_cap = total + npool + 4096;

    struct gs_stopped *th;
    int nth;
    if (gs_stop_world(&th, &nth, why, sizeof why)) {
        /* Once per process: a program that blocks the stop signal would
         * repeat it every scan interval (a forked child says it again). */
        static pid_t told;
        if (told != getpid()) {
            told = getpid();
            gs_log("scan skipped: %s (later scans that cannot stop the threads are skipped "
                   "without a word)", why);
        }
        free_scan(&s);
        if (fork_mode)
            munmap(out, out_bytes);
        else
            gs_pages_free(out, out_bytes);
        return -1;
    }
    uint64_t t_stopped = gs_now_fine();
    int nstopped = 0;
    for (int i = 0; i < nth; i++)
        nstopped += atomic_load(&th[i].state) == 1;

    struct gs_range *heap = NULL;
    size_t nheap = 0, heap_cap = 0;
    memset(&roots, 0, sizeof roots);
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t root_sp = self_sp ? self_sp : here;
    uint64_t t_marked = 0, t_end;
    pid_t child = -1;
    int ok = 1;
    if (fork_mode) {
        /* The pause is just the fork: the table pass, the roots and the
         * marking all happen in the child, on the copy-on-write snapshot.
         * The child is alone: a gcspy lock another thread held at the fork
         * (the writer's registry lock) is reset there first. */
        child = (pid_t)syscall(SYS_clone, 0 /* no signal at exit */, 0, 0, 0, 0);
        if (child == 0) {
            gs_pages_atfork_child();
            if (prepass(&s, &heap, &nheap, &heap_cap) == 0 &&
                gs_roots_collect(&roots, th, nth, root_sp, self_sp != 0, heap, nheap) == 0) {
                mark_all(&s, &roots);
                out->nres = s.nres;
                out->bytes_scanned = s.bytes_scanned;
                out->visited = s.visited;
                out->live_blocks = s.live_blocks;
                out->live_bytes = s.live_bytes;
                memcpy(out->cls_blocks, s.cls_blocks, sizeof s.cls_blocks);
                memcpy(out->cls_bytes, s.cls_bytes, sizeof s.cls_bytes);
                out->t_marked = gs_now_fine();
                __atomic_store_n(&out->done, 1, __ATOMIC_RELEASE);
            }
            syscall(SYS_exit_group, 0);
        }
        if (child < 0)
            ok = 0;
    } else {
        ok = prepass(&s, &heap, &nheap, &heap_cap) == 0 &&
             gs_roots_collect(&roots, th, nth, root_sp, self_sp != 0, heap, nheap) == 0;
        if (ok) {
            mark_all(&s, &roots);
            t_marked = gs_now_fine();
        }
    }
    gs_start_world();
    t_end = gs_now_fine();
    gs_roots_free(&roots);
    gs_pages_free(heap, heap_cap * sizeof *heap);
    if (!ok) {
        gs_log("scan skipped: out of memory while the world was stopped");
        free_scan(&s);
        if (fork_mode)
            munmap(out, out_bytes);
        else
            gs_pages_free(out, out_bytes);
        return -1;
    }
    if (fork_mode) {
        int st;
        while (syscall(SYS_wait4, child, &st, __WCLONE, NULL) < 0 && errno == EINTR)
            ;
        if (!__atomic_load_n(&out->done, __ATOMIC_ACQUIRE)) {
            gs_log("scan skipped: the scanning child failed");
            free_scan(&s);
            munmap(out, out_bytes);
            return -1;
        }
        s.nres = out->nres;
        s.bytes_scanned = out->bytes_scanned;
        s.visited = out->visited;
        s.live_blocks = out->live_blocks;
        s.live_bytes = out->live_bytes;
        memcpy(s.cls_blocks, out->cls_blocks, sizeof s.cls_blocks);
        memcpy(s.cls_bytes, out->cls_bytes, sizeof s.cls_bytes);
        t_marked = out->t_marked;
    }

    /* The world runs again: write the results. */
    uint8_t begin[GS_REC_SCAN_BEGIN_MAX], block[GS_REC_SCAN_BLOCK_MAX], end[GS_REC_SCAN_END_MAX];
    gs_emit_meta(begin, gs_rec_scan_begin(begin, id, t_start, (uint64_t)trigger,
                                          (uint64_t)fork_mode));
    for (size_t i = 0; i < s.nres; i++) {
        const struct result *r = &s.res[i];
        gs_emit_meta(block, gs_rec_scan_block(block, id, r->addr, r->size, r->stack, r->kind,
                                              r->cls, r->fn));
    }
    gs_emit_meta(end, gs_rec_scan_end(end, id, t_start, t_stopped, t_marked, t_end,
                                      (uint64_t)nstopped, s.bytes_scanned, s.visited,
                                      s.live_blocks, s.live_bytes, s.cls_blocks, s.cls_bytes));
    free_scan(&s);
    if (fork_mode)
        munmap(out, out_bytes);
    else
        gs_pages_free(out, out_bytes);
    last_scan_ns = gs_now_fine();
    return 0;
}

int gs_scan_running(void)
{
    return atomic_load(&scanning);
}

static int scan_with(int trigger, uintptr_t self_sp, struct gs_pool_view *view)
{
    if (!gs_tracing())
        return -1;
    if (trigger == GS_SCAN_TRIG_EXIT) {
        /* The exit scan waits for a periodic one to finish. */
        while (atomic_exchange(&scanning, 1))
            sched_yield();
    } else if (atomic_exchange(&scanning, 1)) {
        return -1;
    }
    int rc = -1;
    gs_cupti_flush();
    gs_torch_prepare_scan(&weak, &nweak);
    pool = view;
    if (gs_stop_init() == 0)
        rc = run_scan(trigger, self_sp);
    else
        gs_log("scan skipped: no free real-time signal to stop threads with");
    pool = NULL;
    weak = NULL;
    atomic_store(&scanning, 0);
    if (rc == 0 && trigger == GS_SCAN_TRIG_EXIT)
        gs_exit_scan_done = 1;
    return rc;
}

int gs_scan(int trigger, uintptr_t self_sp)
{
    return scan_with(trigger, self_sp, NULL);
}

/* A program thread that scans is a root from its caller's frame up: the
 * callee-saved registers are spilled into this frame first (a pointer held
 * only in a register stays visible), and everything below the stack pointer
 * taken here (gcspy's own frames) is left out. */
#define ENTRY_SP(var)                                                         \
    __builtin_unwind_init();                                                  \
    uintptr_t var;                                                            \
    __asm__ volatile("mov %%rsp, %0" : "=r"(var))

static __attribute__((noinline)) void exit_scan(void)
{
    ENTRY_SP(sp);
    gs_scan(GS_SCAN_TRIG_EXIT, sp);
}

/* Zeroes up to 64 KiB of stack below the caller's frame, never closer than
 * 16 KiB to the stack's end. A program thread's stack is a root from its
 * stack pointer up: block addresses that gcspy's own deeper frames (a
 * snapshot's walk, the marking) leave there would be read by a later scan
 * whose frames reuse that memory without writing all of it. */
__attribute__((noinline)) void gs_scrub_stack(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    size_t n = 64 << 10;
    const struct gs_thread *th = gs_tls.th;
    if (th && th->stack_lo) {
        size_t room = sp > th->stack_lo + (16 << 10) ? sp - th->stack_lo - (16 << 10) : 0;
        if (room < n)
            n = room;
    }
    if (n < 64)
        return;
    char buf[n];
    memset(buf, 0, n);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

__attribute__((noinline)) int gs_scan_program(int trigger, struct gs_pool_view *view)
{
    if (gs_tls.in_hook || !gs_tracing())
        return -1;
    ENTRY_SP(sp);
    gs_tls.in_hook = 1;
    int rc = scan_with(trigger, sp, view);
    gs_scrub_stack();
    gs_leave();
    return rc;
}

__attribute__((visibility("default"), noinline)) int gcspy_scan(void)
{
    if (gs_tls.in_hook || !gs_tracing())
        return -1;
    int trc = gs_torch_api_scan();
    return trc != -2 ? trc : gs_scan_program(GS_SCAN_TRIG_API, NULL);
}

/* ---- triggers that run on the writer thread ---- */

/* scan_requested holds the trigger + 1 of a pending request (0: none). */
static void scan_signal_handler(int sig)
{
    (void)sig;
    int saved = errno;
    atomic_store(&scan_requested, GS_SCAN_TRIG_SIGNAL + 1);
    gs_writer_wake();
    errno = saved;
}

void gs_scan_note_bytes(uint64_t n)
{
    int none = 0;
    if (atomic_fetch_add(&bytes_since_scan, n) + n >= gs_opt.scan_bytes &&
        atomic_compare_exchange_strong(&scan_requested, &none, GS_SCAN_TRIG_BYTES + 1))
        gs_writer_wake();
}

/* How long the writer may sleep before the next periodic scan is due. */
uint64_t gs_scan_next_due_ns(void)
{
    if (!gs_opt.scan_interval_ms)
        return UINT64_MAX;
    uint64_t due = last_scan_ns + gs_opt.scan_interval_ms * 1000000ull, now = gs_now_fine();
    return due > now ? due - now : 0;
}

/* Called by the writer between flushes. */
void gs_scan_tick(void)
{
    if (gs_exit_scan_done)
        return; /* Python's atexit ran the exit scan: it stays the last */
    int req = atomic_exchange(&scan_requested, 0);
    int trigger = req ? req - 1 : -1;
    if (gs_opt.scan_interval_ms && gs_scan_next_due_ns() == 0 && trigger < 0)
        trigger = GS_SCAN_TRIG_PERIODIC;
    if (trigger < 0)
        return;
    /* The next periodic scan counts from this attempt, whatever its outcome:
     * a scan that keeps failing must not keep the writer busy. */
    last_scan_ns = gs_now_fine();
    atomic_store(&bytes_since_scan, 0);
    if (trigger != GS_SCAN_TRIG_EXIT && gs_torch_route_scan(trigger))
        return; /* the main thread scans, after a snapshot */
    gs_scan(trigger, 0);
}

void gs_scan_atfork_child(void)
{
    atomic_store(&scanning, 0);
    atomic_store(&scan_requested, 0);
    gs_stop_atfork_child();
}

int gs_scan_init(void)
{
    gs_exit_scan_hook = exit_scan;
    gs_roots_init();
    last_scan_ns = gs_now_fine();
    if (gs_opt.scan_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = scan_signal_handler;
        sa.sa_flags = SA_RESTART;
        if (sigaction((int)gs_opt.scan_signal, &sa, NULL))
            gs_log("cannot handle signal %d for scans", (int)gs_opt.scan_signal);
    }
    return gs_stop_init();
}
