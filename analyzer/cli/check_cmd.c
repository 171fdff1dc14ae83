/*
 * `gcspy check TRACE... [limits] [--suppressions FILE] [--junit FILE]`: the
 * CI gate's command line (the judgement itself is check.c). One verdict line
 * per trace on standard output; exit status 0 when every trace is within its
 * limits, 1 when a limit is exceeded, 2 on any error (unreadable or
 * malformed trace, bad option, a write that failed).
 *
 * Defaults follow LeakSanitizer: without limits any definite or indirect
 * leak fails, and so does a trace with no leak scan (--allow-no-scan lets
 * it pass). Giving --max-leak-bytes alone leaves the block count
 * unlimited, and the other way round, so one limit means what it says.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmdutil.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gcspy check TRACE... [limits] [--suppressions FILE] [--junit FILE]\n"
            "\n"
            "The CI gate: one verdict line per trace; exit status 0 when every trace is\n"
            "within the limits, 1 when one is exceeded, 2 on any error (a trace that\n"
            "cannot be read, or a malformed one: its verdict and stderr name the byte\n"
            "offset of the first problem).\n"
            "\n"
            "limits (sizes take K, M, G suffixes):\n"
            "  --max-leak-bytes N         leaked host, pinned and managed bytes allowed\n"
            "  --max-leak-blocks N        leaked host, pinned and managed blocks allowed\n"
            "                             (neither given: both 0; one given: the other unlimited)\n"
            "  --max-device-leak-bytes N  leaked device bytes allowed (0)\n"
            "  --fail-on LIST             what counts, comma-separated: definite, indirect,\n"
            "                             possible, reachable, runtime (CUDA blocks held by\n"
            "                             the CUDA runtime only), not-freed, growth; all: every\n"
            "                             one of these (default definite,indirect). A site\n"
            "                             counts, with all its lost bytes, when its worst\n"
            "                             class is listed\n"
            "  --per-class                count leak groups by their own class instead of\n"
            "                             sites by their worst class\n"
            "options:\n"
            "  --junit FILE          also write JUnit XML for CI dashboards\n"
            "  --json FILE           also write the JSON report, verdicts included\n"
            "  --require-complete    an incomplete or damaged trace is an error\n"
            "  --allow-no-scan       a trace with no leak scan (killed, _exit, the scan\n"
            "                        skipped or off) may pass; by default it fails\n"
            GS_COMMON_HELP
            "  -q, --quiet           print the verdict lines only\n");
}

static int write_file(const char *path, const struct gs_reporter *rep,
                      const struct gs_report_item *items, size_t n,
                      const struct gs_report_opts *ro)
{
    FILE *f = gs_open_report("check", path);
    if (!f)
        return -1;
    int rc = gs_report_write(rep, f, items, n, ro);
    if (fclose(f) || rc) {
        fprintf(stderr, "gcspy check: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

struct check_args {
    struct gs_common c;
    struct gs_check_limits lim;
    const char *junit, *json;
};

/* The command line into *ca; 0, or -1 with the error printed. */
static int parse(int argc, char **argv, struct check_args *ca)
{
    struct gs_args a = { argc, argv, 1, "check", 0 };
    const char *v;
    int set_bytes = 0, set_blocks = 0;
    while (a.i < argc && !a.bad) {
        uint64_t u;
        if (gs_common_arg(&a, &ca->c)) {
            continue;
        } else if (gs_arg_val(&a, "--max-leak-bytes", &v)) {
            if (!a.bad && gs_parse_size(&a, "--max-leak-bytes", v, &u) == 0) {
                ca->lim.max_bytes = u;
                set_bytes = 1;
            }
        } else if (gs_arg_val(&a, "--max-leak-blocks", &v)) {
            if (!a.bad && gs_parse_count(&a, "--max-leak-blocks", v, &u) == 0) {
                ca->lim.max_blocks = u;
                set_blocks = 1;
            }
        } else if (gs_arg_val(&a, "--max-device-leak-bytes", &v)) {
            if (!a.bad && gs_parse_size(&a, "--max-device-leak-bytes", v, &u) == 0)
                ca->lim.max_device_bytes = u;
        } else if (gs_arg_val(&a, "--fail-on", &v)) {
            char bad[128];
            if (!a.bad && gs_check_parse_fail_on(v, &ca->lim.fail_on, bad, sizeof bad)) {
                fprintf(stderr, "gcspy check: --fail-on: unknown class '%s' (definite, indirect, "
                                "possible, reachable, runtime, not-freed, growth, all)\n", bad);
                a.bad = 1;
            }
        } else if (gs_arg_val(&a, "--junit", &v)) {
            if (!a.bad)
                ca->junit = v;
        } else if (gs_arg_val(&a, "--json", &v)) {
            if (!a.bad)
                ca->json = v;
        } else if (gs_arg_flag(&a, "--require-complete")) {
            ca->lim.require_complete = 1;
        } else if (gs_arg_flag(&a, "--per-class")) {
            ca->lim.per_class = 1;
        } else if (gs_arg_flag(&a, "--allow-no-scan")) {
            ca->lim.allow_no_scan = 1;
        } else {
            fprintf(stderr, "gcspy check: unknown option '%s' (see gcspy check --help)\n", argv[a.i]);
            a.bad = 1;
        }
    }
    if (a.bad || gs_common_finish(&a, &ca->c))
        return -1;
    if (set_bytes && !set_blocks)
        ca->lim.max_blocks = UINT64_MAX;
    if (set_blocks && !set_bytes)
        ca->lim.max_bytes = UINT64_MAX;
    /* every group that can fail the gate is symbolized, so suppressions see it */
    ca->c.ao.all_classes_mask = ca->lim.fail_on & ((1u << GS_RC__N) - 1);
    if (!ca->lim.per_class) /* a counted site's lost classes count too */
        ca->c.ao.all_classes_mask |= (1u << GS_CLASS_REACHABLE) - 1;
    return 0;
}

