/*
 * leak_api_register: the only pointer to a 3003-byte block lives in a
 * callee-saved register (r12) of gcspy_scan_leaks()'s caller across the
 * call, and nowhere in memory: the block is reachable at that scan, since
 * the API's entry stub notes the caller's callee-saved registers as roots
 * (preload/entry_stub.h). Then the register is cleared, and the exit scan
 * finds the block definite. The caller is written in assembly so that no
 * compiler spills the pointer to the stack; x86-64 only (elsewhere the
 * program makes the same leak with the pointer in a local).
 *
 * @scans api 1
 * @scan api#1 definite=0/0 indirect=0/0 possible=0/0
 * @block api#1 3003=reachable
 * @scans exit 1
 * @scan exit definite=1/3003 indirect=0/0 possible=0/0
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "gcspy.h"
#include "leak_case.h"

/* int scan_holding(int (*scan)(struct gcspy_leaks *), struct gcspy_leaks *l):
 * r12 = calloc(1, 3003); rc = scan(l); r12 = 0; return rc. Three pushes
 * keep the stack 16-byte aligned at both calls, and the frame holds only
 * the caller's saved registers. */
int scan_holding(int (*scan)(struct gcspy_leaks *), struct gcspy_leaks *l);
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl scan_holding\n"
        ".type scan_holding, @function\n"
        "scan_holding:\n"
        "  push %r12\n"
        "  push %r13\n"
        "  push %r14\n"
        "  mov %rdi, %r13\n"
        "  mov %rsi, %r14\n"
        "  mov $1, %edi\n"
        "  mov $3003, %esi\n"
        "  call calloc@PLT\n"
        "  mov %rax, %r12\n"
        "  xor %eax, %eax\n"
        "  mov %r14, %rdi\n"
        "  call *%r13\n"
        "  xor %r12d, %r12d\n"
        "  pop %r14\n"
        "  pop %r13\n"
        "  pop %r12\n"
        "  ret\n"
        ".size scan_holding, .-scan_holding\n");
#else
int scan_holding(int (*scan)(struct gcspy_leaks *), struct gcspy_leaks *l)
{
    void *volatile p = calloc(1, 3003);
    int rc = scan(l);
    p = NULL;
    return rc;
}
#endif

static int no_scan(struct gcspy_leaks *l)
{
    (void)l;
    return 0;
}

int main(void)
{
    int (*scan)(struct gcspy_leaks *) =
        (int (*)(struct gcspy_leaks *))dlsym(RTLD_DEFAULT, "gcspy_scan_leaks");
    struct gcspy_leaks l = {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}};
    /* valgrind's run (no gcspy): the same calls, the leak at exit */
    int rc = scan_holding(scan ? scan : no_scan, &l);
    clobber_stack();
    int held = !scan || (l.new_definite.blocks == 0 && l.new_possible.blocks == 0);
    return rc == 0 && held ? 0 : 1;
}
