/* The driver's own address table, as the real libcuda keeps one
 * (GS_CUDA_DOUBLE_TABLE=1; off by default).
 *
 * The real driver maps every allocation's address to its bookkeeping, for
 * cuMemFree and the pointer queries, in host memory a leak scanner reads:
 * heap blocks it mallocs and its data segment. The rest of the double hides
 * every address it keeps (internal.h: gs_cd_hide), so that a scanner's
 * verdicts depend on the program alone; with this setting on, it also keeps
 * the plain addresses of its device, pinned and managed allocations the
 * way the real driver does, to show what such a table does to a scan
 * (issue 18, risk 1; cuda_shim.sh's *_table cases):
 *  - a malloc'd array (grown with realloc, from this library's code), and
 *  - a copy of the first GS_CD_TABLE_STATIC in this library's .bss.
 * Called with gs_cd_lock held (blk_insert and blk_remove, devmem.c): the
 * lock orders the updates; malloc under it is safe (no allocator calls
 * back into the double). */
#include <stdlib.h>

#include "internal.h"

#define GS_CD_TABLE_STATIC 64

static uintptr_t table_static[GS_CD_TABLE_STATIC];
static uintptr_t *table_heap;
static size_t n_heap, cap_heap;
static int table_on = -1;

static int enabled(void)
{
    if (table_on < 0) {
        const char *s = getenv("GS_CUDA_DOUBLE_TABLE");
        table_on = s && s[0] == '1' && !s[1];
    }
    return table_on;
}

void gs_cd_table_note_locked(uintptr_t addr, int kind, int add)
{
    if ((kind != GS_CD_K_DEVICE && kind != GS_CD_K_PINNED && kind != GS_CD_K_MANAGED) ||
        !enabled())
        return;
    if (add) {
        for (size_t i = 0; i < GS_CD_TABLE_STATIC; i++)
            if (!table_static[i]) {
                table_static[i] = addr;
                break;
            }
        if (n_heap == cap_heap) {
            size_t cap = cap_heap ? 2 * cap_heap : 16;
            uintptr_t *v = realloc(table_heap, cap * sizeof *v);
            if (!v)
                return;
            table_heap = v;
            cap_heap = cap;
        }
        table_heap[n_heap++] = addr;
        return;
    }
    for (size_t i = 0; i < GS_CD_TABLE_STATIC; i++)
        if (table_static[i] == addr)
            table_static[i] = 0;
    for (size_t i = 0; i < n_heap; i++)
        if (table_heap[i] == addr) {
            table_heap[i] = table_heap[--n_heap];
            table_heap[n_heap] = 0;
            break;
        }
}
