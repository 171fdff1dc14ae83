/*
 * A leak scan (scan.c): stop the world, mark, classify, restart, write the
 * results. Who asks for one (the API, signals, byte counts, the interval,
 * the exit) is scan_trigger.c's business, one layer up.
 */
#ifndef GCSPY_SCAN_H
#define GCSPY_SCAN_H

#include "mark.h"

/* Runs a scan; self_sp: the calling program thread's stack pointer at entry
 * into gcspy (its stack above it is a root), 0 for a gcspy thread. */
int gs_scan(int trigger, uintptr_t self_sp);
/* A scan whose thread's stack is a root from sp up, where the program left
 * it (not where gcspy's frames are now), with the registers it had there
 * (nregs words) as roots: the exit scan's. */
int gs_scan_from(int trigger, uintptr_t sp, const uintptr_t *regs, size_t nregs);
/* A scan from a program thread (its stack above this call is a root), with
 * a caching allocator's view when one was just taken (may be NULL). */
int gs_scan_program(int trigger, struct gs_pool_view *pool);
/* The same from where the program called into gcspy: its stack is a root
 * from sp up and its registers there (nregs words) are roots, and none of
 * gcspy's frames in between is (gcspy_scan()'s, scan_trigger.c). */
int gs_scan_program_from(int trigger, uintptr_t sp, const uintptr_t *regs, size_t nregs);
/* Zeroes the dead stack below the caller (scan.c says why). */
void gs_scrub_stack(void);
int gs_scan_running(void);
/* The stack-bits provider (torch.c's), asked before every scan with the
 * world running: *bits per stack id (GS_SB_*, stack.h), or NULL. */
void gs_scan_set_stack_bits(void (*provider)(const uint8_t **bits, uint32_t *nbits));
/* What the last API scan (gcspy_scan) found, per class; new_*: the lost
 * host blocks no API scan before it had found lost. */
struct gs_scan_counts {
    uint64_t id; /* the scan's number; 0: no API scan ran */
    uint64_t blocks[GS_CLASS__N], bytes[GS_CLASS__N];
    uint64_t new_blocks[GS_CLASS__N], new_bytes[GS_CLASS__N];
};
void gs_scan_api_last(struct gs_scan_counts *out);
extern int gs_exit_scan_done;     /* an exit scan already ran (Python's atexit) */
extern uint64_t gs_last_scan_ns;  /* when the last scan ended (or was tried: triggers) */
void gs_scan_atfork_child(void);

/* A program thread that scans is a root from its caller's frame up: the
 * callee-saved registers are spilled into this frame first (a pointer held
 * only in a register stays visible), and everything below the stack pointer
 * taken here (gcspy's own frames) is left out. Use in a noinline function. */
#define GS_ENTRY_SP(var)                                                      \
    __builtin_unwind_init();                                                  \
    uintptr_t var;                                                            \
    __asm__ volatile("mov %%rsp, %0" : "=r"(var))

#endif /* GCSPY_SCAN_H */
