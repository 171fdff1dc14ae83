/*
 * Address-space maps from the snapshots (snapshots.h), for the history
 * (history.h): per map (the host heap; each device, its cudaMalloc layer and
 * its caching-allocator layer on the same rows), the regions of every
 * snapshot merged, the fullest GS_MAP_MAX_REGIONS kept and given rows in
 * proportion to their spans (at least GS_MAP_MIN_ROWS each, about
 * GS_MAP_ROWS in all); then each layer's cells spread over those rows, one
 * column per snapshot, and turned into bytes: how full, how old, which
 * site. And the sites to colour: those holding the most of the maps.
 */
#ifndef GCSPY_ADDRMAP_H
#define GCSPY_ADDRMAP_H

#include <stdint.h>

#include "arena.h"
#include "history.h"
#include "snapshots.h"

#define GS_MAP_ROWS 256
#define GS_MAP_MIN_ROWS 3
#define GS_MAP_MAX_REGIONS 24
#define GS_MAP_TOP_SITES 24

/* The stacks holding the most bytes of the maps over every snapshot,
 * heaviest first: at most GS_MAP_TOP_SITES into top, their count in *ntop.
 * 0, or -1 when out of memory. */
int gs_addrmap_top_sites(const struct gs_snaps *s, uint32_t *top, uint32_t *ntop);
/* stack's index among top, or GS_HSITE_OTHER. */
uint32_t gs_addrmap_site_idx(const uint32_t *top, uint32_t ntop, uint32_t stack);
/* h->maps and h->nmaps (maps with no region left out), cells coloured by
 * top; ages over the run's duration. In arena a. 0, or -1 when out of
 * memory. */
int gs_addrmap_build(const struct gs_snaps *s, const uint32_t *top, uint32_t ntop,
                     uint64_t duration, struct gs_arena *a, struct gs_history *h);

#endif /* GCSPY_ADDRMAP_H */
