/*
 * `gcspy report TRACE... [--format text|json|html] [-o FILE]`: one report
 * over every trace given (ranks of a job, a parent and its forked workers),
 * with a section per process and totals. Exit status 0 when the report was
 * written, whatever it says (`gcspy check` is the gate); 2 on bad options,
 * an unreadable trace, or a failed write. An incomplete trace (cut by a
 * kill: no TRACE_END, or the file ends inside a chunk) is reported up to the
 * cut, with a warning on stderr. A malformed trace (damage, or content that
 * breaks the format's promises) is reported too, marked so, and the exit
 * status is 2 after one error line naming the first problem's byte offset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "commands.h"
#include "../../reports/exports.h"
#include "summary.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gcspy report TRACE... [--format text|json|html] [-o FILE] [options]\n"
            "\n"
            "Analyses one or more gcspy traces (a process each) and prints one report:\n"
            "leaks by allocation stack, growth, fragmentation and pauses, per process,\n"
            "then totals.\n"
            "\n"
            "options:\n"
            "  --format FMT          text (default), json (docs/report-json.md), html;\n"
            "                        pprof, collapsed, peak, temporary (docs/exports.md)\n"
            "  --value V             collapsed: the value per stack: leaked (default),\n"
            "                        leaked-blocks, peak, peak-blocks, allocs, alloc-bytes,\n"
            "                        temporary, temporary-bytes\n"
            "  --temporary-ms X      freed less than X ms after made: temporary (1)\n"
            "  -o, --output FILE     write the report to FILE instead of standard output\n"
            "  --max-groups N        leak stacks listed per class (text 20, json 200, html 100);\n"
            "                        peak, temporary: sites listed (20)\n"
            "  --max-frames N        frames printed per stack in text (16); peak, temporary (4)\n"
            "  --show-reachable      text: list still-reachable and not-freed stacks too\n"
            "  --no-timeline         json: leave out the memory-over-time series\n"
            "  --job                 one job report: a row per process (rank), the outliers,\n"
            "                        job totals (also whenever a summary is among the inputs)\n"
            "  --summary-out DIR     write DIR/NAME.summary.json per input instead of a report\n"
            "                        (docs/jobs.md); `gcspy report` reads them back\n"
            GS_COMMON_HELP
            "  -q, --quiet           no warnings about incomplete traces\n"
            "\n"
            "Exit status: 0 when the report was written; 2 on errors, and when a trace is\n"
            "malformed (its report is written, marked so, and stderr names the byte\n"
            "offset of the first problem).\n");
}

struct report_args {
    struct gs_common c;
    struct gs_report_opts ro;
    const struct gs_reporter *rep;
    const char *output;
    int job;                    /* --job, or a summary among the inputs */
    const char *summary_out;
};

