/*
 * The reporter driver (report.h): the fixed call order, which leak groups
 * are shown, and totals over processes.
 */
#include "report.h"

#include "exports.h"

#include <inttypes.h>
#include <string.h>

const struct gs_reporter *gs_reporter_find(const char *name)
{
    static const struct gs_reporter *const all[] = {
        &gs_reporter_text, &gs_reporter_json, &gs_reporter_junit,
        &gs_reporter_pprof, &gs_reporter_collapsed, &gs_reporter_peak,
        &gs_reporter_temporary,
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

int gs_report_shows(const struct gs_report_opts *o, const struct gs_reporter *rep,
                    const struct gs_leak *l, uint32_t k)
{
    uint32_t max = o->max_groups ? o->max_groups : rep->max_groups;
    int reach = o->show_reachable || rep->show_reachable;
    /* held by the CUDA runtime is shown: neither a leak nor reachable */
    if ((l->cls == GS_CLASS_REACHABLE || l->cls == GS_RC_NOT_FREED) && !reach)
        return 0;
    return k < max;
}

int gs_report_write(const struct gs_reporter *rep, FILE *out,
                    const struct gs_report_item *items, size_t n,
                    const struct gs_report_opts *o)
{
    struct gs_report_ctx c = { out, o, NULL, 0 };
    if (rep->begin && rep->begin(&c, n))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct gs_report_item *it = &items[i];
        if (rep->process && rep->process(&c, it))
            return -1;
        if (rep->leak && it->r) {
            uint32_t k[GS_RC__N] = { 0 };
            for (uint32_t j = 0; j < it->r->nleaks; j++) {
                const struct gs_leak *l = &it->r->leaks[j];
                if (!gs_report_shows(o, rep, l, k[l->cls]))
                    continue;
                k[l->cls]++;
                if (rep->leak(&c, it, l))
                    return -1;
            }
        }
        if (rep->process_end && rep->process_end(&c, it))
            return -1;
    }
    if (rep->summary && rep->summary(&c, items, n))
        return -1;
    if (rep->end && rep->end(&c))
        return -1;
    fflush(out);
    return ferror(out) || c.err ? -1 : 0;
}

void gs_report_totals(const struct gs_report_item *items, size_t n, struct gs_totals *t)
{
    memset(t, 0, sizeof *t);
    t->processes = n;
    for (size_t i = 0; i < n; i++) {
        const struct gs_result *r = items[i].r;
        if (!r) {
            t->unreadable++;
            continue;
        }
        t->complete += r->complete;
        t->malformed += r->malformed != 0;
        t->no_scan += r->leak_status == GS_LS_NO_SCAN;
        t->exec += r->leak_status == GS_LS_EXEC;
        for (int c = 0; c < GS_RC__N; c++) {
            for (int m = 0; m < GS_MC__N; m++) {
                t->cls[c][m].bytes += r->summary[c][m].bytes;
                t->cls[c][m].blocks += r->summary[c][m].blocks;
            }
            t->suppressed[c].bytes += r->suppressed[c].bytes;
            t->suppressed[c].blocks += r->suppressed[c].blocks;
        }
        /* blocks a forked child inherited are its parent's: count them once */
        for (uint32_t j = 0; j < r->nleaks; j++) {
            const struct gs_leak *l = &r->leaks[j];
            if (l->inherited) {
                t->cls[l->cls][l->mem].bytes -= l->bytes;
                t->cls[l->cls][l->mem].blocks -= l->blocks;
            }
        }
        for (uint32_t j = 0; j < r->nsuspects; j++)
            t->suspects += !r->suspects[j].suppressed;
        t->pauses += r->pauses.count;
        t->pause_ns += r->pauses.total_ns;
        t->allocs += r->allocs;
        t->bytes_allocated += r->bytes_allocated;
    }
}
