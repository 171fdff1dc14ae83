/* The table libcudart.so.13 fetches from libcuda.so.1 (see core.h): the
 * driver's model seen with the runtime's manners. The runtime initialises
 * the driver and makes the current device's primary context current on
 * first use instead of failing for want of cuInit or a context; everything
 * else is the same code the driver entry points run. */
#include "internal.h"

static CUresult rt_device_count(int *count)
{
    if (gs_cd_cfg.status != CUDA_SUCCESS)
        return gs_cd_cfg.status;
    *count = gs_cd_cfg.devices;
    return gs_cd_cfg.devices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

static CUresult rt_alloc(int kind, size_t size, CUmemoryPool pool, void **out)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_runtime(&c);
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t a;
    if (pool) {
        if (kind != GS_CD_K_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if ((r = gs_cd_pool_check(pool)) != CUDA_SUCCESS)
            return r;
        r = gs_cd_alloc(kind, size, pool->device, NULL, pool, &a);
    } else {
        r = gs_cd_alloc(kind, size, c->device, c, NULL, &a);
    }
    if (r == CUDA_SUCCESS)
        *out = (void *)a;
    return r;
}

static CUresult rt_free(unsigned kinds, void *p)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_free(kinds, (uintptr_t)p) : r;
}

static CUresult rt_resolve(const void *p, size_t n, int access, void **host, int *kind)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_resolve((uintptr_t)p, n, access, host, kind) : r;
}

static CUresult rt_copy(void *dst, int dst_side, const void *src, int src_side, size_t n)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_copy(dst, dst_side, src, src_side, n) : r;
}

static CUresult rt_set(void *dst, int value, size_t n)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_set(dst, value, n) : r;
}

static CUresult rt_attr(const void *p, struct gs_cd_attr *a)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_attr((uintptr_t)p, a) : r;
}

static CUresult rt_mem_info(size_t *free_bytes, size_t *total)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_runtime(&c);
    return r == CUDA_SUCCESS ? gs_cd_mem_info(c->device, free_bytes, total) : r;
}

static CUresult rt_stream_create(unsigned flags, CUstream *out)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_runtime(&c);
    return r == CUDA_SUCCESS ? gs_cd_stream_create(c->device, flags, out) : r;
}

static CUresult rt_stream_destroy(CUstream s)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_stream_destroy(s) : r;
}

static CUresult rt_stream_check(CUstream s)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_stream_check(s) : r;
}

static CUresult rt_pool_default(int dev, CUmemoryPool *out)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_pool_default(dev, out) : r;
}

static CUresult rt_pool_create(int dev, CUmemoryPool *out)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_pool_create(dev, out) : r;
}

static CUresult rt_pool_destroy(CUmemoryPool pool)
{
    CUresult r = gs_cd_init();
    return r == CUDA_SUCCESS ? gs_cd_pool_destroy(pool) : r;
}

static const struct gs_cd_core table = {
    .abi = GS_CD_CORE_ABI,
    .driver_version = CUDA_VERSION,
    .init = gs_cd_init,
    .device_count = rt_device_count,
    .set_device = gs_cd_rt_set_device,
    .get_device = gs_cd_rt_get_device,
    .device_reset = gs_cd_rt_device_reset,
    .alloc = rt_alloc,
    .free = rt_free,
    .resolve = rt_resolve,
    .attr = rt_attr,
    .mem_info = rt_mem_info,
    .stream_create = rt_stream_create,
    .stream_destroy = rt_stream_destroy,
    .stream_check = rt_stream_check,
    .pool_default = rt_pool_default,
    .pool_create = rt_pool_create,
    .pool_destroy = rt_pool_destroy,
    .get_proc = gs_cd_get_proc,
    .sync_pause = gs_cd_sync_pause,
    .copy = rt_copy,
    .set = rt_set,
};

const struct gs_cd_core *gs_cuda_double_core(void);
const struct gs_cd_core *gs_cuda_double_core(void) { return &table; }
