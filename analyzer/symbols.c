/*
 * Symbolization (symbols.h) over libdwfl, offline: each module file is
 * reported alone in its own Dwfl at bias 0 (modules of different processes,
 * or one unloaded and another loaded at the same address, would overlap in a
 * shared one). Inlined frames come from the DWARF scopes at the address:
 * each DW_TAG_inlined_subroutine is a frame whose caller's position is the
 * DW_AT_call_file/DW_AT_call_line of that scope, as eu-addr2line -i does.
 *
 * C++ names are demangled with __cxa_demangle from libstdc++ when that
 * library can be loaded at run time; gcspy itself is C and does not link it.
 */
#include "symbols.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "regfile.h"
#include "symfind.h"

struct modent {
    const char *path;           /* interned */
    uint8_t *bid;
    size_t bidlen;
    Dwfl *dwfl;
    Dwfl_Module *mod;
    int state;                  /* 0 not opened yet, 1 usable, -1 unusable */
    const char *held;           /* its problem, found while quiet, not listed yet */
    /* nearest()'s index: the defined function symbols by address, in
     * symbol-table order among equal addresses; built at its first use
     * (near_n -1: built, and nothing to search) */
    struct nearsym *near;
    int near_n;
};

struct nearsym {
    GElf_Addr at;
    const char *name;           /* libdw's, alive with the module's Dwfl */
    int order;                  /* its index in the symbol table */
};

struct cachent {
    uint64_t rel;
    uint32_t mod;               /* 1 + index; 0 = empty slot */
    uint32_t first, n;
};

struct gs_symbolizer {
    int enabled;
    struct gs_arena a;
    /* interned strings: open addressing over arena copies */
    const char **str;
    size_t scap, sn;
    struct modent *mods;
    uint32_t nmods, mcap;
    uint32_t *mhash;            /* 1 + module index by path hash */
    size_t mhcap;
    struct cachent *cache;
    size_t ccap, cn;
    struct gs_frame *pool;
    size_t pn, pcap;
    const char **problems;
    uint32_t nproblems, pcap2;
    struct gs_sym_stats st;
    char *(*demangle)(const char *, char *, size_t *, int *);
    int demangle_tried;
    int quiet;                  /* gs_sym_quiet */
    struct gs_symfind find;     /* where module files are looked for */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

const char *gs_sym_intern(struct gs_symbolizer *s, const char *str)
{
    if (!str)
        return NULL;
    if ((s->sn + 1) * 2 > s->scap) {
        size_t ncap = s->scap ? s->scap * 2 : 1024;
        const char **n = calloc(ncap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t i = 0; i < s->scap; i++) {
            if (!s->str[i])
                continue;
            size_t j = hash_str(s->str[i]) & (ncap - 1);
            while (n[j])
                j = (j + 1) & (ncap - 1);
            n[j] = s->str[i];
        }
        free(s->str);
        s->str = n;
        s->scap = ncap;
    }
    size_t j = hash_str(str) & (s->scap - 1);
    while (s->str[j]) {
        if (strcmp(s->str[j], str) == 0)
            return s->str[j];
        j = (j + 1) & (s->scap - 1);
    }
    const char *c = gs_arena_strdup(&s->a, str);
    if (!c)
        return NULL;
    s->str[j] = c;
    s->sn++;
    return c;
}

struct gs_symbolizer *gs_sym_new(int enabled)
{
    struct gs_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->enabled = enabled;
    return s;
}

void gs_sym_free(struct gs_symbolizer *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nmods; i++) {
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
        free(s->mods[i].bid);
        free(s->mods[i].near);
    }
    free(s->mods);
    free(s->mhash);
    free(s->cache);
    free(s->pool);
    free(s->str);
    free(s->problems);
    gs_symfind_free(&s->find);
    gs_arena_free(&s->a);
    free(s);
}

void gs_sym_stats(const struct gs_symbolizer *s, struct gs_sym_stats *out)
{
    *out = s->st;
}

