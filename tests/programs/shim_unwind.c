/*
 * A call chain through code without a frame pointer:
 *   main -> level1 -> level2 -> nofp_call -> inner_alloc -> malloc(51515)
 * nofp_call is written in assembly as code built with -fomit-frame-pointer
 * may be: it uses %rbp as an ordinary register (it zeroes it) around its
 * call, and describes itself with DWARF CFI only. Every other function keeps
 * frame pointers (-fno-omit-frame-pointer).
 *
 * Expected (tests/integration/shim_unwind_libunwind.sh), for the 51515-byte
 * allocation:
 *   GCSPY_UNWIND=fp        inner_alloc, nofp_call, then level2, level1 and
 *                          main (nofp_call's CFI, not its zeroed %rbp, says
 *                          where its caller's frame is), then libc's start
 *                          code;
 *   GCSPY_UNWIND=libunwind the same frames, as many;
 *   GCSPY_UNWIND=libunwind GCSPY_DEPTH=3: exactly 3 frames.
 * Exit status 0.
 */
#include <stdlib.h>

void nofp_call(void);
static void *volatile keep;

__attribute__((noinline, used)) void inner_alloc(void)
{
    keep = malloc(51515);
    __asm__ volatile("" ::: "memory"); /* no tail call */
}

/* push %rbp keeps the stack 16-byte aligned at the call (and restores the
 * caller's %rbp on return); the CFI lets DWARF unwinders through. */
__asm__(".text\n"
        ".globl nofp_call\n"
        ".type nofp_call, @function\n"
        "nofp_call:\n"
        "  .cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %rbp, 0\n"
        "  xorl %ebp, %ebp\n"
        "  call inner_alloc\n"
        "  popq %rbp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %rbp\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size nofp_call, .-nofp_call\n");

__attribute__((noinline)) void level2(void)
{
    nofp_call();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void level1(void)
{
    level2();
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    level1();
    return keep ? 0 : 1;
}
