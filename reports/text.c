/*
 * The text reporter: what a person reads in a terminal. Per process a
 * header, then the findings (one line each, largest first, naming the
 * user's own frame: what a user acts on, on the first screen), then the
 * leaks as one row per allocation site (the classes side by side, largest
 * first, the stack below each; the import machinery's and the loader's
 * sites folded into one line per origin), a class by memory kind summary,
 * then growth, fragmentation and pauses; totals at the end when there are
 * several processes.
 */
#define _GNU_SOURCE
#include "report.h"

#include <inttypes.h>
#include <string.h>

#include "../analyzer/findings.h"
#include "../analyzer/fmt.h"
#include "../analyzer/names.h"
#include "../analyzer/utf8.h"

struct tstate {
    int cls_open;               /* class whose heading was printed; -1 none */
};

static uint32_t max_frames(const struct gs_report_ctx *c)
{
    return c->o->max_frames ? c->o->max_frames : 16;
}

static void print_frames(struct gs_report_ctx *c, const struct gs_stackv *st, const char *ind)
{
    FILE *f = c->out;
    if (!st->resolved) {
        fprintf(f, "%s(stack not symbolized)\n", ind);
        return;
    }
    if (!st->n) {
        fprintf(f, "%s(no stack recorded)\n", ind);
        return;
    }
    uint32_t lim = max_frames(c);
    for (uint32_t i = 0; i < st->n && i < lim; i++) {
        const struct gs_frame *fr = &st->f[i];
        const char *mod = fr->module ? strrchr(fr->module, '/') : NULL;
        mod = mod ? mod + 1 : fr->module;
        fprintf(f, "%s#%-2u ", ind, i);
        if (fr->function)
            fprintf(f, "%s", fr->function);
        else if (mod)
            fprintf(f, "%s+0x%" PRIx64, mod, fr->offset);
        else
            fprintf(f, "0x%" PRIx64, fr->ip);
        if (fr->file) {
            if (fr->line)
                fprintf(f, " at %s:%u", fr->file, fr->line);
            else
                fprintf(f, " at %s", fr->file);
        }
        if (fr->python)
            fputs(" [python]", f);
        else if (fr->function && mod)
            fprintf(f, " (%s)", mod);
        if (fr->inlined)
            fputs(" [inlined]", f);
        fputc('\n', f);
    }
    if (st->n > lim)
        fprintf(f, "%s... %u more frames\n", ind, st->n - lim);
}

/* Trace-provided text (function names, paths, command lines, markers) is
 * the program's, not ours: the text report goes through a filter that
 * passes newline, tab and well-formed UTF-8 of printable code points and
 * turns every other byte into '?': C0 controls and DEL, the C1 controls
 * (U+0080..U+009F, which terminals obey like ESC sequences, and their raw
 * bytes 0x80..0x9F, which 8-bit terminals obey), and bytes that are not
 * UTF-8 (utf8.h). So a trace cannot drive the terminal. stdio hands the
 * filter its buffer in pieces that may cut a sequence: the cut part waits
 * in pend for the next piece (or t_end, where it becomes '?'). */
struct safe_out {
    FILE *to;
    unsigned char pend[4];
    size_t npend;
};

/* Writes b[0, n) filtered; returns how many bytes were consumed (the rest,
 * fewer than 4 that may begin a sequence, unless last). -1 on error. */
static ssize_t safe_put(FILE *to, const unsigned char *b, size_t n, int last)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = gs_utf8_seq(b + i, n - i, &cp);
        if (!len && !last && n - i < 4 && gs_utf8_partial(b + i, n - i))
            break;
        int ok = len && (gs_utf8_printable(cp) || cp == '\n' || cp == '\t');
        if (ok ? fwrite(b + i, 1, len, to) != len : fputc('?', to) == EOF)
            return -1;
        i += ok ? len : 1;
    }
    return (ssize_t)i;
}

