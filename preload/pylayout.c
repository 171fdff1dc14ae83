/*
 * The struct offsets Python frame reading needs, per CPython version
 * (pylayout.h), chosen at run time from the running interpreter's version.
 *
 * 3.10 to 3.12 publish nothing about their layout, so the offsets are
 * carried here: facts from each version's own headers (Include/cpython/
 * pystate.h, code.h, unicodeobject.h, frameobject.h for 3.10 and
 * Include/internal/pycore_frame.h for 3.11+), the same for every patch
 * release of a minor version (CPython keeps the ABI within one). 3.13 and
 * later put _Py_DebugOffsets first in _PyRuntime, for debuggers and
 * profilers: the thread state's current frame, the frame's fields, the code
 * object's and the str's are read from there, so a patch release that moved
 * one is still read right. That struct's own layout changes between minor
 * versions (3.14 added fields in the middle), so the index of each field
 * used is carried per version, and the cookie, version, build and every
 * offset's bound are checked before any is trusted. What the debug offsets
 * do not give (the first traceable instruction, the owner values, 3.14's
 * tagged frame references) is carried like the older versions' offsets.
 *
 * tests/unit/pylayout_check.c compiles against each version's headers that
 * are on the machine and compares every entry with offsetof(), and for
 * 3.13+ also runs gs_pylayout_find on that version's live _PyRuntime.
 */
#include <stddef.h>
#include <string.h>

#include "pylayout.h"

/* The word indices into _Py_DebugOffsets (cookie[8], then uint64_t words
 * only) of the fields used, per minor version (Include/internal/
 * pycore_runtime.h in 3.13, pycore_debug_offsets.h in 3.14). */
static const struct gs_pydebug_idx debug13 = {
    .free_threaded = 2, .ts_size = 19, .ts_current_frame = 23,
    .f_size = 28, .f_prev = 29, .f_exec = 30, .f_instr = 31, .f_owner = 33,
    .co_size = 34, .co_filename = 35, .co_qualname = 37, .co_firstlineno = 39, .co_code = 43,
    .str_state = 68, .str_data = 70,
};
static const struct gs_pydebug_idx debug14 = {
    .free_threaded = 2, .ts_size = 22, .ts_current_frame = 26,
    .f_size = 31, .f_prev = 32, .f_exec = 33, .f_instr = 34, .f_owner = 36,
    .co_size = 39, .co_filename = 40, .co_qualname = 42, .co_firstlineno = 44, .co_code = 48,
    .str_state = 78, .str_data = 80,
};

/* Per version; for 3.13+ the offsets given as -2 come from the debug
 * offsets at run time. */
#define DBG -2
static const struct gs_pylayout table[] = {
    { /* 3.10: PyThreadState.frame, PyFrameObject (f_back, f_code, f_lasti) */
        .minor = 10, .kind = GS_PYF_FRAMEOBJ, .ts_frame = 24, .cframe_current = -1,
        .f_code = 32, .f_prev = 24, .f_instr = 96, .f_owner = -1, .f_is_entry = -1,
        .code_tagged = 0, .owner_generator = -1, .owner_entry_min = -1,
        .co_filename = 104, .co_name = 112, .co_firstlineno = 40, .co_flags = 36,
        .co_code = -1, .co_firsttraceable = -1, .str_state = 32, .str_data = 48,
    },
    { /* 3.11: PyThreadState.cframe->current_frame; is_entry ends an evaluation */
        .minor = 11, .kind = GS_PYF_INTERP, .ts_frame = 56, .cframe_current = 8,
        .f_code = 32, .f_prev = 48, .f_instr = 56, .f_owner = 69, .f_is_entry = 68,
        .code_tagged = 0, .owner_generator = 1, .owner_entry_min = -1,
        .co_filename = 112, .co_name = 128, .co_firstlineno = 72, .co_flags = -1,
        .co_code = 184, .co_firsttraceable = 168, .str_state = 32, .str_data = 48,
    },
    { /* 3.12: an entry frame owned by the C stack (3) starts each evaluation */
        .minor = 12, .kind = GS_PYF_INTERP, .ts_frame = 56, .cframe_current = 0,
        .f_code = 0, .f_prev = 8, .f_instr = 56, .f_owner = 70, .f_is_entry = -1,
        .code_tagged = 0, .owner_generator = 1, .owner_entry_min = 3,
        .co_filename = 112, .co_name = 128, .co_firstlineno = 68, .co_flags = -1,
        .co_code = 192, .co_firsttraceable = 176, .str_state = 32, .str_data = 40,
    },
    { /* 3.13: PyThreadState.current_frame; f_executable may be None */
        .minor = 13, .kind = GS_PYF_INTERP, .ts_frame = DBG, .cframe_current = -1,
        .f_code = DBG, .f_prev = DBG, .f_instr = DBG, .f_owner = DBG, .f_is_entry = -1,
        .code_tagged = 0, .owner_generator = 1, .owner_entry_min = 3,
        .co_filename = DBG, .co_name = DBG, .co_firstlineno = DBG, .co_flags = -1,
        .co_code = DBG, .co_firsttraceable = 184, .str_state = DBG, .str_data = DBG,
    },
    { /* 3.14: f_executable is a _PyStackRef; entry frames are owned by the
       * interpreter (3) or the C stack (4) */
        .minor = 14, .kind = GS_PYF_INTERP, .ts_frame = DBG, .cframe_current = -1,
        .f_code = DBG, .f_prev = DBG, .f_instr = DBG, .f_owner = DBG, .f_is_entry = -1,
        .code_tagged = 1, .owner_generator = 1, .owner_entry_min = 3,
        .co_filename = DBG, .co_name = DBG, .co_firstlineno = DBG, .co_flags = -1,
        .co_code = DBG, .co_firsttraceable = 192, .str_state = DBG, .str_data = DBG,
    },
};

