/*
 * Small open-addressing tables keyed by a stack id (a nonzero uint32 at
 * offset 0 of each element; 0 marks an empty slot), shared by the
 * per-result cache of symbolized stacks (stacks.c) and the address maps'
 * site weights (addrmap.c). The table grows to stay at most half full.
 */
#ifndef GCSPY_IDTAB_H
#define GCSPY_IDTAB_H

#include <stddef.h>
#include <stdint.h>

/* Makes room for one more entry than n (rehashing into a table twice the
 * size when needed), then returns the slot of key: the element holding it,
 * or the empty one where it goes (the caller stores the key and counts the
 * entry). NULL when memory runs out; the table is then unchanged. */
void *gs_idtab_slot(void **tab, size_t *cap, size_t n, size_t elem, uint32_t key);
/* The element holding key, NULL when there is none (the table unchanged). */
const void *gs_idtab_find(const void *tab, size_t cap, size_t elem, uint32_t key);

#endif /* GCSPY_IDTAB_H */
