/*
 * dlsym and dlvsym, interposed. A program that looks a function up through
 * a library's handle (ctypes.CDLL("libc.so.6").malloc, cffi's
 * ffi.dlopen("c"), plugin loaders, PyTorch's CUDA driver loader) gets that
 * library's own definition, which bypasses every LD_PRELOAD wrapper: what
 * it allocates through the pointer would be invisible. So a lookup through
 * a handle that finds the very function a hook calls returns the hook
 * (the filters the hooks register decide: hooks.c, cuda_hooks.c).
 *
 * Nothing else may change:
 *  - RTLD_NEXT and RTLD_DEFAULT lookups are resolved by glibc relative to
 *    the CALLER (the module its return address lies in: the next module
 *    after it, or its own lookup scope). A C wrapper calling the real dlsym
 *    would make libgcspy the caller. So dlsym and dlvsym are assembly stubs
 *    that jump (not call) to the real function for those two handles: glibc
 *    sees the program's return address, as if gcspy were not there. (Their
 *    results need no filter: LD_PRELOAD puts the hooks first in every
 *    global lookup already.) libgcspy's own RTLD_NEXT lookups go through
 *    the stub too, and mean "after libgcspy", as before.
 *  - A lookup through a handle is made once, by the real function (whose
 *    caller then only matters to audit modules), so dlerror() says exactly
 *    what it would have said; the filters call nothing that touches it.
 *  - The real dlsym and dlvsym are found without calling them: the first
 *    definitions after libgcspy's module in the loader's list, read from
 *    the modules' symbol tables (elfsym.c), at the first call.
 * This file is built without LTO: the stubs refer to its symbols by name.
 * x86-64 only; elsewhere nothing is interposed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>

#include "dlsym.h"
#include "elfsym.h"

#if defined(__x86_64__)

/* Read by the stubs: hidden, so that they reach them PC-relative. */
GS_HIDDEN __attribute__((used)) void *(*gs_real_dlsym)(void *, const char *);
GS_HIDDEN __attribute__((used)) void *(*gs_real_dlvsym)(void *, const char *, const char *);

static gs_dlsym_filter filters[3];

void gs_dlsym_add_filter(gs_dlsym_filter f)
{
    for (int i = 0; i < 3; i++) {
        gs_dlsym_filter none = NULL;
        if (__atomic_compare_exchange_n(&filters[i], &none, f, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
    }
}

static void *filtered(const char *name, void *p)
{
    for (int i = 0; p && name && i < 3; i++) {
        gs_dlsym_filter f = __atomic_load_n(&filters[i], __ATOMIC_ACQUIRE);
        if (f)
            p = f(name, p);
    }
    return p;
}

/* The first dlsym and dlvsym defined after the module that holds this
 * code, in the loader's order (libc's, or a later interposer's). */
struct next {
    uintptr_t self;
    int past;
    void *dlsym, *dlvsym;
};

static int next_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct next *n = arg;
    if (!n->past) {
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            if (ph->p_type == PT_LOAD && n->self >= lo && n->self < lo + ph->p_memsz)
                n->past = 1;
        }
        return 0;
    }
    struct gs_dynsyms d;
    if (gs_elf_dynsyms(info, &d))
        return 0;
    if (!n->dlsym)
        n->dlsym = gs_elf_lookup(&d, "dlsym");
    if (!n->dlvsym)
        n->dlvsym = gs_elf_lookup(&d, "dlvsym");
    return n->dlsym && n->dlvsym;
}

/* Called by the stubs while the pointers are unset (concurrent first calls
 * find the same answer). dl_iterate_phdr allocates nothing. */
GS_HIDDEN __attribute__((used)) void gs_dlsym_init(void)
{
    struct next n = {(uintptr_t)&gs_dlsym_init, 0, NULL, NULL};
    dl_iterate_phdr(next_cb, &n);
    __atomic_store_n(&gs_real_dlvsym, (void *(*)(void *, const char *, const char *))n.dlvsym,
                     __ATOMIC_RELEASE);
    __atomic_store_n(&gs_real_dlsym, (void *(*)(void *, const char *))n.dlsym, __ATOMIC_RELEASE);
}

/* A lookup through a handle (the stubs have checked the pointers). */
GS_HIDDEN __attribute__((used)) void *gs_dlsym_handle(void *h, const char *name)
{
    return filtered(name, gs_real_dlsym(h, name));
}

GS_HIDDEN __attribute__((used)) void *gs_dlvsym_handle(void *h, const char *name,
                                                       const char *version)
{
    return filtered(name, gs_real_dlvsym(h, name, version));
}

/* The stubs. At entry: rdi handle, rsi name (rdx version); RTLD_NEXT is -1,
 * RTLD_DEFAULT 0. The first call finds the real functions, keeping the
 * arguments (three pushes leave the stack 16-byte aligned for the call),
 * and returns NULL if there are none. */
#define GS_DL_STUB(name, real, handle)                                        \
    __asm__(".text\n"                                                         \
            ".globl " #name "\n"                                              \
            ".type " #name ", @function\n"                                    \
            #name ":\n"                                                       \
            ".cfi_startproc\n"                                                \
            "  mov " #real "(%rip), %rax\n"                                   \
            "  test %rax, %rax\n"                                             \
            "  jz 2f\n"                                                       \
            "1:\n"                                                            \
            "  cmp $-1, %rdi\n"                                               \
            "  je 3f\n"                                                       \
            "  test %rdi, %rdi\n"                                             \
            "  je 3f\n"                                                       \
            "  jmp " #handle "\n"                                             \
            "3:\n"                                                            \
            "  jmp *%rax\n"                                                   \
            "2:\n"                                                            \
            "  push %rdi\n"                                                   \
            ".cfi_adjust_cfa_offset 8\n"                                      \
            "  push %rsi\n"                                                   \
            ".cfi_adjust_cfa_offset 8\n"                                      \
            "  push %rdx\n"                                                   \
            ".cfi_adjust_cfa_offset 8\n"                                      \
            "  call gs_dlsym_init\n"                                          \
            "  pop %rdx\n"                                                    \
            ".cfi_adjust_cfa_offset -8\n"                                     \
            "  pop %rsi\n"                                                    \
            ".cfi_adjust_cfa_offset -8\n"                                     \
            "  pop %rdi\n"                                                    \
            ".cfi_adjust_cfa_offset -8\n"                                     \
            "  mov " #real "(%rip), %rax\n"                                   \
            "  test %rax, %rax\n"                                             \
            "  jnz 1b\n"                                                      \
            "  ret\n"                                                         \
            ".cfi_endproc\n"                                                  \
            ".size " #name ", .-" #name "\n")

GS_DL_STUB(dlsym, gs_real_dlsym, gs_dlsym_handle);
GS_DL_STUB(dlvsym, gs_real_dlvsym, gs_dlvsym_handle);

#else

void gs_dlsym_add_filter(gs_dlsym_filter f)
{
    (void)f;
}

#endif
