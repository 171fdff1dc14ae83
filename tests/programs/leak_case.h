/*
 * Scaffolding shared by the leak cases (tests/programs/leak_*.c, *.cpp;
 * docs/scanner-cases.md, "Rules for writing a case").
 *
 * clobber_stack() zeroes 16 KiB of stack below the caller: a conservative
 * scanner reads the dead pointers that earlier calls left in stack slots
 * that a later frame owns but has not written, so a case calls it after its
 * allocating helpers return and before it scans or exits.
 */
#ifndef GCSPY_TESTS_LEAK_CASE_H
#define GCSPY_TESTS_LEAK_CASE_H

#include <stdlib.h>
#include <string.h>

static __attribute__((noinline, unused)) void clobber_stack(void)
{
    char buf[16384];
    memset(buf, 0, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

/* Allocates n bytes (filled with 1s) and fills 4 KiB of its own frame
 * with copies of the only pointer to them, then returns: the pointer is
 * left in dead stack below the caller (leak_exit_dead_frame,
 * leak_main_dead_frame). */
static __attribute__((noinline, unused)) void leak_into_dead_frame(size_t n)
{
    void **pad = __builtin_alloca(4096);
    void *p = malloc(n);
    memset(p, 1, n);
    for (size_t i = 0; i < 4096 / sizeof *pad; i++)
        pad[i] = p;
    __asm__ volatile("" : : "r"(pad) : "memory");
}

#endif
