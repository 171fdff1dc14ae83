/*
 * Symbols of loaded modules, read from their dynamic sections in memory
 * (no file access, no dlopen: the loader's state is left untouched).
 *
 * Users: dlsym.c finds the real dlsym without calling it; the probes for
 * CPython's functions (pyapi.h) and the loader's (roots.c) look symbols up
 * here instead of with dlsym, which would leave an error pending for the
 * program's dlerror() when a probe fails, and clear one it had left (glibc
 * keeps one per thread, in a block it mallocs); cuda_hooks.c finds the real
 * CUDA functions in libraries loaded with RTLD_LOCAL, where
 * dlsym(RTLD_NEXT) cannot see them (dlopen with RTLD_NOLOAD plus dlclose
 * would change reference counts and make the loader rebuild per-module
 * lists); torch.c walks a module's function symbols for
 * the caching allocator's code ranges. Callers hold the recursion flag and
 * no gcspy lock: dl_iterate_phdr takes the loader's lock.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <string.h>

#include "elfsym.h"
#include "modules.h"

int gs_elf_dynsyms(const struct dl_phdr_info *info, struct gs_dynsyms *d)
{
    memset(d, 0, sizeof *d);
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return -1;
    uintptr_t base = info->dlpi_addr;
    d->base = base;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        /* ld.so relocates these in place for most modules, not for the
         * vdso (read-only): an address below the load address is relative. */
        uintptr_t p = dyn->d_un.d_ptr;
        if (p < base)
            p += base;
        switch (dyn->d_tag) {
        case DT_SYMTAB: d->symtab = (const void *)p; break;
        case DT_STRTAB: d->strtab = (const char *)p; break;
        case DT_STRSZ: d->strsz = dyn->d_un.d_val; break;
        case DT_GNU_HASH: d->gnu = (const uint32_t *)p; break;
        case DT_HASH: d->sysv = (const uint32_t *)p; break;
        }
    }
    if (!d->symtab || !d->strtab)
        return -1;
    /* The count: DT_HASH's nchain, else the end of the GNU hash chains. */
    if (d->sysv) {
        d->nsyms = d->sysv[1];
    } else if (d->gnu) {
        const uint32_t *g = d->gnu;
        uint32_t nbuckets = g[0], symoffset = g[1], bloom = g[2];
        const uint32_t *buckets = g + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t max = 0;
        for (uint32_t b = 0; b < nbuckets; b++)
            if (buckets[b] > max)
                max = buckets[b];
        if (max >= symoffset)
            while (!(chain[max - symoffset] & 1))
                max++;
        d->nsyms = max < symoffset ? symoffset : (size_t)max + 1;
    }
    return 0;
}

/* A defined symbol's address in one module, through its GNU hash table. */
void *gs_elf_lookup(const struct gs_dynsyms *d, const char *name)
{
    const uint32_t *g = d->gnu;
    if (!g)
        return NULL;
    uint32_t h = 5381;
    for (const char *s = name; *s; s++)
        h = h * 33 + (uint8_t)*s;
    uint32_t nbuckets = g[0], symoffset = g[1], bloom_size = g[2], shift = g[3];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(g + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    if (!nbuckets || !bloom_size)
        return NULL;
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(h / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
    if ((word & mask) != mask)
        return NULL;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        const ElfW(Sym) *s = (const ElfW(Sym) *)d->symtab + i;
        if ((h | 1) == (h2 | 1) && s->st_shndx != SHN_UNDEF && s->st_value &&
            s->st_name < d->strsz && !strcmp(d->strtab + s->st_name, name))
            return (void *)(d->base + s->st_value);
        if (h2 & 1)
            return NULL;
    }
}

struct find { const char *name; void *p; };

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find *f = arg;
    struct gs_dynsyms d;
    if (gs_elf_dynsyms(info, &d))
        return 0;
    void *p = gs_elf_lookup(&d, f->name);
    if (p && !((uintptr_t)p >= gs_self_lo && (uintptr_t)p < gs_self_hi)) {
        f->p = p;
        return 1;
    }
    return 0;
}

void *gs_elf_find(const char *name)
{
    struct find f = {name, NULL};
    dl_iterate_phdr(find_cb, &f);
    return f.p;
}
