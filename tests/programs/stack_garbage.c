/*
 * Garbage where frame pointers would be: main -> level1 -> garbage_call ->
 * alloc_site -> malloc(4242), 8 times. garbage_call is written in assembly
 * as code built with -fomit-frame-pointer may be: it keeps its caller's rbp
 * (CFI says so) and loads rbp with the address of words in level1's frame
 * that look like a frame chain: a return address of ASCII bytes
 * ("ABCDEFG" and the call's number, as the environment's strings leave
 * them), then a word with the top bit set (GS_IP_PYFRAME's bit) or a stack
 * address (as a canary or a saved pointer may be), different on every
 * call. Every other function keeps frame pointers.
 *
 * Expected (tests/integration/stack_walk.sh), with the default walker:
 * the 8 allocations of 4242 bytes share one stack: alloc_site,
 * garbage_call, level1, main, then libc's start code; every frame in an
 * executable segment of a module record; none with the top bit set.
 * Exit status 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void garbage_call(uintptr_t *fake);
static void *volatile keep[8];
static int calls;

__attribute__((noinline, used)) void alloc_site(void)
{
    keep[calls++] = malloc(4242);
    __asm__ volatile("" ::: "memory"); /* no tail call */
}

/* garbage_call(fake): rbp = fake, call alloc_site, rbp restored. push %rbp
 * keeps the stack 16-byte aligned at the call; the CFI says where the
 * caller's rbp and return address are. */
__asm__(".text\n"
        ".globl garbage_call\n"
        ".type garbage_call, @function\n"
        "garbage_call:\n"
        "  .cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %rbp, 0\n"
        "  movq %rdi, %rbp\n"
        "  call alloc_site\n"
        "  popq %rbp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %rbp\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size garbage_call, .-garbage_call\n");

__attribute__((noinline)) void level1(int i)
{
    /* fake[0..1]: a frame (next, return address); fake[2..3] another. */
    volatile uintptr_t fake[4];
    fake[0] = (uintptr_t)&fake[2];
    fake[1] = 0x0047464544434241ull | (uintptr_t)('0' + i) << 56; /* "ABCDEFG0".. */
    fake[2] = 0;
    fake[3] = i & 1 ? 0x8000000100000000ull | (uintptr_t)(i * 7)
                    : (uintptr_t)&fake[i & 3];
    garbage_call((uintptr_t *)fake);
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    for (int i = 0; i < 8; i++)
        level1(i);
    printf("%d\n", calls);
    return 0;
}
