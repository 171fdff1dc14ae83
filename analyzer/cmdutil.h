/*
 * What `gcspy report` and `gcspy check` share: option parsing helpers with
 * the CLI's error conventions (one line on stderr, "gcspy CMD: ...", exit
 * status 2), number parsing with K/M/G suffixes, and loading a list of
 * traces into results with one shared symbolizer.
 */
#ifndef GCSPY_CMDUTIL_H
#define GCSPY_CMDUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "analyze.h"
#include "suppress.h"
#include "../reports/report.h"

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
/* A plain non-negative decimal number (may have a fraction). */
int gs_parse_num(struct gs_args *a, const char *opt, const char *s, double *out);

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

/* Analyses every path; a trace that cannot be read becomes an item with an
 * error (the caller decides what that means). Returns -1 only when out of
 * memory. Warnings about incomplete traces go to stderr unless quiet; a
 * malformed trace (result.h) gets one error line on stderr, quiet or not,
 * naming its first problem with the byte offset, and is counted. */
int gs_load_traces(const char *cmd, char **paths, size_t n, const struct gs_analyze_opts *o,
                   int symbols, const struct gs_supps *supps, int quiet,
                   struct gs_loaded *out);
void gs_loaded_free(struct gs_loaded *l);

#endif /* GCSPY_CMDUTIL_H */
