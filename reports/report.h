/*
 * Reporters: one table of function pointers per output format (text, JSON,
 * JUnit XML, HTML), called in a fixed order by gs_report_write:
 *
 *   begin(n items)
 *   for each item (one trace):  process(item)  leak(item, group)...  process_end(item)
 *   summary(all items)          totals over the processes
 *   end()
 *
 * leak() is called for the groups the options select (every class, the
 * largest max_groups of each, reachable and not-freed only when asked), in
 * the result's order: class, then bytes. A reporter ignores the calls it has
 * no use for (JUnit prints verdicts, not groups) by leaving them NULL.
 *
 * Reporters read only struct gs_result (analyzer/result.h, the HTML page
 * its history too) and the verdicts of the CI gate (analyzer/check.h): they
 * serialize, never read a trace or replay one. The JSON they produce is the
 * contract the HTML page and other tools read (docs/report-json.md).
 */
#ifndef GCSPY_REPORT_H
#define GCSPY_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../analyzer/check.h"
#include "../analyzer/result.h"

#define GS_REPORT_JSON_VERSION 1
/* additions within version 1: 1 = findings and sites; 2 = the peak and
 * temporary views (peak.sites, temporary) */
#define GS_REPORT_JSON_MINOR 3

struct gs_report_item {
    const char *trace;
    const struct gs_result *r;          /* NULL: the trace could not be read */
    const char *error;                  /* why, when r is NULL */
    const struct gs_verdict *verdict;   /* gcspy check only */
};

struct gs_report_opts {
    uint32_t max_groups;        /* leak groups per class (0: 20 text, 200 JSON) */
    uint32_t max_frames;        /* frames per stack in text (0: 16) */
    int show_reachable;         /* list reachable and not-freed groups too */
    int show_timeline;          /* JSON: the time series (default on) */
    const char *const *problems;/* symbolizer messages, NULL-terminated */
    const char *suite;          /* JUnit testsuite name */
    int value;                  /* collapsed, site views: enum gs_siteval (exports.h) */
};

struct gs_report_ctx {
    FILE *out;
    const struct gs_report_opts *o;
    void *state;                /* the reporter's own */
    int err;
};

struct gs_reporter {
    const char *name;
    int (*begin)(struct gs_report_ctx *c, size_t nitems);
    int (*process)(struct gs_report_ctx *c, const struct gs_report_item *it);
    int (*leak)(struct gs_report_ctx *c, const struct gs_report_item *it,
                const struct gs_leak *l);
    int (*process_end)(struct gs_report_ctx *c, const struct gs_report_item *it);
    int (*summary)(struct gs_report_ctx *c, const struct gs_report_item *items, size_t n);
    int (*end)(struct gs_report_ctx *c);
    /* defaults for opts left 0 */
    uint32_t max_groups, show_reachable;
};

extern const struct gs_reporter gs_reporter_text;
extern const struct gs_reporter gs_reporter_json;
extern const struct gs_reporter gs_reporter_junit;
/* The JSON report inside a self-contained page (html.c): `gcspy report`
 * only, so gs_reporter_find does not list it. */
extern const struct gs_reporter gs_reporter_html;

/* NULL when the name is unknown. */
const struct gs_reporter *gs_reporter_find(const char *name);

/* Runs a reporter over the items; 0, or -1 when writing failed. */
int gs_report_write(const struct gs_reporter *rep, FILE *out,
                    const struct gs_report_item *items, size_t n,
                    const struct gs_report_opts *o);

/* Whether the driver passes group l to leak() (its class's rank is k). */
int gs_report_shows(const struct gs_report_opts *o, const struct gs_reporter *rep,
                    const struct gs_leak *l, uint32_t k);

/* Totals over processes (inherited blocks left out: their parent counts them). */
struct gs_totals {
    size_t processes, complete, unreadable, malformed;
    size_t no_scan, exec;       /* by leak_status: GS_LS_NO_SCAN, GS_LS_EXEC */
    struct gs_cell cls[GS_RC__N][GS_MC__N];
    struct gs_cell suppressed[GS_RC__N];
    uint64_t suspects, pauses, pause_ns, allocs, bytes_allocated;
};
void gs_report_totals(const struct gs_report_item *items, size_t n, struct gs_totals *t);

#endif /* GCSPY_REPORT_H */
