/* State shared by the files of the driver double (libcuda.so.1): the device
 * memory model (devmem.c), virtual memory management (vmm.c), devices,
 * contexts, streams and pools (context.c), the runtime's table (core.c) and
 * the driver entry points (cuda.c). None of these names leave the library:
 * libcuda.map exports only cu* and gs_cuda_double_core.
 *
 * One mutex (gs_cd_lock) guards everything here. Functions named *_locked
 * expect the caller to hold it; every other function takes it itself. It is
 * never held across a sleep, a memcpy of user data or a call back into user
 * code, so a thread stopped by a tool while inside the double blocks other
 * threads only for the length of a table update. */
#ifndef GS_CUDA_DOUBLE_INTERNAL_H
#define GS_CUDA_DOUBLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "core.h"

#define GS_CD_MAX_DEVICES 64
#define GS_CD_ALIGN ((size_t)256)        /* cudaMalloc alignment */
#define GS_CD_GRANULARITY ((size_t)2 << 20) /* VMM granularity, as on real GPUs */
#define GS_CD_PITCH_ALIGN ((size_t)512)  /* cudaMallocPitch row alignment */

/* The opaque handle types of cuda.h, defined here. A handle is valid while
 * it is in its registry (context.c); nothing dereferences a handle before
 * that lookup succeeds. */
struct CUctx_st {
    int device;
    int primary;   /* one per device, never freed */
    int refs;      /* primary: retain count; a primary with refs 0 is inactive */
};
struct CUstream_st {
    int device;
    unsigned flags;
};
struct CUmemPoolHandle_st {
    int device;
    int is_default;
    int destroyed;        /* destroyed while allocations were outstanding */
    size_t outstanding;   /* live allocations made from this pool */
};

/* Numbers the double keeps in its tables (addresses, offsets, sizes) are
 * stored with bits 48-63 set: a leak scanner that reads the tables (they
 * are private writable memory, which LSan-style scanners take as roots)
 * sees no plausible pointer, so a leaked buffer is not "reachable" through
 * the double's bookkeeping. All such values are below 2^48, so the stored
 * form sorts as the value does. */
typedef struct {
    uint64_t enc;
} gs_cd_num;
#define GS_CD_HIDE_BITS 0x5a5a000000000000ull
static inline gs_cd_num gs_cd_hide(uint64_t v) { return (gs_cd_num){v ^ GS_CD_HIDE_BITS}; }
static inline uint64_t gs_cd_show(gs_cd_num n) { return n.enc ^ GS_CD_HIDE_BITS; }

/* One allocation or reservation, as the block table describes it
 * (devmem.c; the table itself stores it hidden). */
struct gs_cd_block {
    uintptr_t addr;
    size_t size;    /* requested bytes (pinned, managed) or rounded bytes */
    size_t acct;    /* bytes charged to the device's GS_CUDA_DOUBLE_MEM */
    int kind;       /* GS_CD_K_* */
    int device;     /* the device it was made for; -1 for reservations */
    CUcontext ctx;  /* the context that owns it (freed with it), or NULL */
    CUmemoryPool pool; /* stream-ordered allocations: their pool */
};

/* context.c: configuration read once at load, and the device/context model. */
struct gs_cd_config {
    CUresult status;     /* CUDA_SUCCESS, or why the double cannot work */
    int devices;         /* GS_CUDA_DOUBLE_DEVICES */
    size_t mem;          /* GS_CUDA_DOUBLE_MEM, bytes per device */
    unsigned sync_us;    /* GS_CUDA_DOUBLE_SYNC_US */
};
extern struct gs_cd_config gs_cd_cfg;

