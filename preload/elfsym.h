/*
 * Symbols of loaded modules (elfsym.c), read from their dynamic sections in
 * memory.
 */
#ifndef GCSPY_ELFSYM_H
#define GCSPY_ELFSYM_H

#include "shim.h"

struct dl_phdr_info;
struct gs_dynsyms {
    uintptr_t base;
    const void *symtab; /* ElfW(Sym) */
    const char *strtab;
    size_t strsz, nsyms;
    const uint32_t *gnu, *sysv;
};
int gs_elf_dynsyms(const struct dl_phdr_info *info, struct gs_dynsyms *d); /* 0 or -1 */
/* A symbol defined in one module (through its GNU hash table; the
 * address of an IFUNC's resolver, and whichever version comes first). */
void *gs_elf_lookup(const struct gs_dynsyms *d, const char *name);
/* A function defined by any loaded module other than libgcspy, by name,
 * the first in load order. Unlike dlsym it leaves the program's dlerror()
 * state alone, and it also sees modules loaded with RTLD_LOCAL. */
void *gs_elf_find(const char *name);

#endif /* GCSPY_ELFSYM_H */