/* One verdict line per trace; the worst status. */
static int judge(const struct check_args *ca, struct gs_loaded *ld, struct gs_verdict *vs)
{
    int worst = 0;
    size_t fails = 0, errors = 0;
    for (size_t i = 0; i < ld->n; i++) {
        gs_check_eval(&ca->lim, ld->items[i].trace, ld->items[i].r, ld->items[i].error, &vs[i]);
        ld->items[i].verdict = &vs[i];
        printf("%s\n", vs[i].line);
        if (vs[i].status > worst)
            worst = vs[i].status;
        fails += vs[i].status == 1;
        errors += vs[i].status == 2;
    }
    if (!ca->c.quiet) {
        for (size_t k = 0; k < ca->c.supps.n; k++) {
            const struct gs_supp *sp = &ca->c.supps.v[k];
            if (sp->leaks || sp->suspects)
                printf("suppressed by leak:%s (%s:%u): %" PRIu64 " blocks, %" PRIu64 " bytes"
                       "%s\n", sp->pattern, sp->file ? sp->file : "-", sp->line, sp->blocks,
                       sp->bytes, sp->suspects ? " and growth" : "");
        }
        printf("gcspy check: %zu trace%s, %zu failed, %zu error%s\n", ld->n, ld->n == 1 ? "" : "s",
               fails, errors, errors == 1 ? "" : "s");
    }
    return fflush(stdout) ? 2 : worst;
}

int gs_cmd_check(int argc, char **argv)
{
    if (gs_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    struct check_args ca;
    memset(&ca, 0, sizeof ca);
    gs_check_defaults(&ca.lim);
    int rc = 2;
    if (gs_common_init(&ca.c, argc)) {
        fprintf(stderr, "gcspy check: out of memory\n");
        return 2;
    }
    if (parse(argc, argv, &ca))
        goto out;
    struct gs_loaded ld;
    struct gs_verdict *vs = NULL;
    int lrc = gs_load_common("check", &ca.c, &ld);
    if (lrc || !(vs = calloc(ld.n, sizeof *vs))) {
        if (!lrc) /* else already said */
            fprintf(stderr, "gcspy check: out of memory\n");
        gs_loaded_free(&ld);
        goto out;
    }
    int worst = judge(&ca, &ld, vs);
    struct gs_report_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.show_timeline = 1;
    ro.problems = ld.problems;
    if (ca.junit && write_file(ca.junit, &gs_reporter_junit, ld.items, ld.n, &ro))
        worst = 2;
    if (ca.json && write_file(ca.json, &gs_reporter_json, ld.items, ld.n, &ro))
        worst = 2;
    rc = worst;
    free(vs);
    gs_loaded_free(&ld);
out:
    gs_common_free(&ca.c);
    return rc;
}
