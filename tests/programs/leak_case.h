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

#include <string.h>

static __attribute__((noinline, unused)) void clobber_stack(void)
{
    char buf[16384];
    memset(buf, 0, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

#endif
