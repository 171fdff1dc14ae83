/*
 * shim_dlsym: dlsym and dlvsym under the shim keep their meaning
 * (tests/integration/shim_dlsym.sh runs it with and without the shim and
 * requires the same output and status 0):
 *  - RTLD_NEXT from a library (libshim_dlnext.so, linked in) is resolved
 *    after that library, not after libgcspy.so: its own symbol is not
 *    found, and "malloc" is libc's own (not the shim's hook, which comes
 *    before the library);
 *  - RTLD_NEXT from the program finds the first definition after it, the
 *    same as RTLD_DEFAULT for malloc (the hook under the shim), and so do
 *    dlsym and dlvsym through libc's handle (under the shim: the hook);
 *  - dlerror(): nothing pending at start; a failed lookup through a handle
 *    sets an error naming the symbol; a successful one clears it.
 * Prints one line per check ("ok ..." or "FAIL ...").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *shim_dlnext_lookup(const char *name);
void *shim_dlnext_default(const char *name);
int shim_dlnext_value(void);

static int fails;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    fails += !ok;
}

int main(void)
{
    check(dlerror() == NULL, "no dlerror pending at start");
    void *h = dlopen("libc.so.6", RTLD_NOW);
    check(h != NULL, "dlopen libc.so.6");
    check(shim_dlnext_lookup("shim_dlnext_value") == NULL,
          "RTLD_NEXT from the library: its own symbol is not after it");
    check(shim_dlnext_default("shim_dlnext_value") == (void *)shim_dlnext_value,
          "RTLD_DEFAULT from the library finds its symbol");
    void *global = dlsym(RTLD_DEFAULT, "malloc");
    check(dlsym(RTLD_NEXT, "malloc") == global, "RTLD_NEXT from the program: the first malloc");
    Dl_info info;
    void *next = shim_dlnext_lookup("malloc");
    check(next && dladdr(next, &info) && info.dli_fname && strstr(info.dli_fname, "/libc.so.6"),
          "RTLD_NEXT from the library: libc's own malloc, the next after it");
    check(dlsym(h, "malloc") == global, "libc's handle gives the global malloc");
    check(dlvsym(h, "malloc", "GLIBC_2.2.5") == global, "dlvsym through libc's handle too");
    check(dlsym(h, "gcspy_no_such_function") == NULL, "a missing symbol is NULL");
    const char *e = dlerror();
    check(e && strstr(e, "gcspy_no_such_function"), "dlerror names the missing symbol");
    check(dlerror() == NULL, "dlerror is cleared once read");
    check(dlsym(h, "gcspy_no_such_function") == NULL && dlsym(h, "free") != NULL &&
              dlerror() == NULL,
          "a successful lookup clears a pending error");
    check(dlvsym(h, "malloc", "GCSPY_NO_SUCH_VERSION") == NULL && dlerror() != NULL,
          "dlvsym of a missing version fails with an error");
    return fails ? 1 : 0;
}