static ssize_t safe_write(void *cookie, const char *buf, size_t n)
{
    struct safe_out *so = cookie;
    size_t used = 0;
    /* first complete (or give up on) a sequence the last piece cut */
    while (so->npend && used < n) {
        so->pend[so->npend++] = (unsigned char)buf[used++];
        if (gs_utf8_partial(so->pend, so->npend))
            continue; /* still cut: at most 3 bytes wait */
        size_t np = so->npend;
        ssize_t k = safe_put(so->to, so->pend, np, 0);
        if (k < 0)
            return -1;
        /* what is left may begin a sequence again (fewer than 4 bytes) */
        memmove(so->pend, so->pend + k, np - (size_t)k);
        so->npend = np - (size_t)k;
    }
    ssize_t k = safe_put(so->to, (const unsigned char *)buf + used, n - used, 0);
    if (k < 0)
        return -1;
    used += (size_t)k;
    while (used < n)
        so->pend[so->npend++] = (unsigned char)buf[used++];
    return (ssize_t)n;
}

/* The end of the report: a sequence still cut is not UTF-8. */
static int safe_close(void *cookie)
{
    struct safe_out *so = cookie;
    ssize_t k = so->npend ? safe_put(so->to, so->pend, so->npend, 1) : 0;
    so->npend = 0;
    return k < 0 ? -1 : 0;
}

static FILE *real_out;

static int t_begin(struct gs_report_ctx *c, size_t n)
{
    static struct tstate st;
    st.cls_open = -1;
    c->state = &st;
    static struct safe_out so;
    memset(&so, 0, sizeof so);
    so.to = c->out;
    cookie_io_functions_t io = {NULL, safe_write, NULL, safe_close};
    FILE *f = fopencookie(&so, "w", io);
    if (f) {
        real_out = c->out;
        c->out = f;
    }
    fprintf(c->out, "gcspy report: %zu trace%s\n", n, n == 1 ? "" : "s");
    return 0;
}

static int t_end(struct gs_report_ctx *c)
{
    if (real_out) {
        int rc = fclose(c->out);
        c->out = real_out;
        real_out = NULL;
        return rc == 0 && !ferror(c->out) ? 0 : -1;
    }
    return 0;
}

static void pct(char *buf, double v)
{
    snprintf(buf, 32, "%.1f%%", v * 100);
}


/* The findings: one line each, the real problems largest first, then the
 * folded noise; suppressed bytes said apart. */
static void print_findings(struct gs_report_ctx *c, const struct gs_result *r)
{
    FILE *f = c->out;
    char line[2048], b1[32];
    fprintf(f, "\n   FINDINGS\n");
    uint32_t real = 0;
    for (uint32_t i = 0; i < r->nfindings; i++) {
        const struct gs_finding *fd = &r->findings[i];
        gs_finding_line(line, sizeof line, r, fd);
        if (fd->kind == GS_FIND_NOISE)
            fprintf(f, "     -  %s\n", line);
        else
            fprintf(f, "   %2u. %s\n", ++real, line);
    }
    if (!real)
        fprintf(f, "     no leak, no growth, no significant fragmentation%s\n",
                r->leak_status == GS_LS_NO_SCAN ? " known (NO LEAK SCAN: leaks are not ruled out)"
                                                : "");
    uint64_t by = 0, bl = 0;
    for (int k = 0; k < GS_CLASS_REACHABLE; k++) {
        by += r->suppressed[k].bytes;
        bl += r->suppressed[k].blocks;
    }
    if (bl)
        fprintf(f, "     (suppressed, not findings: %s in %" PRIu64 " lost block%s)\n",
                gs_fmt_bytes(b1, by), bl, bl == 1 ? "" : "s");
}

/* Whether site s gets a row of its own: the import machinery's and the
 * loader's are folded, the reachable-only ones need --show-reachable. */
static int site_row(const struct gs_report_ctx *c, const struct gs_leaksite *s)
{
    if (s->noise && !s->suppressed && gs_site_lost(s).blocks)
        return 0;
    return gs_site_lost(s).blocks || c->o->show_reachable;
}

/* "held by the CUDA runtime" has a column, a row and a line only in a
 * result that has such blocks: every other report reads as before. */
