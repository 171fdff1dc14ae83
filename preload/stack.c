/*
 * Call stacks: capture at each allocation, and interning so each distinct
 * stack is written once and events carry a small id.
 *
 * Capture by default (GCSPY_UNWIND=fp) steps from frame to frame by a rule
 * per return address (unwind.c: the frame-pointer convention where the code
 * keeps frame pointers, the module's .eh_frame where it does not), cached
 * per thread; a return address outside executable code ends the walk, and
 * every word read is checked against the thread's stack bounds first, so
 * garbage where a frame pointer would be can neither become a frame nor make
 * the walk fault. On the hot path a plain frame-pointer walk (a handful of
 * loads per frame, the cost LeakSanitizer pays) finds the id when the rules
 * have shown that its frames name the stack (gs_stack_id).
 * GCSPY_UNWIND=libunwind walks with libunwind instead.
 *
 * Interning keeps heaptrack's trace tree: a node is (parent, ip); a stack is
 * named by its innermost node, and a node is written (a STACK record in the
 * meta stream) the first time it is created, always before any event that
 * uses it. In front of the tree sits a per-thread direct-mapped cache from a
 * 64-bit hash of the whole stack to its id, so the common case (a stack seen
 * before by this thread) costs one hash and one compare, no lock. Two stacks
 * with the same 64-bit hash would share an id; with a million distinct stacks
 * the chance of that is about 3e-8 per run.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "emit.h"
#include "mem.h"
#include "modules.h"
#include "pyframes.h"
#include "stack.h"
#include "libunwind_dl.h"
#include "unwind.h"

/* Node table: open addressing, plus arrays indexed by id. A node is found
 * by the hash of its whole path from the root (path_step over the frames,
 * outermost first), not of (parent, ip) alone: so the slots of every frame
 * of a stack are known before the first is read, and intern_hashed
 * prefetches them all. With millions of nodes (import torch makes 2.6
 * million) each slot read is a cache and TLB miss; one after the other they
 * were most of import torch's cost under the shim. A slot holds the path
 * hash's top half (its index is the top bits of that half, so a grow
 * rehashes from the slots alone, in order) and the id; a node whose tag
 * matches is still checked against (parent, ip), so two paths with one hash
 * stay two nodes. */
static atomic_int stack_lock;
static uint64_t *node_ip;     /* [id] */
static uint32_t *node_parent; /* [id] */
static uint64_t *node_slots;  /* tag << 32 | id, 0 = empty */
static uint64_t node_cap;     /* ids available (arrays sized node_cap) */
static uint64_t slot_cap;     /* power of two, 2 * node_cap, at most 2^32 */
static unsigned slot_bits;    /* log2(slot_cap) */
static uint32_t node_next = 1;

#define GS_PATH_SEED 0x452821E638D01377ull

static inline uint64_t path_step(uint64_t ph, uint64_t ip)
{
    uint64_t h = (ph ^ ip) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return h * 0xBF58476D1CE4E5B9ull;
}

static inline uint64_t slot_index(uint64_t tag32, unsigned bits)
{
    return tag32 >> (32 - bits);
}

/* A huge page per 2 MiB of a table this size: its reads are random. */
static void table_pages(void *p, size_t len)
{
    if (p && len >= (2u << 20))
        madvise(p, len, MADV_HUGEPAGE);
}

static int node_grow(void)
{
    uint64_t ncap = node_cap ? node_cap * 2 : 4096, nslots = ncap * 2;
    unsigned nbits = slot_bits ? slot_bits + 1 : 13;
    if (nslots > (1ull << 32))
        return -1;
    uint64_t *nip = gs_pages_alloc(ncap * sizeof *nip);
    uint32_t *npar = gs_pages_alloc(ncap * sizeof *npar);
    uint64_t *nsl = gs_pages_alloc(nslots * sizeof *nsl);
    if (!nip || !npar || !nsl) {
        gs_pages_free(nip, ncap * sizeof *nip);
        gs_pages_free(npar, ncap * sizeof *npar);
        gs_pages_free(nsl, nslots * sizeof *nsl);
        return -1;
    }
    table_pages(nip, ncap * sizeof *nip);
    table_pages(nsl, nslots * sizeof *nsl);
    /* The rehash fills the slots a quarter full: every page (gs_pages_prefault) */
    gs_pages_prefault(nsl, nslots * sizeof *nsl);
    if (node_cap) {
        /* the halves the copies write, each faulted in at once */
        gs_pages_prefault(nip, node_cap * sizeof *nip);
        gs_pages_prefault(npar, node_cap * sizeof *npar);
        memcpy(nip, node_ip, node_cap * sizeof *nip);
        memcpy(npar, node_parent, node_cap * sizeof *npar);
    }
    for (uint64_t i = 0; i < slot_cap; i++) {
        uint64_t e = node_slots[i];
        if (!e)
            continue;
        uint64_t j = slot_index(e >> 32, nbits);
        while (nsl[j])
            j = (j + 1) & (nslots - 1);
        nsl[j] = e;
    }
    gs_pages_free(node_ip, node_cap * sizeof *node_ip);
    gs_pages_free(node_parent, node_cap * sizeof *node_parent);
    gs_pages_free(node_slots, slot_cap * sizeof *node_slots);
    node_ip = nip;
    node_parent = npar;
    node_slots = nsl;
    node_cap = ncap;
    slot_cap = nslots;
    slot_bits = nbits;
    return 0;
}

