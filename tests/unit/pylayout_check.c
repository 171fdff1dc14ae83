/*
 * preload/pylayout.c's table for one CPython version, checked against that
 * version's own headers (tests/integration/py_layout.sh compiles this file
 * once per interpreter it finds, with -I its include directory, and links
 * it with that version's libpython).
 *
 * Every carried offset is compared with offsetof() on the real struct; for
 * 3.13+, the word indices into _Py_DebugOffsets are compared with the
 * header's, and gs_pylayout_find is run on the linked interpreter's live
 * _PyRuntime: each offset it reads there must equal the header's, and a
 * copy of them marked free-threaded, or with another cookie or version, is
 * refused; versions outside 3.10-3.14 are refused. Built
 * with -DGS_NO_LIVE (headers without a libpython this machine can run, such
 * as 3.14's from Debian sid's libpython3.14-dev), 3.13+ check the indices
 * and the carried offsets only. Prints "ok 3.X: N fields" or one line per
 * mismatch; exit 0 or 1.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_MINOR_VERSION == 10
#include <frameobject.h>
#else
#include <internal/pycore_frame.h>
#endif
#if PY_MINOR_VERSION == 13
#include <internal/pycore_runtime.h>
#elif PY_MINOR_VERSION >= 14
#include <internal/pycore_debug_offsets.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interpframe_structs.h>
#endif

#include "pylayout.h"

static int bad, n;
#ifdef GS_NO_LIVE
static const int nolive = 1;
#else
static const int nolive = 0;
#endif

static void eq(const char *what, long got, long want)
{
    if (nolive && got == -2)
        return; /* read from the debug offsets at run time: not checked here */
    n++;
    if (got != want) {
        printf("FAIL 3.%d: %s is %ld in the table, %ld in the headers\n", PY_MINOR_VERSION, what, got,
               want);
        bad++;
    }
}
#define EQ(field, want) eq(#field, (long)l->field, (long)(want))
#define IDX(field, member) eq("debug index " #field, (long)x->field, (long)(offsetof(_Py_DebugOffsets, member) / 8))

