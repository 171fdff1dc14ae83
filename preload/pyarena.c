/*
 * CPython's small-object arenas, scanned precisely. pymalloc carves 1 MiB
 * anonymous mappings into 16 KiB pools of one size class each (CPython
 * 3.10 to 3.14, 64-bit: Objects/obmalloc.c, USE_LARGE_ARENAS/POOLS under
 * the radix tree). Scanned whole as roots, an arena's freed blocks keep
 * what they last held: a dropped int whose one 30-bit digit is a heap
 * address below 1 GiB, an old frame's locals. Such stale words hid leaks
 * made on the program's own thread. In Python mode (gs_py_on: the
 * interpreter is 3.10 to 3.14 with the GIL) and while the interpreter runs,
 * roots.c hands every anonymous mapping here, and of each pool found in it
 * only the allocated blocks are roots: never the header, the blocks on the
 * pool's free list, the space past nextoffset that the pool has not handed
 * out since it was last (re)initialised, nor any block of an empty pool.
 *
 * Not once the interpreter finalizes (gs_pyarena_precise). A scan then (the
 * exit scan of a program that is not in PyTorch-aware mode runs after
 * Py_FinalizeEx) comes after the module teardown freed every global's
 * object: a C block that a module global's object held (a StorageImpl kept
 * by a ctypes c_void_p in a list at module level) has its only pointer in a
 * freed block, although the program never dropped it: a C program's globals
 * still hold theirs when its exit scan runs. Scanned precisely, such blocks
 * came out definite (torch_aware.sh's mode-off case: the toy allocator's
 * four live StorageImpls, 24 bytes each, in 3 of 3 runs). After the
 * teardown, freed blocks are the program's last state and are roots whole,
 * as before pyarena.c; the scans made while the program runs (gcspy.scan(),
 * periodic, signal, PyTorch-aware mode's exit scan from atexit) are
 * precise.
 *
 * Nor the dead objects CPython keeps allocated for reuse on its free
 * lists (a list, a tuple, a dict, 3.14's int, ...): list_dealloc frees the
 * item array but leaves ob_item pointing at it, a dead int keeps its
 * digits, and glibc hands the freed array's chunk to the next malloc of
 * its size, which the stale word then kept reachable (pytest's own-thread
 * leak on Debian's 3.11, train.py's 64 KiB buffers on sid's 3.14). Such an
 * object is known by its type (one of the free-list types, pyapi.c) and a
 * reference count of 0 or, in 3.14, a free-list link in its place.
 *
 * Nor the unused capacity of a live list: a list over-allocates its item
 * array (list_resize), and the slots past ob_size keep what the array's
 * chunk last held until an append writes them. On Debian's 3.11, a test
 * that dropped ctypes' malloc result left the address as a dead int's
 * digit in a 32-byte block that became a 4-slot item array of a 3-item
 * list: the block stayed reachable, in 2 of 5 pytest runs, one test late
 * or until exit. Such ranges are handed to slack() instead, wherever the
 * array lies (a pool, or a malloc'd block for more than 64 slots), and
 * marking reads them as zeros (mark.c). A list is known by its exact type
 * (PyList_Type, 16 bytes into its block after PyGC_Head, as in 3.10 to
 * 3.14), a non-zero reference count, and 0 <= ob_size <= allocated < 2^28,
 * which a block that merely holds the type's address among pointers fails.
 *
 * A pool is recognised by its header alone, at each 16 KiB boundary:
 *   union { block *_padding; uint count; } ref;  block *freeblock;
 *   pool_header *nextpool, *prevpool;
 *   uint arenaindex, szidx, nextoffset, maxnextoffset;
 * and accepted only when it is consistent: size class (szidx + 1) * 16
 * below 512, maxnextoffset == POOL_SIZE - size, nextoffset on a block
 * boundary within the pool, and a free list, walked with a bound, whose
 * every link is a distinct block below nextoffset and whose length plus
 * count is exactly the number of blocks below nextoffset. Anything else
 * (another version's pools, a chunk that merely resembles a header) is
 * scanned whole as before: a wrong acceptance would drop live roots and
 * report false leaks, a wrong refusal only hides some.
 *
 * Runs while the world is stopped: no malloc, no locks, bounded loops, and
 * every read is a process_vm_readv, which fails instead of faulting.
 */
#define _GNU_SOURCE
#include <Python.h>

