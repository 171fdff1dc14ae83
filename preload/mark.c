/*
 * The leak scan's marker: a conservative mark over the live-block table
 * (scan.c runs it with the world stopped, or in the scan's forked child).
 *
 *  - The prepass over the table notes the regions that hold tracked blocks
 *    (what a word must point into to be worth a lookup, and the heap that
 *    is not a root) and the list of large blocks.
 *  - From the roots (roots.c), marking follows start pointers only: what is
 *    reached is REACHABLE. Interior pointers met on the way are remembered.
 *  - From the remembered interior pointers, marking follows start and
 *    interior pointers: what is newly reached is POSSIBLE (reached only
 *    through a chain with an interior pointer). A device or VMM block is a
 *    leaf, never scanned, and reachable through any pointer into it.
 * What is still unmarked then is lost: classify.c takes it from there.
 *
 * The CUDA runtime's own memory (cuda_owned.c: heap blocks allocated from
 * the driver's, runtime's or CUPTI's code, their data segments) keeps host
 * blocks alive as any memory does, but a pointer there to a CUDA block
 * (device, VMM, pinned, managed) counts for nothing while marking; after
 * marking, gs_mark_held reads that memory again and gives the CUDA blocks
 * still unmarked that it points to M_HELD: "held by the CUDA runtime".
 *
 * Marking uses only gcspy's own memory and raw syscalls, and never
 * recurses: the mark stack is an explicit array with room for every live
 * block.
 *
 * PyTorch-aware mode (torch.c) adds two things. Host blocks whose stacks
 * are weak (allocated by the caching allocator's code) are scanned, but
 * the device pointers in them count for nothing: they keep the allocator's
 * own objects reachable, never a segment or a tensor's block. Device blocks
 * that are the allocator's segments (weak stacks, or listed in the snapshot
 * the scan was given) are M_POOL: never results, and a pointer into one is
 * resolved to the snapshot's active block that holds it, which is then
 * marked as a device leaf would be. Host blocks with the data bit (a CPU
 * tensor's storage) are leaves: marked like any block, never scanned, since
 * what they hold is numbers.
 *
 * A word 1 to 7 bytes past a block's start is a start pointer: its low bits
 * are a tag (glibc's tsearch keeps a node's colour in the low bit of its
 * left link, so the nodes and the strings setenv keeps in them were
 * "possible", one each time pytest sets PYTEST_CURRENT_TEST; CPython 3.14's
 * stack references tag their low bit too). Boehm's collector calls these
 * displacements; LeakSanitizer takes any interior pointer. An interior
 * pointer from offset 8 on (the TCB's dtv+1) is still one, as memcheck
 * says.
 *
 * Interior lookups need the block that contains an address. The table is a
 * hash on addresses, but its slot function keeps every block of one 4 KiB
 * page in one aligned window of 256 slots (table.h), so the blocks of a page
 * are found by reading that window; a small block (< 64 KiB) starts at most
 * 16 pages back. Blocks of 64 KiB and more are kept in a sorted array.
 */
#define _GNU_SOURCE
#include <sys/uio.h>
#include <unistd.h>

#include "gcspy/chunk.h"
#include "mark.h"

/* ---- regions ---- */

static inline uint64_t rhash(uint64_t r)
{
    return (r * 0x9E3779B97F4A7C15ull) >> 20;
}

/* The set starts small and doubles at half full: it is read for every
 * plausible word while marking, so it must stay in cache; sized for the
 * worst case (one region a block) it was tens of MiB, and each lookup a
 * cache and TLB miss. 0 when there is no memory to grow. */
static int regions_grow(struct gs_scan *s, uint64_t cap)
{
    uint64_t *nv = gs_pages_alloc(cap * sizeof *nv), mask = cap - 1;
    if (!nv)
        return -1;
    for (uint64_t i = 0; s->regions && i <= s->rmask; i++) {
        uint64_t v = s->regions[i];
        if (!v)
            continue;
        uint64_t j = rhash(v - 1) & mask;
        while (nv[j])
            j = (j + 1) & mask;
        nv[j] = v;
    }
    if (s->regions)
        gs_pages_free(s->regions, (s->rmask + 1) * sizeof *s->regions);
    s->regions = nv;
    s->rmask = mask;
    return 0;
}