static int no_runtime;

static void class_cells(FILE *f, const struct gs_leaksite *s, int ncls)
{
    char b[32], cell[64];
    for (int k = 0; k < ncls; k++) {
        if (k == GS_CLASS_RUNTIME && no_runtime)
            continue;
        if (s->cls[k].blocks)
            snprintf(cell, sizeof cell, "%s/%" PRIu64, gs_fmt_bytes(b, s->cls[k].bytes),
                     s->cls[k].blocks);
        else
            snprintf(cell, sizeof cell, "-");
        fprintf(f, " %16s", cell);
    }
}

/* When a site's blocks became unreachable: the scan, and the steps and
 * markers around it (first: index into scans; -1 none). */
static void print_unreachable(FILE *f, const struct gs_result *r, int32_t first)
{
    char b1[32];
    if (first < 0 || (uint32_t)first >= r->nscans)
        return;
    const struct gs_scan *s = &r->scans[first];
    fprintf(f, "       unreachable since scan #%" PRIu64 " at %s", s->id, gs_fmt_ns(b1, s->t_start));
    if (first > 0)
        fprintf(f, " (after scan #%" PRIu64 ")", r->scans[first - 1].id);
    if (s->steps_at > s->steps_before)
        fprintf(f, ", steps %" PRIu64 "..%" PRIu64, s->steps_before + 1, s->steps_at);
    if (s->user_markers)
        fprintf(f, ", markers \"%s\"..\"%s\"", s->first_marker, s->last_marker);
    else if (s->marker_before[0])
        fprintf(f, ", after marker \"%s\"", s->marker_before);
    fputc('\n', f);
}

/* One row per allocation site, the classes as columns (bytes/blocks). */
static void print_sites(struct gs_report_ctx *c, const struct gs_result *r)
{
    FILE *f = c->out;
    char fr[512], b1[32];
    int ncls = c->o->show_reachable ? GS_RC__N : GS_CLASS_REACHABLE;
    uint32_t max = c->o->max_groups ? c->o->max_groups : gs_reporter_text.max_groups;
    fprintf(f, "\n   LEAKS (one row per allocation site, bytes/blocks by class)\n");
    int any = 0;
    no_runtime = 1;
    for (int k = 0; k < GS_RC__N; k++)
        for (int m = 0; m < GS_MC__N; m++) {
            any |= r->summary[k][m].blocks != 0;
            if (k == GS_CLASS_RUNTIME && r->summary[k][m].blocks)
                no_runtime = 0;
        }
    if (!any) {
        fprintf(f, r->ended_by_exec ? "   none: the exec released every block live then\n"
                                    : "   none: no block was live at the end\n");
        return;
    }
    fprintf(f, "   ");
    for (int k = 0; k < ncls; k++)
        if (k != GS_CLASS_RUNTIME || !no_runtime)
            fprintf(f, " %16s", gs_class_name(k));
    fprintf(f, "  memory, site\n");
    uint32_t shown = 0, rows = 0;
    struct gs_cell folded[GS_NOISE__N][GS_CLASS_REACHABLE];
    uint32_t nfold[GS_NOISE__N] = { 0 };
    memset(folded, 0, sizeof folded);
    for (uint32_t i = 0; i < r->nsites; i++) {
        const struct gs_leaksite *s = &r->sites[i];
        if (s->noise && !s->suppressed && gs_site_lost(s).blocks) {
            nfold[s->noise]++;
            for (int k = 0; k < GS_CLASS_REACHABLE; k++) {
                folded[s->noise][k].bytes += s->cls[k].bytes;
                folded[s->noise][k].blocks += s->cls[k].blocks;
            }
        }
        if (!site_row(c, s))
            continue;
        rows++;
        if (shown >= max)
            continue;
        shown++;
        fprintf(f, "   ");
        class_cells(f, s, ncls);
        fprintf(f, "  %s, %s\n", gs_memcat_name(s->mem),
                s->user >= 0 ? gs_fmt_frame(fr, sizeof fr, &s->st.f[s->user])
                             : "no frame of the user's code");
        fprintf(f, "       ");
        if (s->largest && s->cls[s->worst].blocks)
            fprintf(f, "worst class %s, largest block %s", gs_class_name(s->worst),
                    gs_fmt_bytes(b1, s->largest));
        if (s->torch)
            fputs(", tensor (caching allocator block)", f);
        if (s->inherited)
            fputs(", inherited from the parent", f);
        if (s->suppressed)
            fprintf(f, ", suppressed by leak:%s", s->suppressed);
        fputc('\n', f);
        print_unreachable(f, r, s->first_scan);
        print_frames(c, &s->st, "       ");
    }
    if (rows > shown)
        fprintf(f, "   ... %u more site%s (--max-groups)\n", rows - shown,
                rows - shown == 1 ? "" : "s");
    for (int o = 1; o < GS_NOISE__N; o++) {
        if (!nfold[o])
            continue;
        struct gs_leaksite tmp;
        memset(&tmp, 0, sizeof tmp);
        memcpy(tmp.cls, folded[o], sizeof folded[o]);
        fprintf(f, "   ");
        class_cells(f, &tmp, GS_CLASS_REACHABLE);
        fprintf(f, "  folded: %u site%s of the %s\n", nfold[o], nfold[o] == 1 ? "" : "s",
                gs_noise_name(o));
    }
    if (!c->o->show_reachable) {
        for (int k = GS_CLASS_REACHABLE; k < GS_RC__N; k++) {
            uint64_t by = 0, bl = 0;
            for (int m = 0; m < GS_MC__N; m++) {
                by += r->summary[k][m].bytes;
                bl += r->summary[k][m].blocks;
            }
            if (bl)
                fprintf(f, "   %s: %s in %" PRIu64 " block%s (listed with --show-reachable)\n",
                        gs_class_name(k), gs_fmt_bytes(b1, by), bl, bl == 1 ? "" : "s");
        }
    }
}