/* The command line into *ra; 0, or -1 with the error printed. */
static int parse(int argc, char **argv, struct report_args *ra)
{
    struct gs_args a = { argc, argv, 1, "report", 0 };
    struct gs_report_opts *ro = &ra->ro;
    const char *format = "text", *v;
    while (a.i < argc && !a.bad) {
        uint64_t u;
        if (gs_common_arg(&a, &ra->c)) {
            continue;
        } else if (gs_arg_val(&a, "--format", &v)) {
            if (!a.bad)
                format = v;
        } else if (gs_arg_val(&a, "-o", &v) || gs_arg_val(&a, "--output", &v)) {
            if (!a.bad)
                ra->output = v;
        } else if (gs_arg_val(&a, "--max-groups", &v)) {
            if (!a.bad && gs_parse_count(&a, "--max-groups", v, &u) == 0)
                ro->max_groups = u > 1000000 ? 1000000 : (uint32_t)u;
            if (!a.bad && !ro->max_groups)
                ro->max_groups = 1000000;
        } else if (gs_arg_val(&a, "--max-frames", &v)) {
            if (!a.bad && gs_parse_count(&a, "--max-frames", v, &u) == 0)
                ro->max_frames = u > 1024 ? 1024 : (u ? (uint32_t)u : 1);
        } else if (gs_arg_val(&a, "--value", &v)) {
            if (!a.bad && (ro->value = gs_sval_find(v)) < 0) {
                fprintf(stderr, "gcspy report: --value: unknown value '%s' (see gcspy report --help)\n", v);
                a.bad = 1;
            }
        } else if (gs_arg_val(&a, "--temporary-ms", &v)) {
            double ms;
            if (!a.bad && gs_parse_num(&a, "--temporary-ms", v, &ms) == 0)
                ra->c.ao.temp_threshold_ns = ms * 1e6 < 1 ? 1 : (uint64_t)(ms * 1e6);
        } else if (gs_arg_flag(&a, "--show-reachable")) {
            ro->show_reachable = 1;
        } else if (gs_arg_flag(&a, "--no-timeline")) {
            ro->show_timeline = 0;
        } else if (gs_arg_flag(&a, "--job")) {
            ra->job = 1;
        } else if (gs_arg_val(&a, "--summary-out", &v)) {
            ra->summary_out = v;
        } else {
            fprintf(stderr, "gcspy report: unknown option '%s' (see gcspy report --help)\n", argv[a.i]);
            a.bad = 1;
        }
    }
    if (a.bad || gs_common_finish(&a, &ra->c))
        return -1;
    const struct gs_reporter *rep = strcmp(format, "html") == 0 ? &gs_reporter_html
                                                                 : gs_reporter_find(format);
    if (!rep || rep == &gs_reporter_junit) {
        fprintf(stderr, "gcspy report: unknown format '%s' (text, json, html, pprof, collapsed, "
                        "peak or temporary)\n", format);
        return -1;
    }
    ra->rep = rep;
    struct gs_analyze_opts *ao = &ra->c.ao;
    if (ro->max_groups)
        ao->max_groups = ro->max_groups;
    if (ro->show_reachable || rep == &gs_reporter_json || rep == &gs_reporter_html)
        ao->max_groups = ro->max_groups ? ro->max_groups : rep->max_groups;
    /* the page draws the run over time: gathered in the same one pass */
    ao->history = rep == &gs_reporter_html;
    /* the exports and the site views read every site's figures */
    ao->sites = rep == &gs_reporter_pprof || rep == &gs_reporter_collapsed ||
                rep == &gs_reporter_peak || rep == &gs_reporter_temporary ||
                rep == &gs_reporter_json || rep == &gs_reporter_html;
    /* symbolize only what is shown: pprof every site; collapsed the sites
     * with a value; the views the largest --max-groups (siteview.c: 20) */
    if (rep == &gs_reporter_collapsed) {
        ao->sites_rank = gs_sval_get;
        ao->sites_rank_which = ro->value;
    } else if (rep == &gs_reporter_peak || rep == &gs_reporter_temporary) {
        ao->sites_rank = gs_sval_get;
        ao->sites_rank_which = rep == &gs_reporter_peak ? GS_SV_PEAK : GS_SV_TEMP;
        ao->sites_max = ro->max_groups ? ro->max_groups : GS_SITEVIEW_ROWS;
    } else if (rep == &gs_reporter_json || rep == &gs_reporter_html) {
        /* the peak and temporary views (peak.sites, temporary) */
        ao->sites_rank = gs_siteview_rank;
        ao->sites_rank_which = GS_SV_PEAK;
        ao->sites_also = 1 + GS_SV_TEMP;
        ao->sites_max = ro->max_groups ? ro->max_groups : GS_SITEVIEW_ROWS;
    }
    return 0;
}

/* The report of the loaded traces to ra->output: 0, or 2 (a malformed
 * trace, or the write failed) with the error printed. */
static int write_report(struct report_args *ra, const struct gs_loaded *ld)
{
    const char *output = ra->output;
    ra->ro.problems = ld->problems;
    FILE *f = stdout;
    if (output && strcmp(output, "-") != 0) {
        f = gs_open_report("report", output);
        if (!f)
            return 2;
    }
    int wr = gs_report_write(ra->rep, f, ld->items, ld->n, &ra->ro);
    if (f != stdout) {
        if (fclose(f))
            wr = -1;
    } else if (fflush(stdout)) {
        wr = -1;
    }
    if (wr) {
        fprintf(stderr, "gcspy report: writing the report to %s failed\n",
                output ? output : "standard output");
        return 2;
    }
    return ld->malformed ? 2 : 0;
}

int gs_cmd_report(int argc, char **argv)
{
    if (gs_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    struct report_args ra;
    memset(&ra, 0, sizeof ra);
    ra.ro.show_timeline = 1;
    int rc = 2;
    if (gs_common_init(&ra.c, argc)) {
        fprintf(stderr, "gcspy report: out of memory\n");
        return 2;
    }
    if (parse(argc, argv, &ra))
        goto out;
    struct gs_common *c = &ra.c;
    for (size_t i = 0; i < c->npaths && !ra.job; i++)
        ra.job = gs_psum_is_summary(c->paths[i]) > 0;
    if (ra.job || ra.summary_out) {
        rc = gs_report_job(c, ra.output, ra.rep == &gs_reporter_json, c->jobs, ra.summary_out);
        goto out;
    }
    struct gs_loaded ld;
    if (gs_load_readable("report", c, &ld) == 0)
        rc = write_report(&ra, &ld);
    gs_loaded_free(&ld);
out:
    gs_common_free(&ra.c);
    return rc;
}
