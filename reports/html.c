/*
 * The HTML reporter: one self-contained page (reports/web/, built into
 * $(BUILD)/gen/html_page.h with every library inlined) holding two JSON
 * documents in `<script type="application/json">` slots, which the page's own
 * scripts parse and draw:
 *
 *   gcspy-data    the JSON report itself (docs/report-json.md), written by
 *                 the JSON reporter, which this one drives call for call;
 *   gcspy-extra   per process, what the page draws that the report does not
 *                 hold (address-space maps, growth per step, every pause:
 *                 html_extra.h), from the history the analysis gathered
 *                 during its one pass (analyzer/history.h).
 *
 * What must stay true: nothing from a trace reaches the page except through
 * these slots, and everything written into them goes through the escaping
 * stream below, which spells `<`, `>`, `&`, U+2028 and U+2029 as JSON \u
 * escapes. They only occur inside JSON strings, where the escape means the
 * same character, so the JSON is unchanged, while no `</script>` or `<!--`
 * can end the slot or change how the HTML parser reads it.
 */
#define _GNU_SOURCE
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "html_extra.h"
#include "html_page.h"      /* generated: gs_html_part0..2 */
#include "jsonw.h"

/* ---- the escaping stream: a FILE whose bytes go to another, escaped ---- */

struct esc {
    FILE *out;
    int state;      /* 0; 1: after E2; 2: after E2 80 (a U+2028/9 may follow) */
    int err;
};

static int put(struct esc *e, const char *s, size_t n)
{
    if (fwrite(s, 1, n, e->out) != n)
        e->err = 1;
    return e->err ? -1 : 0;
}

static ssize_t esc_write(void *cookie, const char *buf, size_t size)
{
    struct esc *e = cookie;
    size_t from = 0; /* buf[from, i) is still to be copied as it is */
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (e->state) {
            /* the held-back E2 [80] began a line or paragraph separator, or
             * some other character: now we know which */
            if (e->state == 1 && c == 0x80) {
                e->state = 2;
                from = i + 1;
                continue;
            }
            if (e->state == 2 && (c == 0xa8 || c == 0xa9)) {
                put(e, c == 0xa8 ? "\\u2028" : "\\u2029", 6);
                e->state = 0;
                from = i + 1;
                continue;
            }
            put(e, "\xe2\x80", (size_t)e->state);
            e->state = 0;
            from = i;
        }
        const char *rep = c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : c == '&' ? "\\u0026" : NULL;
        if (!rep && c != 0xe2)
            continue;
        if (i > from)
            put(e, buf + from, i - from);
        from = i + 1;
        if (rep)
            put(e, rep, 6);
        else
            e->state = 1;
    }
    if (size > from)
        put(e, buf + from, size - from);
    return e->err ? -1 : (ssize_t)size;
}

static int esc_close(void *cookie)
{
    struct esc *e = cookie;
    if (e->state == 1)
        put(e, "\xe2", 1);
    else if (e->state == 2)
        put(e, "\xe2\x80", 2);
    e->state = 0;
    return e->err ? -1 : 0;
}

static FILE *esc_open(struct esc *e, FILE *out)
{
    memset(e, 0, sizeof *e);
    e->out = out;
    cookie_io_functions_t io = { .write = esc_write, .close = esc_close };
    return fopencookie(e, "w", io);
}

/* Flushes and closes the escaping stream: 0, or -1 when any write failed. */
static int esc_finish(FILE *f, struct esc *e)
{
    int rc = fclose(f) ? -1 : 0;
    return rc || e->err ? -1 : 0;
}

/* ---- the reporter: the JSON reporter's calls, inside the page ---- */

static struct {
    struct esc esc;
    struct gs_report_ctx inner;     /* the JSON reporter's, writing to esc */
    const struct gs_report_item *items;
    size_t n;
} hs;

static int inner_rc(struct gs_report_ctx *c, int rc)
{
    if (rc || hs.inner.err || hs.esc.err)
        c->err = 1;
    return c->err ? -1 : 0;
}

static int h_begin(struct gs_report_ctx *c, size_t n)
{
    memset(&hs, 0, sizeof hs);
    if (fputs(gs_html_part0, c->out) == EOF)
        return -1;
    FILE *f = esc_open(&hs.esc, c->out);
    if (!f)
        return -1;
    hs.inner.out = f;
    hs.inner.o = c->o;
    return inner_rc(c, gs_reporter_json.begin(&hs.inner, n));
}

static int h_process(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    return inner_rc(c, gs_reporter_json.process(&hs.inner, it));
}

static int h_leak(struct gs_report_ctx *c, const struct gs_report_item *it,
                  const struct gs_leak *l)
{
    return inner_rc(c, gs_reporter_json.leak(&hs.inner, it, l));
}

static int h_process_end(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    return inner_rc(c, gs_reporter_json.process_end(&hs.inner, it));
}

static int h_summary(struct gs_report_ctx *c, const struct gs_report_item *items, size_t n)
{
    /* the items outlive gs_report_write's calls: end() reads them again */
    hs.items = items;
    hs.n = n;
    return inner_rc(c, gs_reporter_json.summary(&hs.inner, items, n));
}

/* One process's extra object, made whole in memory first: when memory runs
 * out midway, the object says so instead of holding half of its keys. */
static void extra_item(FILE *f, const struct gs_report_item *it)
{
    const char *err = !it->r ? "the trace could not be read"
                      : !it->r->history ? "the analysis did not gather the run's history"
                                        : "out of memory";
    char *buf = NULL;
    size_t len = 0;
    int ok = 0;
    if (it->r && it->r->history) {
        FILE *m = open_memstream(&buf, &len);
        if (m) {
            struct gs_jw w;
            gs_jw_init(&w, m);
            gs_jw_obj(&w, NULL);
            gs_jw_str(&w, "trace", it->trace);
            ok = gs_html_extra_write(&w, it->r->history) == 0;
            gs_jw_end_obj(&w);
            ok = fclose(m) == 0 && ok;
        }
    }
    if (ok) {
        fwrite(buf, 1, len, f);
    } else {
        struct gs_jw w;
        gs_jw_init(&w, f);
        gs_jw_obj(&w, NULL);
        gs_jw_str(&w, "trace", it->trace);
        gs_jw_str(&w, "error", err);
        gs_jw_end_obj(&w);
    }
    free(buf);
}

static int h_end(struct gs_report_ctx *c)
{
    int rc = gs_reporter_json.end(&hs.inner);
    if (fputc('\n', hs.inner.out) == EOF)
        rc = -1;
    if (esc_finish(hs.inner.out, &hs.esc))
        rc = -1;
    if (rc || c->err || fputs(gs_html_part1, c->out) == EOF)
        return c->err = 1, -1;

    FILE *f = esc_open(&hs.esc, c->out);
    if (!f)
        return c->err = 1, -1;
    fputc('[', f);
    for (size_t i = 0; i < hs.n; i++) {
        if (i)
            fputc(',', f);
        extra_item(f, &hs.items[i]);
    }
    fputs("]\n", f);
    rc = esc_finish(f, &hs.esc);
    if (rc || fputs(gs_html_part2, c->out) == EOF)
        return c->err = 1, -1;
    return 0;
}

const struct gs_reporter gs_reporter_html = {
    .name = "html",
    .begin = h_begin,
    .process = h_process,
    .leak = h_leak,
    .process_end = h_process_end,
    .summary = h_summary,
    .end = h_end,
    .max_groups = 100,     /* the page: the largest 100 stacks per class (JSON: 200) */
    .show_reachable = 1,
};
