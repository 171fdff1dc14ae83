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
/* Around a fork that takes none of malloc's locks (_Fork, from a signal
 * handler that interrupted gcspy): begin waits (a bounded time) until the
 * writer is out of mallinfo2 and keeps it out until end, so the child finds
 * no arena locked by the writer. Async-signal-safe; any thread. */
void gs_daemon_fork_begin(void);
void gs_daemon_fork_end(void);
/* In a traced child of the real fork: another thread's fork_begin, under
 * way at the fork, is not the child's (its samples would stop). */
void gs_daemon_atfork_child(void);

#endif /* GCSPY_DAEMON_H */
