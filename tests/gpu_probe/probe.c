/*
 * gpu_probe: what a conservative host-memory scan of a CUDA process will
 * see, measured on the real driver with nothing but the driver: libcuda.so.1
 * is dlopen'ed and its prototypes are declared here, so this builds without
 * a toolkit and runs where no -dev package is installed. scripts/gpu-check.sh
 * builds it here (--prepare) and runs it on the GPU machine, alone and under
 * the shim; the facts it prints decide issue 18's open questions (docs/gpu.md,
 * "What the GPU check measures"). Taken from the audit's sketch
 * (shared/gpu-probe/probe.c); on the CUDA test double it runs too, which is
 * how `gpu-check.sh --double` tests it.
 *
 *   gpu_probe                      where copies of device addresses live
 *   LD_PRELOAD=libgcspy.so GCSPY_OUTPUT=t.trace gpu_probe   + gcspy's verdicts
 *   PROBE_CUPTI=/path/libcupti.so.13 gpu_probe   + what attaching CUPTI adds
 *   PROBE_CUDART=/path/libcudart.so.13 gpu_probe + the runtime's bookkeeping
 *   PROBE_VIA=default              allocation calls through the global scope
 *                                  (as a program linked with -lcuda), instead
 *                                  of dlsym(handle) (PyTorch's, NCCL's way)
 *
 * Output: one "probe: KEY ..." line per fact:
 *   driver     cuInit time, driver version, device, libcuda path
 *   procaddr   whether cuGetProcAddress returns the exported symbol
 *   thread     every thread's name and how many real-time signals it blocks
 *              (the shim stops threads with one for its scans)
 *   maps       the mapping (perms, path) holding pinned, managed, VMM memory
 *   copies     every readable mapping still holding the plain address of a
 *              live buffer (start or interior) while the probe keeps only
 *              complemented copies: those keep a dropped buffer "reachable";
 *              again after the frees (stale copies)
 *   gcspy      under the shim: gcspy_scan() with the buffers dropped (the
 *              trace then says definite or reachable for each)
 * Never reads device memory; reads host memory with process_vm_readv only.
 * Exit 0 when the facts are printed, 77 when there is no usable driver.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUmemHandle;
typedef struct {
    int type;          /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
    int requestedHandleTypes; /* 0: none */
    struct { int type; int id; } location; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
    void *win32HandleMetaData;
    struct { unsigned char compressionType, gpuDirectRDMACapable; unsigned short usage;
             unsigned char reserved[4]; } allocFlags;
} CUmemAllocationProp;
typedef struct { struct { int type; int id; } location; int flags; } CUmemAccessDesc;

#define F(ret, name, args) static ret(*p_##name) args
F(CUresult, cuInit, (unsigned));
F(CUresult, cuDriverGetVersion, (int *));
F(CUresult, cuDeviceGet, (CUdevice *, int));
F(CUresult, cuDeviceGetName, (char *, int, CUdevice));
F(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice));
F(CUresult, cuCtxSetCurrent, (CUcontext));
F(CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t));
F(CUresult, cuMemFree_v2, (CUdeviceptr));
F(CUresult, cuMemAllocHost_v2, (void **, size_t));
F(CUresult, cuMemFreeHost, (void *));
F(CUresult, cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned));
F(CUresult, cuMemGetAllocationGranularity, (size_t *, const CUmemAllocationProp *, int));
F(CUresult, cuMemCreate, (CUmemHandle *, size_t, const CUmemAllocationProp *, unsigned long long));
F(CUresult, cuMemRelease, (CUmemHandle));
F(CUresult, cuMemAddressReserve, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long));
F(CUresult, cuMemAddressFree, (CUdeviceptr, size_t));
F(CUresult, cuMemMap, (CUdeviceptr, size_t, size_t, CUmemHandle, unsigned long long));
F(CUresult, cuMemUnmap, (CUdeviceptr, size_t));
F(CUresult, cuMemSetAccess, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t));
F(CUresult, cuGetProcAddress_v2, (const char *, void **, int, unsigned long long, int *));
F(CUresult, cuGetErrorName, (CUresult, const char **));
static int (*p_gcspy_scan)(void);

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static const char *ename(CUresult r)
{
    const char *s = NULL;
    if (p_cuGetErrorName && p_cuGetErrorName(r, &s) == 0 && s)
        return s;
    return "?";
}