static int t_process(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    struct tstate *st = c->state;
    FILE *f = c->out;
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    st->cls_open = -1;
    const struct gs_result *r = it->r;
    fputc('\n', f);
    if (!r) {
        fprintf(f, "== %s: not readable: %s\n", it->trace, it->error ? it->error : "?");
        return 0;
    }
    if (!r->have_proc)
        fprintf(f, "== process unknown (the trace holds no PROCESS_START record)\n");
    else
        fprintf(f, "== process %" PRIu64, r->pid);
    if (r->have_proc && r->ppid)
        fprintf(f, " (parent %" PRIu64 ")", r->ppid);
    if (r->have_proc) {
        /* one line, however the command was spelled (python -c "...") */
        const char *cmd = r->command && *r->command ? r->command : "(unknown command)";
        fputs(": ", f);
        size_t i = 0;
        for (; cmd[i] && i < 300; i++)
            fputc((unsigned char)cmd[i] < 0x20 ? ' ' : cmd[i], f);
        fputs(cmd[i] ? "...\n" : "\n", f);
    }
    fprintf(f, "   trace %s", r->trace);
    if (r->host && *r->host)
        fprintf(f, ", host %s", r->host);
    if (r->rank >= 0)
        fprintf(f, ", rank %" PRId64 "/%" PRId64, r->rank, r->world_size);
    if (r->flags & GS_PROC_F_LAUNCHER)
        fputs(", launcher (no rank)", f);
    if (r->flags & GS_PROC_F_FORKED)
        fputs(", forked", f);
    fputc('\n', f);
    if (!r->complete)
        fprintf(f, "   INCOMPLETE: %s; what precedes it is reported\n", r->damage);
    if (r->malformed) {
        fprintf(f, "   MALFORMED: %s", r->problem);
        if (r->problems > 1)
            fprintf(f, " (and %" PRIu64 " more problem%s)", r->problems - 1,
                    r->problems == 2 ? "" : "s");
        fputs("; the figures below replay the records as they are\n", f);
    }
    if (r->have_stopped)
        fprintf(f, "   tracing stopped at %s: %s (%" PRIu64 " events lost)\n",
                gs_fmt_ns(b1, r->t_stopped), r->stopped_reason ? r->stopped_reason : "",
                r->stopped_dropped);
    fprintf(f, "   ran %s", gs_fmt_ns(b1, r->duration_ns));
    if (r->have_exit) {
        if (r->exit_how == GS_EXIT_SIGNAL)
            fprintf(f, ", killed by signal %" PRId64, r->exit_status);
        else if (r->exit_how == GS_EXIT_EXEC)
            fprintf(f, ", exec'd %s", r->exec_path ? r->exec_path : "a new image");
        else
            fprintf(f, ", exit status %" PRId64, r->exit_status);
    }
    fprintf(f, "; %" PRIu64 " allocations, %" PRIu64 " frees, %s allocated\n", r->allocs,
            r->frees, gs_fmt_bytes(b2, r->bytes_allocated));
    fprintf(f, "   peak live %s (host %s, pinned %s, managed %s, device %s)",
            gs_fmt_bytes(b1, r->peak_total), gs_fmt_bytes(b2, r->peak_bytes[GS_MC_HOST]),
            gs_fmt_bytes(b3, r->peak_bytes[GS_MC_PINNED]),
            gs_fmt_bytes(b4, r->peak_bytes[GS_MC_MANAGED]),
            gs_fmt_bytes(b5, r->peak_bytes[GS_MC_DEVICE]));
    if (r->rss_peak)
        fprintf(f, "; peak RSS %s", gs_fmt_bytes(b1, r->rss_peak));
    fputc('\n', f);
    if (r->unmatched_frees || r->replaced_allocs || r->bad_records)
        fprintf(f, "   anomalies: %" PRIu64 " frees of untracked addresses, %" PRIu64
                   " allocations over live blocks, %" PRIu64 " malformed records\n",
                r->unmatched_frees, r->replaced_allocs, r->bad_records);
    if (r->last_scan >= 0) {
        const struct gs_scan *s = &r->scans[r->last_scan];
        fprintf(f, "   %u scan%s; leaks from the last, #%" PRIu64 " (%s) at %s\n", r->nscans,
                r->nscans == 1 ? "" : "s", s->id, gs_trigger_name(s->trigger),
                gs_fmt_ns(b1, s->t_start));
    } else if (r->leak_status == GS_LS_EXEC) {
        fprintf(f, "   ended by exec, a clean end with no leak scan: the exec released %s in "
                   "%" PRIu64 " block%s; the new image's trace has the verdict\n",
                gs_fmt_bytes(b1, r->released_by_exec.bytes), r->released_by_exec.blocks,
                r->released_by_exec.blocks == 1 ? "" : "s");
    } else {
        fprintf(f, "   NO LEAK SCAN: the process ended without one (killed, _exit, or the scan "
                   "was skipped or off): no leak is known or ruled out; live blocks at the end "
                   "are reported as not freed\n");
    }
    print_findings(c, r);
    print_sites(c, r);
    return 0;
}

