/* The device memory model of the CUDA double.
 *
 * Device addresses come from one range reserved at load with PROT_NONE, so
 * the host faults on a device pointer exactly as it does on a real GPU, and
 * no host allocation can ever land inside it. The bytes "on the device" live
 * in a second range of the same size, the shadow: device address dev_base+o
 * is backed by shadow_base+o. Shadow pages are made accessible when a block
 * is allocated over them and given back (MADV_REMOVE) when it is freed, so
 * the double costs memory only for what a program writes to the device. The
 * shadow is a shared mapping: a leak scanner that takes private writable
 * mappings as roots (as LSan and gcspy do) skips it, as it would skip real
 * device memory, which the host cannot read; and after fork a child that
 * never used CUDA gets a shadow of its own (gs_cd_devmem_atfork_child).
 *
 * Device virtual addresses are handed out first-fit from a sorted list of
 * free extents, 256-byte aligned (VMM reservations 2 MiB aligned); the
 * range's first granule is never handed out, so the `dev_base` variable
 * never points into a block. Every allocation the double makes - device,
 * pinned, managed, VMM reservation - is one entry in a table sorted by
 * address, so any address (interior ones included) resolves to its block
 * by binary search. The tables hold their numbers hidden (gs_cd_hide) and
 * live in anonymous mmap memory grown by gs_cd_grow, outside the malloc
 * heap.
 *
 * Pinned and managed memory are ordinary host memory: one private anonymous
 * mmap each, outside the device range.
 *
 * Lock order: gs_cd_lock only; no function here calls out while holding it
 * except mmap/mprotect/madvise. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

struct extent { /* free device VA: offsets from dev_base */
    gs_cd_num start, len;
};

