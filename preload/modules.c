/*
 * The module map: every loaded object (path, build id, load bias, PT_LOAD
 * segments), written as MODULE records so the analyzer can symbolize raw
 * return addresses offline, and MODULE_UNLOAD when an object goes away.
 *
 * gcspy does not hook dlopen: calling the real dlopen from a wrapper would
 * make libgcspy the caller, and the loader resolves RUNPATH, $ORIGIN and
 * RTLD_NEXT against the caller. Instead the map is synced (1) before any
 * new stack is interned, so a module is always recorded before the first
 * stack that points into it, and (2) by the writer every flush interval,
 * which catches dlclose. dl_iterate_phdr's adds/subs counters make an
 * unchanged map cost one callback. dlclose, which does not depend on its
 * caller, is interposed for the stack walk's sake only (dlclose.c).
 *
 * Locking: the callback runs under the loader's lock; inside it we take
 * mod_lock, then the records (emit.c) take the meta stream lock (loader →
 * mod → meta). Nobody takes the loader lock while holding mod_lock or meta.
 * A changed map also bumps gs_unw_map_gen (unwind.c), so that no thread's
 * cached unwind rule outlives the module it was read from for long.
 * Seeing libcuda.so in the map sets gs_cuda_loaded, which the writer's tick
 * reads to attach CUPTI (cupti_load.c).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "emit.h"
#include "mem.h"
#include "modules.h"
#include "unwind.h"

#define GS_MAX_MODULES 8192

struct module {
    uintptr_t base;
    uintptr_t first_vaddr;
    uint32_t id;
    uint64_t gen;
};

uintptr_t gs_self_lo, gs_self_hi, gs_self_data_lo, gs_self_data_hi;
atomic_int gs_cuda_loaded;

static struct module *mods;
static int nmods;
static uint32_t next_id = 1;
static uint64_t gen;
static atomic_int mod_lock;
static unsigned long long last_adds = ~0ull, last_subs = ~0ull;
static char exe_path[4096];

struct sync_ctx {
    int first;
    uint64_t gen;
    int changed;
};

static size_t build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
            const uint8_t *d = p + sizeof *nh + name;
            if (d + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(p + sizeof *nh, "GNU", 4)) {
                *out = d;
                return nh->n_descsz;
            }
            p = d + desc;
        }
    }
    return 0;
}

static int emit_module(const struct dl_phdr_info *info, uint32_t id)
{
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : exe_path;
    const char *base = strrchr(name, '/');
    if (!strncmp(base ? base + 1 : name, "libcuda.so", 10))
        atomic_store(&gs_cuda_loaded, 1);
    size_t nlen = strnlen(name, 4096);
    const uint8_t *bid = NULL;
    size_t blen = build_id(info, &bid);
    if (blen > 64)
        blen = 64;
    return gs_emit_module(info, id, name, nlen, bid, blen);
}

static uintptr_t first_vaddr(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD)
            return info->dlpi_phdr[i].p_vaddr;
    return 0;
}

static void note_self(const struct dl_phdr_info *info)
{
    uintptr_t me = (uintptr_t)&gs_modules_sync;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
            gs_self_lo = lo;
            gs_self_hi = hi;
            mine = 1;
        }
    }
    /* Our data and bss (the bootstrap pool among them) are never roots. */
    for (int i = 0; mine && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            gs_self_data_lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
            gs_self_data_hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
    }
}

static int sync_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct sync_ctx *c = arg;
    if (c->first) {
        c->first = 0;
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
            if (info->dlpi_adds == last_adds && info->dlpi_subs == last_subs)
                return 1; /* nothing loaded or unloaded since last time */
            last_adds = info->dlpi_adds;
            last_subs = info->dlpi_subs;
            /* The stack walk's cached rules (unwind.h) were read under
             * another map. */
            gs_unw_map_seen(last_adds, last_subs);
        }
        c->changed = 1;
    }
    if (!mods)
        return 1;
    uintptr_t fv = first_vaddr(info);
    gs_spin_lock(&mod_lock);
    int i;
    for (i = 0; i < nmods; i++)
        if (mods[i].base == info->dlpi_addr && mods[i].first_vaddr == fv)
            break;
    if (i < nmods) {
        mods[i].gen = c->gen;
    } else if (nmods < GS_MAX_MODULES) {
        mods[nmods] = (struct module){info->dlpi_addr, fv, next_id++, c->gen};
        nmods++;
        note_self(info);
        emit_module(info, mods[nmods - 1].id);
    }
    gs_spin_unlock(&mod_lock);
    return 0;
}

void gs_modules_sync(void)
{
    if (!mods) {
        mods = gs_pages_alloc(GS_MAX_MODULES * sizeof *mods);
        ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
        exe_path[n > 0 ? n : 0] = 0;
    }
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1; /* the loader may allocate under dl_iterate_phdr */
    gs_spin_lock(&mod_lock);
    uint64_t g = ++gen;
    gs_spin_unlock(&mod_lock);
    struct sync_ctx c = {1, g, 0};
    dl_iterate_phdr(sync_cb, &c);
    if (c.changed && mods) {
        gs_spin_lock(&mod_lock);
        for (int i = 0; i < nmods;) {
            if (mods[i].gen >= g) {
                i++;
                continue;
            }
            gs_emit_module_unload(mods[i].id);
            mods[i] = mods[--nmods];
        }
        gs_spin_unlock(&mod_lock);
    }
    gs_restore(saved);
}

static int reemit_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uint64_t g = *(const uint64_t *)arg;
    uintptr_t fv = first_vaddr(info);
    for (int i = 0; i < nmods; i++)
        if (mods[i].base == info->dlpi_addr && mods[i].first_vaddr == fv) {
            if (emit_module(info, mods[i].id) == 0)
                mods[i].gen = g;
        }
    return 0;
}

/* In a forked child: the new trace needs the whole map again. A module the
 * parent unloaded before its last sync is no longer in the loader's list:
 * it is dropped here, never written, so the child's trace cannot hold a
 * MODULE_UNLOAD of a module it never defined. */
void gs_modules_reemit(void)
{
    atomic_store(&mod_lock, 0); /* a thread that held it does not exist here */
    if (!mods)
        return;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    uint64_t g = ++gen;
    dl_iterate_phdr(reemit_cb, &g);
    for (int i = 0; i < nmods;) {
        if (mods[i].gen == g)
            i++;
        else
            mods[i] = mods[--nmods];
    }
    gs_restore(saved);
}
