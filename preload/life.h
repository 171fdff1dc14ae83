/*
 * The process's life as the shim sees it (life.c): start, exit, exec and
 * fork. hooks.c calls these; so do the unit tests.
 */
#ifndef GCSPY_LIFE_H
#define GCSPY_LIFE_H

#include "entry_stub.h"
#include "shim.h"

int gs_core_early_init(char **envp); /* first hook call or constructor */
int gs_core_start(void);             /* constructor: file, writer, atexit, atfork */
/* Final scan (unless scan is 0), summary, close. The scan reads the
 * exiting thread's stack from where the program left it: gs_exit_from when
 * the program called exit, _exit or _Exit (exit_hooks.c's stubs note it),
 * else the frame of libc's that called exit after main returned. */
void gs_core_exit(int status, int scan);

/* Where the exiting thread's program code left its stack: the stack pointer
 * after its call into exit/_exit/_Exit, and its callee-saved registers then.
 * Written by exit_hooks.c's entry stubs (entry_stub.h), read by
 * gs_core_exit in the same thread. */
extern __thread struct gs_entry_regs gs_exit_from;
void gs_on_exec(const char *path);   /* before the real exec: EXEC, flush */
/* Around a call the kernel allows only in a single-threaded process: the
 * writer thread is parked (begin returns 1) and started again (end). */
int gs_alone_begin(void);
void gs_alone_end(int parked);
/* In the child of a fork that interrupted gcspy: the child never traces. */
void gs_fork_child_untraced(void);

#endif /* GCSPY_LIFE_H */
