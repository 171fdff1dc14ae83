/*
 * leak_dlerror: the program's dlerror() state is its own. Its first call to
 * dlerror() finds nothing pending (gcspy's own probes, for Py_Version and
 * friends, fail in every program that is not Python: they must leave no
 * error behind), then a dlopen of a missing library fails and the program
 * leaves that error pending at exit. glibc keeps it in a block it mallocs
 * in the failing call (reached from libc's TLS) that points at the
 * message, another malloc'd block: both are still reachable, nothing is
 * lost. When gcspy's failed probe had made that block first, untracked, the
 * message hung off a block the scan never reads: a false definite leak
 * (seen in every bash of pyenv's shims).
 *
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=0/0
 */
#include <dlfcn.h>
#include <stddef.h>

#include "leak_case.h"

int main(void)
{
    if (dlerror() != NULL)
        return 3; /* an error left pending by someone else */
    if (dlopen("/nonexistent/libgcspy-test-missing.so", RTLD_NOW) != NULL)
        return 4;
    clobber_stack();
    return 0;
}
