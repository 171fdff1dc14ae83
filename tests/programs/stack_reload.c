/*
 * A library unloaded and another loaded in its place, each allocating
 * through a frame without a frame pointer (tests/programs/stack_reload_lib.c,
 * two builds whose malloc calls return to the same offset but whose frames
 * differ in size): a plugin reloaded. stack_reload LIB_A LIB_B loads LIB_A,
 * allocates 1111 bytes through it and closes it, then the same with LIB_B
 * (2222 bytes), where LIB_A was (the loader reuses the freed range), three
 * rounds: from the second on, every allocation the loader makes has a
 * stack seen before, so nothing but the reload itself tells the shim that
 * the code at that address changed. Prints each library's load address, so
 * the test knows whether one took the other's place. The blocks stay
 * reachable from `kept`.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 3

void *volatile kept[2 * ROUNDS];

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stack_reload LIB_A LIB_B\n");
        return 2;
    }
    for (int k = 0; k < 2 * ROUNDS; k++) {
        const char *lib = argv[1 + k % 2];
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        void *(*make)(size_t) = h ? (void *(*)(size_t))dlsym(h, "reload_make") : NULL;
        Dl_info di;
        if (!make || !dladdr((void *)make, &di)) {
            fprintf(stderr, "stack_reload: %s: %s\n", lib, dlerror());
            return 1;
        }
        kept[k] = make(k % 2 ? 2222 : 1111);
        printf("lib %d base %p\n", 1 + k % 2, di.dli_fbase);
        if (dlclose(h)) {
            fprintf(stderr, "stack_reload: dlclose: %s\n", dlerror());
            return 1;
        }
    }
    return 0;
}
