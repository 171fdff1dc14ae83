/* Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
 * ...) in the CUDA double: the model and its driver entry points.
 *
 * A reservation is a block of kind GS_CD_K_RESERVE in the device range: VA
 * only, charged nothing. A physical allocation (cuMemCreate) is a memfd of
 * its size, charged to its device's GS_CUDA_DOUBLE_MEM. cuMemMap maps the
 * memfd over the shadow of the mapped range (MAP_SHARED|MAP_FIXED), so two
 * mappings of one handle see the same bytes, as on a GPU; cuMemUnmap puts
 * PROT_NONE anonymous memory back. Access rights (cuMemSetAccess) are kept
 * per mapping and checked by the double's copies: a range that is mapped
 * but not made accessible cannot be copied to or from.
 *
 * Lifetimes follow the driver: a handle's memory is freed when it has been
 * released and its last mapping is gone. cuMemAddressFree on a reservation
 * that still has mappings unmaps them (the driver documents no error for
 * this).
 *
 * All state is under gs_cd_lock; mmap and close are called with it held
 * (they do not call back into the double). */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

struct handle {
    gs_cd_num size;
    int fd;
    int device;
    int released;  /* cuMemRelease was called: no longer a valid handle */
    size_t maps;   /* live mappings of it */
};

struct mapping { /* numbers hidden, as in devmem.c's tables */
    gs_cd_num addr, size, offset;
    struct handle *h;
    int access; /* CU_MEM_ACCESS_FLAGS_PROT_* */
};

/* Both tables are grown with gs_cd_grow, handles made with gs_cd_obj_new:
 * nothing here is in the malloc heap. */
static struct handle **handles; /* valid (unreleased) handles */
static size_t n_handles, cap_handles;
static struct mapping *maps; /* sorted by addr, never overlapping */
static size_t n_maps, cap_maps;

static struct handle *handle_find_locked(CUmemGenericAllocationHandle hv)
{
    for (size_t i = 0; i < n_handles; i++)
        if ((uintptr_t)handles[i] == hv)
            return handles[i];
    return NULL;
}

static void handle_destroy_locked(struct handle *h)
{
    close(h->fd);
    gs_cd_uncharge_locked(h->device, gs_cd_show(h->size));
    gs_cd_obj_free(h, sizeof *h);
}

static uintptr_t m_addr(const struct mapping *m) { return gs_cd_show(m->addr); }
static size_t m_size(const struct mapping *m) { return gs_cd_show(m->size); }
static uintptr_t m_end(const struct mapping *m) { return m_addr(m) + m_size(m); }

