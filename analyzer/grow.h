/*
 * Growable arrays, for the analyzer and the reporters alike: an array and
 * its capacity (size_t or uint32_t, in elements), grown by doubling so that
 * appending costs amortized O(1). Hash tables rehash by their own rules
 * (idtab.h, the model's maps); everything else that fills up grows here.
 *
 *   if (GS_GROW(v, cap, n + 1)) return -1;   v[n++] = x;
 *
 * What stays true: on success the array holds at least `need` elements and
 * the ones past the old capacity are zero; on failure (-1, out of memory or
 * a capacity that would not fit its type) the array and its capacity are as
 * they were, so the caller may free it as usual. GS_GROW_RAW leaves the new
 * elements as realloc left them, for large arrays whose elements are
 * written before they are read (zeroing would touch memory never used).
 */
#ifndef GCSPY_GROW_H
#define GCSPY_GROW_H

#include <stddef.h>
#include <stdint.h>

int gs_grow(void **arr, size_t *cap, size_t need, size_t elem);
int gs_grow32(void **arr, uint32_t *cap, size_t need, size_t elem);
int gs_grow_raw(void **arr, size_t *cap, size_t need, size_t elem);
int gs_grow32_raw(void **arr, uint32_t *cap, size_t need, size_t elem);

/* arr: an lvalue pointer; cap: an lvalue size_t or uint32_t. The common
 * case, room enough, is decided inline: no call on the paths that append to
 * a full array once in a long while. */
#define GS_GROW(arr, cap, need) GS_GROW_WITH(arr, cap, need, gs_grow, gs_grow32)
#define GS_GROW_RAW(arr, cap, need) GS_GROW_WITH(arr, cap, need, gs_grow_raw, gs_grow32_raw)
#define GS_GROW_WITH(arr, cap, need, grow, grow32)                                      \
    ({                                                                                  \
        size_t gs_need_ = (need);                                                       \
        gs_need_ <= (cap) ? 0                                                           \
                          : _Generic((cap), uint32_t: grow32, default: grow)(           \
                                (void **)&(arr), &(cap), gs_need_, sizeof *(arr));      \
    })

#endif /* GCSPY_GROW_H */
