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
/* A function defined by any loaded module other than libgcspy, by name. */
void *gs_elf_find(const char *name);

#endif /* GCSPY_ELFSYM_H */