void gs_stack_lock(void) { gs_spin_lock(&stack_lock); }
void gs_stack_unlock(void) { gs_spin_unlock(&stack_lock); }

#define GS_NODE_AHEAD 65536u /* a power of two */

/* The node (parent, ip) whose path hash is ph. Caller holds stack_lock and
 * the meta lock. Returns 0 on failure. */
static uint32_t node_get(uint32_t parent, uint64_t ip, uint64_t ph)
{
    if (node_next >= node_cap && node_grow())
        return 0;
    uint64_t tag = ph >> 32, mask = slot_cap - 1, j = slot_index(tag, slot_bits);
    for (uint64_t e; (e = node_slots[j]); j = (j + 1) & mask) {
        uint32_t id = (uint32_t)e;
        if (e >> 32 == tag && node_ip[id] == ip && node_parent[id] == parent)
            return id;
    }
    uint32_t id = node_next;
    if (gs_emit_stack_node(id, parent, ip))
        return 0;
    node_next++;
    /* New nodes fill the arrays' second half a page at a time: fault the
     * next GS_NODE_AHEAD of them in with one call each time the fill reaches
     * a step (import torch's 2.6 million nodes otherwise take a trap every
     * 512 nodes of node_ip; at most GS_NODE_AHEAD nodes' room, 768 KiB, is
     * faulted in before it is used). */
    if (GS_UNLIKELY(!(id & (GS_NODE_AHEAD - 1)))) {
        uint64_t n = node_cap - id < GS_NODE_AHEAD ? node_cap - id : GS_NODE_AHEAD;
        gs_pages_prefault(node_ip + id, n * sizeof *node_ip);
        gs_pages_prefault(node_parent + id, n * sizeof *node_parent);
    }
    node_ip[id] = ip;
    node_parent[id] = parent;
    node_slots[j] = tag << 32 | id;
    return id;
}

/* One multiply per frame; the finalizer (murmur3's) spreads every bit. */
static inline uint64_t hash_step(uint64_t h, uint64_t ip)
{
    return (h ^ ip) * 0x100000001B3ull + 0x9E3779B97F4A7C15ull;
}

static inline uint64_t hash_end(uint64_t h, int n)
{
    h ^= (uint64_t)n;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h | 1; /* never 0: 0 marks an empty cache slot */
}

#define GS_HASH_SEED 0x243F6A8885A308D3ull

/* A cache entry's id with this bit: the raw walk's frames do not name the
 * stack (a caller without frame pointers sits between them): walk again. */
#define GS_ID_WALK 0x80000000u

static inline uint64_t stack_hash(const uintptr_t *ips, int n)
{
    uint64_t h = GS_HASH_SEED;
    for (int i = 0; i < n; i++)
        h = hash_step(h, ips[i]);
    return hash_end(h, n);
}

/* Interns ips[0..n) whose stack_hash() is h, and caches the id. The outer
 * frames a stack shares with the thread's last interned one (the import
 * machinery's and the interpreter's under every allocation of a Python
 * import, the thread's start code under everything) name the same nodes,
 * which the thread keeps (stk_ip, stk_id: a node's id never changes, in a
 * fork child too): only the frames below them are looked up in the tree,
 * under its lock, each lookup a few cache misses in a table of millions of
 * nodes. */