/* A call through a pointer that may be missing (the test double lacks
 * some): a missing function is a line, never a crash. */
#define CK(fn, args)                                                                 \
    do {                                                                             \
        if (!p_##fn) {                                                               \
            printf("probe: missing %s\n", #fn);                                      \
            break;                                                                   \
        }                                                                            \
        CUresult r_ = p_##fn args;                                                   \
        if (r_) {                                                                    \
            printf("probe: error %s -> %d %s\n", #fn, r_, ename(r_));              \
            fflush(stdout);                                                          \
        }                                                                            \
    } while (0)

/* ---- what we look for, kept complemented so our own copy is not a hit ---- */
#define NT 64
static struct { uint64_t nlo, nhi; const char *what; } targets[NT];
static int ntargets;

static void target(uint64_t addr, uint64_t size, const char *what)
{
    if (ntargets < NT && addr) {
        targets[ntargets].nlo = ~addr;
        targets[ntargets].nhi = ~(addr + size);
        targets[ntargets].what = what;
        ntargets++;
    }
}

struct map { uint64_t lo, hi; char perms[5]; char path[256]; };
static struct map maps[8192];
static int nmaps;

static void read_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    nmaps = 0;
    if (!f)
        return;
    char line[512];
    while (nmaps < 8192 && fgets(line, sizeof line, f)) {
        struct map *m = &maps[nmaps];
        unsigned long lo, hi;
        char perms[5] = {0};
        int pos = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &lo, &hi, perms, &pos) < 3)
            continue;
        m->lo = lo;
        m->hi = hi;
        memcpy(m->perms, perms, 5);
        char *p = line + pos;
        p[strcspn(p, "\n")] = 0;
        snprintf(m->path, sizeof m->path, "%s", *p ? p : "[anon]");
        nmaps++;
    }
    fclose(f);
}

static const struct map *map_of(uint64_t a)
{
    for (int i = 0; i < nmaps; i++)
        if (a >= maps[i].lo && a < maps[i].hi)
            return &maps[i];
    return NULL;
}

/* Every readable mapping, word by word: hits on any target (start or interior). */
static void search(const char *phase)
{
    read_maps();
    static uint64_t buf[1 << 16];
    int hits_total = 0;
    int per_target[NT] = {0};
    for (int i = 0; i < nmaps; i++) {
        const struct map *m = &maps[i];
        if (m->perms[0] != 'r' || !strcmp(m->path, "[vvar]") || !strcmp(m->path, "[vsyscall]") ||
            !strncmp(m->path, "/dev/", 5))
            continue;
        int hits_here = 0, shown = 0;
        for (uint64_t a = m->lo; a < m->hi;) {
            size_t n = m->hi - a < sizeof buf ? m->hi - a : sizeof buf;
            struct iovec l = {buf, n}, r = {(void *)a, n};
            ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
            if (got <= 0) {
                a += 4096;
                continue;
            }
            for (size_t w = 0; w < (size_t)got / 8; w++) {
                uint64_t v = buf[w];
                if (!v)
                    continue;
                for (int t = 0; t < ntargets; t++) {
                    if (v >= ~targets[t].nlo && v < ~targets[t].nhi) {
                        per_target[t]++;
                        hits_here++;
                        if (shown++ < 3)
                            printf("probe: copy %s %s at %s+0x%lx (%s %s)\n", phase,
                                   targets[t].what, m->path, (unsigned long)(a + 8 * w - m->lo),
                                   m->perms, v == ~targets[t].nlo ? "start" : "interior");
                    }
                }
            }
            a += (uint64_t)got;
        }
        if (hits_here)
            printf("probe: copies %s mapping %lx-%lx %s %s: %d\n", phase, (unsigned long)m->lo,
                   (unsigned long)m->hi, m->perms, m->path, hits_here);
        hits_total += hits_here;
    }
    /* The buffer still holds the last chunk read (plain copies of whatever
     * that memory held: gcspy's own tables hold every block's address), and
     * the map table the bounds of every mapping, among them the start of
     * each pinned or managed allocation the driver mapped on its own (when
     * the kernel did not merge the mapping with a neighbour: it depends on
     * the layout). Both are the probe's own plain copies, roots to the
     * gcspy_scan that follows: the managed block found that way is
     * reachable and unread, and every definite verdict turned possible
     * (one run in two once a 4 MiB mapping of gcspy's moved the layout). */
    explicit_bzero(buf, sizeof buf);
    explicit_bzero(maps, sizeof maps);
    nmaps = 0;
    for (int t = 0; t < ntargets; t++)
        printf("probe: copies %s target %s: %d\n", phase, targets[t].what, per_target[t]);
    printf("probe: copies %s total %d\n", phase, hits_total);
    fflush(stdout);
}

