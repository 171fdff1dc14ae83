/*
 * leak_xor: a pointer hidden by XOR with a constant (as XOR-linked lists and
 * some pointer-obfuscating allocators do). A conservative scanner cannot see
 * through it, and must not pretend to: the 1001-byte block is definitely
 * lost, as memcheck says. The program can still recover and use the pointer,
 * which is why such leaks are "false" ones; the case pins the documented
 * behaviour.
 *
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 * @block exit 1001=definite
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

#define KEY ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

volatile uintptr_t hidden;

static __attribute__((noinline)) void hide(void)
{
    char *p = malloc(1001);
    memset(p, 8, 1001);
    hidden = (uintptr_t)p ^ KEY;
}

int main(void)
{
    hide();
    clobber_stack();
    /* The pointer is still recoverable: prove the block is intact. */
    const char *p = (const char *)(hidden ^ KEY);
    return p[1000] == 8 ? 0 : 1;
}