const char *gs_sym_problem(const struct gs_symbolizer *s, uint32_t i)
{
    return i < s->nproblems ? s->problems[i] : NULL;
}

static void list_problem(struct gs_symbolizer *s, const char *c)
{
    if (GS_GROW(s->problems, s->pcap2, (size_t)s->nproblems + 1))
        return;
    s->problems[s->nproblems++] = c;
}

/* Module e cannot be read, msg says why: listed now, or held while quiet. */
static void problem(struct gs_symbolizer *s, struct modent *e, const char *msg)
{
    const char *c = gs_arena_strdup(&s->a, msg);
    if (!c)
        return;
    if (s->quiet)
        e->held = c;
    else
        list_problem(s, c);
}

void gs_sym_quiet(struct gs_symbolizer *s, int on)
{
    s->quiet = on;
}

static char *debuginfo_path;
static char debuginfo_buf[4200];

int gs_sym_sysroot(struct gs_symbolizer *s, const char *dir)
{
    s->find.sysroot = gs_sym_intern(s, dir);
    if (!s->find.sysroot)
        return -1;
    debuginfo_path = (char *)gs_symfind_debuginfo_path(&s->find, debuginfo_buf,
                                                       sizeof debuginfo_buf);
    return 0;
}

/* ---- modules ---- */

static uint64_t mod_key(const char *path, const uint8_t *bid, size_t bidlen)
{
    return hash_bytes(hash_str(path), bid, bidlen);
}

static int mhash_insert(struct gs_symbolizer *s, uint32_t idx)
{
    if ((s->nmods + 1) * 2 > s->mhcap) {
        size_t ncap = s->mhcap ? s->mhcap * 2 : 256;
        uint32_t *n = calloc(ncap, sizeof *n);
        if (!n)
            return -1;
        for (uint32_t i = 0; i < s->nmods; i++) {
            if (i == idx)
                continue;
            const struct modent *e = &s->mods[i];
            size_t j = mod_key(e->path, e->bid, e->bidlen) & (ncap - 1);
            while (n[j])
                j = (j + 1) & (ncap - 1);
            n[j] = i + 1;
        }
        free(s->mhash);
        s->mhash = n;
        s->mhcap = ncap;
    }
    const struct modent *e = &s->mods[idx];
    size_t j = mod_key(e->path, e->bid, e->bidlen) & (s->mhcap - 1);
    while (s->mhash[j])
        j = (j + 1) & (s->mhcap - 1);
    s->mhash[j] = idx + 1;
    return 0;
}

/* The module entry of (path, build id), created (not yet opened) if new. */
static int mod_find(struct gs_symbolizer *s, const struct gs_module *md, uint32_t *out)
{
    const char *path = md->path ? md->path : "";
    if (s->mhcap) {
        size_t j = mod_key(path, md->build_id, md->build_id_len) & (s->mhcap - 1);
        while (s->mhash[j]) {
            const struct modent *e = &s->mods[s->mhash[j] - 1];
            if (e->bidlen == md->build_id_len && strcmp(e->path, path) == 0 &&
                (!e->bidlen || memcmp(e->bid, md->build_id, e->bidlen) == 0)) {
                *out = s->mhash[j] - 1;
                return 0;
            }
            j = (j + 1) & (s->mhcap - 1);
        }
    }
    if (GS_GROW(s->mods, s->mcap, (size_t)s->nmods + 1))
        return -1;
    struct modent *e = &s->mods[s->nmods];
    memset(e, 0, sizeof *e);
    e->path = gs_sym_intern(s, path);
    if (!e->path)
        return -1;
    if (md->build_id_len) {
        e->bid = malloc(md->build_id_len);
        if (!e->bid)
            return -1;
        memcpy(e->bid, md->build_id, md->build_id_len);
        e->bidlen = md->build_id_len;
    }
    s->nmods++;
    if (mhash_insert(s, s->nmods - 1))
        return -1;
    *out = s->nmods - 1;
    return 0;
}