static uint32_t intern_hashed(struct gs_thread *th, const uintptr_t *ips, int n, uint64_t h)
{
    uint32_t id = 0;
    uint64_t ph = GS_PATH_SEED;
    int k = 0;
    if (th) {
        while (k < n && k < th->stk_n && th->stk_ip[k] == ips[n - 1 - k])
            k++;
        if (k) {
            id = th->stk_id[k - 1];
            ph = th->stk_ph[k - 1];
        }
    }
    if (k < n) {
        /* A new stack may come from a library loaded since we last looked:
         * record the module map first (outside our locks: it takes the
         * loader's). */
        gs_modules_sync();
        gs_spin_lock(&stack_lock);
        gs_spin_lock(&gs_meta.lock);
        if (th) {
            uint64_t p = ph;
            for (int i = k; i < n; i++) {
                p = path_step(p, ips[n - 1 - i]);
                th->stk_ph[i] = p;
                if (slot_bits)
                    __builtin_prefetch(&node_slots[slot_index(p >> 32, slot_bits)]);
            }
        }
        for (; k < n; k++) {
            uint64_t ip = ips[n - 1 - k];
            ph = th ? th->stk_ph[k] : path_step(ph, ip);
            if (!(id = node_get(id, ip, ph)))
                break;
            if (th) {
                th->stk_ip[k] = ip;
                th->stk_id[k] = id;
            }
        }
        gs_spin_unlock(&gs_meta.lock);
        gs_spin_unlock(&stack_lock);
        if (th)
            th->stk_n = k;
    }
    if (id && th) {
        unsigned slot = gs_stk_slot(h);
        th->cache_hash[slot] = h;
        th->cache_id[slot] = id;
        th->cache_sp[slot] = 0;
    }
    return id;
}

uint32_t gs_stack_intern(const uintptr_t *ips, int n)
{
    if (n <= 0)
        return 0;
    struct gs_thread *th = gs_tls.th;
    uint64_t h = stack_hash(ips, n);
    unsigned slot = gs_stk_slot(h);
    if (th && th->cache_hash[slot] == h)
        return th->cache_id[slot] & ~GS_ID_WALK;
    return intern_hashed(th, ips, n, h);
}

/* After fork, the child's new trace needs every node again. Caller holds the
 * stack lock and the meta lock (the atfork handlers take them). */
void gs_stack_reemit(void)
{
    for (uint32_t id = 1; id < node_next; id++)
        if (gs_emit_stack_node(id, node_parent[id], node_ip[id]))
            return;
}

/* The default walk: from the hook's own frame (built with frame pointers)
 * outwards, one cached rule per return address (unwind.c). A frame is taken
 * only if its return address lies in executable code of a loaded module
 * (the rule is not NONE), and each step must move the CFA strictly up the
 * thread's own stack: every word read lies in [hook frame, stack_hi), so no
 * value left in rbp by code without frame pointers can make the walk read
 * elsewhere or fault. A hook frame outside the thread's known stack (a
 * signal stack, a coroutine's) records the first frame only. A frame in
 * [stop_lo, stop_hi) is the last. Hashes as it goes (stack_hash()'s
 * function). *w says how the frames relate to
 * raw_walk()'s: std_end, the first frame whose rule is not the frame-pointer
 * convention (n if none), and the last frame's kind. */
struct walk_info {
    int std_end;
    int last_kind;
};

static inline __attribute__((always_inline)) int
walk(struct gs_thread *th, void *hook_frame, uintptr_t *ips, int max, uint64_t *hash,
     struct walk_info *w, uintptr_t stop_lo, uintptr_t stop_hi)
{
    const uintptr_t *f = hook_frame;
    uintptr_t sp = (uintptr_t)hook_frame + 16, fp = f[0], ip = f[1], hi = 0;
    /* Without a thread struct (its TSD destructors ran), one slot of our
     * own: every frame a lookup, and the walk ends after the first anyway. */
    struct gs_unw_rule one = {0, 0, 0, 0, 0}, *rules = &one;
    uint64_t mask = 0;
    if (th) {
        gs_unw_check(th);
        rules = th->unw;
        mask = (1u << GS_UNW_BITS) - 1;
        if ((uintptr_t)hook_frame >= th->stack_lo && sp < th->stack_hi)
            hi = th->stack_hi;
    }
    uint64_t h = GS_HASH_SEED;
    int n = 0, std_end = -1, last_kind = GS_UNW_NONE;
    while (n < max) {
        uint64_t i = gs_unw_slot(ip) & mask;
        struct gs_unw_rule *r = &rules[i];
        if (GS_UNLIKELY(r->ip != ip))
            r = gs_unw_miss(rules, i, mask, ip);
        /* a NONE read before a module was loaded is read again */
        if (r->kind == GS_UNW_NONE &&
            (gs_unw_none_fresh(r) || gs_unw_fill(r, ip)->kind == GS_UNW_NONE))
            break;
        if (w) {
            if (!r->std && std_end < 0)
                std_end = n;
            last_kind = r->kind;
        }
        ips[n++] = ip;
        h = hash_step(h, ip);
        if (r->kind == GS_UNW_LAST || ip - stop_lo < stop_hi - stop_lo)
            break;
        /* Unsigned wrap-around of a garbage base lands below sp: rejected. */
        uintptr_t cfa = (r->kind == GS_UNW_SP ? sp : fp) + (uintptr_t)(intptr_t)r->cfa_off;
        if (cfa <= sp || cfa > hi || (cfa & 7))
            break;
        if (r->fp_off) {
            /* Below the hook's frame only by a rule's large offset; with the
             * frame-pointer convention never (cfa - 16 > sp - 16), which
             * raw_walk() relies on. */
            uintptr_t at = cfa + (uintptr_t)(intptr_t)r->fp_off;
            if (at < (uintptr_t)hook_frame)
                break;
            fp = *(const uintptr_t *)at;
        }
        ip = ((const uintptr_t *)cfa)[-1];
        sp = cfa;
    }
    if (w) {
        w->std_end = std_end < 0 ? n : std_end;
        w->last_kind = last_kind;
    }
    *hash = hash_end(h, n);
    return n;
}

