/*
 * The user's frame and a stack's noise origin (userframe.h). The rules are
 * path rules, not a list of packages: a frame is the user's unless its file
 * or module lies where Python and Debian put code the user did not write,
 * so a training script anywhere in a home directory or checkout counts and
 * torch, numpy or the standard library never do.
 */
#include "userframe.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

const char *gs_noise_name(int origin)
{
    switch (origin) {
    case GS_NOISE_IMPORT: return "import machinery";
    case GS_NOISE_LOADER: return "dynamic loader";
    default: return NULL;
    }
}

int gs_userframe_add(struct gs_userframe_opts *o, int user, const char *s)
{
    const char **v = user ? o->user : o->not_user;
    unsigned *n = user ? &o->nuser : &o->nnot_user;
    while (*s) {
        size_t len = strcspn(s, ",");
        if (!len || *n >= GS_UF_MAXPAT)
            return -1;
        char *p = strndup(s, len);
        if (!p)
            return -1;
        v[(*n)++] = p; /* lives as long as the command */
        s += len;
        if (*s == ',')
            s++;
    }
    return 0;
}

static int matches(const char *const *v, unsigned n, const struct gs_frame *f)
{
    for (unsigned i = 0; i < n; i++)
        if ((f->file && fnmatch(v[i], f->file, 0) == 0) ||
            (f->module && fnmatch(v[i], f->module, 0) == 0))
            return 1;
    return 0;
}

static const char *base(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Python's own modules and installed packages, frozen modules ("<frozen
 * importlib._bootstrap>") included; "<string>" and "<stdin>" are the
 * user's (python -c, python -) */
static int python_system(const char *file)
{
    if (!file)
        return 1;
    if (starts(file, "<frozen "))
        return 1;
    if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
        return 1;
    /* the standard library: .../lib/python3.11/..., .../lib64/python3.X/... */
    const char *p = strstr(file, "/lib/python");
    if (!p)
        p = strstr(file, "/lib64/python");
    return p != NULL;
}

static int native_system(const char *module)
{
    if (!module)
        return 1; /* an address in no module says nothing */
    static const char *const dirs[] = { "/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/",
                                        "/usr/lib32/", "/usr/local/lib/", "/usr/libexec/" };
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (starts(module, dirs[i]))
            return 1;
    /* the standard library's extension modules (lib-dynload), wherever the
     * interpreter was installed (pyenv: ~/.pyenv/versions/X/lib/python3.X) */
    if (strstr(module, "/lib/python") || strstr(module, "/lib64/python"))
        return 1;
    const char *b = base(module);
    /* the interpreter, wherever it was installed; gcspy's own shim */
    return starts(b, "python") || starts(b, "libpython") || starts(b, "libgcspy") ||
           starts(b, "libc.so") || starts(b, "ld-linux") || strstr(module, "/site-packages/") ||
           strstr(module, "/dist-packages/");
}

int gs_userframe_is_user(const struct gs_userframe_opts *o, const struct gs_frame *f)
{
    if (o && matches(o->user, o->nuser, f))
        return 1;
    if (o && matches(o->not_user, o->nnot_user, f))
        return 0;
    if (f->python)
        return !python_system(f->file);
    /* a native frame with no name (module+offset) tells the user nothing */
    return f->function && !native_system(f->module);
}

int32_t gs_userframe_find(const struct gs_userframe_opts *o, const struct gs_stackv *st)
{
    if (!st->resolved)
        return -1;
    for (uint32_t i = 0; i < st->n; i++)
        if (gs_userframe_is_user(o, &st->f[i]))
            return (int32_t)i;
    return -1;
}

static int import_frame(const struct gs_frame *f)
{
    return f->python && f->file && starts(f->file, "<frozen importlib");
}

static int loader_frame(const struct gs_frame *f)
{
    if (f->python || !f->module)
        return 0;
    const char *b = base(f->module);
    return starts(b, "ld-linux") || starts(b, "ld-2.") || starts(b, "ld64.so") ||
           (f->function && (starts(f->function, "_dl_") || starts(f->function, "dl_open") ||
                            strcmp(f->function, "dlopen") == 0 ||
                            starts(f->function, "dlopen@")));
}

int gs_userframe_noise(const struct gs_userframe_opts *o, const struct gs_stackv *st)
{
    if (!st->resolved)
        return GS_NOISE_NONE;
    for (uint32_t i = 0; i < st->n; i++) {
        const struct gs_frame *f = &st->f[i];
        if (loader_frame(f))
            return GS_NOISE_LOADER;
        if (import_frame(f))
            return GS_NOISE_IMPORT;
        if (gs_userframe_is_user(o, f))
            return GS_NOISE_NONE;
    }
    return GS_NOISE_NONE;
}
