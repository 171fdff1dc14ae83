/*
 * exit, _exit and _Exit, interposed (exit_hooks.c).
 */
#ifndef GCSPY_EXIT_HOOKS_H
#define GCSPY_EXIT_HOOKS_H

/* At start (hooks.c's bootstrap): the real functions, and the dlsym filter
 * that hands the program the stubs for them. */
void gs_exit_hooks_resolve(void);

#endif /* GCSPY_EXIT_HOOKS_H */