/* walk() as if every frame followed the frame-pointer convention, with the
 * same checks, storing nothing: the hot path's first look. Its hash (another
 * seed: never the id of these frames, but of walk()'s) names the stack only
 * when walk() has shown that the rules agree (gs_stack_id); *last_sp: the
 * last frame's sp. */
#define GS_RAW_SEED 0x13198A2E03707344ull

static inline int raw_walk(struct gs_thread *th, void *hook_frame, int max, uint64_t *hash,
                           uintptr_t *last_sp)
{
    const uintptr_t *f = hook_frame;
    uintptr_t sp = (uintptr_t)hook_frame + 16, fp = f[0], ip = f[1], hi = 0;
    if ((uintptr_t)hook_frame >= th->stack_lo && sp < th->stack_hi)
        hi = th->stack_hi;
    uint64_t h = GS_RAW_SEED;
    int n = 0;
    for (;;) {
        h = hash_step(h, ip);
        if (++n >= max)
            break;
        uintptr_t cfa = fp + 16;
        if (cfa <= sp || cfa > hi || (cfa & 7))
            break;
        ip = ((const uintptr_t *)cfa)[-1];
        fp = *(const uintptr_t *)fp;
        sp = cfa;
    }
    *last_sp = sp;
    *hash = hash_end(h, n);
    return n;
}

/* libunwind's walk takes about 8 KiB of stack below the hook, and a stop
 * signal landing inside it pushes a signal frame of up to 4 KiB (the CPU's
 * whole XSAVE state) on top: a thread with less than this left below the
 * hook takes the default walk instead, or it would overflow its stack
 * (rel_odd's 16 KiB threads did, about one run in six). */
#define GS_UNWIND_STACK_NEED (16u << 10)

static int unwind_fits(const struct gs_thread *th, void *hook_frame)
{
    uintptr_t sp = (uintptr_t)hook_frame;
    return !th || !th->stack_lo || (sp > th->stack_lo && sp - th->stack_lo >= GS_UNWIND_STACK_NEED);
}

int gs_stack_capture(void *hook_frame, uintptr_t *ips, int max)
{
    int n = 0;
    void *buf[GS_MAX_DEPTH + 16];
    int got;
    /* -1: libunwind not loaded (yet, or not installed): the default walk */
    if (gs_opt.unwind == GS_UNWIND_LIBUNWIND && unwind_fits(gs_tls.th, hook_frame) &&
        (got = gs_unw_backtrace(buf, max + 16 < GS_MAX_DEPTH + 16 ? max + 16 : GS_MAX_DEPTH + 16)) >= 0) {
        int i = 0;
        while (i < got && (uintptr_t)buf[i] >= gs_self_lo && (uintptr_t)buf[i] < gs_self_hi)
            i++;
        /* An address with GS_IP_PYFRAME's bit is no code: never let one
         * pass for a Python frame. */
        for (; i < got && n < max && !((uintptr_t)buf[i] & GS_IP_PYFRAME); i++)
            ips[n++] = (uintptr_t)buf[i];
        return gs_py_merge(ips, n, max);
    }
    /* With Python frames on, the native walk ends at the innermost frame of
     * the interpreter's evaluator, where gs_py_merge puts the Python frames.
     * What lies beyond is the interpreter calling itself (calls, imports)
     * between Python frames: walking it would cost a rule per frame, and
     * keeping it would add the interpreter's own frames to every Python
     * stack. */
    uint64_t h;
    uintptr_t lo = 0, hi = 0;
    if (gs_py_active())
        gs_py_stop_range(&lo, &hi);
    n = walk(gs_tls.th, hook_frame, ips, max, &h, NULL, lo, hi);
    return gs_py_merge(ips, n, max);
}

