/*
 * What `gcspy report` and `gcspy check` share: option parsing helpers with
 * the CLI's error conventions (one line on stderr, "gcspy CMD: ...", exit
 * status 2), number parsing with K/M/G suffixes, and loading a list of
 * traces into results with one shared symbolizer.
 */
#ifndef GCSPY_CMDUTIL_H
#define GCSPY_CMDUTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "analyze.h"
#include "suppress.h"
#include "../../reports/report.h"

struct gs_args {
    int argc;
    char **argv;
    int i;              /* the argument being looked at */
    const char *cmd;    /* "report", "check": for messages */
    int bad;            /* an error was printed */
};

/* argv[i] is option `name` taking a value ("--name V" or "--name=V"): returns
 * 1 with *val set (and i advanced past it), 0 when it is another argument;
 * prints an error and sets a->bad when the value is missing. */
int gs_arg_val(struct gs_args *a, const char *name, const char **val);
/* argv[i] is flag `name`: 1 (i advanced), else 0. */
int gs_arg_flag(struct gs_args *a, const char *name);

/* "1234", "64K", "1.5M", "2G" (binary units); -1 with an error printed. */
int gs_parse_size(struct gs_args *a, const char *opt, const char *s, uint64_t *out);
/* A whole number of things ("20"; no suffix, no fraction). */
int gs_parse_count(struct gs_args *a, const char *opt, const char *s, uint64_t *out);
/* A plain non-negative decimal number (may have a fraction). */
int gs_parse_num(struct gs_args *a, const char *opt, const char *s, double *out);

/* What `report` and `check` parse alike: trace paths (and "--"),
 * suppressions, symbols, quiet, and the analysis thresholds. */
struct gs_common {
    struct gs_analyze_opts ao;
    struct gs_supps supps;
    struct gs_userframe_opts uf;    /* --user-code, --not-user-code */
    char **paths;
    size_t npaths;
    int no_defaults, symbols, quiet, dashdash;
    unsigned jobs;              /* -j: traces analysed at a time (0, 1: one) */
    const char *sysroot;        /* --sysroot: NULL when not given */
};
/* 0, or -1 with "out of memory" printed. */
int gs_common_init(struct gs_common *c, int argc);
/* 1 when argv[i] was a path or one of the shared options (consumed; an
 * error in it sets a->bad), 0 when it is the command's own business. */
int gs_common_arg(struct gs_args *a, struct gs_common *c);
/* After the last argument: the built-in suppressions unless turned off,
 * and at least one trace. 0, or -1 with the error printed. */
int gs_common_finish(struct gs_args *a, struct gs_common *c);
void gs_common_free(struct gs_common *c);
/* The shared options' lines for a command's --help. */
#define GS_COMMON_HELP                                                                      \
    "  --no-default-suppressions  do not apply the built-in suppressions (PyTorch\n"        \
    "                        DataLoader caches; see docs/report-json.md)\n"                  \
    "  --suppressions FILE   LeakSanitizer-format 'leak:PATTERN' lines: matching leaks\n"   \
    "                        are suppressed (repeatable)\n"                                  \
    "  --no-symbols          do not read debug information: frames as module+offset\n"     \
    "  --sysroot DIR         look for the traced modules under DIR too (a container's\n"  \
    "                        or another node's root; also DIR/usr/lib/debug/.build-id;\n"\
    "                        debuginfod when DEBUGINFOD_URLS is set)\n"                   \
    "  --cuda-pause-ms X     synchronous CUDA calls at least X ms long are pauses (1)\n"    \
    "  --growth-min-bytes N  least fitted rise for a growth suspect (64K)\n"                \
    "  --growth-min-r2 X     least goodness of fit for a growth suspect (0.8)\n"              \
    "  --user-code GLOBS     frames whose file or module matches one of these\n"           \
    "                        comma-separated globs are the user's code (the findings\n"    \
    "                        name the innermost user frame; by default any file outside\n" \
    "                        the interpreter, site-/dist-packages, the standard library\n" \
    "                        and /usr/lib, /lib)\n"                                         \
    "  --not-user-code GLOBS frames matching these globs are never the user's code\n"    \
    "  -j, --jobs N          N traces analysed at a time (threads; one symbolizer:\n"   \
    "                        the output is the same as with -j 1)\n"

/* path opened for a report (regfile.h's gs_open_output: never through a
 * symbolic link, never waiting on a FIFO): the stream, or NULL with
 * "gcspy CMD: cannot write PATH: WHY" printed. */
FILE *gs_open_report(const char *cmd, const char *path);

/* fn(arg, i, turn) for each i in [0, n), `jobs` threads at a time (this
 * one among them), the indices taken in increasing order. turn (turn.h)
 * orders what fn does with a shared symbolizer: NULL when one thread does
 * everything; fn need not pass its turn on when it never took it. 0, or -1
 * when out of memory before any call. */
int gs_each_parallel(size_t n, unsigned jobs,
                     void (*fn)(void *arg, size_t i, struct gs_turn *turn), void *arg);

/* Traces analysed into report items, with the symbolizer their frame
 * strings live in. */
struct gs_loaded {
    struct gs_report_item *items;
    struct gs_result **results;
    char **errors;
    size_t n, unreadable;
    size_t malformed;           /* readable, but breaking the format's promises */
    struct gs_symbolizer *sym;
    const char **problems;      /* NULL-terminated symbolizer messages */
};

/* Analyses every path, `jobs` at a time (threads sharing the one
 * symbolizer, in turn: turn.h; the result is the same as with one); a
 * trace that cannot be read becomes an item with an
 * error (the caller decides what that means). Returns -1 only when out of
 * memory. Warnings about incomplete traces go to stderr unless quiet; a
 * malformed trace (result.h) gets one error line on stderr, quiet or not,
 * naming its first problem with the byte offset, and is counted. */
int gs_load_traces(const char *cmd, char **paths, size_t n, const struct gs_analyze_opts *o,
                   int symbols, const char *sysroot, const struct gs_supps *supps, int quiet,
                   unsigned jobs, struct gs_loaded *out);
/* gs_load_traces with the shared options' values; "out of memory" printed
 * when it fails. */
int gs_load_common(const char *cmd, const struct gs_common *c, struct gs_loaded *out);
/* The same, and each trace that cannot be read named on stderr: 0 when
 * every trace was read, else -1 (the caller exits 2). *out is set either
 * way: gs_loaded_free it. */
int gs_load_readable(const char *cmd, const struct gs_common *c, struct gs_loaded *out);
void gs_loaded_free(struct gs_loaded *l);

#endif /* GCSPY_CMDUTIL_H */
