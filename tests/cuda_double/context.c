/* Configuration, devices, contexts, streams and memory pools of the CUDA
 * double.
 *
 * The configuration is read once, when libcuda.so.1 is loaded, from
 *   GS_CUDA_DOUBLE_DEVICES  device count, 0..64 (default 1)
 *   GS_CUDA_DOUBLE_MEM      bytes of memory per device (default 16 GiB;
 *                           a K/M/G/T suffix multiplies by 1024^n)
 *   GS_CUDA_DOUBLE_SYNC_US  microseconds a synchronising call sleeps (default 0)
 * and the device range is reserved then. A malformed value makes the double
 * refuse to work: one line on stderr, and cuInit / the runtime's first call
 * fail (CUDA_ERROR_INVALID_VALUE / cudaErrorInitializationError).
 *
 * Contexts follow the driver: each device has one primary context, retained
 * and released by count (the runtime retains it once, on first use, and
 * makes it current on every thread that has no context); cuCtxCreate makes
 * others. Destroying a context, or releasing a primary context to zero,
 * frees the memory allocated in it, as the driver does. The current context
 * is per thread; there is no context stack (push = set current).
 *
 * Handles (contexts, streams, pools) are validated against registries under
 * gs_cd_lock before use, so a stale or made-up handle is an error code, not
 * a crash. The objects behind them come from gs_cd_obj_new, not malloc. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define GIB ((size_t)1 << 30)

struct gs_cd_config gs_cd_cfg = {.status = CUDA_ERROR_NOT_INITIALIZED};

static int inited; /* cuInit succeeded; read without the lock (set once) */
static struct CUctx_st primaries[GS_CD_MAX_DEVICES];
static struct CUmemPoolHandle_st default_pools[GS_CD_MAX_DEVICES];
static int rt_retained[GS_CD_MAX_DEVICES]; /* the runtime holds a primary ref */
static __thread CUcontext cur;
static __thread int rt_dev;

struct registry {
    void **v;
    size_t n, cap;
};
static struct registry ctxs, streams, pools;

static int reg_add_locked(struct registry *r, void *p)
{
    if (r->n == r->cap && gs_cd_grow((void **)&r->v, &r->cap, sizeof *r->v))
        return -1;
    r->v[r->n++] = p;
    return 0;
}

static int reg_del_locked(struct registry *r, const void *p)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i] == p) {
            r->v[i] = r->v[--r->n];
            return 1;
        }
    return 0;
}

static int reg_has_locked(const struct registry *r, const void *p)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i] == p)
            return 1;
    return 0;
}

/* ---- configuration ---- */

static int parse_u64(const char *s, unsigned long long max, int suffixes,
                     unsigned long long *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    if (suffixes && *end) {
        const char *units = "KMGT";
        const char *u = strchr(units, *end >= 'a' ? *end - 32 : *end);
        if (!u || !*u)
            return -1;
        for (long k = 0; k <= u - units; k++) {
            if (v > (~0ull >> 10))
                return -1;
            v <<= 10;
        }
        end++;
    }
    if (*end || v > max)
        return -1;
    *out = v;
    return 0;
}

static int bad_env(const char *name, const char *val, const char *want)
{
    fprintf(stderr, "gcspy cuda double: %s='%s' is not %s\n", name, val, want);
    gs_cd_cfg.status = CUDA_ERROR_INVALID_VALUE;
    return -1;
}

static int read_config(void)
{
    unsigned long long v;
    const char *s;
    gs_cd_cfg.devices = 1;
    gs_cd_cfg.mem = 16 * GIB;
    gs_cd_cfg.sync_us = 0;
    if ((s = getenv("GS_CUDA_DOUBLE_DEVICES"))) {
        if (parse_u64(s, GS_CD_MAX_DEVICES, 0, &v))
            return bad_env("GS_CUDA_DOUBLE_DEVICES", s, "a device count from 0 to 64");
        gs_cd_cfg.devices = (int)v;
    }
    if ((s = getenv("GS_CUDA_DOUBLE_MEM"))) {
        if (parse_u64(s, (unsigned long long)1 << 44, 1, &v))
            return bad_env("GS_CUDA_DOUBLE_MEM", s, "a byte count up to 16T");
        gs_cd_cfg.mem = (size_t)v;
    }
    if ((s = getenv("GS_CUDA_DOUBLE_SYNC_US"))) {
        if (parse_u64(s, 10000000, 0, &v))
            return bad_env("GS_CUDA_DOUBLE_SYNC_US", s, "microseconds up to 10000000");
        gs_cd_cfg.sync_us = (unsigned)v;
    }
    return 0;
}

/* A child of fork cannot use its parent's device, as with real CUDA (the
 * runtime answers cudaErrorInitializationError there): after fork, a
 * process whose parent had initialised the double finds it unusable. A
 * child of a parent that never did starts afresh, with its own shadow. */
