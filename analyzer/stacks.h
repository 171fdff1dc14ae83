/*
 * A trace's stacks as frames (result.h's gs_stackv), for the stacks a
 * result shows: the STACK tree walked from a stack id outwards, native ips
 * symbolized (symbols.h) and Python frames named from PYCODE records. Where
 * a stack has Python frames they stand in for the interpreter's own frames
 * (libpython, python), which say nothing about the program.
 *
 * Frames live in the result's arena; their strings in the symbolizer's.
 */
#ifndef GCSPY_STACKS_H
#define GCSPY_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model.h"
#include "result.h"
#include "symbols.h"

struct gs_stackc;
struct gs_canonc;
struct gs_foldslot;

/* The stacks of one result: a cache by stack id (groups of several classes,
 * suspects and sites share stacks) and a scratch buffer. */
struct gs_stacks {
    const struct gs_model *m;
    struct gs_symbolizer *sym;      /* NULL: stacks stay unresolved */
    struct gs_arena *arena;         /* the result's */
    uint32_t max_frames;
    struct gs_frame *buf;
    size_t nbuf, capbuf;
    struct gs_stackc *sc;
    size_t sccap, scn;
    struct gs_canonc *cc;           /* stack id -> its site's id (gs_stacks_canon) */
    size_t cccap, ccn;
    struct gs_foldslot *fold;       /* folded frames' hash -> the first id */
    size_t foldcap, foldn;
};

void gs_stacks_init(struct gs_stacks *s, const struct gs_model *m, struct gs_symbolizer *sym,
                    struct gs_arena *arena, uint32_t max_frames);
void gs_stacks_free(struct gs_stacks *s);
/* *out: stack id's frames, innermost first (resolved 0 and no frames when
 * there is no symbolizer). 0, or -1 when out of memory. */
int gs_stacks_get(struct gs_stacks *s, uint32_t id, struct gs_stackv *out);
/* The id that stands for stack id's allocation site: the smallest id seen
 * so far whose frames, once the interpreter's own are left out (where
 * Python frames stand in for them, as gs_stacks_get shows them), are the
 * same; ask for every id first, then again, for an answer that does not
 * depend on the order of asking.
 * Two calls from one Python line that reached malloc through different
 * paths of the interpreter (3.14's specialised and generic CALL handlers)
 * are one site, one row. A stack without Python frames is its own site.
 * Needs no symbolizer; on running out of memory, id itself. */
uint32_t gs_stacks_canon(struct gs_stacks *s, uint32_t id);
/* The one frame that names stack id's site: its innermost Python frame when
 * it has any, else the first native frame that resolved to a function
 * outside the interpreter, else its innermost frame. 0, or -1 when out of
 * memory. */
int gs_stacks_site_frame(struct gs_stacks *s, uint32_t id, struct gs_frame *out);

#endif /* GCSPY_STACKS_H */
