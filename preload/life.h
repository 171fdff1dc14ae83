/*
 * The process's life as the shim sees it (life.c): start, exit, exec and
 * fork. hooks.c calls these; so do the unit tests.
 */
#ifndef GCSPY_LIFE_H
#define GCSPY_LIFE_H

#include "shim.h"

int gs_core_early_init(char **envp); /* first hook call or constructor */
int gs_core_start(void);             /* constructor: file, writer, atexit, atfork */
/* Final scan (unless scan is 0: _exit skips it, as it skips exit handlers),
 * summary, close. */
void gs_core_exit(int status, int scan);
void gs_on_exec(const char *path);   /* before the real exec: EXEC, flush */
/* Around a call the kernel allows only in a single-threaded process: the
 * writer thread is parked (begin returns 1) and started again (end). */
int gs_alone_begin(void);
void gs_alone_end(int parked);
/* In the child of a fork that interrupted gcspy: the child never traces. */
void gs_fork_child_untraced(void);

#endif /* GCSPY_LIFE_H */