struct stored_block { /* struct gs_cd_block as the table keeps it */
    gs_cd_num addr, size, acct;
    int kind, device;
    CUcontext ctx;
    CUmemoryPool pool;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t dev_base;
static char *shadow_base;
static size_t range_size;
static size_t page_size;

static struct extent *ext; /* sorted, coalesced */
static size_t n_ext, cap_ext;
static struct stored_block *blk; /* every live allocation, sorted by addr */
static size_t n_blk, cap_blk;
static size_t used[GS_CD_MAX_DEVICES]; /* bytes charged per device */

void gs_cd_lock(void) { pthread_mutex_lock(&lock); }
void gs_cd_unlock(void) { pthread_mutex_unlock(&lock); }

static uintptr_t round_up(uintptr_t v, size_t a) { return (v + a - 1) / a * a; }
static uintptr_t round_down(uintptr_t v, size_t a) { return v / a * a; }

int gs_cd_grow(void **arr, size_t *cap, size_t elem)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t old_bytes = round_up(*cap * elem, pg);
    size_t new_bytes = old_bytes ? 2 * old_bytes : pg;
    void *p = *arr ? mremap(*arr, old_bytes, new_bytes, MREMAP_MAYMOVE)
                   : mmap(NULL, new_bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    *arr = p;
    *cap = new_bytes / elem;
    return 0;
}

void *gs_cd_obj_new(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void gs_cd_obj_free(void *p, size_t size) { munmap(p, size); }

static void name_range(void *p, size_t len, const char *name)
{
    /* Only for people reading /proc/PID/maps; kernels without
     * CONFIG_ANON_VMA_NAME refuse and nothing changes. */
    (void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, len,
                (unsigned long)name);
}

static void *map_shadow(void *at, size_t len)
{
    return mmap(at, len, PROT_NONE,
                MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE | (at ? MAP_FIXED : 0), -1, 0);
}

int gs_cd_devmem_init(size_t range_bytes)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    /* A hint, not MAP_FIXED: the kernel moves the range if something is
     * already there. Fixed-looking addresses make traces easier to read. */
    void *hint = (void *)(uintptr_t)0x600000000000ull;
    void *d = mmap(hint, range_bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (d == MAP_FAILED)
        return errno;
    void *s = map_shadow(NULL, range_bytes);
    if (s == MAP_FAILED) {
        int e = errno;
        munmap(d, range_bytes);
        return e;
    }
    name_range(d, range_bytes, "gcspy-cuda-double-device");
    if (gs_cd_grow((void **)&ext, &cap_ext, sizeof *ext)) {
        munmap(d, range_bytes);
        munmap(s, range_bytes);
        return ENOMEM;
    }
    n_ext = 1;
    ext[0].start = gs_cd_hide(GS_CD_GRANULARITY);
    ext[0].len = gs_cd_hide(range_bytes - GS_CD_GRANULARITY);
    dev_base = (uintptr_t)d;
    shadow_base = s;
    range_size = range_bytes;
    return 0;
}

void gs_cd_devmem_atfork_child(void)
{
    /* Nothing is allocated yet (the caller checked): give the child its own
     * shadow instead of the one it shares with its parent. */
    if (range_size)
        (void)map_shadow(shadow_base, range_size);
}

int gs_cd_in_device_range(uintptr_t p)
{
    return range_size && p >= dev_base && p - dev_base < range_size;
}

char *gs_cd_shadow(uintptr_t p) { return shadow_base + (p - dev_base); }

/* ---- free extents of the device range ---- */

static int ext_insert_at(size_t i, uintptr_t start, size_t len)
{
    if (n_ext == cap_ext && gs_cd_grow((void **)&ext, &cap_ext, sizeof *ext))
        return -1;
    memmove(&ext[i + 1], &ext[i], (n_ext - i) * sizeof *ext);
    ext[i].start = gs_cd_hide(start);
    ext[i].len = gs_cd_hide(len);
    n_ext++;
    return 0;
}

static void ext_remove_at(size_t i)
{
    memmove(&ext[i], &ext[i + 1], (n_ext - i - 1) * sizeof *ext);
    n_ext--;
}

/* Takes [s, s+len) (offsets) out of extent i, which holds it. */
static int ext_carve(size_t i, uintptr_t s, size_t len)
{
    uintptr_t e_start = gs_cd_show(ext[i].start);
    uintptr_t e_end = e_start + gs_cd_show(ext[i].len);
    size_t before = s - e_start, after = e_end - (s + len);
    if (before && after) {
        if (ext_insert_at(i + 1, s + len, after))
            return -1;
        ext[i].len = gs_cd_hide(before);
    } else if (before) {
        ext[i].len = gs_cd_hide(before);
    } else if (after) {
        ext[i].start = gs_cd_hide(s + len);
        ext[i].len = gs_cd_hide(after);
    } else {
        ext_remove_at(i);
    }
    return 0;
}

/* Device VA [*out, *out+size), aligned; at `want` when that is free. */
static int va_alloc(size_t size, size_t align, uintptr_t want, uintptr_t *out)
{
    if (want && gs_cd_in_device_range(want) && want % align == 0) {
        uintptr_t w = want - dev_base;
        for (size_t i = 0; i < n_ext && gs_cd_show(ext[i].start) <= w; i++) {
            uintptr_t st = gs_cd_show(ext[i].start);
            size_t len = gs_cd_show(ext[i].len);
            if (w - st <= len && size <= len - (w - st)) {
                if (ext_carve(i, w, size))
                    return -1;
                *out = want;
                return 0;
            }
        }
    }
    for (size_t i = 0; i < n_ext; i++) {
        uintptr_t st = gs_cd_show(ext[i].start);
        size_t len = gs_cd_show(ext[i].len);
        uintptr_t s = round_up(dev_base + st, align) - dev_base;
        if (s - st > len || size > len - (s - st))
            continue;
        if (ext_carve(i, s, size))
            return -1;
        *out = dev_base + s;
        return 0;
    }
    return -1;
}

/* Returns [addr, addr+size) to the free extents, merging neighbours. Cannot
 * fail when it merges; when it must insert and the table cannot grow, the
 * range is lost to later allocations (a leak of VA, never a wrong answer). */
static void va_free(uintptr_t addr, size_t size)
{
    uintptr_t s = addr - dev_base;
    size_t lo = 0, hi = n_ext;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (gs_cd_show(ext[mid].start) < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    int prev = lo > 0 && gs_cd_show(ext[lo - 1].start) + gs_cd_show(ext[lo - 1].len) == s;
    int next = lo < n_ext && s + size == gs_cd_show(ext[lo].start);
    if (prev && next) {
        ext[lo - 1].len = gs_cd_hide(gs_cd_show(ext[lo - 1].len) + size + gs_cd_show(ext[lo].len));
        ext_remove_at(lo);
    } else if (prev) {
        ext[lo - 1].len = gs_cd_hide(gs_cd_show(ext[lo - 1].len) + size);
    } else if (next) {
        ext[lo].start = gs_cd_hide(s);
        ext[lo].len = gs_cd_hide(gs_cd_show(ext[lo].len) + size);
    } else {
        (void)ext_insert_at(lo, s, size);
    }
}

/* ---- the block table ---- */

static size_t blk_lower(uintptr_t p) /* first block with addr >= p */
{
    size_t lo = 0, hi = n_blk;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (gs_cd_show(blk[mid].addr) < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct stored_block *blk_find(uintptr_t p) /* the block holding p */
{
    size_t i = blk_lower(p + 1); /* first block starting after p */
    if (i == 0)
        return NULL;
    struct stored_block *b = &blk[i - 1];
    return p - gs_cd_show(b->addr) < gs_cd_show(b->size) ? b : NULL;
}

static void blk_show(const struct stored_block *s, struct gs_cd_block *b)
{
    b->addr = gs_cd_show(s->addr);
    b->size = gs_cd_show(s->size);
    b->acct = gs_cd_show(s->acct);
    b->kind = s->kind;
    b->device = s->device;
    b->ctx = s->ctx;
    b->pool = s->pool;
}

int gs_cd_block_get_locked(uintptr_t p, struct gs_cd_block *out)
{
    struct stored_block *s = blk_find(p);
    if (s)
        blk_show(s, out);
    return s != NULL;
}

static int blk_insert(const struct gs_cd_block *b)
{
    if (n_blk == cap_blk && gs_cd_grow((void **)&blk, &cap_blk, sizeof *blk))
        return -1;
    size_t i = blk_lower(b->addr);
    memmove(&blk[i + 1], &blk[i], (n_blk - i) * sizeof *blk);
    blk[i] = (struct stored_block){.addr = gs_cd_hide(b->addr), .size = gs_cd_hide(b->size),
                                   .acct = gs_cd_hide(b->acct), .kind = b->kind,
                                   .device = b->device, .ctx = b->ctx, .pool = b->pool};
    n_blk++;
    gs_cd_table_note_locked(b->addr, b->kind, 1);
    return 0;
}

static void blk_remove(struct stored_block *b)
{
    size_t i = (size_t)(b - blk);
    gs_cd_table_note_locked(gs_cd_show(b->addr), b->kind, 0);
    memmove(&blk[i], &blk[i + 1], (n_blk - i - 1) * sizeof *blk);
    n_blk--;
}

CUresult gs_cd_charge_locked(int dev, size_t bytes)
{
    if (bytes > gs_cd_cfg.mem || used[dev] > gs_cd_cfg.mem - bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    used[dev] += bytes;
    return CUDA_SUCCESS;
}

void gs_cd_uncharge_locked(int dev, size_t bytes) { used[dev] -= bytes; }

static CUresult alloc_device_locked(struct gs_cd_block *b)
{
    size_t rounded = round_up(b->size, GS_CD_ALIGN);
    if (rounded < b->size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = gs_cd_charge_locked(b->device, rounded);
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t a;
    if (va_alloc(rounded, GS_CD_ALIGN, 0, &a)) {
        gs_cd_uncharge_locked(b->device, rounded);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* Pages at either end may be shared with neighbours; making them
     * accessible again is harmless. */
    char *s0 = (char *)round_down((uintptr_t)gs_cd_shadow(a), page_size);
    char *s1 = (char *)round_up((uintptr_t)gs_cd_shadow(a + rounded), page_size);
    b->addr = a;
    b->size = rounded;
    b->acct = rounded;
    if (mprotect(s0, (size_t)(s1 - s0), PROT_READ | PROT_WRITE) != 0 || blk_insert(b)) {
        va_free(a, rounded);
        gs_cd_uncharge_locked(b->device, rounded);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult gs_cd_alloc(int kind, size_t size, int device, CUcontext ctx,
                     CUmemoryPool pool, uintptr_t *out)
{
    struct gs_cd_block b = {.size = size, .kind = kind, .device = device,
                            .ctx = ctx, .pool = pool};
    if (!range_size)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (kind == GS_CD_K_DEVICE) {
        gs_cd_lock();
        CUresult r = alloc_device_locked(&b);
        if (r == CUDA_SUCCESS && pool)
            pool->outstanding++;
        gs_cd_unlock();
        if (r == CUDA_SUCCESS)
            *out = b.addr;
        return r;
    }
    if (kind != GS_CD_K_PINNED && kind != GS_CD_K_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    size_t len = round_up(size, page_size);
    if (len < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    b.addr = (uintptr_t)p;
    gs_cd_lock();
    int bad = blk_insert(&b);
    gs_cd_unlock();
    if (bad) {
        munmap(p, len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = b.addr;
    return CUDA_SUCCESS;
}

/* Releases what block s holds and drops it from the table. Pinned and
 * managed memory is unmapped after the lock is dropped, by the caller,
 * from what this leaves in unmap_addr and unmap_len. */
static void release_locked(struct stored_block *s, uintptr_t *unmap_addr, size_t *unmap_len)
{
    struct gs_cd_block b;
    blk_show(s, &b);
    *unmap_addr = 0;
    *unmap_len = 0;
    if (b.kind == GS_CD_K_DEVICE) {
        /* Whole shadow pages of the block only: the end pages may hold a
         * neighbour's bytes. */
        uintptr_t p0 = round_up((uintptr_t)gs_cd_shadow(b.addr), page_size);
        uintptr_t p1 = round_down((uintptr_t)gs_cd_shadow(b.addr + b.size), page_size);
        if (p1 > p0)
            (void)madvise((void *)p0, p1 - p0, MADV_REMOVE);
        va_free(b.addr, b.size);
        gs_cd_uncharge_locked(b.device, b.acct);
        if (b.pool)
            gs_cd_pool_release_locked(b.pool);
    } else {
        *unmap_addr = b.addr;
        *unmap_len = round_up(b.size, page_size);
    }
    blk_remove(s);
}

CUresult gs_cd_free(unsigned kinds, uintptr_t p)
{
    uintptr_t ua;
    size_t ul;
    gs_cd_lock();
    struct stored_block *s = blk_find(p);
    if (!s || gs_cd_show(s->addr) != p || !(kinds & (1u << s->kind))) {
        gs_cd_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    release_locked(s, &ua, &ul);
    gs_cd_unlock();
    if (ul)
        munmap((void *)ua, ul);
    return CUDA_SUCCESS;
}

void gs_cd_free_ctx(CUcontext ctx, int keep_pool_blocks)
{
    for (;;) {
        uintptr_t ua = 0;
        size_t ul = 0;
        int found = 0;
        gs_cd_lock();
        for (size_t i = 0; i < n_blk; i++) {
            struct stored_block *s = &blk[i];
            if (s->ctx != ctx || (keep_pool_blocks && s->pool))
                continue;
            release_locked(s, &ua, &ul);
            found = 1;
            break;
        }
        gs_cd_unlock();
        if (ul)
            munmap((void *)ua, ul);
        if (!found)
            return;
    }
}

CUresult gs_cd_reserve(size_t size, size_t align, uintptr_t want, uintptr_t *out)
{
    if (!range_size)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct gs_cd_block b = {.size = size, .kind = GS_CD_K_RESERVE, .device = -1};
    CUresult r = CUDA_SUCCESS;
    gs_cd_lock();
    if (va_alloc(size, align, want, &b.addr)) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (blk_insert(&b)) {
        va_free(b.addr, size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    gs_cd_unlock();
    if (r == CUDA_SUCCESS)
        *out = b.addr;
    return r;
}

void gs_cd_reserve_remove_locked(uintptr_t addr)
{
    struct stored_block *s = blk_find(addr);
    if (!s || s->kind != GS_CD_K_RESERVE)
        return;
    va_free(gs_cd_show(s->addr), gs_cd_show(s->size));
    blk_remove(s);
}

CUresult gs_cd_resolve(uintptr_t p, size_t n, int access, void **host, int *kind)
{
    if (n && p + n < p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    struct gs_cd_block b;
    gs_cd_lock();
    int found = gs_cd_block_get_locked(p, &b);
    if (gs_cd_in_device_range(p)) {
        if (!found) {
            r = CUDA_ERROR_INVALID_VALUE;
        } else if (b.kind == GS_CD_K_DEVICE) {
            if (n > b.size - (p - b.addr))
                r = CUDA_ERROR_INVALID_VALUE;
            *kind = GS_CD_K_DEVICE;
        } else {
            r = gs_cd_vmm_covered_locked(p, n, access, NULL, NULL, NULL);
            *kind = GS_CD_K_VMM;
        }
        if (r == CUDA_SUCCESS)
            *host = gs_cd_shadow(p);
    } else if (found) {
        if (n > b.size - (p - b.addr))
            r = CUDA_ERROR_INVALID_VALUE;
        *kind = b.kind;
        *host = (void *)p;
    } else {
        *kind = GS_CD_K_HOST;
        *host = (void *)p;
    }
    gs_cd_unlock();
    return r;
}

static CUresult side_ok(int side, int kind)
{
    int on_device = kind == GS_CD_K_DEVICE || kind == GS_CD_K_VMM;
    if (side == GS_CD_SIDE_HOST && on_device)
        return CUDA_ERROR_INVALID_VALUE;
    if (side == GS_CD_SIDE_DEVICE && kind == GS_CD_K_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* The bytes are moved without the lock: a program that frees a buffer
 * while copying into it races on a real GPU too. */
CUresult gs_cd_copy(void *dst, int dst_side, const void *src, int src_side, size_t n)
{
    void *hd, *hs;
    int kd, ks;
    CUresult r = gs_cd_resolve((uintptr_t)dst, n, GS_CD_WRITE, &hd, &kd);
    if (r == CUDA_SUCCESS)
        r = gs_cd_resolve((uintptr_t)src, n, GS_CD_READ, &hs, &ks);
    if (r == CUDA_SUCCESS)
        r = side_ok(dst_side, kd);
    if (r == CUDA_SUCCESS)
        r = side_ok(src_side, ks);
    if (r == CUDA_SUCCESS && n)
        memmove(hd, hs, n);
    return r;
}

CUresult gs_cd_set(void *dst, int value, size_t n)
{
    void *hd;
    int kd;
    CUresult r = gs_cd_resolve((uintptr_t)dst, n, GS_CD_WRITE, &hd, &kd);
    if (r == CUDA_SUCCESS)
        r = side_ok(GS_CD_SIDE_DEVICE, kd);
    if (r == CUDA_SUCCESS && n)
        memset(hd, value, n);
    return r;
}

CUresult gs_cd_attr(uintptr_t p, struct gs_cd_attr *a)
{
    a->kind = GS_CD_K_HOST;
    a->device = -1;
    a->base = 0;
    a->size = 0;
    struct gs_cd_block b;
    gs_cd_lock();
    int found = gs_cd_block_get_locked(p, &b);
    if (found && b.kind == GS_CD_K_RESERVE) {
        uintptr_t base;
        size_t size;
        int dev;
        if (gs_cd_vmm_covered_locked(p, 1, 0, &base, &size, &dev) == CUDA_SUCCESS) {
            a->kind = GS_CD_K_VMM;
            a->device = dev;
            a->base = base;
            a->size = size;
        }
    } else if (found) {
        a->kind = b.kind;
        a->device = b.device;
        a->base = b.addr;
        a->size = b.size;
    }
    gs_cd_unlock();
    return CUDA_SUCCESS;
}

CUresult gs_cd_mem_info(int dev, size_t *free_bytes, size_t *total)
{
    gs_cd_lock();
    *free_bytes = gs_cd_cfg.mem - used[dev];
    *total = gs_cd_cfg.mem;
    gs_cd_unlock();
    return CUDA_SUCCESS;
}
