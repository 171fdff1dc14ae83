/*
 * The shim's options, parsed from the environment as the kernel passed it.
 *
 * The table is options.def (one X-macro list for the struct in shim.h, this
 * parser and the CLI's help). The struct itself, gs_opt, is defined in
 * state.c: mem.c's logging, which this parser calls, reads it too. Parsing
 * runs on the first hook call, possibly before libc has finished
 * initialising, so it reads the environment array itself and never
 * allocates: string options point into the environment block.
 * Options are ignored in setuid/setgid processes (the loader drops LD_PRELOAD
 * there anyway; this covers a shim loaded some other way).
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/auxv.h>

#include "mem.h"
#include "options.h"

static int parse_int(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    switch (*s) {
    case 'k': case 'K': v <<= 10; s++; break;
    case 'm': case 'M': v <<= 20; s++; break;
    case 'g': case 'G': v <<= 30; s++; break;
    default: break;
    }
    if (*s)
        return -1;
    *out = v;
    return 0;
}

static int parse_STR(const char *s, const char **out) { *out = s; return 0; }
static int parse_INT(const char *s, uint64_t *out) { return parse_int(s, out); }
static int parse_BOOL(const char *s, int *out)
{
    if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true")) { *out = 1; return 0; }
    if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false") || !*s) { *out = 0; return 0; }
    return -1;
}
static int parse_UNWIND(const char *s, int *out)
{
    if (!strcmp(s, "fp")) { *out = GS_UNWIND_FP; return 0; }
    if (!strcmp(s, "libunwind")) { *out = GS_UNWIND_LIBUNWIND; return 0; }
    return -1;
}

static int parse_SUMMARY(const char *s, int *out)
{
    if (!strcmp(s, "first")) { *out = GS_SUMMARY_FIRST; return 0; }
    if (!strcmp(s, "all")) { *out = GS_SUMMARY_ALL; return 0; }
    if (!strcmp(s, "none")) { *out = GS_SUMMARY_NONE; return 0; }
    return -1;
}

const char *gs_env_get(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

void gs_options_load(char **envp)
{
    const char *v;
    int secure = getauxval(AT_SECURE) != 0;
    /* Quiet first: it silences the warnings about the other options. */
    parse_BOOL("0", &gs_opt.quiet);
    if (!secure && (v = gs_env_get(envp, "GCSPY_QUIET")))
        parse_BOOL(v, &gs_opt.quiet);
#define GS_OPT(field, env, type, def, help)                                   \
    parse_##type(def, &gs_opt.field);                                         \
    if (!secure && (v = gs_env_get(envp, env)) && parse_##type(v, &gs_opt.field)) { \
        parse_##type(def, &gs_opt.field);                                     \
        gs_log("ignoring %s=%s: not a valid value (default %s)", env, v, def); \
    }
#include "gcspy/options.def"
#undef GS_OPT
    if (gs_opt.depth < 1)
        gs_opt.depth = 1;
    if (gs_opt.depth > GS_MAX_DEPTH)
        gs_opt.depth = GS_MAX_DEPTH;
    if (gs_opt.flush_ms < 10)
        gs_opt.flush_ms = 10;
}