static void atfork_child(void)
{
    if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&inited, 0, __ATOMIC_RELEASE);
        gs_cd_cfg.status = CUDA_ERROR_NOT_INITIALIZED;
    } else {
        gs_cd_devmem_atfork_child();
    }
}

__attribute__((constructor)) static void gs_cd_load(void)
{
    if (read_config())
        return;
    if (pthread_atfork(NULL, NULL, atfork_child) != 0) {
        fprintf(stderr, "gcspy cuda double: pthread_atfork failed\n");
        gs_cd_cfg.status = CUDA_ERROR_OUT_OF_MEMORY;
        return;
    }
    for (int d = 0; d < GS_CD_MAX_DEVICES; d++) {
        primaries[d].device = d;
        primaries[d].primary = 1;
        default_pools[d].device = d;
        default_pools[d].is_default = 1;
    }
    /* Room for every device's memory twice over (VMM reservations take VA
     * beyond what is allocated), and 64 GiB at least. Where the address
     * space is smaller (valgrind, ulimit -v), the largest half-size that
     * still holds every device's memory will do. */
    size_t need = (size_t)gs_cd_cfg.devices * gs_cd_cfg.mem;
    need = (need + GS_CD_GRANULARITY - 1) / GS_CD_GRANULARITY * GS_CD_GRANULARITY;
    if (need < GS_CD_GRANULARITY)
        need = GS_CD_GRANULARITY;
    size_t range = 2 * need < 64 * GIB ? 64 * GIB : 2 * need;
    int e;
    while ((e = gs_cd_devmem_init(range)) != 0 && range / 2 >= need)
        range /= 2;
    if (e) {
        fprintf(stderr, "gcspy cuda double: cannot reserve %zu bytes of device address space: %s\n",
                range, strerror(e));
        gs_cd_cfg.status = CUDA_ERROR_OUT_OF_MEMORY;
        return;
    }
    gs_cd_cfg.status = CUDA_SUCCESS;
}

/* ---- initialisation and devices ---- */

CUresult gs_cd_init(void)
{
    if (gs_cd_cfg.status != CUDA_SUCCESS)
        return gs_cd_cfg.status;
    if (gs_cd_cfg.devices == 0)
        return CUDA_ERROR_NO_DEVICE;
    __atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
    gs_cd_helper_start();
    return CUDA_SUCCESS;
}

CUresult gs_cd_check_init(void)
{
    return __atomic_load_n(&inited, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult gs_cd_check_device(int dev)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    return dev >= 0 && dev < gs_cd_cfg.devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

void gs_cd_sync_pause(void)
{
    unsigned us = gs_cd_cfg.sync_us;
    if (!us)
        return;
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
    /* A tool stopping the world signals this thread; sleep the rest. */
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- contexts ---- */

/* Whether p points into a[0..GS_CD_MAX_DEVICES), compared as integers. */
#define IN_ARRAY(p, a) ((uintptr_t)(p) >= (uintptr_t)(a) && \
                        (uintptr_t)(p) < (uintptr_t)((a) + GS_CD_MAX_DEVICES))

static int ctx_valid_locked(CUcontext c)
{
    if (IN_ARRAY(c, primaries))
        return c->device < gs_cd_cfg.devices;
    return reg_has_locked(&ctxs, c);
}

CUresult gs_cd_ctx_driver(CUcontext *out)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    CUcontext c = cur;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    gs_cd_lock();
    if (!ctx_valid_locked(c)) /* destroyed by another thread */
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (c->primary && c->refs == 0)
        r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    gs_cd_unlock();
    if (r == CUDA_SUCCESS)
        *out = c;
    return r;
}

static void rt_retain_locked(int dev)
{
    if (!rt_retained[dev]) {
        rt_retained[dev] = 1;
        primaries[dev].refs++;
    }
}

CUresult gs_cd_ctx_runtime(CUcontext *out)
{
    CUresult r = gs_cd_init();
    if (r != CUDA_SUCCESS)
        return r;
    CUcontext c = cur;
    gs_cd_lock();
    if (c && !ctx_valid_locked(c))
        c = NULL; /* destroyed by another thread: back to the primary */
    if (!c || (c->primary && c->refs == 0)) {
        int dev = c ? c->device : rt_dev;
        rt_retain_locked(dev);
        if (primaries[dev].refs == 0)
            primaries[dev].refs = 1;
        c = cur = &primaries[dev];
    }
    gs_cd_unlock();
    *out = c;
    return CUDA_SUCCESS;
}

CUcontext gs_cd_ctx_get_current(void) { return cur; }

CUresult gs_cd_ctx_set_current(CUcontext ctx)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (ctx) {
        gs_cd_lock();
        int ok = ctx_valid_locked(ctx);
        gs_cd_unlock();
        if (!ok)
            return CUDA_ERROR_INVALID_CONTEXT;
    }
    cur = ctx;
    return CUDA_SUCCESS;
}

