/*
 * Python integration (python.c): Python mode's start, GC pauses, and the
 * interpreter-side steps other integrations register (torch.c's exit scan
 * runs from Python's atexit through gs_py_at_exit).
 */
#ifndef GCSPY_PYTHON_H
#define GCSPY_PYTHON_H

#include "shim.h"

/* At start (life.c): checks the interpreter, finds its functions, starts
 * frame reading (pyframes.c) and registers its tick with the writer's
 * housekeeping (daemon.c). Python mode stays off when anything is missing. */
void gs_py_init(void);
/* A step to run from Python's atexit, while the interpreter still works
 * (one: torch.c's exit scan). Registered before the interpreter runs. */
void gs_py_at_exit(void (*step)(void));

#endif /* GCSPY_PYTHON_H */
