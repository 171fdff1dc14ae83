/* The private interface between the two libraries of the CUDA double.
 *
 * The real runtime (libcudart) dlopens libcuda.so.1 at its first call and
 * reaches the driver through entry points it fetches there, never through
 * the driver's exported symbols. The double does the same: libcudart.so.13
 * dlopens libcuda.so.1 and asks gs_cuda_double_core() for this table. So a
 * tool that interposes cu* symbols sees the program's own driver calls only,
 * never the runtime's, and one device memory model (in libcuda.so.1) serves
 * both APIs: a cudaMalloc'd pointer can be freed with cuMemFree and vice
 * versa, as with the real libraries.
 *
 * Every function returns a driver status (CUresult); the runtime maps it to
 * a cudaError_t. The table is append-only: `abi` changes when a member
 * changes meaning, and the runtime refuses a table whose abi it does not
 * know. */
#ifndef GS_CUDA_DOUBLE_CORE_H
#define GS_CUDA_DOUBLE_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#define GS_CD_CORE_ABI 1

/* What an address is (gs_cd_attr.kind, gs_cd_resolve's kind). */
enum gs_cd_kind {
    GS_CD_K_HOST = 0,     /* ordinary host memory the double does not know */
    GS_CD_K_DEVICE = 1,   /* cudaMalloc & co: device range, not host-readable */
    GS_CD_K_PINNED = 2,   /* cudaMallocHost & co: host mmap */
    GS_CD_K_MANAGED = 3,  /* cudaMallocManaged: host mmap */
    GS_CD_K_RESERVE = 4,  /* cuMemAddressReserve: device range, VA only */
    GS_CD_K_VMM = 5,      /* a cuMemMap'ed part of a reservation */
};

/* Access a copy needs (gs_cd_resolve). */
#define GS_CD_READ 1
#define GS_CD_WRITE 2

struct gs_cd_attr {
    int kind;           /* enum gs_cd_kind */
    int device;         /* owning device, or -1 */
    uintptr_t base;     /* start of the allocation (or mapping) holding the address */
    size_t size;
};

struct gs_cd_core {
    unsigned abi;           /* GS_CD_CORE_ABI */
    int driver_version;     /* what cuDriverGetVersion reports */
    CUresult (*init)(void); /* cuInit(0) */
    CUresult (*device_count)(int *count);
    CUresult (*set_device)(int dev);
    CUresult (*get_device)(int *dev);
    CUresult (*device_reset)(void);
    /* kind: GS_CD_K_DEVICE (pool NULL: cudaMalloc; else stream-ordered from
     * pool), GS_CD_K_PINNED, GS_CD_K_MANAGED. Writes *out only on success. */
    CUresult (*alloc)(int kind, size_t size, CUmemoryPool pool, void **out);
    /* kinds: mask of 1 << GS_CD_K_*; the pointer must start a block of one of
     * them. */
    CUresult (*free)(unsigned kinds, void *p);
    /* The host bytes behind [p, p+n): the shadow of device memory, the
     * memory itself otherwise. *kind says which (GS_CD_K_HOST: unknown). */
    CUresult (*resolve)(const void *p, size_t n, int access, void **host, int *kind);
    CUresult (*attr)(const void *p, struct gs_cd_attr *a);
    CUresult (*mem_info)(size_t *free_bytes, size_t *total);
    CUresult (*stream_create)(unsigned flags, CUstream *out);
    CUresult (*stream_destroy)(CUstream s);
    CUresult (*stream_check)(CUstream s);
    CUresult (*pool_default)(int dev, CUmemoryPool *out);
    CUresult (*pool_create)(int dev, CUmemoryPool *out);
    CUresult (*pool_destroy)(CUmemoryPool pool);
    CUresult (*get_proc)(const char *sym, void **fn, int version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status);
    void (*sync_pause)(void); /* GS_CUDA_DOUBLE_SYNC_US */
    /* n bytes from src to dst, each side checked as GS_CD_SIDE_*; overlap
     * allowed. */
    CUresult (*copy)(void *dst, int dst_side, const void *src, int src_side, size_t n);
    CUresult (*set)(void *dst, int value, size_t n); /* dst: device side */
};

/* Where a copy's end must be (gs_cd_core.copy). */
enum gs_cd_side {
    GS_CD_SIDE_ANY = 0,    /* whatever the address is (cudaMemcpyDefault) */
    GS_CD_SIDE_HOST = 1,   /* host-readable: never device or VMM memory */
    GS_CD_SIDE_DEVICE = 2, /* known to the device: device, VMM, pinned, managed */
};

typedef const struct gs_cd_core *(*gs_cd_core_fn)(void);
#define GS_CD_CORE_SYMBOL "gs_cuda_double_core"

#endif
