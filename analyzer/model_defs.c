/*
 * Definitions (model_int.h): the records that name things later records
 * refer to. STACK nodes form the tree that stack ids walk, each node
 * remembering the module its ip fell in when it was defined (a module may be
 * unloaded and its addresses reused later); MODULE and MODULE_UNLOAD keep the
 * map of loaded code; PYCODE names Python code objects; PROCESS_START
 * describes the process.
 *
 * Ids index arrays directly: the shim hands them out densely, so an id far
 * past the last one is damage, counted in bad_records and never allowed to
 * size an array.
 */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idtab.h"

char *gs_dupb(const struct gs_bytes *b)
{
    char *s = malloc(b->n + 1);
    if (!s)
        return NULL;
    if (b->n)
        memcpy(s, b->p, b->n);
    s[b->n] = 0;
    return s;
}

const struct gs_stacknode *gs_model_node(const struct gs_model *m, uint32_t id)
{
    return id && id < m->nnodes ? &m->nodes[id] : NULL;
}

const struct gs_pycode *gs_model_pycode(const struct gs_model *m, uint64_t id)
{
    if (id >= GS_MAX_ID)
        return NULL;
    const struct gs_pycode *pc =
        gs_idtab_find(m->pycodes, m->pycap, sizeof *m->pycodes, (uint32_t)id + 1);
    return pc && pc->function ? pc : NULL;
}

