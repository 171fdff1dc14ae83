/*
 * libFuzzer target: the whole offline path on a trace in memory, the way
 * `gcspy report` and `gcspy check` take it: gs_analyze_mem (reader, replay,
 * leak grouping, growth, pauses, fragmentation, and the history the HTML
 * page draws; a symbolizer that opens no file, gs_sym_new(0): the fuzzer's
 * addresses name no real files, but the stacks are built as the CLI
 * builds them, frames as module+offset),
 * then the text, JSON, JUnit and HTML reporters and the check gate's
 * verdict. Each input is fed the three ways
 * of fuzz_common.h. Besides the sanitizers' findings it checks, whatever
 * bytes the trace's strings hold, that the JSON reporter's output is valid
 * UTF-8 without raw control characters, that the JUnit XML is too and holds
 * neither U+FFFE nor U+FFFF (XML 1.0's characters), and that the text
 * report holds nothing a terminal obeys (no C0 control but newline and tab,
 * no DEL, no C1 control, raw or encoded); it aborts when one is not.
 * A hang is a finding too: every run of the targets (make fuzz, the CI
 * replay of tests/fuzz/regressions/) passes libFuzzer a -timeout.
 *
 * GCSPY_FUZZ_KNOWN (a comma-separated list in the environment) lets a long
 * run look past findings that are reported and wait for a fix (each kept in
 * tests/fuzz/regressions/, which CI replays without the list):
 *   json-utf8  the JSON check above is off;
 *   big-ids    inputs naming a stack or Python code id above 2^20 are not
 *              analysed (the replay once indexed both directly: gigabytes;
 *              stack ids must now come in order, Python code ids live in
 *              an id table, cli-pycode-sparse.trc).
 *
 * Build and run: `make fuzz` (tests/mk/reliability.mk).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "check.h"
#include "symbols.h"
#include "trace_reader.h"
#include "fuzz_common.h"
#include "../reports/exports.h"
#include "../reports/report.h"

static int known(const char *what)
{
    const char *k = getenv("GCSPY_FUZZ_KNOWN");
    return k && strstr(k, what);
}

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF) and
 * no raw control character: what a JSON parser must accept. */
static int json_text_ok(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r')
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0) ||
            (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))
            return 0;
        i += len;
    }
    return 1;
}

/* What json_text_ok accepts, less U+FFFE and U+FFFF: XML 1.0's Char. */
static int xml_text_ok(const uint8_t *s, size_t n)
{
    if (!json_text_ok(s, n))
        return 0;
    for (size_t i = 0; i + 2 < n; i++)
        if (s[i] == 0xef && s[i + 1] == 0xbf && (s[i + 2] == 0xbe || s[i + 2] == 0xbf))
            return 0;
    return 1;
}

/* Nothing a terminal obeys: well-formed UTF-8 (json_text_ok, which lets
 * carriage return pass: refused here) with no DEL and no C1 control
 * (U+0080..U+009F: C2 80..C2 9F). */
static int term_text_ok(const uint8_t *s, size_t n)
{
    if (!json_text_ok(s, n))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\r' || s[i] == 0x7f || (s[i] == 0xc2 && i + 1 < n && s[i + 1] <= 0x9f))
            return 0;
    return 1;
}

enum check { CHECK_NONE, CHECK_JSON, CHECK_XML, CHECK_TERM };

static void report(const struct gs_reporter *rep, const struct gs_report_item *it, enum check check)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    struct gs_report_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.show_timeline = 1;
    ro.show_reachable = 1;
    gs_report_write(rep, f, it, 1, &ro);
    fclose(f);
    static int skip_json = -1;
    if (skip_json < 0)
        skip_json = known("json-utf8");
    const uint8_t *b = (const uint8_t *)buf;
    if ((check == CHECK_JSON && !skip_json && !json_text_ok(b, len)) ||
        (check == CHECK_XML && !xml_text_ok(b, len)) || (check == CHECK_TERM && !term_text_ok(b, len)))
        abort();
    free(buf);
}

/* Whether the trace names an id of 2^20 or more (see big-ids above). */
static int big_ids(const uint8_t *d, size_t n)
{
    char err[256];
    struct gs_reader *r = gs_reader_open_mem(d, n, err, sizeof err);
    if (!r)
        return 0;
    struct gs_record rec;
    int big = 0;
    const uint64_t lim = 1u << 20;
    while (!big && gs_reader_next(r, &rec) == GS_READ_OK) {
        switch (rec.type) {
        case GS_REC_ALLOC: case GS_REC_ALLOC_EX: case GS_REC_REALLOC:
            big = rec.u.alloc.stack >= lim; break;
        case GS_REC_STACK:
            big = rec.u.stack.id >= lim || rec.u.stack.parent >= lim ||
                  ((rec.u.stack.ip >> 63) && ((rec.u.stack.ip >> 32) & 0x7fffffff) >= lim);
            break;
        case GS_REC_PYCODE: big = rec.u.pycode.id >= lim; break;
        case GS_REC_SCAN_BLOCK: big = rec.u.scan_block.stack >= lim; break;
        default: break;
        }
    }
    gs_reader_close(r);
    return big;
}

static void one(const uint8_t *d, size_t n)
{
    static int skip_big = -1;
    if (skip_big < 0)
        skip_big = known("big-ids");
    if (skip_big && big_ids(d, n))
        return;
    struct gs_analyze_opts ao;
    gs_analyze_defaults(&ao);
    ao.history = 1;
    ao.sites = 1;       /* the exports' and site views' figures (docs/exports.md) */
    struct gs_result *r = NULL;
    char err[512];
    struct gs_report_item it;
    memset(&it, 0, sizeof it);
    it.trace = "fuzz.trace";
    struct gs_symbolizer *sym = gs_sym_new(0);
    if (!sym)
        return;
    if (gs_analyze_mem(d, n, "fuzz.trace", &ao, sym, &r, err, sizeof err)) {
        it.error = err;
    } else {
        it.r = r;
        struct gs_check_limits lim;
        gs_check_defaults(&lim);
        lim.require_complete = 1;
        static struct gs_verdict v; /* 9 KiB of text: off the stack */
        gs_check_eval(&lim, "fuzz.trace", r, NULL, &v);
        it.verdict = &v;
        report(&gs_reporter_text, &it, CHECK_TERM);
        report(&gs_reporter_json, &it, CHECK_JSON);
        report(&gs_reporter_junit, &it, CHECK_XML);
        report(&gs_reporter_html, &it, CHECK_NONE);
        report(&gs_reporter_pprof, &it, CHECK_NONE);
        report(&gs_reporter_collapsed, &it, CHECK_TERM);
        report(&gs_reporter_peak, &it, CHECK_TERM);
        report(&gs_reporter_temporary, &it, CHECK_TERM);
        gs_result_free(r);
        gs_sym_free(sym);
        return;
    }
    report(&gs_reporter_json, &it, CHECK_JSON);
    gs_sym_free(sym);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    uint8_t *b = fz_reseal(data, size);
    if (b) {
        one(b, size);
        free(b);
    }
    size_t len;
    b = fz_wrap(data, size, &len);
    if (b) {
        one(b, len);
        free(b);
    }
    return 0;
}
