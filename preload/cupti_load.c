/*
 * Attaching the CUPTI subscriber. CUPTI sees what PLT hooks cannot
 * (cuGetProcAddress pointers, a static cudart, pool allocations). Once the
 * CUDA driver is loaded (modules.c sets gs_cuda_loaded), the writer thread's
 * tick (daemon.c) loads libgcspy_cupti.so from beside us and calls its entry
 * point. The writer does it because it holds no gcspy lock and no program
 * lock; the environment is left alone, so a program without CUDA sees no
 * difference at all. The subscriber then feeds the table through bridge.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "cupti_load.h"
#include "mem.h"
#include "modules.h"
#include "libunwind_dl.h"

static int (*cupti_flush)(void);

void gs_cupti_maybe_load(void)
{
    static int done;
    if (done || !atomic_load(&gs_cuda_loaded) || !gs_opt.cupti)
        return;
    done = 1;
    Dl_info info;
    if (!dladdr((void *)&gs_cupti_maybe_load, &info) || !info.dli_fname)
        return;
    char path[4096];
    const char *slash = strrchr(info.dli_fname, '/');
    int dir = slash ? (int)(slash - info.dli_fname) : 0;
    gs_fmt(path, sizeof path, "%s", info.dli_fname);
    path[dir] = 0;
    gs_fmt(path + dir, sizeof path - (size_t)dir, "%slibgcspy_cupti.so", dir ? "/" : "");
    if (access(path, R_OK))
        return;
    gs_unwind_load(1); /* the bridge's stacks (bridge.c) */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "gcspy_cupti_attach") : NULL;
    const char *(*why)(void) = h ? (const char *(*)(void))dlsym(h, "gcspy_cupti_error") : NULL;
    if (h && !init) /* the driver's injection entry point does the same */
        init = (int (*)(void))dlsym(h, "InitializeInjection");
    if (!init || init() < 0) {
        const char *w = !h ? dlerror() : why && why() ? why() : "its start-up failed";
        gs_log("CUPTI subscriber not attached (%s); device events come from the hooks only", w);
        return;
    }
    cupti_flush = (int (*)(void))dlsym(h, "gcspy_cupti_flush");
}

void gs_cupti_flush(void)
{
    if (cupti_flush)
        cupti_flush();
}