static const Dwfl_Callbacks offline_cb = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* The file at fd (found at where) reported alone at bias 0, its build id
 * checked: 1 when usable (e->dwfl, e->mod set; libdw owns fd), 0 when its
 * build id is another (msg says so), -1 when not ELF (msg). fd is closed
 * unless taken. */
static int mod_try(struct modent *e, int fd, const char *where, char *msg, size_t mlen)
{
    Dwfl *d = dwfl_begin(&offline_cb);
    if (!d) {
        close(fd);
        snprintf(msg, mlen, "%s: out of memory", where);
        return -1;
    }
    dwfl_report_begin(d);
    const char *base = strrchr(e->path, '/');
    /* on success libdw owns fd (closed by dwfl_end); on failure it is ours */
    Dwfl_Module *m = dwfl_report_elf(d, base ? base + 1 : e->path, where, fd, 0, false);
    if (!m)
        close(fd);
    dwfl_report_end(d, NULL, NULL);
    if (!m) {
        snprintf(msg, mlen, "%s: not readable as ELF (%s)", where, dwfl_errmsg(-1));
        dwfl_end(d);
        return -1;
    }
    if (e->bidlen) {
        const unsigned char *bits = NULL;
        GElf_Addr vaddr;
        int n = dwfl_module_build_id(m, &bits, &vaddr);
        if (n > 0 && ((size_t)n != e->bidlen || memcmp(bits, e->bid, e->bidlen) != 0)) {
            snprintf(msg, mlen,
                     "%s: build id differs from the one recorded (rebuilt since the run?): "
                     "frames shown as module+offset", where);
            dwfl_end(d);
            return 0;
        }
    }
    e->dwfl = d;
    e->mod = m;
    return 1;
}

/* The module's file from the first place (symfind.h) that has it with the
 * recorded build id. When none has, the problem listed is the first place's
 * (the path the trace names, or under the sysroot). */
static void mod_open(struct gs_symbolizer *s, struct modent *e)
{
    char msg[4200] = "", other[4200], where[4096];
    e->state = -1;
    if (!s->enabled)
        return;
    /* the trace names the file: only a regular one is opened, never
     * waiting (a FIFO or a device there would block the report forever),
     * and libdw reads the descriptor checked, not the path again */
    if (!e->path[0] || e->path[0] == '[' || strncmp(e->path, "linux-vdso", 10) == 0) {
        s->st.modules_missing++;
        return;
    }
    int mismatched = 0;
    for (unsigned i = 0;; i++) {
        int fd = gs_symfind_open(&s->find, e->path, e->bid, e->bidlen, i, where, sizeof where);
        if (fd == GS_FIND_END)
            break;
        if (fd < 0) {
            if (!msg[0] && where[0])
                snprintf(msg, sizeof msg, fd == GS_OPEN_NOT_REGULAR
                         ? "%s: not a regular file (frames shown as module+offset)"
                         : "%s: cannot read the file (frames shown as module+offset)", where);
            continue;
        }
        int ok = mod_try(e, fd, where, msg[0] ? other : msg, msg[0] ? sizeof other : sizeof msg);
        if (ok > 0) {
            e->state = 1;
            s->st.modules_opened++;
            return;
        }
        mismatched |= ok == 0;
    }
    if (msg[0])
        problem(s, e, msg);
    if (mismatched)
        s->st.modules_mismatched++;
    else
        s->st.modules_missing++;
}

/* ---- frames ---- */

static const char *demangled(struct gs_symbolizer *s, const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return gs_sym_intern(s, name);
    if (!s->demangle_tried) {
        s->demangle_tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            *(void **)&s->demangle = dlsym(h, "__cxa_demangle");
    }
    if (s->demangle) {
        int status = -1;
        char *d = s->demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            const char *r = gs_sym_intern(s, d);
            free(d);
            return r;
        }
        free(d);
    }
    return gs_sym_intern(s, name);
}

