/*
 * The housekeeping the writer thread does between flushes (daemon.c): the
 * tick registered with the writer, and the steps integrations add to it.
 */
#ifndef GCSPY_DAEMON_H
#define GCSPY_DAEMON_H

#include "shim.h"

/* Registers the tick with the writer (life.c, before the writer starts). */
void gs_daemon_init(void);
/* A step for every tick (python.c's), run on the writer thread with the
 * recursion flag set and no gcspy lock held; it must never wait for a
 * program lock (the GIL among them). Registered at start, from one thread.
 * 0, or -1 when the list is full. */
int gs_daemon_add_step(void (*step)(void));
/* What to do when no program thread is left (main ended with pthread_exit
 * or a raw exit system call, its workers gone too): the process would live
 * on for the writer alone. fn(status) runs on the writer thread, once, with
 * the status the last program thread to leave gave the kernel (life.c's:
 * end the trace, let the process end). */
void gs_daemon_set_orphaned(void (*fn)(int status));

#endif /* GCSPY_DAEMON_H */