static void print_summary_table(FILE *f, const struct gs_cell cls[GS_RC__N][GS_MC__N],
                                const char *ind)
{
    char b[32];
    fprintf(f, "%s%-10s", ind, "");
    for (int m = 0; m < GS_MC__N; m++)
        fprintf(f, " %22s", gs_memcat_name(m));
    fputc('\n', f);
    for (int k = 0; k < GS_RC__N; k++) {
        uint64_t nk = 0;
        for (int m = 0; m < GS_MC__N; m++)
            nk += cls[k][m].blocks;
        if (k == GS_CLASS_RUNTIME && !nk)
            continue; /* a row only where there are such blocks */
        fprintf(f, "%s%-10s", ind, gs_class_name(k));
        for (int m = 0; m < GS_MC__N; m++) {
            char cell[64];
            if (cls[k][m].blocks)
                snprintf(cell, sizeof cell, "%s/%" PRIu64, gs_fmt_bytes(b, cls[k][m].bytes),
                         cls[k][m].blocks);
            else
                snprintf(cell, sizeof cell, "-");
            fprintf(f, " %22s", cell);
        }
        fputc('\n', f);
    }
}

static void print_suspect(struct gs_report_ctx *c, const struct gs_suspect *g, const char *ind)
{
    FILE *f = c->out;
    char b1[32], b2[32], b3[32];
    if (g->axis == GS_AXIS_STEP)
        fprintf(f, "%s+%s per step over steps %.0f..%.0f", ind, gs_fmt_bytes(b1, (uint64_t)g->rate),
                g->x0, g->x1);
    else
        fprintf(f, "%s+%s per second over %.2f..%.2f s", ind, gs_fmt_bytes(b1, (uint64_t)g->rate),
                g->x0, g->x1);
    fprintf(f, " (confidence %.2f), %s, %s -> %s", g->confidence, gs_memcat_name(g->mem),
            gs_fmt_bytes(b2, g->start_bytes), gs_fmt_bytes(b3, g->peak_bytes));
    if (g->live_blocks)
        fprintf(f, ", %s in %" PRIu64 " block%s live at the end", gs_fmt_bytes(b1, g->end_bytes),
                g->live_blocks, g->live_blocks == 1 ? "" : "s");
    else
        fputs(", retained while the job ran, freed at exit", f);
    if (g->suppressed)
        fprintf(f, ", suppressed by leak:%s", g->suppressed);
    fputc('\n', f);
}

