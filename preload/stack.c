/*
 * Call stacks: capture at each allocation, and interning so each distinct
 * stack is written once and events carry a small id.
 *
 * Capture walks frame pointers by default (GCSPY_UNWIND=fp): a handful of
 * loads per frame, the cost LeakSanitizer pays. Every frame pointer is
 * checked against the thread's stack bounds before it is dereferenced, so
 * code built without frame pointers ends the walk early but can never make it
 * fault. GCSPY_UNWIND=libunwind uses DWARF unwind tables instead: complete
 * stacks through any code, several times slower.
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
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>

#include "emit.h"
#include "mem.h"
#include "modules.h"
#include "pyframes.h"
#include "stack.h"

/* Node table: open addressing on (parent, ip), plus arrays indexed by id. */
static atomic_int stack_lock;
static uint64_t *node_ip;     /* [id] */
static uint32_t *node_parent; /* [id] */
static uint32_t *node_slots;  /* hash slots holding ids, 0 = empty */
static uint64_t node_cap;     /* ids available (arrays sized node_cap) */
static uint64_t slot_cap;     /* power of two, >= 2 * node_cap */
static uint32_t node_next = 1;

static inline uint64_t node_hash(uint32_t parent, uint64_t ip)
{
    uint64_t h = (ip ^ ((uint64_t)parent << 40 | parent)) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

static int node_grow(void)
{
    uint64_t ncap = node_cap ? node_cap * 2 : 4096, nslots = ncap * 2;
    uint64_t *nip = gs_pages_alloc(ncap * sizeof *nip);
    uint32_t *npar = gs_pages_alloc(ncap * sizeof *npar);
    uint32_t *nsl = gs_pages_alloc(nslots * sizeof *nsl);
    if (!nip || !npar || !nsl) {
        gs_pages_free(nip, ncap * sizeof *nip);
        gs_pages_free(npar, ncap * sizeof *npar);
        gs_pages_free(nsl, nslots * sizeof *nsl);
        return -1;
    }
    if (node_cap) {
        memcpy(nip, node_ip, node_cap * sizeof *nip);
        memcpy(npar, node_parent, node_cap * sizeof *npar);
    }
    for (uint32_t id = 1; id < node_next; id++) {
        uint64_t j = node_hash(npar[id], nip[id]) & (nslots - 1);
        while (nsl[j])
            j = (j + 1) & (nslots - 1);
        nsl[j] = id;
    }
    gs_pages_free(node_ip, node_cap * sizeof *node_ip);
    gs_pages_free(node_parent, node_cap * sizeof *node_parent);
    gs_pages_free(node_slots, slot_cap * sizeof *node_slots);
    node_ip = nip;
    node_parent = npar;
    node_slots = nsl;
    node_cap = ncap;
    slot_cap = nslots;
    return 0;
}

void gs_stack_lock(void) { gs_spin_lock(&stack_lock); }
void gs_stack_unlock(void) { gs_spin_unlock(&stack_lock); }

/* Caller holds stack_lock and the meta lock. Returns 0 on failure. */
static uint32_t node_get(uint32_t parent, uint64_t ip)
{
    if (node_next >= node_cap && node_grow())
        return 0;
    uint64_t mask = slot_cap - 1, j = node_hash(parent, ip) & mask;
    for (uint32_t id; (id = node_slots[j]); j = (j + 1) & mask)
        if (node_ip[id] == ip && node_parent[id] == parent)
            return id;
    uint32_t id = node_next;
    if (gs_emit_stack_node(id, parent, ip))
        return 0;
    node_next++;
    node_ip[id] = ip;
    node_parent[id] = parent;
    node_slots[j] = id;
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

static inline uint64_t stack_hash(const uintptr_t *ips, int n)
{
    uint64_t h = GS_HASH_SEED;
    for (int i = 0; i < n; i++)
        h = hash_step(h, ips[i]);
    return hash_end(h, n);
}

uint32_t gs_stack_intern(const uintptr_t *ips, int n)
{
    if (n <= 0)
        return 0;
    struct gs_thread *th = gs_tls.th;
    uint64_t h = stack_hash(ips, n);
    unsigned slot = (unsigned)(h >> 54);
    if (th && th->cache_hash[slot] == h)
        return th->cache_id[slot];

    /* A new stack may come from a library loaded since we last looked:
     * record the module map first (outside our locks: it takes the loader's). */
    gs_modules_sync();
    gs_spin_lock(&stack_lock);
    gs_spin_lock(&gs_meta.lock);
    uint32_t id = 0;
    for (int i = n - 1; i >= 0; i--)
        if (!(id = node_get(id, ips[i])))
            break;
    gs_spin_unlock(&gs_meta.lock);
    gs_spin_unlock(&stack_lock);
    if (id && th) {
        th->cache_hash[slot] = h;
        th->cache_id[slot] = id;
    }
    return id;
}

/* After fork, the child's new trace needs every node again. Caller holds the
 * stack lock and the meta lock (the atfork handlers take them). */
void gs_stack_reemit(void)
{
    for (uint32_t id = 1; id < node_next; id++)
        if (gs_emit_stack_node(id, node_parent[id], node_ip[id]))
            return;
}

/* libunwind's walk takes about 8 KiB of stack below the hook, and a stop
 * signal landing inside it pushes a signal frame of up to 4 KiB (the CPU's
 * whole XSAVE state) on top: a thread with less than this left below the
 * hook takes the frame-pointer walk instead, or it would overflow its stack
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
    if (gs_opt.unwind == GS_UNWIND_LIBUNWIND && unwind_fits(gs_tls.th, hook_frame)) {
        void *buf[GS_MAX_DEPTH + 16];
        int got = unw_backtrace(buf, max + 16 < GS_MAX_DEPTH + 16 ? max + 16 : GS_MAX_DEPTH + 16);
        int i = 0;
        while (i < got && (uintptr_t)buf[i] >= gs_self_lo && (uintptr_t)buf[i] < gs_self_hi)
            i++;
        for (; i < got && n < max; i++)
            ips[n++] = (uintptr_t)buf[i];
        return gs_py_merge(ips, n, max);
    }
    struct gs_thread *th = gs_tls.th;
    uintptr_t hi = th ? th->stack_hi : 0;
    uintptr_t *fp = hook_frame;
    while (n < max) {
        uintptr_t ret = fp[1];
        if (ret < 4096)
            break;
        ips[n++] = ret;
        uintptr_t next = fp[0];
        /* Frames grow towards higher addresses as we go outwards; anything
         * else, or a frame whose two words would reach past the stack's top,
         * ends the walk (written without pointer arithmetic that could wrap). */
        if (next <= (uintptr_t)fp || (next & 7) || hi < 16 || next > hi - 16)
            break;
        fp = (uintptr_t *)next;
    }
    return gs_py_merge(ips, n, max);
}

