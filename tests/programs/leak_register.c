/*
 * leak_register: a pointer held only in a callee-saved register (rbx) of the
 * thread that calls gcspy_scan(). The scan must find it: gcspy_scan spills
 * the callee-saved registers into its own frame, which is a root. The block
 * is freed afterwards, so the exit scan finds nothing at all.
 *
 * The call is made from inline assembly with the pointer pinned in rbx, so
 * the compiler can keep no other copy of it across the call; the stack is
 * clobbered first so the dead frames of the allocating helper hold none
 * either. A scanner that ignored registers would call the block definite.
 *
 * @scans api 1
 * @scan api definite=0/0 indirect=0/0 possible=0/0
 * @block api 1001=reachable
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=0/0
 * @status 0
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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

static __attribute__((noinline)) void clobber_stack(void)
{
    char buf[16384];
    memset(buf, 0, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

/* Calls scan() with p only in rbx; returns scan()'s result. */
static __attribute__((noinline)) int scan_holding_rbx(int (*scan)(void))
{
    register char *p __asm__("rbx") = make(1001);
    clobber_stack();
    int rc;
    __asm__ volatile("call *%[fn]"
                     : "=a"(rc), "+r"(p), [fn] "+r"(scan)
                     :
                     : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc",
                       "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    free(p);
    return rc;
}

int main(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    int rc = scan_holding_rbx(scan ? scan : no_scan);
    return rc == 0 || rc == -2 ? 0 : 1;
}