CUresult gs_cd_init(void);            /* cuInit(0) */
CUresult gs_cd_check_init(void);      /* NOT_INITIALIZED until gs_cd_init succeeded */
CUresult gs_cd_check_device(int dev);
CUresult gs_cd_ctx_driver(CUcontext *out);  /* the thread's current context, or an error */
CUresult gs_cd_ctx_runtime(CUcontext *out); /* same, making the primary current if none is */
CUresult gs_cd_ctx_set_current(CUcontext ctx);
CUcontext gs_cd_ctx_get_current(void);
CUresult gs_cd_ctx_create(int dev, CUcontext *out);
CUresult gs_cd_ctx_destroy(CUcontext ctx);
CUresult gs_cd_primary_retain(int dev, CUcontext *out);
CUresult gs_cd_primary_release(int dev);
CUresult gs_cd_rt_set_device(int dev);
CUresult gs_cd_rt_get_device(int *dev);
CUresult gs_cd_rt_device_reset(void);
CUresult gs_cd_stream_create(int dev, unsigned flags, CUstream *out);
CUresult gs_cd_stream_destroy(CUstream s);
CUresult gs_cd_stream_check(CUstream s);
CUresult gs_cd_pool_default(int dev, CUmemoryPool *out);
CUresult gs_cd_pool_create(int dev, CUmemoryPool *out);
CUresult gs_cd_pool_destroy(CUmemoryPool pool);
CUresult gs_cd_pool_check(CUmemoryPool pool);
void gs_cd_pool_release_locked(CUmemoryPool pool); /* one allocation of it freed */
void gs_cd_sync_pause(void);

/* devmem.c: the reserved device range, its shadow and the block table. */
int gs_cd_grow(void **arr, size_t *cap, size_t elem); /* mmap-backed array; 0 or -1 */
/* The double's own objects (contexts, streams, pools, VMM handles): zeroed
 * anonymous pages, not malloc blocks, so a malloc tracer never sees the
 * double's bookkeeping as the program's allocations or leaks. */
void *gs_cd_obj_new(size_t size);
void gs_cd_obj_free(void *p, size_t size);
void gs_cd_lock(void);
void gs_cd_unlock(void);
int gs_cd_devmem_init(size_t range_bytes); /* 0, or an errno value */
void gs_cd_devmem_atfork_child(void);      /* only while nothing is allocated */
int gs_cd_in_device_range(uintptr_t p);
char *gs_cd_shadow(uintptr_t p);           /* host address of a device byte */
CUresult gs_cd_alloc(int kind, size_t size, int device, CUcontext ctx,
                     CUmemoryPool pool, uintptr_t *out);
CUresult gs_cd_free(unsigned kinds, uintptr_t p); /* kinds: mask of 1 << GS_CD_K_* */
void gs_cd_free_ctx(CUcontext ctx, int keep_pool_blocks);
CUresult gs_cd_resolve(uintptr_t p, size_t n, int access, void **host, int *kind);
CUresult gs_cd_attr(uintptr_t p, struct gs_cd_attr *a);
CUresult gs_cd_copy(void *dst, int dst_side, const void *src, int src_side, size_t n);
CUresult gs_cd_set(void *dst, int value, size_t n);
CUresult gs_cd_mem_info(int dev, size_t *free_bytes, size_t *total);
CUresult gs_cd_charge_locked(int dev, size_t bytes);
void gs_cd_uncharge_locked(int dev, size_t bytes);
CUresult gs_cd_reserve(size_t size, size_t align, uintptr_t want, uintptr_t *out);
/* The block holding p, copied to *out; 0 when there is none. */
int gs_cd_block_get_locked(uintptr_t p, struct gs_cd_block *out);
void gs_cd_reserve_remove_locked(uintptr_t addr); /* a reservation's start */

/* helper.c: a helper thread that blocks every signal and sleeps in the
 * kernel, as the real driver's may, when GS_CUDA_DOUBLE_HELPER=1. */
void gs_cd_helper_start(void);

/* drvtable.c: the plain address table the real driver keeps, when
 * GS_CUDA_DOUBLE_TABLE=1 (add: 1 on allocation, 0 on free). */
void gs_cd_table_note_locked(uintptr_t addr, int kind, int add);

/* vmm.c */
/* Whether [p, p+n) is mapped throughout with `access` (GS_CD_READ/WRITE
 * bits; 0: mapped at all); base/size/device: the mapping holding p. */
CUresult gs_cd_vmm_covered_locked(uintptr_t p, size_t n, int access,
                                  uintptr_t *base, size_t *size, int *device);

/* cuda.c: cuGetProcAddress's table, shared with the runtime. */
CUresult gs_cd_get_proc(const char *sym, void **fn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status);

#endif
