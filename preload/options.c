/*
 * The shim's options, parsed from the environment as the kernel passed it.
 *
 * The table is options.def (one X-macro list for the struct in shim.h, this
 * parser and the CLI's help). The struct itself, gs_opt, is defined in
 * state.c: mem.c's logging, which this parser calls, reads it too. Parsing
 * runs on the first hook call, possibly before libc has finished
 * initialising, so it reads the environment array itself and never
 * allocates: string options point into the environment block.
 * Beyond its type, a value is checked against what options.def lists for it
 * (GS_OPT_RANGE, GS_OPT_WORDS) and the scan signal against the signals the
 * program's faults use: a bad value keeps the default, with one line.
 * Options are ignored in setuid/setgid processes (the loader drops LD_PRELOAD
 * there anyway; this covers a shim loaded some other way).
 */
#define _GNU_SOURCE
#include <signal.h>
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

/* Each option's variable and default by field name, for check_values. */
#define GS_OPT(field, env, type, def, help) \
    static const char opt_env_##field[] __attribute__((unused)) = env; \
    static const char opt_def_##field[] __attribute__((unused)) = def;
#include "gcspy/options.def"
#undef GS_OPT

const char *gs_env_get(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* A signal the scan may be requested with: one the program can be sent and
 * catch (not KILL, STOP), and none its own faults raise. A scan handler on
 * SIGSEGV would return to the faulting instruction forever, where the
 * program should die with 139; on SIGABRT abort() would not end it. */
static int scan_signal_ok(uint64_t sig)
{
    static const int refused[] = {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE,
                                  SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    if (sig > (uint64_t)SIGRTMAX)
        return 0;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (sig == (uint64_t)refused[i])
            return 0;
    return 1;
}

static int outside(uint64_t v, uint64_t min, uint64_t max)
{
    return v < min || v > max;
}

static int word_in(const char *v, const char *words)
{
    size_t n = strlen(v);
    for (const char *w = words; *w;) {
        size_t len = strcspn(w, "|");
        if (len == n && !strncmp(w, v, n))
            return 1;
        w += len + (w[len] == '|');
    }
    return 0;
}

/* What options.def says beyond the types (GS_OPT_RANGE, GS_OPT_WORDS), and
 * the scan signal: a value outside goes back to the default, with a line
 * naming what is accepted. envp again, for the value as the user wrote it. */
static void check_values(char **envp)
{
    const char *v;
#define GS_OPT_RANGE(field, min, max)                                                   \
    if (outside(gs_opt.field, (uint64_t)(min), (uint64_t)(max))) {                     \
        v = gs_env_get(envp, opt_env_##field);                                          \
        parse_INT(opt_def_##field, &gs_opt.field);                                      \
        gs_log("ignoring %s=%s: not a valid value (%d to %d; default %s)",              \
               opt_env_##field, v ? v : "", (int)(min), (int)(max), opt_def_##field);   \
    }
#define GS_OPT_WORDS(field, words)                                                      \
    if (!word_in(gs_opt.field, words)) {                                                \
        v = gs_opt.field;                                                               \
        parse_STR(opt_def_##field, &gs_opt.field);                                      \
        gs_log("ignoring %s=%s: not a valid value (one of %s; default %s)",             \
               opt_env_##field, v, words, opt_def_##field);                             \
    }
#include "gcspy/options.def"
#undef GS_OPT_RANGE
#undef GS_OPT_WORDS
    if (!scan_signal_ok(gs_opt.scan_signal)) {
        v = gs_env_get(envp, "GCSPY_SCAN_SIGNAL");
        gs_log("ignoring GCSPY_SCAN_SIGNAL=%s: signal %d is the program's own (a fault, "
               "abort, SIGKILL or SIGSTOP); no scan signal", v ? v : "",
               (int)gs_opt.scan_signal);
        gs_opt.scan_signal = 0;
    }
}

void gs_options_load(char **envp)
{
    const char *v;
    int secure = getauxval(AT_SECURE) != 0;
    gs_log_bind();
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
    check_values(envp);
}