/* Growth grouped by the user's frame (the growth findings), each with the
 * allocation sites that grew beneath it; suppressed suspects after them. */
static void print_growth(struct gs_report_ctx *c, const struct gs_result *r)
{
    FILE *f = c->out;
    char line[2048];
    fprintf(f, "\n   GROWTH (x axis: %s, %u checkpoint%s)\n",
            r->growth_axis == GS_AXIS_STEP ? "steps" : "time", r->growth_checkpoints,
            r->growth_checkpoints == 1 ? "" : "s");
    if (!r->nsuspects) {
        fprintf(f, "   no allocation site grows steadily\n");
        return;
    }
    for (uint32_t k = 0; k < r->nfindings; k++) {
        if (r->findings[k].kind != GS_FIND_GROWTH)
            continue;
        gs_finding_line(line, sizeof line, r, &r->findings[k]);
        fprintf(f, "     %s\n", line);
        for (uint32_t i = 0; i < r->nsuspects; i++) {
            const struct gs_suspect *g = &r->suspects[i];
            if (g->finding != (int32_t)k)
                continue;
            print_suspect(c, g, "       site: ");
            print_frames(c, &g->st, "         ");
        }
    }
    for (uint32_t i = 0; i < r->nsuspects; i++) {
        const struct gs_suspect *g = &r->suspects[i];
        if (g->finding >= 0)
            continue;
        print_suspect(c, g, "     ");
        print_frames(c, &g->st, "       ");
    }
}

static void print_pool(struct gs_report_ctx *c, const struct gs_result *r);

