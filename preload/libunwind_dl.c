/*
 * libunwind through dlopen. GCSPY_UNWIND=libunwind walks DWARF unwind tables
 * with libunwind's unw_backtrace(). Linked as a DT_NEEDED library, libunwind
 * would be a dependency of libgcspy.so, and on a machine without it every
 * program run under LD_PRELOAD would fail to start ("libunwind.so.8: cannot
 * open shared object file"); Debian's libunwind.a is not position-
 * independent, so it cannot be linked in either. It is loaded here instead,
 * RTLD_LOCAL (its _Unwind_* symbols never interpose the program's), when a
 * walker needs it.
 *
 * What must stay true: dlopen() runs only where the dynamic loader may be
 * re-entered (our constructor, the writer thread), never from a hook: a hook
 * may run inside the loader (ld.so calls malloc) or before libc is ready.
 * Until the load, and for good when it failed, gs_unw_backtrace() answers
 * -1 and the callers walk frame pointers: the allocations of libraries'
 * constructors that run before ours keep their stacks, and gs_opt.unwind
 * (read by every thread, and in the trace's process record: the walker
 * asked for) is never written here. The function pointer is published once, with
 * release order; a reader sees NULL or a loaded function.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>

#include "mem.h"
#include "libunwind_dl.h"

typedef int (*backtrace_fn)(void **, int);
static _Atomic(backtrace_fn) bt;
static atomic_int tried;

int gs_unwind_load(int always)
{
    int wanted = gs_opt.unwind == GS_UNWIND_LIBUNWIND;
    if (!wanted && !always)
        return -1;
    if (atomic_exchange(&tried, 1))
        return atomic_load(&bt) ? 0 : -1;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    /* unw_backtrace is the generic name; libunwind also exports it under its
     * local-only, per-architecture name (_ULx86_64_backtrace, ...). */
    backtrace_fn f = h ? (backtrace_fn)dlsym(h, "unw_backtrace") : NULL;
    if (f) {
        atomic_store_explicit(&bt, f, memory_order_release);
        return 0;
    }
    if (wanted) {
        const char *why = h ? "it has no unw_backtrace" : dlerror();
        gs_log("GCSPY_UNWIND=libunwind: libunwind is not available (%s); walking frame pointers",
               why ? why : "dlopen failed");
    }
    return -1;
}

int gs_unw_backtrace(void **buf, int size)
{
    backtrace_fn f = atomic_load_explicit(&bt, memory_order_acquire);
    return f ? f(buf, size) : -1;
}
