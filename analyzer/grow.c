/*
 * Growable arrays (grow.h): capacities double from 16 elements until the
 * need fits; the new part is zeroed (arrays indexed by id rely on it)
 * unless the caller asked for it raw.
 */
#include "grow.h"

#include <stdlib.h>
#include <string.h>

static int grow(void **arr, size_t *cap, size_t need, size_t elem, int zero)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem)
            return -1;
        c *= 2;
    }
    void *n = realloc(*arr, c * elem);
    if (!n)
        return -1;
    if (zero)
        memset((char *)n + *cap * elem, 0, (c - *cap) * elem);
    *arr = n;
    *cap = c;
    return 0;
}

static int grow32(void **arr, uint32_t *cap, size_t need, size_t elem, int zero)
{
    size_t c = *cap;
    if (need <= c)
        return 0;
    if (need > UINT32_MAX / 2)
        return -1;
    if (grow(arr, &c, need, elem, zero))
        return -1;
    *cap = (uint32_t)c;
    return 0;
}

int gs_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    return grow(arr, cap, need, elem, 1);
}

int gs_grow32(void **arr, uint32_t *cap, size_t need, size_t elem)
{
    return grow32(arr, cap, need, elem, 1);
}

int gs_grow_raw(void **arr, size_t *cap, size_t need, size_t elem)
{
    return grow(arr, cap, need, elem, 0);
}

int gs_grow32_raw(void **arr, uint32_t *cap, size_t need, size_t elem)
{
    return grow32(arr, cap, need, elem, 0);
}
