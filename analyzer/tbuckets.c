/*
 * Changes summed by time bucket (tbuckets.h): the largest total over time
 * without the events in time order.
 */
#include "tbuckets.h"

#include <stdlib.h>
#include <string.h>

int gs_tbuckets_init(struct gs_tbuckets *tb)
{
    tb->shift = 16;             /* 65.5 us, doubled as needed */
    tb->b = calloc(GS_TB_N, sizeof *tb->b);
    return tb->b ? 0 : -1;
}

void gs_tbuckets_free(struct gs_tbuckets *tb)
{
    free(tb->b);
    memset(tb, 0, sizeof *tb);
}

void gs_tbuckets_widen(struct gs_tbuckets *tb, uint64_t t)
{
    while ((t >> tb->shift) >= GS_TB_N) {
        for (uint32_t k = 0; k < GS_TB_N / 2; k++)
            tb->b[k] = tb->b[2 * k] + tb->b[2 * k + 1];
        memset(tb->b + GS_TB_N / 2, 0, GS_TB_N / 2 * sizeof *tb->b);
        tb->shift++;
    }
}

uint64_t gs_tbuckets_peak(const struct gs_tbuckets *tb, uint64_t *at)
{
    int64_t sum = 0, best = 0;
    uint64_t when = 0;
    for (uint32_t k = 0; tb->b && k < GS_TB_N; k++) {
        sum += tb->b[k];
        if (sum > best) {
            best = sum;
            when = ((uint64_t)(k + 1) << tb->shift) - 1;
        }
    }
    if (at)
        *at = when;
    return (uint64_t)best;
}