/* ---- threads and their signal masks ---- */
static void sigmasks(const char *phase)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[320], comm[64] = "?", line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = 0;
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        unsigned long long blk = 0;
        if (f) {
            while (fgets(line, sizeof line, f))
                if (!strncmp(line, "SigBlk:", 7))
                    blk = strtoull(line + 7, NULL, 16);
            fclose(f);
        }
        int rt_blocked = 0, rt_total = 0;
        for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
            rt_total++;
            rt_blocked += (blk >> (s - 1)) & 1;
        }
        printf("probe: thread %s tid=%s %s SigBlk=%016llx rt_blocked=%d/%d\n", phase, e->d_name, comm,
               blk, rt_blocked, rt_total);
    }
    closedir(d);
    fflush(stdout);
}

/* ---- CUPTI, optional ---- */
static void CUPTI_cb(void *u, int dom, unsigned cbid, const void *data)
{
    (void)u, (void)dom, (void)cbid, (void)data;
}
static void buf_req(uint8_t **b, size_t *sz, size_t *max)
{
    *b = aligned_alloc(8, 1 << 20);
    *sz = 1 << 20;
    *max = 0;
}
static void buf_done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid)
{
    (void)c, (void)s, (void)sz, (void)valid;
    free(b);
}

static void attach_cupti(void)
{
    const char *path = getenv("PROBE_CUPTI");
    if (!path || !*path)
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("probe: cupti dlopen %s failed: %s\n", path, dlerror());
        return;
    }
    int (*sub)(void **, void *, void *) = (int (*)(void **, void *, void *))dlsym(h, "cuptiSubscribe");
    int (*reg)(void *, void *) = (int (*)(void *, void *))dlsym(h, "cuptiActivityRegisterCallbacks");
    int (*en)(int) = (int (*)(int))dlsym(h, "cuptiActivityEnable");
    int (*encb)(unsigned, void *, int) = (int (*)(unsigned, void *, int))dlsym(h, "cuptiEnableDomain");
    if (!sub || !reg || !en) {
        printf("probe: cupti symbols missing\n");
        return;
    }
    void *subscriber = NULL;
    int r1 = sub(&subscriber, (void *)CUPTI_cb, NULL);
    int r2 = encb ? encb(1, subscriber, 1 /* CUPTI_CB_DOMAIN_DRIVER_API */) : -1;
    int r3 = reg((void *)buf_req, (void *)buf_done);
    int r4 = en(49 /* CUPTI_ACTIVITY_KIND_MEMORY2 */);
    printf("probe: cupti %s subscribe=%d enable_domain=%d register=%d memory2=%d\n", path, r1, r2, r3,
           r4);
    fflush(stdout);
}

