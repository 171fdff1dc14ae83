/*
 * Scaffolding shared by the leak cases (tests/programs/leak_*.c, *.cpp;
 * docs/scanner-cases.md, "Rules for writing a case").
 *
 * leak_bytes(n, fill) makes a definite leak of n bytes in a frame of its
 * own.
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

#endif
