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

#endif /* GCSPY_DAEMON_H */
