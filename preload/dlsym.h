/*
 * dlsym and dlvsym, interposed (dlsym.c): a lookup through a library's
 * handle of a function gcspy hooks returns the hook.
 */
#ifndef GCSPY_DLSYM_H
#define GCSPY_DLSYM_H

#include "shim.h"

/* What a lookup through a handle found (non-NULL) for name: the hooks'
 * filter returns the hook when found is the function the hook calls, else
 * found. At most three filters (libc's hooks, exit's, CUDA's); registered at start,
 * before the program's code runs. */
typedef void *(*gs_dlsym_filter)(const char *name, void *found);
void gs_dlsym_add_filter(gs_dlsym_filter f);

#endif /* GCSPY_DLSYM_H */