static void print_frag(struct gs_report_ctx *c, const struct gs_result *r)
{
    FILE *f = c->out;
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    fprintf(f, "\n   FRAGMENTATION\n");
    if (r->have_host_samples)
        fprintf(f, "     glibc arena (last of %" PRIu64 " samples): %s, in use %s, free %s, "
                   "top pad %s; peak arena %s\n", r->samples,
                gs_fmt_bytes(b1, r->mi_arena), gs_fmt_bytes(b2, r->mi_inuse),
                gs_fmt_bytes(b3, r->mi_free), gs_fmt_bytes(b4, r->mi_toppad),
                gs_fmt_bytes(b5, r->mi_peak_arena));
    else
        fprintf(f, "     no malloc samples in the trace\n");
    const struct gs_heapfrag *h = &r->heap;
    if (h->blocks) {
        fprintf(f, "     between live blocks at the end: %s free in %" PRIu64 " gaps, largest %s",
                gs_fmt_bytes(b1, h->free_bytes), h->gaps, gs_fmt_bytes(b2, h->largest_free));
        uint64_t wasted = h->free_bytes - (h->largest_free < h->free_bytes ? h->largest_free
                                                                           : h->free_bytes);
        if (gs_frag_significant(wasted, h->bytes + h->free_bytes))
            fprintf(f, ", %s wasted outside the largest (ratio %.2f)", gs_fmt_bytes(b3, wasted),
                    h->ratio);
        fprintf(f, " (%" PRIu64 " blocks in %" PRIu64 " regions)\n", h->blocks, h->regions);
    }
    for (uint32_t d = 0; d < r->ndev; d++) {
        const struct gs_devstate *s = &r->dev[d];
        uint64_t fr = s->reserved > s->in_use ? s->reserved - s->in_use : 0;
        double ratio = fr ? 1.0 - (double)(s->largest_free < fr ? s->largest_free : fr) / (double)fr : 0;
        fprintf(f, "     device %" PRIu64 ": reserved %s, in use %s, %" PRIu64 " segments, "
                   "largest free %s of %s, ratio %.2f (worst %.2f); peak reserved %s\n",
                s->device, gs_fmt_bytes(b1, s->reserved), gs_fmt_bytes(b2, s->in_use),
                s->segments, gs_fmt_bytes(b3, s->largest_free), gs_fmt_bytes(b4, fr), ratio,
                s->worst_ratio, gs_fmt_bytes(b5, s->peak_reserved));
    }
    print_pool(c, r);
}

/* PyTorch's caching allocator: the latest snapshot per device. Its blocks
 * lie inside the segments, which the device totals already count. */
static void print_pool(struct gs_report_ctx *c, const struct gs_result *r)
{
    FILE *f = c->out;
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    if (!r->pool_snapshots && !r->pool_incomplete && !r->torch_peak_bytes)
        return;
    fprintf(f, "     PyTorch caching allocator: ");
    if (r->pool_snapshots)
        fprintf(f, "latest of %" PRIu64 " snapshot%s", r->pool_snapshots,
                r->pool_snapshots == 1 ? "" : "s");
    else
        fprintf(f, "no complete snapshot");
    if (r->pool_incomplete)
        fprintf(f, " (%" PRIu64 " incomplete)", r->pool_incomplete);
    fprintf(f, "; tensors allocated inside segments at the end %s in %" PRIu64 " block%s, "
               "peak %s\n", gs_fmt_bytes(b1, r->torch_live_bytes), r->torch_live_blocks,
            r->torch_live_blocks == 1 ? "" : "s", gs_fmt_bytes(b2, r->torch_peak_bytes));
    for (uint32_t d = 0; d < r->npool; d++) {
        const struct gs_poolfig *p = &r->pool[d];
        fprintf(f, "       device %" PRIu64 " (snapshot at %s, %s): reserved %s in %" PRIu64
                   " segment%s; allocated %s in %" PRIu64 " block%s (requested %s); "
                   "pending free %s", p->device, gs_fmt_ns(b1, p->t),
                gs_pool_reason_name(p->reason), gs_fmt_bytes(b2, p->reserved), p->segments,
                p->segments == 1 ? "" : "s", gs_fmt_bytes(b3, p->active_bytes),
                p->active_blocks, p->active_blocks == 1 ? "" : "s",
                gs_fmt_bytes(b4, p->requested), gs_fmt_bytes(b5, p->pending_bytes));
        if (p->pending_blocks)
            fprintf(f, " in %" PRIu64 " block%s", p->pending_blocks,
                    p->pending_blocks == 1 ? "" : "s");
        fprintf(f, "; cached free %s in %" PRIu64 " block%s, largest %s; history: %" PRIu64
                   " event%s", gs_fmt_bytes(b1, p->inactive_bytes), p->inactive_blocks,
                p->inactive_blocks == 1 ? "" : "s", gs_fmt_bytes(b2, p->largest_inactive),
                p->events, p->events == 1 ? "" : "s");
        int first = 1;
        for (int a = 0; a < GS_PEV__N; a++) {
            if (!p->events_by[a])
                continue;
            fprintf(f, "%s%s %" PRIu64, first ? " (" : ", ", gs_pool_action_word(a),
                    p->events_by[a]);
            first = 0;
        }
        fputs(first ? "\n" : ")\n", f);
    }
}

