/* Checks shared by the CUDA test programs (tests/programs/cuda_*): a failed
 * CUDA call or expectation prints one line naming the file, line and call,
 * and exits 1; leak scenarios call gcspy_scan() when the program runs under
 * gcspy. Include after cuda_runtime_api.h and/or cuda.h: the macros for
 * each API exist only when its header was included. */
#ifndef GS_CUDA_DOUBLE_CHECK_H
#define GS_CUDA_DOUBLE_CHECK_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

#ifdef __CUDA_RUNTIME_API_H__
/* A runtime call that must succeed. */
#define CK(call)                                                               \
    do {                                                                       \
        cudaError_t ck_e = (call);                                             \
        if (ck_e != cudaSuccess) {                                             \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorName(ck_e), cudaGetErrorString(ck_e));         \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
/* A runtime call that must fail with `want`. */
#define CK_FAILS(call, want)                                                   \
    do {                                                                       \
        cudaError_t ck_e = (call);                                             \
        if (ck_e != (want)) {                                                  \
            fprintf(stderr, "%s:%d: %s: %s, expected %s\n", __FILE__, __LINE__, \
                    #call, cudaGetErrorName(ck_e), #want);                     \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#endif

#ifdef __cuda_cuda_h__
static inline const char *cu_name(CUresult r)
{
    const char *s = NULL;
    cuGetErrorName(r, &s);
    return s ? s : "unknown CUresult";
}
#define CU(call)                                                               \
    do {                                                                       \
        CUresult cu_r = (call);                                                \
        if (cu_r != CUDA_SUCCESS) {                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,     \
                    cu_name(cu_r));                                            \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#define CU_FAILS(call, want)                                                   \
    do {                                                                       \
        CUresult cu_r = (call);                                                \
        if (cu_r != (want)) {                                                  \
            fprintf(stderr, "%s:%d: %s: %s, expected %s\n", __FILE__, __LINE__, \
                    #call, cu_name(cu_r), #want);                              \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* Whether the driver is the gcspy double (for checks of its own knobs,
 * such as GS_CUDA_DOUBLE_MEM, that a real GPU cannot honour). Needs cuInit. */
static inline int on_double(void)
{
    char name[64] = "";
    return cuDeviceGetName(name, (int)sizeof name, 0) == CUDA_SUCCESS &&
           strcmp(name, "gcspy CUDA double") == 0;
}
#endif

/* Runs a leak scan now when gcspy is loaded (LD_PRELOAD=libgcspy.so), via
 * int gcspy_scan(void) of include/gcspy.h, looked up at run time so the
 * programs also run without gcspy. Returns gcspy_scan's result, or -2 when
 * gcspy is absent. */
static inline int maybe_scan(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    return scan ? scan() : -2;
}

/* Overwrites the dead stack below the caller, where a helper's frames may
 * still hold a pointer the scenario means to drop, and leaves the
 * caller-saved registers holding other values. */
static __attribute__((noinline, unused)) void clobber_stack(void)
{
    volatile char junk[64 * 1024];
    memset((char *)junk, 0, sizeof junk);
    __asm__ volatile("" : : "r"(junk) : "memory");
}

#endif
