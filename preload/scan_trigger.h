/*
 * What asks for a leak scan (scan_trigger.c): gcspy_scan(), the scan
 * signal, the byte count, the interval and the exit; and the scan policy an
 * integration may register to run some of them elsewhere.
 */
#ifndef GCSPY_SCAN_TRIGGER_H
#define GCSPY_SCAN_TRIGGER_H

#include "shim.h"

/* At start (life.c): the scan signal's handler, the stop signal. 0, or -1
 * when no signal is free to stop threads with (scans are then skipped). */
int gs_scan_init(void);
/* The writer thread's tick (daemon.c): a requested or periodic scan. */
void gs_scan_tick(void);
/* How long the writer may sleep before the next periodic scan is due. */
uint64_t gs_scan_next_due_ns(void);
/* The exit scan, from the exiting thread, unless one already ran (Python's
 * atexit) or scans were never set up. Its stack is a root from sp up, where
 * the program left it, with regs (nregs words) as its registers; sp 0: from
 * the caller's frame, with the registers it has. */
void gs_scan_at_exit(uintptr_t sp, const uintptr_t *regs, size_t nregs);
/* The same, from a gcspy thread (the writer), whose stack is no root. */
void gs_scan_at_exit_gcspy(void);
/* A scan policy (torch.c's): route(trigger) returns 1 when it takes a
 * periodic, signal or byte-count scan off the writer thread (the main
 * thread runs it, after a snapshot); api() runs gcspy_scan()'s scan, or
 * returns -2 when it does not apply. */
void gs_scan_set_policy(int (*route)(int trigger), int (*api)(void));
void gs_triggers_atfork_child(void);

#endif /* GCSPY_SCAN_TRIGGER_H */