const struct gs_pylayout *gs_pylayout_table(int minor, const struct gs_pydebug_idx **idx)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].minor == minor) {
            if (idx)
                *idx = minor == 13 ? &debug13 : minor == 14 ? &debug14 : NULL;
            return &table[i];
        }
    return NULL;
}

/* One offset from the debug offsets: below bound, or -1. */
static int dbg_off(const uint64_t *w, int i, uint64_t bound)
{
    return w[i] < bound && w[i] < (1u << 16) ? (int)w[i] : -1;
}

static int from_debug(const void *runtime, unsigned long hexversion, const struct gs_pydebug_idx *x,
                      struct gs_pylayout *o, const char **why)
{
    const uint64_t *w = runtime;
    if (!runtime || memcmp(runtime, "xdebugpy", 8) != 0) {
        *why = "no debug offsets in _PyRuntime";
        return -1;
    }
    if ((w[1] >> 16) != (hexversion >> 16)) {
        *why = "the debug offsets are of another version";
        return -1;
    }
    if (w[x->free_threaded] != 0) {
        *why = "a free-threaded build";
        return -1;
    }
    uint64_t ts = w[x->ts_size], fr = w[x->f_size], co = w[x->co_size];
    o->ts_frame = dbg_off(w, x->ts_current_frame, ts);
    o->f_prev = dbg_off(w, x->f_prev, fr);
    o->f_code = dbg_off(w, x->f_exec, fr);
    o->f_instr = dbg_off(w, x->f_instr, fr);
    o->f_owner = dbg_off(w, x->f_owner, fr);
    o->co_filename = dbg_off(w, x->co_filename, co);
    o->co_name = dbg_off(w, x->co_qualname, co);
    o->co_firstlineno = dbg_off(w, x->co_firstlineno, co);
    o->co_code = dbg_off(w, x->co_code, co); /* the bytecode, the last field */
    /* PyASCIIObject: state, then its size (where compact ASCII bytes start) */
    o->str_state = dbg_off(w, x->str_state, 64);
    o->str_data = dbg_off(w, x->str_data, 65);
    if (o->ts_frame < 0 || o->f_prev < 0 || o->f_code < 0 || o->f_instr < 0 || o->f_owner < 0 ||
        o->co_filename < 0 || o->co_name < 0 || o->co_firstlineno < 0 || o->co_code < 0 ||
        o->str_state < 0 || o->str_data <= o->str_state || o->co_firsttraceable >= o->co_code) {
        *why = "the debug offsets do not check out";
        return -1;
    }
    return 0;
}

int gs_pylayout_find(unsigned long hexversion, const void *runtime, struct gs_pylayout *out,
                     const char **why)
{
    int major = (int)(hexversion >> 24 & 0xff), minor = (int)(hexversion >> 16 & 0xff);
    const struct gs_pydebug_idx *idx = NULL;
    const struct gs_pylayout *t = major == 3 ? gs_pylayout_table(minor, &idx) : NULL;
    if (!t) {
        *why = "a version outside 3.10-3.14";
        return -1;
    }
    *out = *t;
    return idx ? from_debug(runtime, hexversion, idx, out, why) : 0;
}
