/*
 * The HTML page's extra data (html_extra.h), per process:
 *
 *   snapshots_ns  the moments of the live set's snapshots over the run, and
 *                 the end (analyzer/snapshots.h says when they fall)
 *   sites         the sites the maps colour, named by one frame each
 *   maps          address-space maps: "host heap" (malloc blocks, chunks that
 *                 glibc served by mmap left out), and per device the blocks
 *                 cudaMalloc and the driver handed out beside the PyTorch
 *                 caching allocator's blocks inside them. Rows are address
 *                 space (regions, each given rows in proportion to its
 *                 span), columns are snapshots. Per layer and cell, base64
 *                 of one byte each, snapshot-major: occ (how full, 0..255),
 *                 age (the mean age of its bytes over the run's length),
 *                 site (index into sites, 254 another site, 255 empty)
 *   device_state  per device, its segments ([address, size, site]) and the
 *                 blocks inside them ([segment, offset, size, site], or
 *                 [-1, address, size, site] outside every one) at the
 *                 snapshot with the most device memory and at the end
 *   host_frag     the host heap's free space between live blocks at each
 *                 snapshot, measured as the report measures it at the end
 *   growth        each growth suspect's live bytes at the checkpoints of
 *                 the report's axis (x: step ordinals or seconds)
 *   pauses        every pause, the longest 4000 when there are more, and a
 *                 histogram of all of them
 *
 * Only serialization: the analysis made every figure (analyzer/history.c).
 */
#include "html_extra.h"

#include <stdlib.h>

#include "../analyzer/names.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64 of v[0, n) as a JSON string value */
static int put_b64(struct gs_jw *w, const char *key, const uint8_t *v, size_t n)
{
    char *s = malloc((n + 2) / 3 * 4 + 1);
    if (!s)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t x = (uint32_t)v[i] << 16 | (i + 1 < n ? (uint32_t)v[i + 1] << 8 : 0) |
                     (i + 2 < n ? v[i + 2] : 0);
        s[k++] = b64[x >> 18 & 63];
        s[k++] = b64[x >> 12 & 63];
        s[k++] = i + 1 < n ? b64[x >> 6 & 63] : '=';
        s[k++] = i + 2 < n ? b64[x & 63] : '=';
    }
    s[k] = 0;
    gs_jw_str(w, key, s);
    free(s);
    return 0;
}

static void u64s(struct gs_jw *w, const char *key, const uint64_t *v, size_t n)
{
    gs_jw_arr(w, key, 1);
    for (size_t i = 0; i < n; i++)
        gs_jw_u64(w, NULL, v[i]);
    gs_jw_end_arr(w);
}

