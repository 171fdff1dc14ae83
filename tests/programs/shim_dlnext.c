/*
 * libshim_dlnext.so, linked into shim_dlsym (tests/integration/shim_dlsym.sh):
 * a library that looks symbols up with RTLD_NEXT, as interposers do. glibc
 * resolves RTLD_NEXT after the CALLER's module, so from here:
 *  - "shim_dlnext_value", defined here and in no module after this one, is
 *    not found (NULL); a lookup made as if from libgcspy.so, which is loaded
 *    before this library, would find this library's own definition;
 *  - "malloc" is libc's, the next definition after this library.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

int shim_dlnext_value(void)
{
    return 42;
}

void *shim_dlnext_lookup(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

void *shim_dlnext_default(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}
