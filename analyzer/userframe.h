/*
 * The user's own frame of a stack (userframe.c): the innermost frame in
 * the program's own code, which the findings name ("leak at train.py:210")
 * instead of the allocator or library frame at the top of the stack. What
 * is not the user's: the interpreter (python*, libpython*), the standard
 * library and installed packages (site-packages, dist-packages, frozen
 * modules, and their extension modules under .../lib/python3.X/ wherever
 * the interpreter lives), libc and the loader, and every module under the system's
 * library directories (/lib, /usr/lib, /usr/lib64, /usr/local/lib); a
 * native frame without a name (module+offset) says nothing and is skipped
 * too. Patterns
 * given by the user (--user-code, --not-user-code: fnmatch globs, matched
 * against the frame's file and its module path) take precedence.
 *
 * Also the noise of a stack: an allocation made by the interpreter's import
 * machinery or the dynamic loader before any user frame is reached.
 */
#ifndef GCSPY_USERFRAME_H
#define GCSPY_USERFRAME_H

#include "result.h"

#define GS_UF_MAXPAT 16

struct gs_userframe_opts {
    const char *user[GS_UF_MAXPAT];     /* globs: always the user's code */
    const char *not_user[GS_UF_MAXPAT]; /* globs: never the user's code */
    unsigned nuser, nnot_user;
};

enum { GS_NOISE_NONE = 0, GS_NOISE_IMPORT, GS_NOISE_LOADER, GS_NOISE__N };

/* "import machinery", "dynamic loader"; NULL for GS_NOISE_NONE. */
const char *gs_noise_name(int origin);

/* Adds the comma-separated globs of s to the user (user=1) or not-user
 * list. 0, or -1 when there are more than GS_UF_MAXPAT or one is empty. */
int gs_userframe_add(struct gs_userframe_opts *o, int user, const char *s);

/* Whether frame f is the user's code under o (NULL: the defaults). */
int gs_userframe_is_user(const struct gs_userframe_opts *o, const struct gs_frame *f);

/* The index of the innermost user frame of st, or -1 when there is none
 * (or the stack was not symbolized). */
int32_t gs_userframe_find(const struct gs_userframe_opts *o, const struct gs_stackv *st);

/* GS_NOISE_*: the origin of an allocation whose stack, read from the
 * allocation outwards, enters import machinery or the loader before any
 * user frame. */
int gs_userframe_noise(const struct gs_userframe_opts *o, const struct gs_stackv *st);

#endif /* GCSPY_USERFRAME_H */
