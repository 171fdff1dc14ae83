/*
 * The JUnit XML reporter for CI dashboards (`gcspy check --junit FILE`): one
 * testsuite, one testcase per trace, a <failure> when a limit was exceeded
 * or the trace holds no leak scan (type gcspy.no-scan; message: the verdict line; body: every exceeded limit and the leaks
 * behind it), an <error> when the trace could not be read. Text is escaped
 * for XML 1.0, whose character set has no control characters but tab,
 * newline and carriage return, no surrogates and neither U+FFFE nor U+FFFF:
 * those, and bytes that are not well-formed UTF-8 (utf8.h: overlong forms,
 * encoded surrogates, past U+10FFFF), become '?', so any string (a
 * program's argv, a trace's paths) gives a well-formed document.
 */
#include "report.h"

#include <inttypes.h>
#include <string.h>

#include "utf8.h"

static void xesc(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned char c = *p;
        switch (c) {
        case '&': fputs("&amp;", f); p++; continue;
        case '<': fputs("&lt;", f); p++; continue;
        case '>': fputs("&gt;", f); p++; continue;
        case '"': fputs("&quot;", f); p++; continue;
        case '\'': fputs("&apos;", f); p++; continue;
        default: break;
        }
        uint32_t cp;
        /* strlen bounds the sequence: it never reads past the NUL */
        size_t len = gs_utf8_seq(p, strnlen((const char *)p, 4), &cp);
        if (!len || (cp < 0x20 && c != '\n' && c != '\t' && c != '\r') || cp == 0xfffe ||
            cp == 0xffff) {
            fputc('?', f);
            p++;
        } else {
            fwrite(p, 1, len, f);
            p += len;
        }
    }
}

static int u_begin(struct gs_report_ctx *c, size_t n)
{
    /* everything is written by summary(): the testsuite's opening tag holds
     * the failure counts, known only once every verdict is in */
    const char *suite = c->o->suite ? c->o->suite : "gcspy check";
    (void)n;
    fprintf(c->out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    c->state = (void *)suite;
    return 0;
}

static int u_summary(struct gs_report_ctx *c, const struct gs_report_item *items, size_t n)
{
    FILE *f = c->out;
    size_t fails = 0, errors = 0;
    for (size_t i = 0; i < n; i++) {
        int st = items[i].verdict ? items[i].verdict->status : (items[i].r ? 0 : 2);
        fails += st == 1;
        errors += st == 2;
    }
    const char *suite = c->state;
    fprintf(f, "<testsuites name=\"gcspy\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n", n,
            fails, errors);
    fprintf(f, "  <testsuite name=\"");
    xesc(f, suite);
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\">\n", n, fails, errors);
    for (size_t i = 0; i < n; i++) {
        const struct gs_report_item *it = &items[i];
        const struct gs_result *r = it->r;
        fprintf(f, "    <testcase classname=\"gcspy.check\" name=\"");
        if (r) {
            char name[512];
            snprintf(name, sizeof name, "%s (pid %" PRIu64 ": %.200s)", it->trace, r->pid,
                     r->command ? r->command : "");
            xesc(f, name);
        } else {
            xesc(f, it->trace);
        }
        fprintf(f, "\" time=\"%.3f\">\n", r ? (double)r->duration_ns / 1e9 : 0.0);
        int st = it->verdict ? it->verdict->status : (r ? 0 : 2);
        if (st == 1) {
            /* gcspy.no-scan: failed for want of a leak scan (check.h) */
            fprintf(f, "      <failure type=\"%s\" message=\"",
                    it->verdict->no_scan ? "gcspy.no-scan" : "gcspy.limit");
            xesc(f, it->verdict->line);
            fprintf(f, "\">");
            xesc(f, it->verdict->detail);
            fprintf(f, "</failure>\n");
        } else if (st == 2) {
            fprintf(f, "      <error type=\"gcspy.error\" message=\"");
            xesc(f, it->verdict ? it->verdict->line : it->error);
            fprintf(f, "\">");
            xesc(f, it->error ? it->error : (it->verdict ? it->verdict->detail : ""));
            fprintf(f, "</error>\n");
        }
        if (it->verdict && st == 0) {
            fprintf(f, "      <system-out>");
            xesc(f, it->verdict->line);
            fprintf(f, "</system-out>\n");
        }
        fprintf(f, "    </testcase>\n");
    }
    fprintf(f, "  </testsuite>\n</testsuites>\n");
    return 0;
}

const struct gs_reporter gs_reporter_junit = {
    .name = "junit",
    .begin = u_begin,
    .process = NULL,
    .leak = NULL,
    .process_end = NULL,
    .summary = u_summary,
    .end = NULL,
    .max_groups = 0,
    .show_reachable = 0,
};