static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
    return n;
}

static int pool_push(struct gs_symbolizer *s, const struct gs_frame *f)
{
    if (GS_GROW_RAW(s->pool, s->pcap, s->pn + 1))
        return -1;
    s->pool[s->pn++] = *f;
    return 0;
}

/* Resolves rel in e into pool frames; returns -1 only when out of memory. */
/* A code address no symbol covers (a local function of a module without
 * its symbol table: libffi's, _ctypes'): the nearest function symbol below
 * it, "name+0xOFF", the way glibc's backtrace_symbols (dladdr) names it;
 * NULL when there is none. Only for addresses that would otherwise stay a
 * bare module+offset: a frame that names something. */
static int near_cmp(const void *a, const void *b)
{
    const struct nearsym *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* e's defined function symbols, sorted by address (ties in table order);
 * 0, or -1 when out of memory. One pass over the symbol table for the
 * module, not one per address: a module without local symbols (libtorch's)
 * sent every unnamed address through the whole table, 21 % of a report's
 * time for an import torch trace with 5000 groups a class. */
static int near_build(struct modent *e)
{
    int n = dwfl_module_getsymtab(e->mod);
    e->near_n = -1;
    e->near = n > 1 ? malloc((size_t)n * sizeof *e->near) : NULL;
    if (n > 1 && !e->near)
        return -1;
    int k = 0;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr at;
        const char *name = dwfl_module_getsym_info(e->mod, i, &sym, &at, NULL, NULL, NULL);
        if (!name || !*name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF)
            continue;
        e->near[k++] = (struct nearsym){at, name, i};
    }
    if (k)
        qsort(e->near, (size_t)k, sizeof *e->near, near_cmp);
    e->near_n = k ? k : -1; /* a module without them is not read again */
    return 0;
}

/* A code address no symbol covers (a local function of a module without
 * its symbol table: libffi's, _ctypes'): the nearest function symbol below
 * it, "name+0xOFF", the way glibc's backtrace_symbols (dladdr) names it;
 * NULL when there is none. Only for addresses that would otherwise stay a
 * bare module+offset: a frame that names something. Of several symbols at
 * that address, the first in the symbol table. */
static const char *nearest(struct gs_symbolizer *s, struct modent *e, Dwarf_Addr addr, char *buf,
                           size_t len)
{
    if (e->near_n == 0 && near_build(e))
        return NULL;
    /* the first entry of the last address at or below addr */
    size_t lo = 0, hi = e->near_n > 0 ? (size_t)e->near_n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->near[mid].at <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    GElf_Addr best_at = e->near[lo - 1].at;
    size_t b = lo - 1;
    while (b > 0 && e->near[b - 1].at == best_at)
        b--;
    const char *best = e->near[b].name;
    const char *d = demangled(s, best);
    snprintf(buf, len, "%s+0x%llx", d ? d : best, (unsigned long long)(addr + 1 - best_at));
    return gs_sym_intern(s, buf);
}

static int resolve(struct gs_symbolizer *s, struct modent *e, uint64_t ip, uint64_t rel)
{
    struct gs_frame f;
    memset(&f, 0, sizeof f);
    f.module = e->path;
    f.ip = ip;
    f.offset = rel;
    if (e->state == 0)
        mod_open(s, e);
    if (e->state != 1) {
        s->st.unresolved++;
        return pool_push(s, &f);
    }
    Dwarf_Addr addr = rel ? rel - 1 : 0;
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *symname = dwfl_module_addrinfo(e->mod, addr, &off, &sym, NULL, NULL, NULL);
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *ln = dwfl_module_getsrc(e->mod, addr);
    if (ln)
        file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
    const char *outer = NULL;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(e->mod, addr, &bias);
    if (cu) {
        Dwarf_Die *scopes = NULL;
        int ns = dwarf_getscopes(cu, addr - bias, &scopes);
        Dwarf_Files *files = NULL;
        size_t nfiles = 0;
        if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
            files = NULL;
        for (int i = 0; i < ns; i++) {
            int tag = dwarf_tag(&scopes[i]);
            if (tag == DW_TAG_inlined_subroutine) {
                struct gs_frame in = f;
                in.function = demangled(s, die_name(&scopes[i]));
                in.file = gs_sym_intern(s, file);
                in.line = line > 0 ? (uint32_t)line : 0;
                in.inlined = 1;
                if (pool_push(s, &in)) {
                    free(scopes);
                    return -1;
                }
                Dwarf_Attribute at;
                Dwarf_Word cf = 0, cl = 0;
                file = NULL;
                if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &at), &cf) == 0 &&
                    cf < nfiles)
                    file = dwarf_filesrc(files, cf, NULL, NULL);
                line = dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &at), &cl) == 0
                           ? (int)cl : 0;
            } else if (tag == DW_TAG_subprogram) {
                outer = die_name(&scopes[i]);
                break;
            }
        }
        free(scopes);
    }
    if (!symname)
        symname = outer;
    char near[512];
    f.function = symname ? demangled(s, symname) : nearest(s, e, addr, near, sizeof near);
    f.file = gs_sym_intern(s, file);
    f.line = line > 0 ? (uint32_t)line : 0;
    if (!f.function && !f.file)
        s->st.unresolved++;
    return pool_push(s, &f);
}

