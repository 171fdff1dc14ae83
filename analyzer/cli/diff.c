/*
 * `gcspy diff A B`: two runs' traces compared site by site (analyzer/diff.h):
 * the sites whose leaked bytes (or another --value) are new, gone, grown or
 * shrunk from A to B, largest rise first, as text or JSON; for CI,
 * --fail-on-growth SIZE makes the exit status 1 when the rises of new and
 * grown sites add up to more than SIZE ("this PR added 3 MiB of leaks at
 * foo.py:12"). Exit status 0, 1 (over the limit), 2 (bad options, an
 * unreadable or malformed trace, a failed write).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "commands.h"
#include "diff.h"
#include "fmt.h"
#include "../../reports/exports.h"
#include "../../reports/jsonw.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gcspy diff A B [--value V] [--format text|json] [-o FILE]\n"
            "                  [--fail-on-growth SIZE] [options]\n"
            "\n"
            "Compares two runs' traces site by site (stacks matched as text, so the same\n"
            "code matches across runs): the sites whose value is new in B, gone, grown or\n"
            "shrunk, largest rise first.\n"
            "\n"
            "options:\n"
            "  --value V             what to compare: leaked (default; definite + indirect\n"
            "                        bytes), leaked-blocks, peak, peak-blocks, allocs,\n"
            "                        alloc-bytes, temporary, temporary-bytes\n"
            "  --format FMT          text (default) or json\n"
            "  -o, --output FILE     write to FILE instead of standard output\n"
            "  --fail-on-growth SIZE exit 1 when new and grown sites rose by more than SIZE\n"
            "                        in all (bytes, K/M/G; a count for the count values)\n"
            GS_COMMON_HELP
            "  -q, --quiet           no warnings about incomplete traces\n"
            "\n"
            "Exit status: 0; 1 over --fail-on-growth; 2 on errors or a malformed trace.\n");
}

struct diff_args {
    struct gs_common c;
    int value, json, have_limit;
    uint64_t limit;
    const char *output;
};

static int parse(int argc, char **argv, struct diff_args *d)
{
    struct gs_args a = { argc, argv, 1, "diff", 0 };
    const char *v;
    while (a.i < argc && !a.bad) {
        if (gs_common_arg(&a, &d->c)) {
            continue;
        } else if (gs_arg_val(&a, "--value", &v)) {
            if (!a.bad && (d->value = gs_sval_find(v)) < 0) {
                fprintf(stderr, "gcspy diff: --value: unknown value '%s' (see gcspy diff --help)\n", v);
                a.bad = 1;
            }
        } else if (gs_arg_val(&a, "--format", &v)) {
            if (!a.bad && strcmp(v, "json") != 0 && strcmp(v, "text") != 0) {
                fprintf(stderr, "gcspy diff: unknown format '%s' (text or json)\n", v);
                a.bad = 1;
            }
            d->json = !a.bad && strcmp(v, "json") == 0;
        } else if (gs_arg_val(&a, "-o", &v) || gs_arg_val(&a, "--output", &v)) {
            if (!a.bad)
                d->output = v;
        } else if (gs_arg_val(&a, "--fail-on-growth", &v)) {
            if (!a.bad && gs_parse_size(&a, "--fail-on-growth", v, &d->limit) == 0)
                d->have_limit = 1;
        } else {
            fprintf(stderr, "gcspy diff: unknown option '%s' (see gcspy diff --help)\n", argv[a.i]);
            a.bad = 1;
        }
    }
    if (a.bad || gs_common_finish(&a, &d->c))
        return -1;
    if (d->c.npaths != 2) {
        fprintf(stderr, "gcspy diff: two traces are needed, A and B (%zu given)\n", d->c.npaths);
        return -1;
    }
    d->c.ao.sites = 1;
    d->c.ao.sites_rank = gs_sval_get;  /* only sites with a value are compared */
    d->c.ao.sites_rank_which = d->value;
    return 0;
}

static int is_bytes(int value)
{
    return value == GS_SV_LEAKED || value == GS_SV_PEAK || value == GS_SV_ALLOC_BYTES ||
           value == GS_SV_TEMP_BYTES;
}

/* v as bytes ("1.5 MiB") or as a count, by the value compared. */
static const char *amount(char *buf, uint64_t v, int value)
{
    if (is_bytes(value))
        return gs_fmt_bytes(buf, v);
    snprintf(buf, 32, "%" PRIu64, v);
    return buf;
}

