/*
 * Stacks as frames (stacks.h). A native frame's module is the one the
 * STACK node recorded when it was defined, or failing that (a stack defined
 * before its module's record) any module, loaded or since unloaded, whose
 * segments held the address.
 */
#include "stacks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idtab.h"

struct gs_stackc {            /* stack id -> symbolized stack */
    uint32_t id;              /* 0: empty slot */
    struct gs_stackv st;
};

struct gs_canonc {            /* stack id -> its folded frames' hash */
    uint32_t id;              /* 0: empty slot */
    uint64_t h;               /* 0: no Python frame, the stack is its own site */
};

struct gs_foldslot {          /* folded frames' hash -> the smallest id */
    uint64_t h;               /* 0: empty slot */
    uint32_t id;
};

void gs_stacks_init(struct gs_stacks *s, const struct gs_model *m, struct gs_symbolizer *sym,
                    struct gs_arena *arena, uint32_t max_frames)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->sym = sym;
    s->arena = arena;
    s->max_frames = max_frames;
}

void gs_stacks_free(struct gs_stacks *s)
{
    free(s->buf);
    free(s->sc);
    free(s->cc);
    free(s->fold);
    s->buf = NULL;
    s->sc = NULL;
    s->cc = NULL;
    s->fold = NULL;
}

static int is_interpreter(const char *path)
{
    if (!path)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return strncmp(b, "libpython", 9) == 0 || strncmp(b, "python", 6) == 0;
}

static const struct gs_module *module_of(const struct gs_model *m,
                                         const struct gs_stacknode *nd)
{
    return nd->module ? &m->mods[nd->module - 1]
                      : gs_model_module_any(m, nd->ip ? nd->ip - 1 : 0);
}

static int buf_push(struct gs_stacks *s, const struct gs_frame *f)
{
    if (GS_GROW(s->buf, s->capbuf, s->nbuf + 1))
        return -1;
    s->buf[s->nbuf++] = *f;
    return 0;
}

/* A Python frame of ip (GS_IP_PYFRAME set): its code object and line. */
static int python_frame(struct gs_stacks *s, uint64_t ip)
{
    struct gs_frame f;
    memset(&f, 0, sizeof f);
    uint64_t code = (ip >> 32) & 0x7fffffffu;
    const struct gs_pycode *pc = gs_model_pycode(s->m, code);
    f.ip = ip;
    f.line = (uint32_t)ip;
    f.python = 1;
    if (pc) {
        f.function = gs_sym_intern(s->sym, pc->function);
        f.file = gs_sym_intern(s->sym, pc->file);
    } else {
        char tmp[48];
        snprintf(tmp, sizeof tmp, "<python code %" PRIu64 ">", code);
        f.function = gs_sym_intern(s->sym, tmp);
    }
    return f.function ? buf_push(s, &f) : -1;
}

int gs_stacks_get(struct gs_stacks *s, uint32_t id, struct gs_stackv *out)
{
    memset(out, 0, sizeof *out);
    if (!s->sym)
        return 0; /* no symbolizer: the stack stays unresolved */
    out->resolved = 1;
    if (!id)
        return 0;
    struct gs_stackc *e = gs_idtab_slot((void **)&s->sc, &s->sccap, s->scn, sizeof *s->sc, id);
    if (!e)
        return -1;
    if (e->id) {
        *out = e->st;
        return 0;
    }
    s->nbuf = 0;
    int python = 0;
    uint32_t depth = 0;
    for (uint32_t n = id; n && depth < s->max_frames; depth++) {
        const struct gs_stacknode *nd = gs_model_node(s->m, n);
        if (!nd)
            break;
        if (nd->ip & GS_IP_PYFRAME) {
            if (python_frame(s, nd->ip))
                return -1;
            python = 1;
        } else {
            struct gs_frame *fr;
            uint32_t nf;
            if (gs_sym_resolve(s->sym, module_of(s->m, nd), nd->ip, &fr, &nf))
                return -1;
            for (uint32_t k = 0; k < nf; k++)
                if (buf_push(s, &fr[k]))
                    return -1;
        }
        n = nd->parent;
    }
    /* Python frames stand in for the interpreter's own frames */
    size_t k = 0;
    for (size_t i = 0; i < s->nbuf; i++) {
        if (python && !s->buf[i].python && is_interpreter(s->buf[i].module))
            continue;
        s->buf[k++] = s->buf[i];
    }
    s->nbuf = k;
    out->n = (uint32_t)s->nbuf;
    out->f = gs_arena_calloc(s->arena, s->nbuf ? s->nbuf : 1, sizeof *out->f);
    if (!out->f)
        return -1;
    /* a stack of no frame: buf may never have been allocated, and memcpy
     * from a null pointer is undefined even for 0 bytes */
    if (s->nbuf)
        memcpy(out->f, s->buf, s->nbuf * sizeof *out->f);
    e->id = id;
    e->st = *out;
    s->scn++;
    return 0;
}