/* The hot path of every allocation: the stack's id. With the default walker
 * and no Python frames to merge, raw_walk() first: where every frame keeps
 * frame pointers (the common case of code built for it), its hash finds
 * the id in the thread's cache, at the old frame-pointer walk's cost. The
 * entry was made by walk() the first time, which also says whether the raw
 * frames determine walk()'s (they do when walk()'s frames follow the
 * frame-pointer convention up to an outermost or a non-code frame, or up to
 * the raw walk's last frame when only glibc's start code (at most two more
 * frames, the last outermost) lies beyond it: then the entry also holds that
 * frame's sp, as what lies above a thread's outermost frames does not change
 * while it runs). Otherwise the entry says "walk": walk() runs every time
 * and its own hash names the stack. Anything else takes the general path
 * (capture, merge, intern). */
/* gs_stack_id's way when the raw walk's hash is not enough: walk(), intern,
 * and the raw entry for next time (out of line: the hot path keeps a small
 * frame). */
static __attribute__((noinline)) uint32_t stack_id_walk(struct gs_thread *th, void *hook_frame,
                                                       int m, uint64_t rh, uintptr_t last_sp)
{
    uintptr_t ips[GS_MAX_DEPTH];
    uint64_t h;
    struct walk_info w;
    int n = walk(th, hook_frame, ips, (int)gs_opt.depth, &h, &w, 0, 0);
    if (!n)
        return 0;
    unsigned slot = gs_stk_slot(h);
    uint32_t id = th->cache_hash[slot] == h ? th->cache_id[slot] & ~GS_ID_WALK
                                            : intern_hashed(th, ips, n, h);
    if (!id)
        return 0;
    uint32_t flag = GS_ID_WALK;
    uint64_t want = 0;
    if (w.std_end == n || (w.std_end == n - 1 && w.last_kind == GS_UNW_LAST)) {
        flag = 0; /* every frame by the convention, or it ends at an outermost one */
    } else if (w.std_end == m - 1 && n <= m + 2 && w.last_kind == GS_UNW_LAST) {
        flag = 0; /* glibc's start code beyond the raw walk's last frame */
        want = last_sp;
    }
    unsigned rslot = gs_stk_slot(rh);
    th->cache_hash[rslot] = rh;
    th->cache_id[rslot] = id | flag;
    th->cache_sp[rslot] = want;
    return id;
}

uint32_t gs_stack_id(void *hook_frame)
{
    struct gs_thread *th = gs_tls.th;
    if (GS_LIKELY(gs_opt.unwind == GS_UNWIND_FP && th && !gs_py_active())) {
        uint64_t rh;
        uintptr_t last_sp;
        if (GS_UNLIKELY(gs_unw_check(th)))
            memset(th->cache_hash, 0, sizeof th->cache_hash); /* raw entries name old rules' stacks */
        int m = raw_walk(th, hook_frame, (int)gs_opt.depth, &rh, &last_sp);
        unsigned rslot = gs_stk_slot(rh);
        if (GS_LIKELY(th->cache_hash[rslot] == rh)) {
            uint32_t id = th->cache_id[rslot];
            uint64_t want = th->cache_sp[rslot];
            if (GS_LIKELY(!(id & GS_ID_WALK) && (!want || want == last_sp)))
                return id;
        }
        return stack_id_walk(th, hook_frame, m, rh, last_sp);
    }
    uintptr_t ips[GS_MAX_DEPTH];
    int n = gs_stack_capture(hook_frame, ips, (int)gs_opt.depth);
    return gs_stack_intern(ips, n);
}

/* Scanner bits for PyTorch-aware mode (torch.c). A parent always has a
 * smaller id than its children (the outer frames of a stack are interned
 * first), so one pass in id order sees every parent's bit before its
 * children's. The node arrays are read under the stack lock: they move when
 * they grow. */
uint32_t gs_stack_bits_fill(uint8_t **bits, uint64_t *cap, uint32_t from,
                            uint8_t (*of)(uint64_t ip))
{
    gs_stack_lock();
    uint32_t n = node_next;
    if (GS_GROW(*bits, *cap, n, 4096)) {
        gs_stack_unlock();
        return from;
    }
    uint8_t *b = *bits;
    b[0] = 0;
    for (uint32_t id = from ? from : 1; id < n; id++)
        b[id] = (uint8_t)(of(node_ip[id]) | (b[node_parent[id]] & GS_SB_WEAK));
    gs_stack_unlock();
    return n;
}