static void write_text(FILE *f, const struct diff_args *d, const struct gs_diff *df,
                       char **paths)
{
    char b1[32], b2[32], b3[32], lab[1024];
    uint64_t ta = df->total_a, tb = df->total_b;
    fprintf(f, "gcspy diff: %s %s -> %s: %s -> %s (%s%s)\n", gs_sval_name(d->value), paths[0],
            paths[1], amount(b1, ta, d->value), amount(b2, tb, d->value), tb >= ta ? "+" : "-",
            amount(b3, tb >= ta ? tb - ta : ta - tb, d->value));
    for (size_t i = 0; i < df->n; i++) {
        const struct gs_diff_row *r = &df->v[i];
        const struct gs_sitestat *s = r->site;
        int up = r->b >= r->a;
        fprintf(f, "  %s%-10s %-6s at %s (%s -> %s)\n", up ? "+" : "-",
                amount(b1, up ? r->b - r->a : r->a - r->b, d->value),
                gs_diff_status_name(r->status),
                s->site.function || s->site.ip ? gs_frame_label(&s->site, lab, sizeof lab, 0)
                                               : "(no symbols)",
                amount(b2, r->a, d->value), amount(b3, r->b, d->value));
    }
    fprintf(f, "%zu new, %zu gone, %zu grown, %zu shrunk; new and grown rose %s\n",
            df->count[GS_DIFF_NEW], df->count[GS_DIFF_GONE], df->count[GS_DIFF_GROWN],
            df->count[GS_DIFF_SHRUNK], amount(b1, df->rise, d->value));
}

static void write_json(FILE *f, const struct diff_args *d, const struct gs_diff *df,
                       char **paths, int failed)
{
    struct gs_jw w;
    char lab[1024];
    gs_jw_init(&w, f);
    gs_jw_obj(&w, NULL);
    gs_jw_str(&w, "value", gs_sval_name(d->value));
    gs_jw_str(&w, "a", paths[0]);
    gs_jw_str(&w, "b", paths[1]);
    gs_jw_u64(&w, "total_a", df->total_a);
    gs_jw_u64(&w, "total_b", df->total_b);
    gs_jw_u64(&w, "rise", df->rise);
    if (d->have_limit)
        gs_jw_u64(&w, "fail_on_growth", d->limit);
    gs_jw_bool(&w, "failed", failed);
    gs_jw_arr(&w, "sites", 0);
    for (size_t i = 0; i < df->n; i++) {
        const struct gs_diff_row *r = &df->v[i];
        gs_jw_obj(&w, NULL);
        gs_jw_str(&w, "status", gs_diff_status_name(r->status));
        gs_jw_str(&w, "site", r->site->site.function || r->site->site.ip
                                  ? gs_frame_label(&r->site->site, lab, sizeof lab, 0)
                                  : NULL);
        gs_jw_u64(&w, "a", r->a);
        gs_jw_u64(&w, "b", r->b);
        gs_jw_i64(&w, "delta", (int64_t)(r->b - r->a));
        gs_jw_str(&w, "stack", r->key);
        gs_jw_end_obj(&w);
    }
    gs_jw_end_arr(&w);
    gs_jw_end_obj(&w);
    fputc('\n', f);
}

static int compare(struct diff_args *d, const struct gs_loaded *ld)
{
    struct gs_diff df;
    if (gs_diff_sites(ld->results[0], ld->results[1], gs_sval_get, d->value, &df)) {
        fprintf(stderr, "gcspy diff: out of memory\n");
        return 2;
    }
    int failed = d->have_limit && df.rise > d->limit;
    FILE *f = stdout;
    if (d->output && strcmp(d->output, "-") != 0 && !(f = gs_open_report("diff", d->output))) {
        gs_diff_free(&df);
        return 2;
    }
    if (d->json)
        write_json(f, d, &df, d->c.paths, failed);
    else
        write_text(f, d, &df, d->c.paths);
    int werr = f != stdout ? fclose(f) != 0 : fflush(stdout) != 0;
    if (failed) {
        char b1[32], b2[32];
        fprintf(stderr, "gcspy diff: FAIL: new and grown sites rose %s, over the %s allowed\n",
                amount(b1, df.rise, d->value), amount(b2, d->limit, d->value));
    }
    gs_diff_free(&df);
    if (werr) {
        fprintf(stderr, "gcspy diff: writing to %s failed\n", d->output ? d->output : "standard output");
        return 2;
    }
    return ld->malformed ? 2 : failed;
}

int gs_cmd_diff(int argc, char **argv)
{
    if (gs_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    struct diff_args d;
    memset(&d, 0, sizeof d);
    if (gs_common_init(&d.c, argc)) {
        fprintf(stderr, "gcspy diff: out of memory\n");
        return 2;
    }
    int rc = 2;
    if (parse(argc, argv, &d) == 0) {
        struct gs_loaded ld;
        if (gs_load_readable("diff", &d.c, &ld) == 0)
            rc = compare(&d, &ld);
        gs_loaded_free(&ld);
    }
    gs_common_free(&d.c);
    return rc;
}