static inline uint64_t fold_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xFF51AFD7ED558CCDull;
}

/* The slot of folded hash h (h != 0), made with id when new; NULL when
 * memory runs out. */
static struct gs_foldslot *fold_slot(struct gs_stacks *s, uint64_t h, uint32_t id)
{
    if ((s->foldn + 1) * 2 > s->foldcap) {
        size_t ncap = s->foldcap ? s->foldcap * 2 : 1024;
        struct gs_foldslot *t = calloc(ncap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < s->foldcap; i++) {
            if (!s->fold[i].h)
                continue;
            size_t j = (size_t)(s->fold[i].h >> 7) & (ncap - 1);
            while (t[j].h)
                j = (j + 1) & (ncap - 1);
            t[j] = s->fold[i];
        }
        free(s->fold);
        s->fold = t;
        s->foldcap = ncap;
    }
    size_t j = (size_t)(h >> 7) & (s->foldcap - 1);
    while (s->fold[j].h && s->fold[j].h != h)
        j = (j + 1) & (s->foldcap - 1);
    if (!s->fold[j].h) {
        s->fold[j].h = h;
        s->fold[j].id = id;
        s->foldn++;
    }
    return &s->fold[j];
}

uint32_t gs_stacks_canon(struct gs_stacks *s, uint32_t id)
{
    if (!id)
        return 0;
    struct gs_canonc *e = gs_idtab_slot((void **)&s->cc, &s->cccap, s->ccn, sizeof *s->cc, id);
    if (!e)
        return id;
    if (!e->id) {
        /* The nodes' own ips: native frames by address, Python frames by
         * code and line. A 64-bit hash names the folded stack; a collision
         * would join two sites, at odds of about n^2 / 2^64. */
        uint64_t h = 0x243F6A8885A308D3ull;
        uint32_t depth = 0;
        int python = 0;
        for (uint32_t n = id; n && depth < 256; depth++) {
            const struct gs_stacknode *nd = gs_model_node(s->m, n);
            if (!nd)
                break;
            if (nd->ip & GS_IP_PYFRAME) {
                python = 1;
                h = fold_mix(h, nd->ip);
            } else {
                const struct gs_module *mod = module_of(s->m, nd);
                if (!mod || !is_interpreter(mod->path))
                    h = fold_mix(h, nd->ip);
            }
            n = nd->parent;
        }
        e->id = id;
        e->h = python ? fold_mix(h, depth) | 1 : 0;
        s->ccn++;
    }
    if (!e->h)
        return id;
    struct gs_foldslot *f = fold_slot(s, e->h, id);
    if (!f)
        return id;
    if (id < f->id)
        f->id = id;
    return f->id;
}

int gs_stacks_site_frame(struct gs_stacks *s, uint32_t id, struct gs_frame *out)
{
    struct gs_frame native;
    memset(&native, 0, sizeof native);
    memset(out, 0, sizeof *out);
    if (!s->sym)
        return 0;
    int have = 0;
    for (uint32_t n = id, depth = 0; n && depth < 256; depth++) {
        const struct gs_stacknode *nd = gs_model_node(s->m, n);
        if (!nd)
            break;
        uint64_t ip = nd->ip;
        if (ip & GS_IP_PYFRAME) {
            const struct gs_pycode *pc = gs_model_pycode(s->m, (ip >> 32) & 0x7fffffffu);
            out->python = 1;
            out->line = (uint32_t)ip;
            out->function = pc ? gs_sym_intern(s->sym, pc->function) : NULL;
            out->file = pc ? gs_sym_intern(s->sym, pc->file) : NULL;
            return 0;
        }
        if (!have) {
            struct gs_frame *fr;
            uint32_t nf;
            if (gs_sym_resolve(s->sym, module_of(s->m, nd), ip, &fr, &nf))
                return -1;
            for (uint32_t k = 0; k < nf && !have; k++)
                if (fr[k].function && !is_interpreter(fr[k].module)) {
                    native = fr[k];
                    have = 1;
                }
            if (!have && depth == 0 && nf)
                native = fr[0];
        }
        n = nd->parent;
    }
    *out = native;
    return 0;
}
