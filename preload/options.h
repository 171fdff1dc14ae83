/*
 * Parsing the shim's options (options.c) from the environment the kernel
 * passed; the struct they fill, gs_opt, is in shim.h.
 */
#ifndef GCSPY_OPTIONS_H
#define GCSPY_OPTIONS_H

#include "shim.h"

/* Parses the environment (envp as the kernel gave it) into gs_opt; never
 * allocates. Bad values keep the default and print one line. */
void gs_options_load(char **envp);
/* The value of NAME in envp, or NULL (no getenv: libc may not be ready). */
const char *gs_env_get(char **envp, const char *name);

#endif /* GCSPY_OPTIONS_H */
