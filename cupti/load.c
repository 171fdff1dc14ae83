/*
 * Finding libcupti and the gcspy core at run time (load.h).
 *
 * libcupti is not linked: a program may bring its own CUDA (a PyTorch wheel
 * ships libcudart.so.12 and libcupti.so.12 in site-packages/nvidia/...),
 * and the CUPTI to use is the one that matches it. Candidates, first that
 * loads wins:
 *   1. a libcupti already in the process (a profiler library loaded it);
 *   2. beside the CUDA runtime the process loaded (its folder, the
 *      toolkit's extras/CUPTI/lib64, the pip layout's ../../cuda_cupti/lib),
 *      with the runtime's major version;
 *   3. the toolkit gcspy was built against (GS_CUPTI_BUILD_LIBDIR);
 *   4. the loader's search path (LD_LIBRARY_PATH, ld.so.cache).
 * The CUDA 13 pip wheels keep every library in one folder
 * (site-packages/nvidia/cu13/lib: libcudart.so.13 beside libcupti.so.13),
 * found by 2's first place; the CUDA 12 ones one per package
 * (nvidia/cuda_runtime/lib, nvidia/cuda_cupti/lib), 2's last.
 *
 * A CUPTI newer than the driver refuses to attach (or fails later): a
 * candidate whose CUDA major version (its soname, libcupti.so.N) is above
 * the driver's (cuDriverGetVersion) is passed over, and when every one
 * found is, one line names them and the driver's version.
 *
 * Before any of that, the driver in the process must be NVIDIA's (CUPTI
 * works through its export tables): a stand-in such as the test double
 * (tests/cuda_double) gets a one-line refusal, and libcupti is not loaded.
 *
 * The core: gcspy_bridge_version in the global scope means libgcspy.so is
 * preloaded (its hooks run too); otherwise we were loaded by the driver on
 * our own (CUDA_INJECTION64_PATH) and load libgcspy.so from our folder,
 * RTLD_GLOBAL so that its exported functions are found as usual. Loaded late
 * like that it interposes nothing (the program's malloc and cudaMalloc are
 * already bound elsewhere): it traces what we feed it, device events only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

#ifndef GS_CUPTI_BUILD_LIBDIR
#define GS_CUPTI_BUILD_LIBDIR "/usr/local/cuda/lib64"
#endif

const char *gs_cupti_result(const struct gs_cupti_lib *l, CUptiResult r)
{
    const char *s = NULL;
    if (l->GetResultString && l->GetResultString(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

static int resolve(struct gs_cupti_lib *l, void *h)
{
#define SYM(field, name)                                                       \
    if (!(l->field = (__typeof__(l->field))dlsym(h, name)))                    \
        return -1;
    SYM(Subscribe, "cuptiSubscribe")
    SYM(Unsubscribe, "cuptiUnsubscribe")
    SYM(EnableCallback, "cuptiEnableCallback")
    SYM(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks")
    SYM(ActivityEnable, "cuptiActivityEnable")
    SYM(ActivityDisable, "cuptiActivityDisable")
    SYM(ActivityGetNextRecord, "cuptiActivityGetNextRecord")
    SYM(ActivityFlushAll, "cuptiActivityFlushAll")
    SYM(ActivitySetAttribute, "cuptiActivitySetAttribute")
    SYM(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords")
    SYM(GetTimestamp, "cuptiGetTimestamp")
    SYM(GetResultString, "cuptiGetResultString")
    SYM(GetDeviceId, "cuptiGetDeviceId")
#undef SYM
    l->GetVersion = (__typeof__(l->GetVersion))dlsym(h, "cuptiGetVersion");
    l->handle = h;
    return 0;
}

int gs_cupti_soname_major(void *handle)
{
    struct link_map *lm = NULL;
    if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld)
        return -1;
    const char *strtab = NULL;
    size_t soname = 0;
    int have = 0;
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr;
        else if (d->d_tag == DT_SONAME) {
            soname = d->d_un.d_val;
            have = 1;
        }
    }
    if (!strtab || !have)
        return -1;
    /* glibc relocates DT_STRTAB to an address; a small value is an offset */
    if ((uintptr_t)strtab < lm->l_addr)
        strtab += lm->l_addr;
    const char *name = strtab + soname, *v = strstr(name, ".so.");
    if (!v || v[4] < '0' || v[4] > '9')
        return -1;
    return atoi(v + 4);
}

int gs_cupti_fits(int driver_version, int cupti_major)
{
    return driver_version <= 0 || cupti_major <= 0 || cupti_major <= driver_version / 1000;
}

/* Candidates passed over for being newer than the driver, for the line
 * that says none fits. */
static char too_new[512];

static int try_open(struct gs_cupti_lib *l, const char *path, int flags, int driver_version)
{
    void *h = dlopen(path, flags);
    if (!h)
        return -1;
    int major = gs_cupti_soname_major(h);
    if (!gs_cupti_fits(driver_version, major)) {
        size_t n = strlen(too_new);
        if (!strstr(too_new, path) && n + strlen(path) + 32 < sizeof too_new)
            snprintf(too_new + n, sizeof too_new - n, "%s%s (CUDA %d)", n ? ", " : "", path, major);
        dlclose(h);
        return -1;
    }
    if (resolve(l, h)) {
        dlclose(h);
        return -1;
    }
    l->cuda_major = major;
    size_t n = strlen(path);
    if (n >= sizeof l->path)
        n = sizeof l->path - 1;
    memcpy(l->path, path, n);
    l->path[n] = 0;
    return 0;
}

