/*
 * Where CPython 3.10 to 3.14 keep what Python frames are read from
 * (pylayout.c): one libgcspy.so serves every version, so nothing here comes
 * from a Python header at build time. The interpreter's version is read at
 * run time; 3.13 and later describe their own structs (_Py_DebugOffsets at
 * the start of _PyRuntime) and the offsets are taken from there; for 3.10 to
 * 3.12, and for the few facts the debug offsets do not give, a table per
 * version carries them (each entry checked against that version's headers by
 * tests/unit/pylayout_check.c). This file includes no Python header and
 * calls nothing: the unit test links it against each version's headers.
 */
#ifndef GCSPY_PYLAYOUT_H
#define GCSPY_PYLAYOUT_H

#include <stdint.h>

/* How a thread's frames are chained. */
enum gs_pyframes_kind {
    GS_PYF_FRAMEOBJ = 1, /* 3.10: PyFrameObject, one per C-level evaluation */
    GS_PYF_INTERP = 2,   /* 3.11+: _PyInterpreterFrame, several per evaluation */
};

/* Byte offsets into the interpreter's structs; -1 where a version has no
 * such field. */
struct gs_pylayout {
    int minor;             /* 10 .. 14 */
    int kind;              /* enum gs_pyframes_kind */
    /* PyThreadState: 3.10 frame, 3.11/3.12 cframe, 3.13+ current_frame */
    int ts_frame;
    /* _PyCFrame's current_frame (3.11, 3.12), read through ts_frame; -1:
     * ts_frame holds the innermost frame itself */
    int cframe_current;
    /* the frame: its code (3.13+ f_executable, a code object or not; 3.14
     * a tagged _PyStackRef), the caller's frame, the instruction pointer
     * (3.11/3.12 prev_instr, 3.13+ instr_ptr; 3.10 f_lasti, an int counting
     * code units, -1 before the first), owner, is_entry (3.11) */
    int f_code, f_prev, f_instr, f_owner, f_is_entry;
    int code_tagged;       /* f_code is a _PyStackRef: the low 3 bits are tags */
    int owner_generator;   /* FRAME_OWNED_BY_GENERATOR */
    /* 3.12+: frames owned by the C stack (or the interpreter, 3.14) mark
     * the entry to a C-level evaluation: owner >= this; -1: none */
    int owner_entry_min;
    /* PyCodeObject: file, name (3.11+ co_qualname, 3.10 co_name), first
     * line, flags (3.10 only: wrapper(*args, **kwargs) is told apart by
     * them), the bytecode (3.11+), the first traceable instruction (3.11 to
     * 3.14: frames before it have not started) */
    int co_filename, co_name, co_firstlineno, co_flags, co_code, co_firsttraceable;
    /* PyASCIIObject: the state bit field and the size of the struct (where
     * a compact ASCII string's bytes begin) */
    int str_state, str_data;
};

/* The layout for the interpreter of version hexversion (PY_VERSION_HEX),
 * whose _PyRuntime is at runtime (3.13+ read their debug offsets there;
 * NULL is refused for them). 0 and *out filled, or -1 with *why set to a
 * short reason (a version outside 3.10-3.14, a free-threaded build, debug
 * offsets that do not check out). */
int gs_pylayout_find(unsigned long hexversion, const void *runtime, struct gs_pylayout *out,
                     const char **why);

/* The carried tables, for the unit test: the entry for 3.minor, or NULL.
 * For 3.13+ the struct offsets come from _Py_DebugOffsets; the indices
 * (in 64-bit words) of the fields used are in *idx. */
struct gs_pydebug_idx {
    int free_threaded, ts_current_frame, ts_size, f_size, f_prev, f_exec, f_instr, f_owner,
        co_size, co_filename, co_qualname, co_firstlineno, co_code, str_state, str_data;
};
const struct gs_pylayout *gs_pylayout_table(int minor, const struct gs_pydebug_idx **idx);

#endif /* GCSPY_PYLAYOUT_H */
