/*
 * leak_dlclose: leaks made by a library's code, then the library closed.
 * leak_libleak.so allocates a 1001-byte block and drops it (definite in both
 * scans), and a 2010-byte block it keeps in its own bss: reachable in the
 * gcspy_scan() made while the library is loaded, definitely lost at exit
 * after dlclose unmapped that bss. The blocks' stacks point into code that
 * is gone; the scanner must not care.
 *
 * dlopen makes ld.so allocate a 2304-byte _dl_find_object segment that it
 * reaches only through an aligned interior pointer: possibly lost, as
 * memcheck reports it when glibc's exit-time freeres does not run.
 *
 * @scans api 1
 * @scan api definite=1/1001 indirect=0/0 possible=1/2304
 * @block api 1001=definite 2010=reachable
 * @scans exit 1
 * @scan exit definite=2/3011 indirect=0/0 possible=1/2304
 * @block exit 1001=definite 2010=definite
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

static __attribute__((noinline)) int use_library(void)
{
    void *lib = dlopen("leak_libleak.so", RTLD_NOW);
    if (!lib)
        return -1;
    void (*drop)(size_t) = (void (*)(size_t))dlsym(lib, "leak_lib_drop");
    void (*hold)(size_t) = (void (*)(size_t))dlsym(lib, "leak_lib_hold");
    if (!drop || !hold)
        return -1;
    drop(1001);
    hold(2010);
    clobber_stack();
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    int rc = scan ? scan() : 0;
    return dlclose(lib) || rc ? -1 : 0;
}

int main(void)
{
    int rc = use_library();
    clobber_stack();
    return rc ? 1 : 0;
}