/* The loaded CUDA runtime: its folder and the major version in its name
 * (libcudart.so.12 -> "12"). */
struct rt_info {
    char dir[512];
    char major[16];
};

static int find_runtime(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct rt_info *rt = arg;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    if (!base || strncmp(base + 1, "libcudart.so.", 13))
        return 0;
    snprintf(rt->dir, sizeof rt->dir, "%.*s", (int)(base - name), name);
    snprintf(rt->major, sizeof rt->major, "%s", base + 14);
    char *dot = strchr(rt->major, '.');
    if (dot)
        *dot = 0;
    return 1;
}

int gs_cupti_lib_load(struct gs_cupti_lib *l, int driver_version, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    too_new[0] = 0;
    static const char *const majors[] = {"13", "12", "11.8"};
    char name[64], path[1200];

    /* 1. Already loaded. */
    for (size_t i = 0; i < sizeof majors / sizeof majors[0]; i++) {
        snprintf(name, sizeof name, "libcupti.so.%s", majors[i]);
        if (!try_open(l, name, RTLD_NOW | RTLD_NOLOAD, driver_version))
            return 0;
    }
    /* 2. Beside the runtime. */
    struct rt_info rt;
    memset(&rt, 0, sizeof rt);
    dl_iterate_phdr(find_runtime, &rt);
    if (rt.dir[0] && rt.major[0]) {
        static const char *const rel[] = {"", "/../extras/CUPTI/lib64", "/../../cuda_cupti/lib"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(path, sizeof path, "%s%s/libcupti.so.%s", rt.dir, rel[i], rt.major);
            if (access(path, R_OK) == 0 && !try_open(l, path, RTLD_NOW | RTLD_LOCAL, driver_version))
                return 0;
        }
    }
    /* 3. The toolkit we were built against. */
    snprintf(path, sizeof path, "%s/libcupti.so", GS_CUPTI_BUILD_LIBDIR);
    if (access(path, R_OK) == 0 && !try_open(l, path, RTLD_NOW | RTLD_LOCAL, driver_version))
        return 0;
    /* 4. The loader's search path. */
    if (rt.major[0]) {
        snprintf(name, sizeof name, "libcupti.so.%s", rt.major);
        if (!try_open(l, name, RTLD_NOW | RTLD_LOCAL, driver_version))
            return 0;
    }
    if (!try_open(l, "libcupti.so", RTLD_NOW | RTLD_LOCAL, driver_version))
        return 0;
    if (too_new[0]) {
        snprintf(err, errlen, "no libcupti fits the driver (CUDA %d.%d): %s, newer than the driver",
                 driver_version / 1000, driver_version % 1000 / 10, too_new);
        return -1;
    }
    snprintf(err, errlen, "libcupti not found (looked beside %s, in %s and on the library path)",
             rt.dir[0] ? rt.dir : "the CUDA runtime (none loaded)", GS_CUPTI_BUILD_LIBDIR);
    return -1;
}

int gs_cupti_driver_check(int *version, char *err, size_t errlen)
{
    *version = 0;
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!drv) {
        snprintf(err, errlen, "no CUDA driver (libcuda.so.1) in the process");
        return -1;
    }
    /* CUPTI reaches the driver through its export tables. */
    void *et = dlsym(drv, "cuGetExportTable");
    int (*get_version)(int *) = (int (*)(int *))dlsym(drv, "cuDriverGetVersion");
    if (et && get_version && get_version(version) != 0)
        *version = 0;
    dlclose(drv);
    if (!et) {
        snprintf(err, errlen, "the libcuda.so.1 in the process is not NVIDIA's driver "
                              "(no cuGetExportTable): CUPTI cannot attach to it");
        return -1;
    }
    return 0;
}

int gs_cupti_core_find(struct gs_cupti_core *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    void *h = RTLD_DEFAULT;
    int (*version)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_bridge_version");
    if (!version) {
        Dl_info info;
        char path[1200];
        if (!dladdr((void *)&gs_cupti_core_find, &info) || !info.dli_fname) {
            snprintf(err, errlen, "cannot tell where libgcspy_cupti.so was loaded from");
            return -1;
        }
        const char *slash = strrchr(info.dli_fname, '/');
        snprintf(path, sizeof path, "%.*s%slibgcspy.so", slash ? (int)(slash - info.dli_fname) : 0,
                 info.dli_fname, slash ? "/" : "");
        h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            snprintf(err, errlen, "libgcspy.so not preloaded and not loadable: %s", dlerror());
            return -1;
        }
        version = (int (*)(void))dlsym(h, "gcspy_bridge_version");
        b->ours = 1;
    }
    if (!version || version() != GCSPY_BRIDGE_VERSION) {
        snprintf(err, errlen, "libgcspy.so bridge version %d, this subscriber speaks %d",
                 version ? version() : -1, GCSPY_BRIDGE_VERSION);
        return -1;
    }
#define SYM(field, name)                                                       \
    if (!(b->field = (__typeof__(b->field))dlsym(h, name))) {                  \
        snprintf(err, errlen, "libgcspy.so lacks %s", name);                   \
        return -1;                                                             \
    }
    SYM(now_ns, "gcspy_now_ns")
    SYM(device_alloc, "gcspy_device_alloc")
    SYM(device_free, "gcspy_device_free")
    SYM(pause, "gcspy_pause")
    SYM(device_sample, "gcspy_device_sample")
#undef SYM
    return 0;
}