static void print_pauses(struct gs_report_ctx *c, const struct gs_result *r)
{
    FILE *f = c->out;
    const struct gs_pause_stats *p = &r->pauses;
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
    fprintf(f, "\n   PAUSES (from %s)\n", p->sources ? p->sources : "none");
    if (!p->count) {
        fprintf(f, "   none recorded\n");
        return;
    }
    pct(b6, p->share);
    fprintf(f, "     %" PRIu64 " pause%s, %s in all, %s of %s; p50 %s, p90 %s, p99 %s, max %s\n",
            p->count, p->count == 1 ? "" : "s", gs_fmt_ns(b1, p->union_ns), b6,
            gs_fmt_ns(b2, p->wall_ns), gs_fmt_ns(b3, p->pct_ns[0]), gs_fmt_ns(b4, p->pct_ns[1]),
            gs_fmt_ns(b5, p->pct_ns[2]), gs_fmt_ns(b7, p->pct_ns[3]));
    fprintf(f, "     by kind:");
    for (int k = 0; k < GS_PAUSE_KINDS; k++)
        if (p->by_kind[k].count)
            fprintf(f, " %s %" PRIu64 " (%s)", gs_pause_names[k], p->by_kind[k].count,
                    gs_fmt_ns(b1, p->by_kind[k].total_ns));
    fputc('\n', f);
    fprintf(f, "     longest:");
    for (uint32_t i = 0; i < p->nlongest && i < 5; i++)
        fprintf(f, "%s %s %s at %s", i ? "," : "", gs_fmt_ns(b1, p->longest[i].t1 - p->longest[i].t0),
                gs_pause_name(p->longest[i].kind), gs_fmt_ns(b2, p->longest[i].t0));
    fputc('\n', f);
    fprintf(f, "     MMU:");
    for (int k = 0; k < GS_NMMU; k++)
        if (p->mmu[k].valid)
            fprintf(f, " %s %.2f", gs_fmt_ns(b1, p->mmu[k].window_ns), p->mmu[k].mmu);
    fputc('\n', f);
}

static int t_process_end(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    const struct gs_result *r = it->r;
    FILE *f = c->out;
    if (!r)
        return 0;
    fprintf(f, "\n   SUMMARY (bytes/blocks)\n");
    print_summary_table(f, r->summary, "   ");
    print_growth(c, r);
    print_frag(c, r);
    print_pauses(c, r);
    return 0;
}

static int t_summary(struct gs_report_ctx *c, const struct gs_report_item *items, size_t n)
{
    FILE *f = c->out;
    if (c->o->problems && c->o->problems[0]) {
        fprintf(f, "\nsymbols:\n");
        for (size_t i = 0; c->o->problems[i]; i++)
            fprintf(f, "   %s\n", c->o->problems[i]);
    }
    if (n < 2)
        return 0;
    struct gs_totals t;
    gs_report_totals(items, n, &t);
    fprintf(f, "\n== totals over %zu processes (%zu complete", t.processes, t.complete);
    if (t.malformed)
        fprintf(f, ", %zu malformed", t.malformed);
    if (t.no_scan)
        fprintf(f, ", %zu with NO LEAK SCAN", t.no_scan);
    if (t.exec)
        fprintf(f, ", %zu ended by exec", t.exec);
    fputs("); inherited blocks counted once\n", f);
    print_summary_table(f, t.cls, "   ");
    fprintf(f, "   growth suspects: %" PRIu64 "\n", t.suspects);
    return 0;
}

const struct gs_reporter gs_reporter_text = {
    .name = "text",
    .begin = t_begin,
    .process = t_process,
    .process_end = t_process_end,
    .summary = t_summary,
    .end = t_end,
    .max_groups = 20,
    .show_reachable = 0,
};
