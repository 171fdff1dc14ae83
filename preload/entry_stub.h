/*
 * Entry stubs: an exported function written in assembly (x86-64) that
 * notes where the program thread calling it left its stack, and its
 * callee-saved registers, before any frame of gcspy's exists, then jumps to
 * the C function that does the work. A scan run from that call (exit's,
 * gcspy_scan()'s) reads the thread's stack from there up, with those
 * registers as roots: the frames of gcspy's own C code in between hold
 * locals that still keep what deeper frames (the malloc hook's) left in
 * that memory.
 *
 * var is an initial-exec TLS variable laid out as struct gs_entry_regs; rsp
 * + 8 is the caller's stack pointer after the call. The stub keeps the
 * arguments' registers, so `then` takes the exported function's.
 */
#ifndef GCSPY_ENTRY_STUB_H
#define GCSPY_ENTRY_STUB_H

#include <stdint.h>

/* {sp, rbx, rbp, r12, r13, r14, r15} */
struct gs_entry_regs {
    uintptr_t sp;
    uintptr_t regs[6];
};

#if defined(__x86_64__)
#define GS_ENTRY_STUB(name, var, then)                                        \
    __asm__(".text\n"                                                         \
            ".globl " #name "\n"                                              \
            ".type " #name ", @function\n"                                    \
            #name ":\n"                                                       \
            ".cfi_startproc\n"                                                \
            "  movq " #var "@gottpoff(%rip), %rax\n"                          \
            "  leaq 8(%rsp), %rcx\n"                                          \
            "  movq %rcx, %fs:0(%rax)\n"                                      \
            "  movq %rbx, %fs:8(%rax)\n"                                      \
            "  movq %rbp, %fs:16(%rax)\n"                                     \
            "  movq %r12, %fs:24(%rax)\n"                                     \
            "  movq %r13, %fs:32(%rax)\n"                                     \
            "  movq %r14, %fs:40(%rax)\n"                                     \
            "  movq %r15, %fs:48(%rax)\n"                                     \
            "  jmp " #then "\n"                                               \
            ".cfi_endproc\n"                                                  \
            ".size " #name ", .-" #name "\n")
#endif

#endif /* GCSPY_ENTRY_STUB_H */