CUresult gs_cd_ctx_create(int dev, CUcontext *out)
{
    CUresult r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    CUcontext c = gs_cd_obj_new(sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->device = dev;
    gs_cd_lock();
    int bad = reg_add_locked(&ctxs, c);
    gs_cd_unlock();
    if (bad) {
        gs_cd_obj_free(c, sizeof *c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    cur = c;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult gs_cd_ctx_destroy(CUcontext ctx)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    gs_cd_lock();
    int ok = reg_del_locked(&ctxs, ctx);
    gs_cd_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_CONTEXT;
    gs_cd_free_ctx(ctx, 0);
    if (cur == ctx)
        cur = NULL;
    gs_cd_obj_free(ctx, sizeof *ctx);
    return CUDA_SUCCESS;
}

CUresult gs_cd_primary_retain(int dev, CUcontext *out)
{
    CUresult r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    gs_cd_lock();
    primaries[dev].refs++;
    gs_cd_unlock();
    *out = &primaries[dev];
    return CUDA_SUCCESS;
}

CUresult gs_cd_primary_release(int dev)
{
    CUresult r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    gs_cd_lock();
    int gone = 0;
    if (primaries[dev].refs == 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        gone = --primaries[dev].refs == 0;
    gs_cd_unlock();
    if (gone)
        gs_cd_free_ctx(&primaries[dev], 0);
    return r;
}

CUresult gs_cd_rt_set_device(int dev)
{
    CUresult r = gs_cd_init();
    if (r == CUDA_SUCCESS)
        r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    gs_cd_lock();
    rt_retain_locked(dev);
    if (primaries[dev].refs == 0)
        primaries[dev].refs = 1;
    gs_cd_unlock();
    rt_dev = dev;
    cur = &primaries[dev];
    return CUDA_SUCCESS;
}

CUresult gs_cd_rt_get_device(int *dev)
{
    CUresult r = gs_cd_init();
    if (r != CUDA_SUCCESS)
        return r;
    *dev = cur ? cur->device : rt_dev;
    return CUDA_SUCCESS;
}

CUresult gs_cd_rt_device_reset(void)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_runtime(&c);
    if (r != CUDA_SUCCESS)
        return r;
    /* cudaDeviceReset frees the device's memory except stream-ordered
     * allocations, which belong to their pool. */
    gs_cd_free_ctx(&primaries[c->device], 1);
    return CUDA_SUCCESS;
}

/* ---- streams ---- */

CUresult gs_cd_stream_create(int dev, unsigned flags, CUstream *out)
{
    CUstream s = gs_cd_obj_new(sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->device = dev;
    s->flags = flags;
    gs_cd_lock();
    int bad = reg_add_locked(&streams, s);
    gs_cd_unlock();
    if (bad) {
        gs_cd_obj_free(s, sizeof *s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = s;
    return CUDA_SUCCESS;
}

CUresult gs_cd_stream_destroy(CUstream s)
{
    gs_cd_lock();
    int ok = s && reg_del_locked(&streams, s);
    gs_cd_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    gs_cd_obj_free(s, sizeof *s);
    return CUDA_SUCCESS;
}

CUresult gs_cd_stream_check(CUstream s)
{
    /* 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are always valid. */
    if ((uintptr_t)s <= 2)
        return CUDA_SUCCESS;
    gs_cd_lock();
    int ok = reg_has_locked(&streams, s);
    gs_cd_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- memory pools ---- */

CUresult gs_cd_pool_default(int dev, CUmemoryPool *out)
{
    CUresult r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    *out = &default_pools[dev];
    return CUDA_SUCCESS;
}

CUresult gs_cd_pool_create(int dev, CUmemoryPool *out)
{
    CUresult r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    CUmemoryPool p = gs_cd_obj_new(sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->device = dev;
    gs_cd_lock();
    int bad = reg_add_locked(&pools, p);
    gs_cd_unlock();
    if (bad) {
        gs_cd_obj_free(p, sizeof *p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = p;
    return CUDA_SUCCESS;
}

CUresult gs_cd_pool_destroy(CUmemoryPool pool)
{
    gs_cd_lock();
    int ok = reg_del_locked(&pools, pool);
    int free_now = ok && pool->outstanding == 0;
    if (ok && !free_now)
        pool->destroyed = 1; /* freed with its last allocation */
    gs_cd_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (free_now)
        gs_cd_obj_free(pool, sizeof *pool);
    return CUDA_SUCCESS;
}

CUresult gs_cd_pool_check(CUmemoryPool pool)
{
    if (IN_ARRAY(pool, default_pools))
        return gs_cd_check_device(pool->device);
    gs_cd_lock();
    int ok = reg_has_locked(&pools, pool);
    gs_cd_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

void gs_cd_pool_release_locked(CUmemoryPool pool)
{
    pool->outstanding--;
    if (pool->destroyed && pool->outstanding == 0)
        gs_cd_obj_free(pool, sizeof *pool);
}