/* Returns 1 when the region is new, 0 when known, -1 when out of memory. */
static int region_add(struct gs_scan *s, uint64_t r)
{
    if (2 * (s->nregions + 1) > s->rmask + 1 && regions_grow(s, 2 * (s->rmask + 1)))
        return -1;
    uint64_t j = rhash(r) & s->rmask;
    while (s->regions[j]) {
        if (s->regions[j] == r + 1)
            return 0;
        j = (j + 1) & s->rmask;
    }
    s->regions[j] = r + 1;
    s->nregions++;
    return 1;
}

static inline int region_has(const struct gs_scan *s, uint64_t r)
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

static struct gs_block *find_large(const struct gs_scan *s, uintptr_t w);

/* Cheap tests first: the span of all blocks, then the region set of small
 * blocks, then (rarely) the sorted large blocks. */
static inline int plausible(const struct gs_scan *s, uintptr_t w)
{
    if (w < s->lo || w >= s->hi)
        return 0;
    if (region_has(s, w >> GS_REGION_SHIFT))
        return 1;
    return w >= s->large_lo && w < s->large_hi && find_large(s, w);
}

/* ---- lookups ---- */

static struct gs_block *find_large(const struct gs_scan *s, uintptr_t w)
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
 * slots (table.h), so one pass over that window (and the probe cluster that
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

static struct gs_block *find_containing(const struct gs_scan *s, uintptr_t w)
{
    struct gs_block *b = find_large(s, w);
    return b ? b : find_small(w);
}

/* A page's blocks sit in address order around their window (table.h), so
 * the next blocks of a list built in allocation order have their slots a
 * little after this one's: fetching that line now overlaps their misses
 * with this block's work. The distance: 16 slots (384 bytes, about three
 * blocks of 64 bytes ahead), wrapping within the window as the slot
 * function does; 48 was no better, and in random order the prefetch costs
 * nothing measurable. */
#define GS_SLOT_AHEAD 16
static inline struct gs_block *find_start(uintptr_t w)
{
    const struct gs_shard *sh = gs_shard_of(w);
    uint64_t mask = sh->cap - 1, j = gs_slot_of(w, mask);
    __builtin_prefetch(&sh->slots[((j & ~(uint64_t)255) | ((j + GS_SLOT_AHEAD) & 255)) & mask], 1);
    return gs_table_lookup(sh, w);
}

/* glibc lends a chunk's last 8 bytes to the block before it: for a request
 * of n bytes with n % 16 in 1..8, the next chunk's header starts inside the
 * block's last bytes, and the allocator's own state (the top chunk, free
 * lists: roots in libc's data) points there. Such a pointer is about the
 * next chunk, not the block: it must not make a leaked block "possible".
 * The chunk starts 16 bytes before the block and spans gs_chunk_span of its
 * request (gcspy/chunk.h, the layout's one statement). */
static inline int is_next_chunk(const struct gs_block *b, uintptr_t w)
{
    if (b->kind != GS_MEM_HOST || b->fn == GS_FN_MEMALIGN || b->fn == GS_FN_VALLOC)
        return 0;
    return w == b->addr - 16 + gs_chunk_span(b->size);
}

/* ---- marking ---- */

static inline void push(struct gs_scan *s, struct gs_block *b, uint8_t m)
{
    b->mark = m;
    if (m == M_REACH) { /* REACHABLE and POSSIBLE marks go on unmarked blocks only */
        s->reach_blocks++;
        s->reach_bytes += b->size;
    } else if (m == M_POSS) {
        s->poss_blocks++;
    }
    if (b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM || gs_is_data(s, b))
        return; /* leaves: reachable, never scanned */
    if (b->kind == GS_MEM_MANAGED && !s->scan_managed) {
        /* not read (a host read migrates pages the GPU holds): what it
         * points to cannot be known; the classifier says so */
        s->managed_unread += m == M_REACH || m == M_POSS;
        return;
    }
    if (s->sp < s->stack_cap)
        s->stack[s->sp++] = b;
}

static void note_interior(struct gs_scan *s, uintptr_t w)
{
    if (s->ninterior < s->interior_cap)
        s->interior[s->ninterior++] = w;
    else
        s->interior_overflow = 1;
}

/* A pointer into a caching-allocator segment: the snapshot's active block
 * that holds it is reached, as a device leaf is (any pointer into it). */
static void pool_visit(struct gs_scan *s, uintptr_t w, uint8_t mode)
{
    const struct gs_pool_view *pool = s->pool;
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
static inline void visit_word(struct gs_scan *s, uintptr_t w, uint8_t mode, struct gs_block *leader)
{
    if (!plausible(s, w))
        return;
    /* The block's bytes will be read next if w is a block: start fetching
     * them now, so that miss overlaps the table lookup's (pointer chasing
     * through a list then costs one memory latency per block, not two). A
     * prefetch of a bad address does nothing. */
    __builtin_prefetch((const void *)w);
    struct gs_block *b = find_start(w);
    if (!b && (w & 7))
        b = find_start(w & ~(uintptr_t)7); /* a tagged pointer */
    if (GS_UNLIKELY(s->cur_loader | s->cur_cuda)) {
        struct gs_block *c = b ? b : find_containing(s, w);
        if (c && c->kind != GS_MEM_HOST)
            return;
    }
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
        if (!s->cur_weak && mode != M_IND2) /* the first pass classed them */
            pool_visit(s, w, mode);
        return;
    }
    if (GS_UNLIKELY(s->cur_weak) && (b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM))
        return;
    if (mode == M_IND2) { /* the classifier's second pass: lost blocks not yet seen */
        if (b != leader && (b->mark == M_IND || b->mark == M_LEAD))
            push(s, b, M_IND2);
        return;
    }
    if (mode == M_IND) {
        if (b == leader || b->mark == M_IND || b->mark == M_REACH || b->mark == M_POSS ||
            b->mark == M_HELD)
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

void gs_mark_words(struct gs_scan *s, const uintptr_t *p, size_t n, uint8_t mode,
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
 * scan must never crash the program.
 * The same thread (and the scan's own allocations) may also put gcspy pages
 * where the mapping list had something else: a hole the scan left by
 * freeing its maps buffer, taken by its exclusion list (which holds the
 * 64 KiB region bounds of tracked blocks, and so their addresses). Words of
 * pages registered as gcspy's by the time a chunk was read are dropped, and
 * the chunk is read again when the registry changed while it was read
 * (gs_pages_free unmaps before it unregisters, gs_pages_alloc registers
 * before anything is written there). */
static size_t read_root_chunk(uintptr_t lo, size_t n, uintptr_t *buf, pid_t pid)
{
    struct gs_range own[32];
    ssize_t got = -1;
    for (int tries = 0; tries < 4; tries++) {
        uint64_t gen = gs_pages_gen();
        struct iovec l = {buf, n}, r = {(void *)lo, n};
        got = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0)
            return 0;
        uintptr_t hi = lo + (uintptr_t)got;
        int k = gs_pages_overlapping(lo, hi, own, sizeof own / sizeof own[0]);
        for (int i = 0; i < k; i++) {
            uintptr_t a = own[i].lo > lo ? own[i].lo : lo, z = own[i].hi < hi ? own[i].hi : hi;
            memset((char *)buf + (a - lo), 0, z - a);
        }
        if (gs_pages_gen() == gen)
            break;
    }
    return (size_t)got;
}

/* Zeroes the words of buf, a copy of the n words at lo (word-aligned), that
 * lie in slack (roots.h, whole words: list slots): a list's unused capacity
 * holds what its chunk last held. */
static void blank_slack(const struct gs_scan *s, uintptr_t lo, size_t n, uintptr_t *buf)
{
    uintptr_t hi = lo + n * sizeof *buf;
    const struct gs_range *v = s->slack;
    for (size_t a = gs_range_first_after(v, s->nslack, lo); a < s->nslack && v[a].lo < hi; a++) {
        uintptr_t from = v[a].lo > lo ? v[a].lo : lo;
        uintptr_t to = v[a].hi < hi ? v[a].hi : hi;
        memset((char *)buf + (from - lo), 0, to - from);
    }
}

/* loader: the words are the dynamic loader's own data (roots.h), which
 * holds host memory only (link maps, TLS, its caches) and a dangling pointer
 * to the ld.so.cache mapping it unmapped (glibc's cache_new), where the
 * next mmap of that size lands: a pinned block there would look kept.
 * Its words keep host blocks only. */
static void scan_range(struct gs_scan *s, uintptr_t lo, uintptr_t hi, uint8_t mode, int loader,
                       int cuda)
{
    s->cur_weak = 0;
    s->cur_loader = loader;
    s->cur_cuda = cuda;
    lo &= ~(uintptr_t)7;
    static uintptr_t buf[8192];
    /* Our own thread's id, not the process's: process_vm_readv finds the
     * memory through the task it is given, and the main thread, once ended
     * (pthread_exit in main, workers running), has none (ESRCH: every root
     * was skipped and every block came out definite). */
    pid_t pid = gs_raw_gettid();
    while (lo < hi) {
        size_t n = hi - lo < sizeof buf ? hi - lo : sizeof buf;
        size_t got = read_root_chunk(lo, n, buf, pid);
        if (!got) {
            lo = (lo + 4096) & ~(uintptr_t)4095; /* skip the page that failed */
            continue;
        }
        if (s->nslack)
            blank_slack(s, lo, got / 8, buf);
        gs_mark_words(s, buf, got / 8, mode, NULL);
        lo += (uintptr_t)got;
    }
    s->cur_loader = 0;
    s->cur_cuda = 0;
}

/* A root range that is not the loader's, split where it meets the CUDA
 * modules' data segments (s->cdata, sorted and disjoint). */
static void scan_plain(struct gs_scan *s, uintptr_t lo, uintptr_t hi, uint8_t mode)
{
    for (size_t i = 0; i < s->ncdata && lo < hi; i++) {
        uintptr_t a = s->cdata[i].lo, z = s->cdata[i].hi;
        if (z <= lo)
            continue;
        if (a >= hi)
            break;
        if (lo < a)
            scan_range(s, lo, a, mode, 0, 0);
        scan_range(s, lo > a ? lo : a, hi < z ? hi : z, mode, 0, 1);
        lo = z;
    }
    if (lo < hi)
        scan_range(s, lo, hi, mode, 0, 0);
}

/* A root range, split where it meets the loader's data (a merged mapping
 * may hold both). */
static void scan_root(struct gs_scan *s, const struct gs_roots *roots, uintptr_t lo, uintptr_t hi,
                      uint8_t mode)
{
    uintptr_t a = roots->loader_lo, z = roots->loader_hi;
    if (z <= lo || a >= hi) {
        scan_plain(s, lo, hi, mode);
        return;
    }
    if (lo < a)
        scan_plain(s, lo, a, mode);
    scan_range(s, lo > a ? lo : a, hi < z ? hi : z, mode, 1, 0);
    if (z < hi)
        scan_plain(s, z, hi, mode);
}

typedef void (*span_fn)(struct gs_scan *s, uint8_t kind, uintptr_t lo, uintptr_t hi,
                        uint8_t mode, struct gs_block *leader);

/* Calls fn on each part of [lo, hi) outside the sorted, merged ranges v[n]
 * (a range's end rounded up to a word) and returns the bytes it left out:
 * the unreadable pages of the heap (noread) and the unused capacity of
 * CPython's lists (slack) are walked around alike. */
static uint64_t around(struct gs_scan *s, const struct gs_range *v, size_t n, span_fn fn,
                       uint8_t kind, uintptr_t lo, uintptr_t hi, uint8_t mode,
                       struct gs_block *leader)
{
    uint64_t skipped = 0;
    for (size_t a = gs_range_first_after(v, n, lo); lo < hi; a++) {
        uintptr_t stop = a < n && v[a].lo < hi ? v[a].lo : hi;
        if (stop > lo)
            fn(s, kind, lo, stop, mode, leader);
        if (stop == hi)
            break;
        uintptr_t resume = v[a].hi < hi ? (v[a].hi + 7) & ~(uintptr_t)7 : hi;
        skipped += resume - (stop > lo ? stop : lo);
        lo = resume;
    }
    return skipped;
}

static void mark_words_span(struct gs_scan *s, uint8_t kind, uintptr_t lo, uintptr_t hi,
                            uint8_t mode, struct gs_block *leader)
{
    (void)kind;
    gs_mark_words(s, (const uintptr_t *)lo, (hi - lo) / 8, mode, leader);
}

static void mark_span(struct gs_scan *s, uint8_t kind, uintptr_t lo, uintptr_t hi, uint8_t mode,
                      struct gs_block *leader);

/* A block's bytes. Those in slack (roots.h) hold no value and are skipped:
 * only a block larger than pymalloc's 512 bytes can hold a list's item
 * array, so smaller ones are not looked up. */
void gs_mark_block(struct gs_scan *s, const struct gs_block *b, uint8_t mode,
                   struct gs_block *leader)
{
    uintptr_t lo = b->addr, hi = b->addr + b->size / 8 * 8;
    if (GS_LIKELY(!s->nslack || b->size <= 512 || b->kind != GS_MEM_HOST))
        mark_span(s, b->kind, lo, hi, mode, leader);
    else
        around(s, s->slack, s->nslack, mark_span, b->kind, lo, hi, mode, leader);
}

/* [lo, hi) of a block of that kind. Blocks are read in place (a copy would
 * cost a syscall per block), so the pages the program made unreadable
 * (s->noread, from /proc/self/maps with the world stopped) are left out and
 * counted: nothing else can change a protection until the world restarts
 * (gcspy's writer thread never touches the program's heap). Almost always
 * there are none. */
static void mark_span(struct gs_scan *s, uint8_t kind, uintptr_t lo, uintptr_t hi, uint8_t mode,
                      struct gs_block *leader)
{
    if (GS_UNLIKELY(kind == GS_MEM_PINNED || kind == GS_MEM_MANAGED)) {
        /* CUDA host memory is copied out as roots are: a pinned block the
         * driver unmapped by a path the hooks did not see must not fault,
         * and write-combined pages are read once, in bulk */
        static uintptr_t buf[8192];
        pid_t pid = getpid();
        while (lo < hi) {
            size_t n = hi - lo < sizeof buf ? hi - lo : sizeof buf;
            size_t got = read_root_chunk(lo, n, buf, pid) / 8 * 8;
            if (got)
                gs_mark_words(s, buf, got / 8, mode, leader);
            if (got < n) { /* the rest of the page is gone: skip it */
                uintptr_t next = (lo + got + 4096) & ~(uintptr_t)4095;
                if (next > hi)
                    next = hi;
                s->unreadable_bytes += next - (lo + got);
                lo = next;
                continue;
            }
            lo += got;
        }
        return;
    }
    if (GS_LIKELY(!s->nnoread))
        gs_mark_words(s, (const uintptr_t *)lo, (hi - lo) / 8, mode, leader);
    else
        s->unreadable_bytes +=
            around(s, s->noread, s->nnoread, mark_words_span, kind, lo, hi, mode, leader);
}

void gs_mark_drain(struct gs_scan *s, uint8_t mode, struct gs_block *leader)
{
    while (s->sp) {
        struct gs_block *b = s->stack[--s->sp];
        s->visited++;
        s->cur_weak = gs_is_weak(s, b);
        s->cur_cuda = gs_is_cuda(s, b);
        gs_mark_block(s, b, mode, leader);
    }
    s->cur_cuda = 0;
}

/* ---- held by the CUDA runtime ---- */

/* One word of the runtime's memory (or of a block it holds): a CUDA block
 * not otherwise reached is held; pinned and managed ones are host memory
 * and are read in turn (what they point to is held too). Any pointer into
 * a block counts: the driver's tables keep ranges. */
static void held_word(struct gs_scan *s, uintptr_t w)
{
    if (!plausible(s, w))
        return;
    struct gs_block *b = find_start(w);
    if (!b)
        b = find_containing(s, w);
    if (!b || b->kind == GS_MEM_HOST || b->mark != M_NONE)
        return;
    b->mark = M_HELD;
    s->held_blocks++;
    if (b->kind != GS_MEM_DEVICE && b->kind != GS_MEM_VMM &&
        (b->kind != GS_MEM_MANAGED || s->scan_managed) && s->sp < s->stack_cap)
        s->stack[s->sp++] = b;
}

/* [lo, hi) copied out a chunk at a time (process_vm_readv: a page that
 * went away since the stop is skipped, never a fault). */
static void held_range(struct gs_scan *s, uintptr_t lo, uintptr_t hi)
{
    static uintptr_t buf[8192];
    pid_t pid = getpid();
    lo &= ~(uintptr_t)7;
    while (lo < hi) {
        size_t n = hi - lo < sizeof buf ? hi - lo : sizeof buf;
        size_t got = read_root_chunk(lo, n, buf, pid);
        if (!got) {
            lo = (lo + 4096) & ~(uintptr_t)4095;
            continue;
        }
        s->bytes_scanned += got / 8 * 8;
        for (size_t i = 0; i < got / 8; i++)
            held_word(s, buf[i]);
        lo += (uintptr_t)got;
    }
}

static void held_drain(struct gs_scan *s)
{
    while (s->sp) {
        struct gs_block *b = s->stack[--s->sp];
        s->visited++;
        held_range(s, b->addr, b->addr + b->size / 8 * 8);
    }
}

void gs_mark_held(struct gs_scan *s)
{
    if (!s->ncdata && !s->cbits)
        return;
    for (size_t i = 0; i < s->ncdata; i++) {
        held_range(s, s->cdata[i].lo, s->cdata[i].hi);
        held_drain(s);
    }
    if (!s->cbits)
        return;
    /* every owned block, reached or not: a table the runtime leaked still
     * says nothing about the program's blocks */
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        for (uint64_t j = 0; j < sh->cap; j++) {
            struct gs_block *b = &sh->slots[j];
            if (!b->addr || !gs_is_cuda(s, b))
                continue;
            s->visited++;
            held_range(s, b->addr, b->addr + b->size / 8 * 8);
            held_drain(s);
        }
    }
}

/* ---- setup ---- */

/* A device or VMM block the caching allocator owns: allocated from its
 * code, or inside a segment of the snapshot (an expandable segment's range
 * holds each of its mapped pages). Not when the allocator keeps no
 * segments (backend:cudaMallocAsync): its blocks are the tensors. */
static int is_segment(const struct gs_scan *s, const struct gs_block *b)
{
    const struct gs_pool_view *pool = s->pool;
    if (pool && pool->no_segments)
        return 0;
    if (gs_is_weak(s, b))
        return 1;
    if (!pool)
        return 0;
    size_t a = gs_keyed_upto(pool->seg, pool->nseg, sizeof *pool->seg, b->addr);
    return a && b->addr < pool->seg[a - 1].addr + pool->seg[a - 1].size;
}

/* Pass over the table: regions, large blocks, heap exclusions, totals. */
int gs_mark_prepass(struct gs_scan *s, struct gs_range **heap, size_t *nheap, size_t *heap_cap)
{
    if (regions_grow(s, 1024))
        return -1;
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
            if ((b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM) && (s->bits || s->pool) &&
                is_segment(s, b)) {
                b->mark = M_POOL;
                s->pool_blocks++;
            }
            s->live_blocks++;
            s->live_bytes += b->size;
            uintptr_t end = b->addr + (b->size ? b->size : 1);
            if (b->addr < s->lo)
                s->lo = b->addr;
            if (end > s->hi)
                s->hi = end;
            int host = b->kind != GS_MEM_DEVICE && b->kind != GS_MEM_VMM;
            if (b->size >= GS_LARGE) {
                if (GS_GROW(s->large, s->large_cap, s->nlarge + 1, 1024))
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
            int fresh = region_add(s, r), fresh2 = r2 != r ? region_add(s, r2) : 0;
            if (fresh < 0 || fresh2 < 0)
                return -1;
            fresh |= fresh2;
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

void gs_mark_roots(struct gs_scan *s, const struct gs_roots *roots)
{
    /* 3. roots, start pointers */
    gs_mark_words(s, roots->regs, roots->nregs, M_REACH, NULL);
    for (size_t i = 0; i < roots->n; i++) {
        scan_root(s, roots, roots->r[i].lo, roots->r[i].hi, M_REACH);
        gs_mark_drain(s, M_REACH, NULL);
    }
    gs_mark_drain(s, M_REACH, NULL);
    /* 4. interior pointers: device blocks reachable, others possible */
    for (size_t i = 0; i < s->ninterior; i++) {
        struct gs_block *b = find_containing(s, s->interior[i]);
        if (b && b->mark == M_POOL) {
            pool_visit(s, s->interior[i], M_REACH);
            continue;
        }
        if (!b || b->mark != M_NONE || is_next_chunk(b, s->interior[i]))
            continue;
        int leaf = b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM;
        push(s, b, leaf ? M_REACH : M_POSS);
        gs_mark_drain(s, M_POSS, NULL);
    }
    if (s->interior_overflow) {
        /* Too many to remember: rescan the roots following every pointer. */
        s->ninterior = 0;
        for (size_t i = 0; i < roots->n; i++) {
            scan_root(s, roots, roots->r[i].lo, roots->r[i].hi, M_POSS);
            gs_mark_drain(s, M_POSS, NULL);
        }
    }
}

int gs_mark_pages_init(uint64_t total)
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

void gs_mark_free(struct gs_scan *s)
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

