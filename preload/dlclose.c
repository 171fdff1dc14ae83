/*
 * dlclose, interposed. Another module may be loaded at once where the
 * closed one was (a plugin reloaded), and the stack walk's cached rules
 * (unwind.h) are dropped only once the loader's unload count has been
 * seen, which a later rule lookup or the writer's next module sync would
 * do: an allocation through the new code before then would be walked by
 * the old code's rules, and its stack cut short. So the count is seen here,
 * before the caller runs again (stack_walk.sh's case 4).
 *
 * Unlike dlopen, dlclose does not depend on its caller, so a wrapper is
 * safe. It lives low in the layers (not with the hooks): gcspy's own
 * dlclose calls (life.c, cuda_hooks.c) come here too. The real one is found
 * through dlsym's stub with RTLD_NEXT: the first definition after
 * libgcspy, as for every hook.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>

#include "unwind.h"

static int (*real_dlclose)(void *);

__attribute__((visibility("default"))) int dlclose(void *h)
{
    int (*f)(void *) = __atomic_load_n(&real_dlclose, __ATOMIC_RELAXED);
    if (!f) {
        f = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
        if (!f)
            return -1;
        __atomic_store_n(&real_dlclose, f, __ATOMIC_RELAXED);
    }
    int rc = f(h);
    int e = errno;
    gs_unw_resync();
    errno = e;
    return rc;
}