#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pyapi.h"
#include "pyarena.h"
#include "pyframes.h"

#define POOL_SIZE (16u << 10)
#define POOL_OVERHEAD 48u /* sizeof(pool_header), rounded up to 16 */
#define NCLASSES 32u      /* SMALL_REQUEST_THRESHOLD 512 / ALIGNMENT 16 */
#define MAX_BLOCKS ((POOL_SIZE - POOL_OVERHEAD) / 16)
#define BATCH 256 /* headers read by one process_vm_readv */

struct pool_header {
    uintptr_t ref; /* the count in its low 32 bits (little-endian) */
    uintptr_t freeblock, nextpool, prevpool;
    uint32_t arenaindex, szidx, nextoffset, maxnextoffset;
};
_Static_assert(sizeof(struct pool_header) == POOL_OVERHEAD, "pool_header is 48 bytes");

/* Scratch, used only under the stop (one scan at a time, as mark.c's). */
static struct pool_header hdr[BATCH];
static uintptr_t pool_buf[POOL_SIZE / sizeof(uintptr_t)];
static uint8_t is_free[MAX_BLOCKS];

static int cheap_check(const struct pool_header *h)
{
    if (h->szidx >= NCLASSES)
        return 0;
    uint32_t size = (h->szidx + 1) * 16;
    return h->maxnextoffset == POOL_SIZE - size && h->nextoffset >= POOL_OVERHEAD + size &&
           h->nextoffset <= POOL_SIZE && (h->nextoffset - POOL_OVERHEAD) % size == 0 &&
           (uint32_t)h->ref <= (h->nextoffset - POOL_OVERHEAD) / size;
}

/* Reads the pool at p and walks its free list into is_free[]. Returns the
 * number of blocks below nextoffset, or 0 if the pool is not consistent. */
static uint32_t walk_pool(uintptr_t p, pid_t pid)
{
    struct iovec l = {pool_buf, POOL_SIZE}, r = {(void *)p, POOL_SIZE};
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)POOL_SIZE)
        return 0;
    const struct pool_header *h = (const struct pool_header *)pool_buf;
    if (!cheap_check(h))
        return 0; /* changed since the batch read: never trust it */
    uint32_t size = (h->szidx + 1) * 16, n = (h->nextoffset - POOL_OVERHEAD) / size;
    memset(is_free, 0, n);
    uint32_t nfree = 0;
    for (uintptr_t f = h->freeblock; f; nfree++) {
        uintptr_t off = f - p;
        if (nfree >= n || f < p || off < POOL_OVERHEAD || off >= h->nextoffset ||
            (off - POOL_OVERHEAD) % size)
            return 0;
        uint32_t k = (uint32_t)((off - POOL_OVERHEAD) / size);
        if (is_free[k])
            return 0; /* a cycle */
        is_free[k] = 1;
        f = pool_buf[off / sizeof(uintptr_t)];
    }
    return nfree + (uint32_t)h->ref == n ? n : 0;
}

static int is_freelist_type(uintptr_t t)
{
    for (int i = 0; i < gs_py_nfreelist_types; i++)
        if (gs_py_freelist_types[i] == t)
            return 1;
    return 0;
}

/* True when the allocated block b (size bytes, in pool_buf) holds a dead
 * object of a free-list type. The object starts at the block (no GC
 * header), 16 bytes in (PyGC_Head) or 32 (3.12+'s pre-header before it):
 * the first of those whose second word is a free-list type is taken. Dead
 * is a reference count of 0 (3.10 to 3.13 keep it so on their free lists)
 * or, 3.14's _PyFreeList_Push, a link in the count's place: a 16-aligned
 * address above 4 GiB (no live count is that large; an immortal one is
 * below 2^32 or has flag bits in the top 16) whose object is of the same
 * type, read to make sure. A block taken for dead is not scanned, so the
 * rule only ever accepts what CPython's own free lists leave. */
static int dead_object(const uintptr_t *b, uint32_t size, pid_t pid)
{
    for (uint32_t o = 0; o < 3 && (o + 1) * 16 <= size; o++) {
        uintptr_t w0 = b[2 * o], type = b[2 * o + 1];
        if (!is_freelist_type(type))
            continue;
        if (w0 == 0)
            return 1;
        if (w0 >> 32 && !(w0 >> 47) && !(w0 & 15)) {
            uintptr_t t = 0;
            struct iovec l = {&t, sizeof t}, r = {(void *)(w0 + sizeof(uintptr_t)), sizeof t};
            return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof t && t == type;
        }
        return 0;
    }
    return 0;
}

