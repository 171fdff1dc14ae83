/*
 * Scaffolding shared by the leak cases (tests/programs/leak_*.c, *.cpp;
 * docs/scanner-cases.md, "Rules for writing a case").
 *
 * leak_bytes(n, fill) makes a definite leak of n bytes in a frame of its
 * own; leak_case_block(n) returns n zeroed bytes allocated in one.
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

static __attribute__((noinline, unused)) void leak_case_keep(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* n zeroed bytes, allocated in a frame of their own (noinline: the caller
 * holds only what it keeps of the result). */
static __attribute__((noinline, unused)) void *leak_case_block(size_t n)
{
    char *p = (char *)malloc(n);
    memset(p, 0, n);
    return p;
}

/* A definite leak: n bytes of fill whose only pointer dies with this frame
 * (noinline, so the caller's frame never held it). */
static __attribute__((noinline, unused)) void leak_bytes(size_t n, int fill)
{
    char *p = (char *)malloc(n);
    memset(p, fill, n);
    leak_case_keep(p);
}

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
    void **pad = (void **)__builtin_alloca(4096);
    void *p = malloc(n);
    memset(p, 1, n);
    for (size_t i = 0; i < 4096 / sizeof *pad; i++)
        pad[i] = p;
    __asm__ volatile("" : : "r"(pad) : "memory");
}

/* gcspy's API when the shim is loaded; null under valgrind or bare. */
#ifdef __cplusplus
extern "C"
#endif
void gcspy_mark(const char *label) __attribute__((weak));

/* Marks "settled": from here on the case's leaked pointers are gone from
 * its registers and stack, so the scans that begin after this mark are the
 * ones leaks.sh's "periodic>settled" selector judges (a periodic scan that
 * falls between a malloc and clobber_stack() rightly finds the block
 * reachable). */
static __attribute__((noinline, unused)) void mark_settled(void)
{
    if (gcspy_mark)
        gcspy_mark("settled");
}

#endif
