/*
 * dlopen/dlclose under the shim. Loads the library named by argv[1]
 * (libshim_dlib.so), calls its dlib_alloc(31313), frees the block, dlcloses
 * it, then allocates 100 bytes from a new call site (a new stack makes the
 * shim look at the module map again). Then loads the library a second time,
 * allocates 32323 bytes through it, frees, dlcloses, allocates 200 bytes.
 * Prints "load N base 0x..." (the library's dlinfo base) for each load.
 *
 * Expected (tests/integration/shim_dlopen.sh): a module record for each
 * load of the library, with distinct ids, each followed by a module_unload
 * of that id after its dlclose; the 31313- and 32323-byte allocations'
 * innermost frames lie in dlib_alloc, inside an executable segment of the
 * module record of their load. Exit status 0; 2 when the library fails to
 * load.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

static void *volatile keep;

static int once(const char *path, int round, size_t size)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    void *(*dlib_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "dlib_alloc");
    struct link_map *lm = NULL;
    if (!dlib_alloc || dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
        fprintf(stderr, "dlsym/dlinfo: %s\n", dlerror());
        return 2;
    }
    printf("load %d base %#lx\n", round, (unsigned long)lm->l_addr);
    void *p = dlib_alloc(size);
    free(p);
    dlclose(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: shim_dlopen LIBRARY\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    if (once(argv[1], 1, 31313))
        return 2;
    keep = malloc(100);
    if (once(argv[1], 2, 32323))
        return 2;
    keep = malloc(200);
    return 0;
}