int gs_sym_resolve(struct gs_symbolizer *s, const struct gs_module *md, uint64_t ip,
                   struct gs_frame **out, uint32_t *n)
{
    s->st.lookups++;
    if (!md) {
        static __thread struct gs_frame bare;
        memset(&bare, 0, sizeof bare);
        bare.ip = ip;
        bare.offset = ip;
        s->st.unresolved++;
        *out = &bare;
        *n = 1;
        return 0;
    }
    uint32_t mi;
    if (mod_find(s, md, &mi))
        return -1;
    if (s->mods[mi].held && !s->quiet) {
        list_problem(s, s->mods[mi].held);
        s->mods[mi].held = NULL;
    }
    uint64_t rel = ip - md->base;
    if ((s->cn + 1) * 2 > s->ccap) {
        size_t ncap = s->ccap ? s->ccap * 2 : 4096;
        struct cachent *c = calloc(ncap, sizeof *c);
        if (!c)
            return -1;
        for (size_t i = 0; i < s->ccap; i++) {
            if (!s->cache[i].mod)
                continue;
            size_t j = gs_hash_addr(s->cache[i].rel ^ ((uint64_t)s->cache[i].mod << 48)) & (ncap - 1);
            while (c[j].mod)
                j = (j + 1) & (ncap - 1);
            c[j] = s->cache[i];
        }
        free(s->cache);
        s->cache = c;
        s->ccap = ncap;
    }
    size_t j = gs_hash_addr(rel ^ ((uint64_t)(mi + 1) << 48)) & (s->ccap - 1);
    while (s->cache[j].mod) {
        if (s->cache[j].mod == mi + 1 && s->cache[j].rel == rel) {
            s->st.cache_hits++;
            *out = s->pool + s->cache[j].first;
            *n = s->cache[j].n;
            /* the ip of a shared cache entry is another process's: restore ours */
            for (uint32_t k = 0; k < *n; k++)
                (*out)[k].ip = ip;
            return 0;
        }
        j = (j + 1) & (s->ccap - 1);
    }
    size_t first = s->pn;
    if (resolve(s, &s->mods[mi], ip, rel))
        return -1;
    s->cache[j].mod = mi + 1;
    s->cache[j].rel = rel;
    s->cache[j].first = (uint32_t)first;
    s->cache[j].n = (uint32_t)(s->pn - first);
    s->cn++;
    *out = s->pool + first;
    *n = (uint32_t)(s->pn - first);
    return 0;
}
