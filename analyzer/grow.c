/*
 * Growable arrays (grow.h): capacities double from 16 elements until the
 * need fits; the new part is zeroed (arrays indexed by id rely on it).
 */
#include "grow.h"

#include <stdlib.h>
#include <string.h>

int gs_grow(void **arr, size_t *cap, size_t need, size_t elem)
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
    memset((char *)n + *cap * elem, 0, (c - *cap) * elem);
    *arr = n;
    *cap = c;
    return 0;
}

int gs_grow32(void **arr, uint32_t *cap, size_t need, size_t elem)
{
    size_t c = *cap;
    if (need <= c)
        return 0;
    if (need > UINT32_MAX / 2)
        return -1;
    if (gs_grow(arr, &c, need, elem))
        return -1;
    *cap = (uint32_t)c;
    return 0;
}