/* The unused slots of the live list in block b (size bytes), if it holds
 * one: [ob_item + ob_size, ob_item + allocated) to slack(). PyListObject:
 * ob_refcnt, ob_type, ob_size, ob_item, allocated. */
static int list_slack(const uintptr_t *b, uint32_t size, gs_pyarena_add_fn slack, void *ctx)
{
    if (size < 16 + 5 * sizeof(uintptr_t) || b[3] != gs_py_list_type || !b[2])
        return 0;
    uintptr_t len = b[4], items = b[5], cap = b[6];
    if (len >= cap || cap >= (1u << 28) || !items || items & 7)
        return 0;
    return slack(ctx, items + len * sizeof(uintptr_t), items + cap * sizeof(uintptr_t));
}

/* Hands on the allocated, live blocks of the walked pool at p, merged into
 * runs, and the unused capacity of the lists among them; *cur is where the
 * part of the mapping not yet handed on begins. */
static int add_pool(uintptr_t p, uint32_t n, uintptr_t *cur, gs_pyarena_add_fn add,
                    gs_pyarena_add_fn slack, void *ctx, pid_t pid)
{
    const struct pool_header *h = (const struct pool_header *)pool_buf;
    uint32_t size = (h->szidx + 1) * 16;
    for (uint32_t k = 0; k < n; k++) {
        if (is_free[k])
            continue;
        const uintptr_t *b = pool_buf + (POOL_OVERHEAD + (uintptr_t)k * size) / sizeof(uintptr_t);
        if (gs_py_nfreelist_types && dead_object(b, size, pid))
            is_free[k] = 1; /* dead: handed on like a freed block */
        else if (gs_py_list_type && list_slack(b, size, slack, ctx))
            return -1;
    }
    if (*cur < p && add(ctx, *cur, p))
        return -1;
    *cur = p + POOL_SIZE;
    for (uint32_t k = 0; k < n;) {
        if (is_free[k]) {
            k++;
            continue;
        }
        uint32_t e = k;
        while (e < n && !is_free[e])
            e++;
        uintptr_t lo = p + POOL_OVERHEAD + (uintptr_t)k * size;
        if (add(ctx, lo, lo + (uintptr_t)(e - k) * size))
            return -1;
        k = e;
    }
    return 0;
}

int gs_pyarena_precise(void)
{
    /* Py_IsInitialized is cleared and the finalizing flag set right after
     * Python's atexit handlers run, before the modules are torn down. */
    return gs_py_active() && gs_py_initialized && gs_py_finalizing && gs_py_initialized() &&
           !gs_py_finalizing();
}

int gs_pyarena_split(uintptr_t lo, uintptr_t hi, gs_pyarena_add_fn add, gs_pyarena_add_fn slack,
                     void *ctx)
{
    pid_t pid = (pid_t)syscall(SYS_getpid);
    uintptr_t cur = lo;
    uintptr_t p = (lo + POOL_SIZE - 1) & ~(uintptr_t)(POOL_SIZE - 1);
    while (p >= lo && p + POOL_SIZE <= hi) {
        struct iovec l = {hdr, 0}, r[BATCH];
        int nb = 0;
        for (uintptr_t q = p; nb < BATCH && q + POOL_SIZE <= hi; q += POOL_SIZE, nb++)
            r[nb] = (struct iovec){(void *)q, sizeof hdr[0]};
        l.iov_len = (size_t)nb * sizeof hdr[0];
        ssize_t got = process_vm_readv(pid, &l, 1, r, (unsigned long)nb, 0);
        int ok = got > 0 ? (int)((size_t)got / sizeof hdr[0]) : 0;
        for (int i = 0; i < ok; i++) {
            uintptr_t q = p + (uintptr_t)i * POOL_SIZE;
            uint32_t n = cheap_check(&hdr[i]) ? walk_pool(q, pid) : 0;
            if (n && add_pool(q, n, &cur, add, slack, ctx, pid))
                return -1;
        }
        p += (uintptr_t)(ok ? ok : 1) * POOL_SIZE; /* a failed read: skip a pool */
    }
    return cur < hi ? add(ctx, cur, hi) : 0;
}