static size_t map_lower(uintptr_t p) /* first mapping with addr >= p */
{
    size_t lo = 0, hi = n_maps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m_addr(&maps[mid]) < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct mapping *map_find_locked(uintptr_t p)
{
    size_t i = map_lower(p + 1);
    if (i == 0)
        return NULL;
    struct mapping *m = &maps[i - 1];
    return p - m_addr(m) < m_size(m) ? m : NULL;
}

static int access_ok(int have, int access)
{
    if ((access & GS_CD_WRITE) && have != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return 0;
    if ((access & GS_CD_READ) && !(have & CU_MEM_ACCESS_FLAGS_PROT_READ))
        return 0;
    return 1;
}

CUresult gs_cd_vmm_covered_locked(uintptr_t p, size_t n, int access,
                                  uintptr_t *base, size_t *size, int *device)
{
    uintptr_t end = p + (n ? n : 1);
    struct mapping *first = map_find_locked(p);
    if (!first)
        return CUDA_ERROR_INVALID_VALUE;
    for (uintptr_t cur = p; cur < end;) {
        struct mapping *m = map_find_locked(cur);
        if (!m || !access_ok(m->access, access))
            return CUDA_ERROR_INVALID_VALUE;
        cur = m_end(m);
    }
    if (base)
        *base = m_addr(first);
    if (size)
        *size = m_size(first);
    if (device)
        *device = first->h->device;
    return CUDA_SUCCESS;
}

/* Removes mapping i, restoring the inaccessible shadow under it. */
static void unmap_at_locked(size_t i)
{
    struct mapping *m = &maps[i];
    /* Replacing the memfd pages with fresh PROT_NONE pages cannot fail for
     * lack of memory (nothing is committed); if it did, the stale mapping
     * would only stay readable through the shadow, which nothing reaches. */
    (void)mmap(gs_cd_shadow(m_addr(m)), m_size(m), PROT_NONE,
               MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    struct handle *h = m->h;
    h->maps--;
    if (h->released && h->maps == 0)
        handle_destroy_locked(h);
    memmove(&maps[i], &maps[i + 1], (n_maps - i - 1) * sizeof *maps);
    n_maps--;
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return gs_cd_check_device(prop->location.id);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_prop(prop)) != CUDA_SUCCESS)
        return r;
    *granularity = GS_CD_GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                             CUdeviceptr addr, unsigned long long flags)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ptr || flags || !size || size % GS_CD_GRANULARITY ||
        (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < GS_CD_GRANULARITY)
        alignment = GS_CD_GRANULARITY;
    uintptr_t out;
    if ((r = gs_cd_reserve(size, alignment, (uintptr_t)addr, &out)) != CUDA_SUCCESS)
        return r;
    *ptr = (CUdeviceptr)out;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    struct gs_cd_block b;
    gs_cd_lock();
    if (!gs_cd_block_get_locked((uintptr_t)ptr, &b) || b.kind != GS_CD_K_RESERVE ||
        b.addr != (uintptr_t)ptr || b.size != size) {
        gs_cd_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = map_lower(b.addr); i < n_maps && m_addr(&maps[i]) < b.addr + b.size;)
        unmap_at_locked(i);
    gs_cd_reserve_remove_locked(b.addr);
    gs_cd_unlock();
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!handle || flags || !size || size % GS_CD_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_prop(prop)) != CUDA_SUCCESS)
        return r;
    struct handle *h = gs_cd_obj_new(sizeof *h);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->size = gs_cd_hide(size);
    h->device = prop->location.id;
    h->fd = memfd_create("gcspy-cuda-double-vmm", MFD_CLOEXEC);
    if (h->fd < 0 || ftruncate(h->fd, (off_t)size) != 0) {
        if (h->fd >= 0)
            close(h->fd);
        gs_cd_obj_free(h, sizeof *h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    gs_cd_lock();
    r = gs_cd_charge_locked(h->device, size);
    if (r == CUDA_SUCCESS && n_handles == cap_handles &&
        gs_cd_grow((void **)&handles, &cap_handles, sizeof *handles)) {
        gs_cd_uncharge_locked(h->device, size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS)
        handles[n_handles++] = h;
    gs_cd_unlock();
    if (r != CUDA_SUCCESS) {
        close(h->fd);
        gs_cd_obj_free(h, sizeof *h);
        return r;
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    gs_cd_lock();
    struct handle *h = handle_find_locked(handle);
    if (!h) {
        gs_cd_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < n_handles; i++)
        if (handles[i] == h) {
            handles[i] = handles[--n_handles];
            break;
        }
    h->released = 1;
    if (h->maps == 0)
        handle_destroy_locked(h);
    gs_cd_unlock();
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t p = (uintptr_t)ptr;
    if (flags || !size || size % GS_CD_GRANULARITY || offset % GS_CD_GRANULARITY ||
        p % GS_CD_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    struct gs_cd_block b;
    gs_cd_lock();
    struct handle *h = handle_find_locked(handle);
    int found = gs_cd_block_get_locked(p, &b);
    size_t i = map_lower(p);
    if (!h) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (offset > gs_cd_show(h->size) || size > gs_cd_show(h->size) - offset || !found ||
               b.kind != GS_CD_K_RESERVE || size > b.size - (p - b.addr)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if ((i > 0 && m_end(&maps[i - 1]) > p) || (i < n_maps && m_addr(&maps[i]) < p + size)) {
        r = CUDA_ERROR_ALREADY_MAPPED;
    } else if (n_maps == cap_maps && gs_cd_grow((void **)&maps, &cap_maps, sizeof *maps)) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS &&
        mmap(gs_cd_shadow(p), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
             h->fd, (off_t)offset) == MAP_FAILED)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        memmove(&maps[i + 1], &maps[i], (n_maps - i) * sizeof *maps);
        maps[i] = (struct mapping){.addr = gs_cd_hide(p), .size = gs_cd_hide(size),
                                   .offset = gs_cd_hide(offset), .h = h,
                                   .access = CU_MEM_ACCESS_FLAGS_PROT_NONE};
        n_maps++;
        h->maps++;
    }
    gs_cd_unlock();
    return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t p = (uintptr_t)ptr;
    if (!size || p + size < p)
        return CUDA_ERROR_INVALID_VALUE;
    struct gs_cd_block b;
    gs_cd_lock();
    int found = gs_cd_block_get_locked(p, &b);
    size_t first = map_lower(p), last = first;
    if (!found || b.kind != GS_CD_K_RESERVE || size > b.size - (p - b.addr))
        r = CUDA_ERROR_INVALID_VALUE;
    /* Only whole mappings can be unmapped, as with the driver. */
    else if (first > 0 && m_end(&maps[first - 1]) > p)
        r = CUDA_ERROR_INVALID_VALUE;
    else {
        while (last < n_maps && m_addr(&maps[last]) < p + size)
            last++;
        if (last > first && m_end(&maps[last - 1]) > p + size)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (last == first)
            r = CUDA_ERROR_INVALID_VALUE; /* nothing mapped there */
    }
    if (r == CUDA_SUCCESS)
        for (size_t k = first; k < last; k++)
            unmap_at_locked(first);
    gs_cd_unlock();
    return r;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!desc || !count || !size)
        return CUDA_ERROR_INVALID_VALUE;
    int access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    for (size_t k = 0; k < count; k++) {
        if (desc[k].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if ((r = gs_cd_check_device(desc[k].location.id)) != CUDA_SUCCESS)
            return r;
        if (desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
            desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
        /* One host stands for every device: the widest right wins. */
        if ((int)desc[k].flags > access)
            access = (int)desc[k].flags;
    }
    uintptr_t p = (uintptr_t)ptr;
    gs_cd_lock();
    r = gs_cd_vmm_covered_locked(p, size, 0, NULL, NULL, NULL);
    if (r == CUDA_SUCCESS)
        for (uintptr_t cur = p; cur < p + size;) {
            struct mapping *m = map_find_locked(cur);
            m->access = access;
            cur = m_end(m);
        }
    gs_cd_unlock();
    return r;
}
