/*
 * The site values and frame labels the exports and site views share
 * (exports.h).
 */
#include "exports.h"

#include <string.h>

static const char *const names[GS_SV__N] = {
    "leaked", "leaked-blocks", "peak", "peak-blocks",
    "allocs", "alloc-bytes", "temporary", "temporary-bytes",
};

const char *gs_sval_name(int v)
{
    return v >= 0 && v < GS_SV__N ? names[v] : NULL;
}

int gs_sval_find(const char *s)
{
    for (int v = 0; v < GS_SV__N; v++)
        if (strcmp(names[v], s) == 0)
            return v;
    return -1;
}

uint64_t gs_sval_get(const struct gs_sitestat *s, int v)
{
    switch (v) {
    case GS_SV_LEAKED: return s->leaked_bytes;
    case GS_SV_LEAKED_BLOCKS: return s->leaked_blocks;
    case GS_SV_PEAK: return s->at_peak_bytes;
    case GS_SV_PEAK_BLOCKS: return s->at_peak_blocks;
    case GS_SV_ALLOCS: return s->allocs;
    case GS_SV_ALLOC_BYTES: return s->alloc_bytes;
    case GS_SV_TEMP: return s->temp_allocs;
    case GS_SV_TEMP_BYTES: return s->temp_bytes;
    default: return 0;
    }
}