/* The hot path of every allocation: the stack's id. With the frame-pointer
 * walker and no Python frames to merge, the walk hashes as it goes and
 * stores nothing: a stack this thread has seen before (the common case)
 * costs one pass over the frames and one cache probe. Anything else takes
 * the general path (capture into an array, merge, intern). The hash is the
 * same as stack_hash()'s, so both paths share the cache. */
uint32_t gs_stack_id(void *hook_frame)
{
    struct gs_thread *th = gs_tls.th;
    if (GS_LIKELY(gs_opt.unwind == GS_UNWIND_FP && th && !gs_py_active())) {
        uintptr_t *fp = hook_frame;
        uintptr_t limit = th->stack_hi > 16 ? th->stack_hi - 16 : 0;
        uint64_t h = GS_HASH_SEED;
        int n = 0, max = (int)gs_opt.depth;
        while (n < max) {
            uintptr_t ret = fp[1], next = fp[0];
            if (ret < 4096)
                break;
            h = hash_step(h, ret);
            n++;
            if (next <= (uintptr_t)fp || next > limit || (next & 7))
                break;
            fp = (uintptr_t *)next;
        }
        if (!n)
            return 0;
        h = hash_end(h, n);
        unsigned slot = (unsigned)(h >> 54);
        if (GS_LIKELY(th->cache_hash[slot] == h))
            return th->cache_id[slot];
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
