/*
 * leak_register: pointers held only in the callee-saved registers (rbx,
 * r12, r13, r14, r15) of the thread that calls gcspy_scan(). The scan must
 * find all five blocks (1001, 1017, 1033, 1049, 1065 bytes): gcspy_scan
 * spills the callee-saved registers into its own frame, which is a root. A
 * callee that saves such a register deeper down puts it below the scan's
 * stack pointer, out of the roots, so relying on the prologue of gcspy_scan
 * alone would lose the registers it does not use itself. The blocks are
 * freed afterwards, so the exit scan finds nothing at all.
 *
 * The call is made from inline assembly with the pointers pinned in those
 * registers, so the compiler can keep no other copy of them across the call;
 * the stack is clobbered first so the dead frames of the allocating helper
 * hold none either. A scanner that ignored registers would call them
 * definite.
 *
 * @scans api 1
 * @scan api definite=0/0 indirect=0/0 possible=0/0
 * @block api 1001=reachable 1017=reachable 1033=reachable 1049=reachable 1065=reachable
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=0/0
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

static int no_scan(void)
{
    return -2;
}

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 3, n);
    return p;
}

/* Calls scan() with the five blocks only in callee-saved registers. */
static __attribute__((noinline)) int scan_holding_registers(int (*scan)(void))
{
    register char *a __asm__("rbx") = make(1001);
    register char *b __asm__("r12") = make(1017);
    register char *c __asm__("r13") = make(1033);
    register char *d __asm__("r14") = make(1049);
    register char *e __asm__("r15") = make(1065);
    clobber_stack();
    int rc;
    __asm__ volatile("call *%[fn]"
                     : "=a"(rc), "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e)
                     : [fn] "m"(scan)
                     : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc",
                       "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    return rc;
}

int main(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    int rc = scan_holding_registers(scan ? scan : no_scan);
    return rc == 0 || rc == -2 ? 0 : 1;
}