#define SYM(h, name) (p_##name = (__typeof__(p_##name))dlsym(h, #name))

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    setvbuf(stdout, NULL, _IOLBF, 0);
    p_gcspy_scan = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    printf("probe: gcspy %s\n", p_gcspy_scan ? "preloaded" : "absent");
    sigmasks("start");
    double t0 = now_s();
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("probe: no libcuda.so.1: %s\n", dlerror());
        return 77;
    }
    SYM(h, cuInit); SYM(h, cuDriverGetVersion); SYM(h, cuDeviceGet); SYM(h, cuDeviceGetName);
    SYM(h, cuDevicePrimaryCtxRetain); SYM(h, cuCtxSetCurrent); SYM(h, cuMemAlloc_v2);
    SYM(h, cuMemFree_v2); SYM(h, cuMemAllocHost_v2); SYM(h, cuMemFreeHost); SYM(h, cuMemAllocManaged);
    SYM(h, cuMemGetAllocationGranularity); SYM(h, cuMemCreate); SYM(h, cuMemRelease);
    SYM(h, cuMemAddressReserve); SYM(h, cuMemAddressFree); SYM(h, cuMemMap); SYM(h, cuMemUnmap);
    SYM(h, cuMemSetAccess); SYM(h, cuGetProcAddress_v2); SYM(h, cuGetErrorName);
    /* PROBE_VIA=default: the allocation calls go through the global scope,
     * where a preloaded libgcspy.so's wrappers come first (as for a program
     * linked with -lcuda); the default, dlsym(handle), is what PyTorch's
     * driver_api.cpp, NCCL and XLA do, which no LD_PRELOAD wrapper sees. */
    const char *via = getenv("PROBE_VIA");
    if (via && !strcmp(via, "default")) {
#define DEF(name) do { void *q_ = dlsym(RTLD_DEFAULT, #name); if (q_) p_##name = (__typeof__(p_##name))q_; } while (0)
        DEF(cuMemAlloc_v2); DEF(cuMemFree_v2); DEF(cuMemAllocHost_v2); DEF(cuMemFreeHost);
        DEF(cuMemAllocManaged); DEF(cuMemCreate); DEF(cuMemRelease); DEF(cuMemAddressReserve);
        DEF(cuMemAddressFree); DEF(cuMemMap); DEF(cuMemUnmap);
#undef DEF
    }
    printf("probe: allocation calls via %s\n", via && !strcmp(via, "default") ? "global scope (PLT-like)" : "dlsym(libcuda handle)");
    Dl_info di;
    if (p_cuInit && dladdr((void *)p_cuInit, &di))
        printf("probe: libcuda %s\n", di.dli_fname);
    if (!p_cuInit || !p_cuMemAlloc_v2) {
        printf("probe: libcuda lacks cuInit/cuMemAlloc_v2\n");
        return 77;
    }
    CUresult r = p_cuInit(0);
    printf("probe: cuInit rc=%d %s in %.3f s\n", r, ename(r), now_s() - t0);
    if (r)
        return 77;
    int ver = 0;
    CK(cuDriverGetVersion, (&ver));
    CUdevice dev = 0;
    char name[128] = "?";
    CK(cuDeviceGet, (&dev, 0));
    CK(cuDeviceGetName, (name, sizeof name, dev));
    printf("probe: driver CUDA %d.%d device0 %s\n", ver / 1000, ver % 1000 / 10, name);
    CUcontext ctx = NULL;
    t0 = now_s();
    CK(cuDevicePrimaryCtxRetain, (&ctx, dev));
    CK(cuCtxSetCurrent, (ctx));
    printf("probe: primary context in %.3f s\n", now_s() - t0);

    /* procaddr */
    static const char *const names[][2] = {{"cuMemAlloc", "cuMemAlloc_v2"}, {"cuMemFree", "cuMemFree_v2"},
                                           {"cuMemMap", "cuMemMap"}, {"cuMemCreate", "cuMemCreate"},
                                           {"cuMemAllocAsync", "cuMemAllocAsync"}};
    for (size_t i = 0; p_cuGetProcAddress_v2 && i < sizeof names / sizeof names[0]; i++) {
        void *viaproc = NULL;
        int st = -1;
        CUresult rr = p_cuGetProcAddress_v2(names[i][0], &viaproc, 12000, 0, &st);
        void *exported = dlsym(h, names[i][1]);
        printf("probe: procaddr %s rc=%d status=%d same_as_export(%s)=%s\n", names[i][0], rr, st,
               names[i][1], viaproc && viaproc == exported ? "yes" : "NO");
    }
    sigmasks("after-ctx");
    attach_cupti();
    if (getenv("PROBE_CUPTI"))
        sigmasks("after-cupti");

    /* device buffers */
    CUdeviceptr d[4] = {0};
    static const size_t dsz[4] = {1 << 20, 2 << 20, 3 << 20, (5 << 20) + 768};
    static const char *const dname[4] = {"dev1M", "dev2M", "dev3M", "dev5M+768"};
    for (int i = 0; i < 4; i++) {
        CK(cuMemAlloc_v2, (&d[i], dsz[i]));
        target(d[i], dsz[i], dname[i]);
        d[i] = ~d[i];
    }
    void *pin = NULL;
    if (p_cuMemAllocHost_v2) {
        CK(cuMemAllocHost_v2, (&pin, 1 << 20));
        const struct map *m = (read_maps(), map_of((uintptr_t)pin));
        printf("probe: maps pinned %p in %s %s\n", pin, m ? m->perms : "-", m ? m->path : "(none)");
        target((uintptr_t)pin, 1 << 20, "pinned1M");
        if (pin)
            pin = (void *)~(uintptr_t)pin;
    }
    CUdeviceptr man = 0;
    if (p_cuMemAllocManaged) {
        CK(cuMemAllocManaged, (&man, 1 << 20, 1 /* CU_MEM_ATTACH_GLOBAL */));
        const struct map *m = (read_maps(), map_of(man));
        printf("probe: maps managed %llx in %s %s\n", man, m ? m->perms : "-", m ? m->path : "(none)");
        target(man, 1 << 20, "managed1M");
        if (man)
            man = ~man;
    }
    CUdeviceptr va = 0;
    CUmemHandle mh = 0;
    size_t gran = 0;
    if (p_cuMemCreate && p_cuMemMap && p_cuMemAddressReserve && p_cuMemGetAllocationGranularity) {
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        prop.type = 1;
        prop.location.type = 1;
        prop.location.id = dev;
        CK(cuMemGetAllocationGranularity, (&gran, &prop, 0));
        if (gran) {
            CK(cuMemAddressReserve, (&va, 4 * gran, 0, 0, 0));
            CK(cuMemCreate, (&mh, 2 * gran, &prop, 0));
            CK(cuMemMap, (va, 2 * gran, 0, mh, 0));
            CUmemAccessDesc acc = {{1, dev}, 3 /* READWRITE */};
            CK(cuMemSetAccess, (va, 2 * gran, &acc, 1));
            target(va, 4 * gran, "vmm-reservation");
            va = ~va;
        }
    }
    /* PROBE_CUDART=libcudart.so.12: the runtime's own bookkeeping too. */
    void *rtp = NULL, *rth = NULL;
    const char *rt = getenv("PROBE_CUDART");
    if (rt && *rt) {
        void *hr = dlopen(rt, RTLD_NOW | RTLD_LOCAL);
        int (*cm)(void **, size_t) = hr ? (int (*)(void **, size_t))dlsym(hr, "cudaMalloc") : NULL;
        int (*cmh)(void **, size_t) = hr ? (int (*)(void **, size_t))dlsym(hr, "cudaMallocHost") : NULL;
        int r1 = cm ? cm(&rtp, 7 << 20) : -1, r2 = cmh ? cmh(&rth, 65536) : -1;
        printf("probe: cudart %s cudaMalloc rc=%d cudaMallocHost rc=%d%s\n", rt, r1, r2,
               hr ? "" : " (dlopen failed)");
        target((uintptr_t)rtp, 7 << 20, "rt-dev7M");
        target((uintptr_t)rth, 65536, "rt-pinned64K");
        rtp = rtp ? (void *)~(uintptr_t)rtp : NULL; /* left allocated: the exit scan sees them */
        rth = rth ? (void *)~(uintptr_t)rth : NULL;
    }
    if (getenv("PROBE_SELFTEST")) { /* a known copy: the search must report it */
        uint64_t *plant = malloc(64);
        plant[3] = ~targets[0].nlo + 16;
        printf("probe: selftest planted an interior copy of %s in the heap\n", targets[0].what);
    }
    search("live");

    if (p_gcspy_scan) {
        /* Every plain copy we made is gone (complemented): whatever gcspy
         * finds reachable now is held by someone else's memory. */
        int rc = p_gcspy_scan();
        printf("probe: gcspy_scan with buffers dropped rc=%d (see the trace: definite vs reachable)\n", rc);
    }

    for (int i = 0; i < 4; i++)
        if (d[i] && ~d[i])
            CK(cuMemFree_v2, (~d[i]));
    if (pin != NULL)
        CK(cuMemFreeHost, ((void *)~(uintptr_t)pin));
    if (man)
        CK(cuMemFree_v2, (~man));
    if (va) {
        CK(cuMemUnmap, (~va, 2 * gran));
        CK(cuMemRelease, (mh));
        CK(cuMemAddressFree, (~va, 4 * gran));
    }
    search("freed");
    printf("probe: done\n");
    return 0;
}