static void write_sites(struct gs_jw *w, const struct gs_history *h)
{
    gs_jw_arr(w, "sites", 0);
    for (uint32_t i = 0; i < h->nsites; i++) {
        const struct gs_frame *f = &h->sites[i].f;
        gs_jw_obj_compact(w, NULL);
        gs_jw_u64(w, "stack_id", h->sites[i].stack_id);
        gs_jw_frame_where(w, f);
        if (!f->python && f->module)
            gs_jw_hex(w, "offset", f->offset);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
}

static int write_map(struct gs_jw *w, const struct gs_hmap *mp, uint32_t nsnaps)
{
    size_t nc = (size_t)nsnaps * mp->rows;
    gs_jw_obj(w, NULL);
    gs_jw_str(w, "name", mp->name);
    if (mp->device >= 0)
        gs_jw_u64(w, "device", (uint64_t)mp->device);
    else
        gs_jw_null(w, "device");
    gs_jw_u64(w, "rows", mp->rows);
    gs_jw_u64(w, "regions_total", mp->regions_total);
    gs_jw_u64(w, "omitted_bytes", mp->omitted_bytes);
    gs_jw_arr(w, "regions", 0);
    for (uint32_t i = 0; i < mp->nregions; i++) {
        const struct gs_hregion *g = &mp->regions[i];
        gs_jw_obj_compact(w, NULL);
        gs_jw_hex(w, "lo", g->lo);
        gs_jw_hex(w, "hi", g->hi);
        gs_jw_u64(w, "bytes", g->hi - g->lo);
        gs_jw_u64(w, "row", g->row);
        gs_jw_u64(w, "rows", g->rows);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_arr(w, "layers", 0);
    for (uint32_t li = 0; li < mp->nlayers; li++) {
        const struct gs_hlayer *l = &mp->layers[li];
        gs_jw_obj(w, NULL);
        gs_jw_str(w, "name", l->name);
        u64s(w, "live_bytes", l->live_bytes, nsnaps);
        if (put_b64(w, "occ", l->occ, nc) || put_b64(w, "age", l->age, nc) ||
            put_b64(w, "site", l->site, nc))
            return -1;
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
    return 0;
}

static void write_state(struct gs_jw *w, const struct gs_hstate *st)
{
    gs_jw_obj(w, NULL);
    gs_jw_str(w, "when", st->when);
    gs_jw_u64(w, "t_ns", st->t);
    gs_jw_u64(w, "bytes", st->bytes);
    gs_jw_u64(w, "segments_omitted", st->segs_omitted);
    gs_jw_u64(w, "blocks_omitted", st->blks_omitted);
    gs_jw_arr(w, "segments", 0);
    for (uint32_t i = 0; i < st->nsegs; i++) {
        gs_jw_arr(w, NULL, 1);
        gs_jw_hex(w, NULL, st->segs[i].addr);
        gs_jw_u64(w, NULL, st->segs[i].size);
        gs_jw_u64(w, NULL, st->segs[i].site);
        gs_jw_end_arr(w);
    }
    gs_jw_end_arr(w);
    gs_jw_arr(w, "blocks", 0);
    for (uint32_t i = 0; i < st->nblks; i++) {
        const struct gs_hblk *b = &st->blks[i];
        gs_jw_arr(w, NULL, 1);
        gs_jw_i64(w, NULL, b->seg);
        if (b->seg >= 0)
            gs_jw_u64(w, NULL, b->addr - st->segs[b->seg].addr);
        else
            gs_jw_hex(w, NULL, b->addr);
        gs_jw_u64(w, NULL, b->size);
        gs_jw_u64(w, NULL, b->site);
        gs_jw_end_arr(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

static void write_devices(struct gs_jw *w, const struct gs_history *h)
{
    gs_jw_arr(w, "device_state", 0);
    for (uint32_t i = 0; i < h->ndevs; i++) {
        const struct gs_hdev *d = &h->devs[i];
        gs_jw_obj(w, NULL);
        gs_jw_u64(w, "device", d->device);
        gs_jw_bool(w, "cuda_layer", d->cuda_layer);
        gs_jw_bool(w, "torch_layer", d->torch_layer);
        gs_jw_arr(w, "states", 0);
        for (uint32_t k = 0; k < d->nstates; k++)
            write_state(w, &d->states[k]);
        gs_jw_end_arr(w);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
}

static void write_host_frag(struct gs_jw *w, const struct gs_history *h)
{
    gs_jw_obj(w, "host_frag");
    gs_jw_arr(w, "ratio", 1);
    for (uint32_t k = 0; k < h->nsnaps; k++)
        gs_jw_dbl(w, NULL, h->host_frag[k].ratio);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "largest_free", 1);
    for (uint32_t k = 0; k < h->nsnaps; k++)
        gs_jw_u64(w, NULL, h->host_frag[k].largest_free);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "free_bytes", 1);
    for (uint32_t k = 0; k < h->nsnaps; k++)
        gs_jw_u64(w, NULL, h->host_frag[k].free_bytes);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "live_bytes", 1);
    for (uint32_t k = 0; k < h->nsnaps; k++)
        gs_jw_u64(w, NULL, h->host_frag[k].bytes);
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

static void write_growth(struct gs_jw *w, const struct gs_history *h)
{
    int step = h->growth.axis == GS_AXIS_STEP;
    gs_jw_obj(w, "growth");
    gs_jw_str(w, "axis", gs_axis_name(h->growth.axis));
    gs_jw_u64(w, "stride", step ? h->growth.stride : 0);
    gs_jw_arr(w, "x", 1);
    for (uint32_t k = 0; k < h->growth.n; k++)
        gs_jw_dbl(w, NULL, h->growth.x[k]);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "sites", 0);
    for (uint32_t j = 0; j < h->growth.nsites; j++) {
        gs_jw_obj(w, NULL);
        gs_jw_u64(w, "stack_id", h->growth.stack_id[j]);
        u64s(w, "live_bytes", h->growth.live_bytes[j], h->growth.n);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

static void write_pauses(struct gs_jw *w, const struct gs_history *h)
{
    gs_jw_obj(w, "pauses");
    gs_jw_u64(w, "count", h->pauses.count);
    gs_jw_u64(w, "shown", h->pauses.shown);
    gs_jw_arr(w, "kind_names", 1);
    for (uint32_t i = 0; i < GS_PAUSE_KINDS; i++)
        gs_jw_str(w, NULL, gs_pause_names[i]);
    gs_jw_end_arr(w);
    u64s(w, "t_ns", h->pauses.t, h->pauses.shown);
    u64s(w, "duration_ns", h->pauses.duration, h->pauses.shown);
    gs_jw_arr(w, "kind", 1);
    for (uint32_t i = 0; i < h->pauses.shown; i++)
        gs_jw_u64(w, NULL, h->pauses.kind[i]);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "hist_lo_us", 1);
    for (uint32_t i = 0; i < h->pauses.nbins; i++)
        gs_jw_u64(w, NULL, i ? 1ull << i : 0);
    gs_jw_end_arr(w);
    u64s(w, "hist_count", h->pauses.hist, h->pauses.nbins);
    gs_jw_end_obj(w);
}

int gs_html_extra_write(struct gs_jw *w, const struct gs_history *h)
{
    u64s(w, "snapshots_ns", h->snap_t, h->nsnaps);
    write_sites(w, h);
    gs_jw_arr(w, "maps", 0);
    for (uint32_t i = 0; i < h->nmaps; i++)
        if (write_map(w, &h->maps[i], h->nsnaps))
            return -1;
    gs_jw_end_arr(w);
    write_devices(w, h);
    write_host_frag(w, h);
    write_growth(w, h);
    write_pauses(w, h);
    return 0;
}