static void check(const struct gs_pylayout *l)
{
    EQ(co_filename, offsetof(PyCodeObject, co_filename));
    EQ(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    EQ(str_state, offsetof(PyASCIIObject, state));
    EQ(str_data, sizeof(PyASCIIObject));
#if PY_MINOR_VERSION == 10
    EQ(kind, GS_PYF_FRAMEOBJ);
    EQ(ts_frame, offsetof(PyThreadState, frame));
    EQ(f_prev, offsetof(PyFrameObject, f_back));
    EQ(f_code, offsetof(PyFrameObject, f_code));
    EQ(f_instr, offsetof(PyFrameObject, f_lasti));
    EQ(co_name, offsetof(PyCodeObject, co_name));
    EQ(co_flags, offsetof(PyCodeObject, co_flags));
#else
    EQ(kind, GS_PYF_INTERP);
    EQ(co_name, offsetof(PyCodeObject, co_qualname));
    EQ(co_code, offsetof(PyCodeObject, co_code_adaptive));
    EQ(co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
    EQ(owner_generator, FRAME_OWNED_BY_GENERATOR);
    EQ(f_prev, offsetof(_PyInterpreterFrame, previous));
    EQ(f_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_MINOR_VERSION <= 12
    EQ(ts_frame, offsetof(PyThreadState, cframe));
    EQ(cframe_current, offsetof(_PyCFrame, current_frame));
    EQ(f_code, offsetof(_PyInterpreterFrame, f_code));
    EQ(f_instr, offsetof(_PyInterpreterFrame, prev_instr));
#else
    EQ(ts_frame, offsetof(PyThreadState, current_frame));
    EQ(f_code, offsetof(_PyInterpreterFrame, f_executable));
    EQ(f_instr, offsetof(_PyInterpreterFrame, instr_ptr));
    EQ(code_tagged, PY_MINOR_VERSION >= 14);
#endif
#if PY_MINOR_VERSION == 11
    EQ(f_is_entry, offsetof(_PyInterpreterFrame, is_entry));
    EQ(owner_entry_min, -1);
#elif PY_MINOR_VERSION <= 13
    EQ(owner_entry_min, FRAME_OWNED_BY_CSTACK);
#else
    EQ(owner_entry_min, FRAME_OWNED_BY_INTERPRETER);
    eq("FRAME_OWNED_BY_CSTACK above the interpreter's", FRAME_OWNED_BY_CSTACK > FRAME_OWNED_BY_INTERPRETER, 1);
#endif
#endif
}

int main(void)
{
    const struct gs_pydebug_idx *x = NULL;
    const struct gs_pylayout *t = gs_pylayout_table(PY_MINOR_VERSION, &x);
    if (!t) {
        printf("FAIL 3.%d: no table entry\n", PY_MINOR_VERSION);
        return 1;
    }
    eq("minor", t->minor, PY_MINOR_VERSION);
#if PY_MINOR_VERSION >= 13
    /* the indices into the debug offsets, against this version's struct */
    IDX(free_threaded, free_threaded);
    IDX(ts_size, thread_state.size);
    IDX(ts_current_frame, thread_state.current_frame);
    IDX(f_size, interpreter_frame.size);
    IDX(f_prev, interpreter_frame.previous);
    IDX(f_exec, interpreter_frame.executable);
    IDX(f_instr, interpreter_frame.instr_ptr);
    IDX(f_owner, interpreter_frame.owner);
    IDX(co_size, code_object.size);
    IDX(co_filename, code_object.filename);
    IDX(co_qualname, code_object.qualname);
    IDX(co_firstlineno, code_object.firstlineno);
    IDX(co_code, code_object.co_code_adaptive);
    IDX(str_state, unicode_object.state);
    IDX(str_data, unicode_object.asciiobject_size);
#ifdef GS_NO_LIVE
    check(t);
#else
    /* the offsets read from the linked interpreter's own _PyRuntime */
    struct gs_pylayout live;
    const char *why = "";
    if (gs_pylayout_find(PY_VERSION_HEX, &_PyRuntime, &live, &why)) {
        printf("FAIL 3.%d: gs_pylayout_find on the live _PyRuntime: %s\n", PY_MINOR_VERSION, why);
        return 1;
    }
    check(&live);
    /* a copy of the live debug offsets marked free-threaded, or with
     * another cookie or version, is refused */
    static uint64_t copy[sizeof(_Py_DebugOffsets) / 8 + 1];
    struct gs_pylayout bad_layout;
    const char *bad_why = NULL;
    memcpy(copy, &_PyRuntime, sizeof(_Py_DebugOffsets));
    copy[x->free_threaded] = 1;
    eq("free-threaded debug offsets refused",
       gs_pylayout_find(PY_VERSION_HEX, copy, &bad_layout, &bad_why) == -1 && bad_why &&
           !strcmp(bad_why, "a free-threaded build"), 1);
    memcpy(copy, &_PyRuntime, sizeof(_Py_DebugOffsets));
    ((char *)copy)[0] = 'X';
    eq("a wrong cookie refused", gs_pylayout_find(PY_VERSION_HEX, copy, &bad_layout, &bad_why), -1);
    memcpy(copy, &_PyRuntime, sizeof(_Py_DebugOffsets));
    copy[1] += 1 << 16; /* the next minor version's */
    eq("another version's offsets refused", gs_pylayout_find(PY_VERSION_HEX, copy, &bad_layout, &bad_why), -1);
#endif
#else
    struct gs_pylayout live;
    const char *why = "";
    struct gs_pylayout out;
    const char *out_why = NULL;
    eq("3.9 refused", gs_pylayout_find(0x030912f0, NULL, &out, &out_why), -1);
    eq("3.15 refused", gs_pylayout_find(0x030f00a1, NULL, &out, &out_why), -1);
    if (gs_pylayout_find(PY_VERSION_HEX, NULL, &live, &why)) {
        printf("FAIL 3.%d: gs_pylayout_find: %s\n", PY_MINOR_VERSION, why);
        return 1;
    }
    check(&live);
#endif
    if (!bad)
        printf("ok 3.%d: %d fields\n", PY_MINOR_VERSION, n);
    return bad != 0;
}
