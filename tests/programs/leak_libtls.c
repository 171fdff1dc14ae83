/*
 * leak_libtls.so: a library with a __thread variable, for leak_dyntls. A
 * dlopen'ed library's TLS is dynamic: each thread's copy is allocated on
 * first use and reached only through that thread's DTV.
 */
#include <stddef.h>

static __thread void *lib_tls_ptr;

void leak_libtls_set(void *p)
{
    lib_tls_ptr = p;
}

void *leak_libtls_get(void)
{
    return lib_tls_ptr;
}
