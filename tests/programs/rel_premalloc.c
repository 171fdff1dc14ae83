/*
 * rel_premalloc.so: a stand-in for jemalloc, tcmalloc or LeakSanitizer
 * preloaded before libgcspy.so (tests/integration/rel_premalloc.sh). It
 * defines the malloc family itself (on glibc's __libc_* entry points), so
 * with LD_PRELOAD=rel_premalloc.so:libgcspy.so the program's calls never
 * reach gcspy. Expected: gcspy says so in one line naming this library;
 * loaded after libgcspy.so, it says nothing and traces every allocation.
 */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