static int seg_cmp(const void *a, const void *b)
{
    const struct gs_segref *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int segs_rebuild(struct gs_model *m)
{
    m->nsegs = 0;
    for (uint32_t i = 0; i < m->nmods; i++) {
        const struct gs_module *md = &m->mods[i];
        if (md->unloaded)
            continue;
        for (uint32_t s = 0; s < md->nseg; s++) {
            if (GS_GROW(m->segs, m->segs_cap, m->nsegs + 1))
                return -1;
            struct gs_segref *r = &m->segs[m->nsegs++];
            r->lo = md->base + md->seg[s].vaddr;
            r->hi = r->lo + md->seg[s].memsz;
            r->mod = i + 1;
        }
    }
    if (m->nsegs)
        qsort(m->segs, m->nsegs, sizeof *m->segs, seg_cmp);
    m->segs_dirty = 0;
    return 0;
}

/* The module holding code address a now (1-based), 0 when none. */
static uint32_t module_at(struct gs_model *m, uint64_t a)
{
    if (m->segs_dirty && segs_rebuild(m))
        return 0;
    uint32_t lo = 0, hi = m->nsegs;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (m->segs[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* segments of different modules never overlap; check the last two that
     * start at or below a in case of zero-sized oddities */
    for (uint32_t k = lo; k > 0 && k + 2 > lo; k--) {
        const struct gs_segref *r = &m->segs[k - 1];
        if (a >= r->lo && a < r->hi)
            return r->mod;
    }
    return 0;
}

int gs_on_stack(struct gs_model *m, const struct gs_record *r)
{
    uint64_t id = r->u.stack.id, parent = r->u.stack.parent, ip = r->u.stack.ip;
    /* The shim hands ids out densely, in order (a forked child re-emits the
     * tree from 1): an id past the next one is damage, and must not make the
     * node array grow to it. */
    if (!id || id >= GS_MAX_ID || id > (uint64_t)m->max_stack_id + 1) {
        m->bad_records++;
        return 0;
    }
    if (id > m->max_stack_id)
        m->max_stack_id = (uint32_t)id;
    /* nodes are indexed directly: ids are dense, handed out in order. The
     * array starts at 1024 nodes: an undefined id below that reads as an
     * empty node (one unknown frame), as reports have always shown it. */
    if (GS_GROW(m->nodes, m->nnodes, id < 1024 ? 1024 : (size_t)id + 1))
        return -1;
    struct gs_stacknode *nd = &m->nodes[id];
    nd->ip = ip;
    nd->parent = parent < GS_MAX_ID && parent != id ? (uint32_t)parent : 0;
    nd->module = (ip & GS_IP_PYFRAME) || !ip ? 0 : module_at(m, ip - 1);
    return 0;
}

int gs_on_module(struct gs_model *m, const struct gs_record *r)
{
    if (GS_GROW(m->mods, m->mods_cap, (size_t)m->nmods + 1))
        return -1;
    struct gs_module *md = &m->mods[m->nmods];
    memset(md, 0, sizeof *md);
    md->id = r->u.module.id;
    md->base = r->u.module.base;
    md->t_load = r->t;
    md->path = gs_dupb(&r->u.module.path);
    if (!md->path)
        return -1;
    if (r->u.module.build_id.n) {
        md->build_id = malloc(r->u.module.build_id.n);
        if (!md->build_id) {
            free(md->path);
            return -1;
        }
        memcpy(md->build_id, r->u.module.build_id.p, r->u.module.build_id.n);
        md->build_id_len = r->u.module.build_id.n;
    }
    md->nseg = (uint32_t)(r->u.module.nseg < GS_MAX_SEGS ? r->u.module.nseg : GS_MAX_SEGS);
    for (uint32_t i = 0; i < md->nseg; i++) {
        md->seg[i].vaddr = r->u.module.seg[i].vaddr;
        md->seg[i].memsz = r->u.module.seg[i].memsz;
        md->seg[i].flags = r->u.module.seg[i].flags;
    }
    /* a module id reported again replaces the older record's mapping */
    for (uint32_t i = 0; i < m->nmods; i++) {
        if (m->mods[i].id == md->id && !m->mods[i].unloaded) {
            m->mods[i].unloaded = 1;
            m->mods[i].t_unload = r->t;
        }
    }
    m->nmods++;
    m->segs_dirty = 1;
    return 0;
}

void gs_on_unload(struct gs_model *m, const struct gs_record *r)
{
    for (uint32_t i = 0; i < m->nmods; i++) {
        if (m->mods[i].id == r->u.unload.id && !m->mods[i].unloaded) {
            m->mods[i].unloaded = 1;
            m->mods[i].t_unload = r->t;
            m->segs_dirty = 1;
            return;
        }
    }
    m->bad_records++;
}

int gs_on_pycode(struct gs_model *m, const struct gs_record *r)
{
    uint64_t id = r->u.pycode.id;
    if (id >= GS_MAX_ID) {
        m->bad_records++;
        return 0;
    }
    struct gs_pycode *pc = gs_idtab_slot((void **)&m->pycodes, &m->pycap, m->npycodes,
                                         sizeof *m->pycodes, (uint32_t)id + 1);
    if (!pc)
        return -1;
    if (!pc->key) {
        pc->key = (uint32_t)id + 1;
        m->npycodes++;
    }
    free(pc->file);
    free(pc->function);
    pc->file = gs_dupb(&r->u.pycode.file);
    pc->function = gs_dupb(&r->u.pycode.function);
    pc->firstline = r->u.pycode.firstline;
    return pc->file && pc->function ? 0 : -1;
}

int gs_on_proc(struct gs_model *m, const struct gs_record *r)
{
    if (m->have_proc) {
        m->bad_records++;
        return 0;
    }
    m->have_proc = 1;
    m->pid = r->u.proc.pid;
    m->ppid = r->u.proc.ppid;
    m->wall_ns = r->u.proc.wall_ns;
    m->rank1 = r->u.proc.rank1;
    m->local_rank1 = r->u.proc.local_rank1;
    m->world_size1 = r->u.proc.world_size1;
    m->pflags = r->u.proc.flags;
    m->unwinder = r->u.proc.unwinder;
    m->depth = r->u.proc.depth;
    m->page_size = r->u.proc.page_size;
    m->exe = gs_dupb(&r->u.proc.exe);
    m->argv = gs_dupb(&r->u.proc.argv);
    m->argv_len = r->u.proc.argv.n;
    m->host = gs_dupb(&r->u.proc.host);
    m->version = gs_dupb(&r->u.proc.version);
    return m->exe && m->argv && m->host && m->version ? 0 : -1;
}

const struct gs_module *gs_model_module_any(const struct gs_model *m, uint64_t a)
{
    for (uint32_t i = m->nmods; i-- > 0;) {
        const struct gs_module *md = &m->mods[i];
        for (uint32_t s = 0; s < md->nseg; s++) {
            uint64_t lo = md->base + md->seg[s].vaddr;
            if (a >= lo && a < lo + md->seg[s].memsz)
                return md;
        }
    }
    return NULL;
}
