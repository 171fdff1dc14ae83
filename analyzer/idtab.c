/*
 * Open-addressing tables keyed by stack id (idtab.h): linear probing, grown
 * by doubling. Keys are read with memcpy: elements are any struct whose
 * first member is the uint32 key.
 */
#include "idtab.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"

static uint32_t key_at(const char *slot)
{
    uint32_t k;
    memcpy(&k, slot, sizeof k);
    return k;
}

static size_t probe(const char *t, size_t cap, size_t elem, uint32_t key)
{
    size_t j = gs_hash_addr(key) & (cap - 1);
    for (;;) {
        uint32_t k = key_at(t + j * elem);
        if (!k || k == key)
            return j;
        j = (j + 1) & (cap - 1);
    }
}

const void *gs_idtab_find(const void *tab, size_t cap, size_t elem, uint32_t key)
{
    if (!cap || !key)
        return NULL;
    const char *t = tab;
    size_t j = probe(t, cap, elem, key);
    return key_at(t + j * elem) == key ? t + j * elem : NULL;
}

void *gs_idtab_slot(void **tab, size_t *cap, size_t n, size_t elem, uint32_t key)
{
    if ((n + 1) * 2 > *cap) {
        size_t ncap = *cap ? *cap * 2 : 256;
        char *nt = calloc(ncap, elem);
        if (!nt)
            return NULL;
        const char *old = *tab;
        for (size_t i = 0; i < *cap; i++) {
            uint32_t k = key_at(old + i * elem);
            if (k)
                memcpy(nt + probe(nt, ncap, elem, k) * elem, old + i * elem, elem);
        }
        free(*tab);
        *tab = nt;
        *cap = ncap;
    }
    return (char *)*tab + probe(*tab, *cap, elem, key) * elem;
}
