/*
 * The interposed libc functions (the list is hooks.def) and the bootstrap.
 *
 * Bootstrap without recursion: the real functions are found with
 * dlsym(RTLD_NEXT), and dlsym itself may call calloc; while the lookup runs,
 * allocations are served from a small static pool, and free/realloc/
 * malloc_usable_size recognise pool pointers for the rest of the run.
 *
 * Every hook checks, first, the per-thread recursion flag (gs_tls.in_hook):
 * allocations made by gcspy itself, by the libc functions it calls, and by a
 * signal handler that interrupts a hook pass straight through untracked, so
 * the shim never re-enters itself and never waits on a lock it holds. The
 * flag is per thread and survives fork in the forking thread.
 *
 * errno: hooks leave it as the real function left it; tracking work that may
 * touch it (a futex wait, an mmap) saves and restores it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <paths.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "dlsym.h"
#include "exit_hooks.h"
#include "life.h"
#include "mem.h"
#include "stack.h"
#include "threads.h"

#define GS_EXPORT __attribute__((visibility("default")))

#define GS_HOOK(name, ret, params, req) static ret(*real_##name) params;
#include "hooks.def"
#undef GS_HOOK

static atomic_int resolving;
static int resolved;
static int early_tried;
extern char **environ;

/* ---- the bootstrap pool ---- */

static _Alignas(64) char pool[256 << 10];
static atomic_size_t pool_used;

static inline int in_pool(const void *p)
{
    return (const char *)p >= pool && (const char *)p < pool + sizeof pool;
}

static void *pool_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t need = n + align + 16;
    size_t off = atomic_fetch_add(&pool_used, need);
    if (off + need > sizeof pool)
        return NULL;
    uintptr_t p = ((uintptr_t)(pool + off + 16) + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-1] = n;
    return (void *)p;
}

static size_t pool_size(const void *p)
{
    return ((const size_t *)p)[-1];
}

/* dlsym(handle, name) found the function a hook calls: the program gets
 * the hook (dlsym.c). Another definition (an allocator the program loads
 * itself) is left alone. */
static void *libc_filter(const char *name, void *p)
{
#define GS_HOOK(fn, ret, params, req)                                         \
    if (p == (void *)real_##fn && !strcmp(name, #fn))                         \
        return (void *)&fn;
#include "hooks.def"
#undef GS_HOOK
    return p;
}

/* cuda_hooks.c's, when it is built in. */
extern void *gs_cuda_dlsym_filter(const char *name, void *p) __attribute__((weak));

static void resolve(void)
{
    if (resolved)
        return;
    atomic_store(&resolving, 1);
    int ok = 1;
#define GS_HOOK(name, ret, params, req)                                       \
    real_##name = (ret(*) params)dlsym(RTLD_NEXT, #name);                     \
    if (!real_##name && req)                                                  \
        ok = 0;
#include "hooks.def"
#undef GS_HOOK
    atomic_store(&resolving, 0);
    resolved = 1;
    gs_dlsym_add_filter(libc_filter);
    gs_exit_hooks_resolve();
    if (gs_cuda_dlsym_filter)
        gs_dlsym_add_filter(gs_cuda_dlsym_filter);
    if (!ok) {
        atomic_store(&gs_state, GS_STOPPED);
        gs_log("a required libc function was not found; tracing is off");
    }
}

/* Tracking starts at the first hook call that can see the environment. */
static inline int tracking(void)
{
    int s = atomic_load_explicit(&gs_state, memory_order_relaxed);
    if (GS_LIKELY(s == GS_ON))
        return !(gs_tls.in_hook & 1); /* 0, or GS_IN_CUDA: the CUDA library's own */
    if (s == GS_OFF && !early_tried && environ && !gs_tls.in_hook) {
        early_tried = 1;
        gs_tls.in_hook = 1;
        gs_core_early_init(environ);
        gs_tls.in_hook = 0;
        return gs_tracing();
    }
    return 0;
}

__attribute__((constructor)) static void gs_ctor(int argc, char **argv, char **envp)
{
    (void)argc;
    (void)argv;
    resolve();
    gs_tls.in_hook = 1;
    if (atomic_load(&gs_state) == GS_OFF) {
        early_tried = 1;
        gs_core_early_init(envp);
    }
    gs_core_start();
    gs_tls.in_hook = 0;
}

/* ---- recording (called with in_hook set) ---- */

static inline uint32_t capture(void *frame)
{
    if (GS_UNLIKELY(!gs_tls.th) && !gs_tls.exited)
        gs_thread_get();
    return gs_stack_id(frame);
}

static inline void track(void *p, size_t n, unsigned fn, void *frame)
{
    int e = errno;
    gs_on_alloc((uintptr_t)p, n, capture(frame), GS_MEM_HOST, fn);
    errno = e;
}

/* ---- the hooks ---- */

GS_EXPORT void *malloc(size_t n)
{
    if (GS_UNLIKELY(!real_malloc)) {
        if (atomic_load(&resolving))
            return pool_alloc(n, 16);
        resolve();
    }
    if (!tracking())
        return real_malloc(n);
    int saved_ = gs_tls.in_hook; /* 0, or GS_IN_CUDA */
    gs_tls.in_hook = 1;
    void *p = real_malloc(n);
    if (GS_LIKELY(p))
        track(p, n, GS_FN_MALLOC, __builtin_frame_address(0));
    gs_restore(saved_);
    return p;
}

GS_EXPORT void free(void *p)
{
    if (!p || GS_UNLIKELY(in_pool(p)))
        return;
    if (GS_UNLIKELY(!real_free))
        resolve();
    if (atomic_load_explicit(&gs_state, memory_order_relaxed) != GS_ON || (gs_tls.in_hook & 1)) {
        real_free(p);
        return;
    }
    int saved_ = gs_tls.in_hook; /* 0, or GS_IN_CUDA */
    gs_tls.in_hook = 1;
    int e = errno;
    gs_on_free((uintptr_t)p);
    errno = e;
    real_free(p);
    gs_restore(saved_);
}

GS_EXPORT void *calloc(size_t n, size_t m)
{
    if (GS_UNLIKELY(!real_calloc)) {
        if (atomic_load(&resolving)) {
            size_t t;
            return __builtin_mul_overflow(n, m, &t) ? NULL : pool_alloc(t, 16);
        }
        resolve();
    }
    if (!tracking())
        return real_calloc(n, m);
    int saved_ = gs_tls.in_hook; /* 0, or GS_IN_CUDA */
    gs_tls.in_hook = 1;
    void *p = real_calloc(n, m);
    if (GS_LIKELY(p))
        track(p, n * m, GS_FN_CALLOC, __builtin_frame_address(0));
    gs_restore(saved_);
    return p;
}

static void *do_realloc(void *old, size_t n, void *frame)
{
    if (GS_UNLIKELY(in_pool(old))) {
        void *p = malloc(n);
        if (p)
            memcpy(p, old, pool_size(old) < n ? pool_size(old) : n);
        return p;
    }
    if (!tracking())
        return real_realloc(old, n);
    int saved_ = gs_tls.in_hook; /* 0, or GS_IN_CUDA */
    gs_tls.in_hook = 1;
    int e = errno;
    uint32_t stack = (n || !old) ? capture(frame) : 0;
    errno = e;
    void *p;
    if (old) {
        struct gs_shard *sh = gs_on_realloc_begin((uintptr_t)old);
        p = real_realloc(old, n);
        e = errno;
        gs_on_realloc_end(sh, (uintptr_t)old, (uintptr_t)p, n, stack);
        errno = e;
    } else {
        p = real_realloc(NULL, n);
        if (p) {
            e = errno;
            gs_on_alloc((uintptr_t)p, n, stack, GS_MEM_HOST, GS_FN_MALLOC);
            errno = e;
        }
    }
    gs_restore(saved_);
    return p;
}

GS_EXPORT void *realloc(void *old, size_t n)
{
    if (GS_UNLIKELY(!real_realloc)) {
        if (atomic_load(&resolving)) {
            void *p = pool_alloc(n, 16);
            if (p && old)
                memcpy(p, old, in_pool(old) && pool_size(old) < n ? pool_size(old) : n);
            return p;
        }
        resolve();
    }
    return do_realloc(old, n, __builtin_frame_address(0));
}

GS_EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
    size_t t;
    if (__builtin_mul_overflow(n, m, &t)) {
        errno = ENOMEM;
        return NULL;
    }
    if (GS_UNLIKELY(!real_realloc))
        resolve();
    return do_realloc(old, t, __builtin_frame_address(0));
}

#define ALIGNED_HOOK(call, fn, n)                                             \
    if (!tracking())                                                          \
        return call;                                                          \
    int saved_ = gs_tls.in_hook;                                              \
    gs_tls.in_hook = 1;                                                       \
    void *p = call;                                                           \
    if (GS_LIKELY(p))                                                         \
        track(p, n, fn, __builtin_frame_address(0));                          \
    gs_restore(saved_);                                                       \
    return p;

GS_EXPORT void *memalign(size_t align, size_t n)
{
    if (GS_UNLIKELY(!real_memalign)) {
        if (atomic_load(&resolving))
            return pool_alloc(n, align);
        resolve();
    }
    ALIGNED_HOOK(real_memalign(align, n), GS_FN_MEMALIGN, n)
}

GS_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (GS_UNLIKELY(!real_aligned_alloc)) {
        if (atomic_load(&resolving))
            return pool_alloc(n, align);
        resolve();
    }
    ALIGNED_HOOK(real_aligned_alloc(align, n), GS_FN_MEMALIGN, n)
}

GS_EXPORT void *valloc(size_t n)
{
    if (GS_UNLIKELY(!real_valloc)) {
        if (atomic_load(&resolving))
            return pool_alloc(n, 4096);
        resolve();
    }
    ALIGNED_HOOK(real_valloc(n), GS_FN_VALLOC, n)
}

GS_EXPORT void *pvalloc(size_t n)
{
    if (GS_UNLIKELY(!real_pvalloc)) {
        if (atomic_load(&resolving))
            return pool_alloc((n + 4095) & ~(size_t)4095, 4096);
        resolve();
    }
    if (!real_pvalloc)
        return valloc((n + 4095) & ~(size_t)4095);
    size_t rounded = (n + 4095) & ~(size_t)4095;
    ALIGNED_HOOK(real_pvalloc(n), GS_FN_VALLOC, rounded ? rounded : 4096)
}

GS_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (GS_UNLIKELY(!real_posix_memalign)) {
        if (atomic_load(&resolving)) {
            *out = pool_alloc(n, align);
            return *out ? 0 : ENOMEM;
        }
        resolve();
    }
    if (!tracking())
        return real_posix_memalign(out, align, n);
    int saved_ = gs_tls.in_hook; /* 0, or GS_IN_CUDA */
    gs_tls.in_hook = 1;
    int rc = real_posix_memalign(out, align, n);
    if (rc == 0 && *out)
        track(*out, n, GS_FN_MEMALIGN, __builtin_frame_address(0));
    gs_restore(saved_);
    return rc;
}

GS_EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (in_pool(p))
        return pool_size(p);
    if (GS_UNLIKELY(!real_malloc_usable_size))
        resolve();
    return real_malloc_usable_size(p);
}

/* exec: flush what the old image traced; the new image traces itself. */
static void before_exec(const char *path)
{
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    gs_on_exec(path);
    gs_restore(saved);
}

GS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    resolve();
    before_exec(path);
    return real_execve(path, argv, envp);
}

GS_EXPORT int execv(const char *path, char *const argv[])
{
    resolve();
    before_exec(path);
    return real_execv(path, argv);
}

GS_EXPORT int execvp(const char *file, char *const argv[])
{
    resolve();
    before_exec(file);
    return real_execvp(file, argv);
}

GS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    resolve();
    before_exec(file);
    return real_execvpe(file, argv, envp);
}

GS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    resolve();
    char path[40];
    gs_fmt(path, sizeof path, "/proc/self/fd/%d", fd);
    before_exec(path);
    if (real_fexecve)
        return real_fexecve(fd, argv, envp);
    return (int)syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
}

GS_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags)
{
    resolve();
    before_exec(path);
    if (real_execveat)
        return real_execveat(dirfd, path, argv, envp, flags);
    return (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags);
}

/* execl, execle and execlp: glibc builds the argument vector and calls its
 * hidden __execve (or __execvpe), which no hook sees; so they are rebuilt
 * here the way glibc builds them (the count first, E2BIG past INT_MAX, the
 * vector on the stack) and go through the hooks above. */
#define GS_COLLECT_ARGV(arg0, last_named, argv_name, then_envp)               \
    va_list ap;                                                               \
    ptrdiff_t argc;                                                           \
    va_start(ap, last_named);                                                 \
    for (argc = 1; va_arg(ap, const char *); argc++)                          \
        if (argc == INT_MAX) {                                                \
            va_end(ap);                                                       \
            errno = E2BIG;                                                    \
            return -1;                                                        \
        }                                                                     \
    va_end(ap);                                                               \
    char *argv_name[argc + 1];                                                \
    argv_name[0] = (char *)(arg0);                                            \
    va_start(ap, last_named);                                                 \
    for (ptrdiff_t i = 1; i <= argc; i++)                                     \
        argv_name[i] = va_arg(ap, char *);                                    \
    then_envp;                                                                \
    va_end(ap);

GS_EXPORT int execl(const char *path, const char *arg, ...)
{
    GS_COLLECT_ARGV(arg, arg, argv, (void)0)
    resolve();
    before_exec(path);
    return real_execve(path, argv, environ);
}

GS_EXPORT int execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    GS_COLLECT_ARGV(arg, arg, argv, envp = va_arg(ap, char *const *))
    resolve();
    before_exec(path);
    return real_execve(path, argv, envp);
}

GS_EXPORT int execlp(const char *file, const char *arg, ...)
{
    GS_COLLECT_ARGV(arg, arg, argv, (void)0)
    resolve();
    before_exec(file);
    return real_execvp(file, argv);
}

/* fork from a signal handler that interrupted gcspy in this thread (the
 * recursion flag is set: the program was inside a hook, maybe inside the
 * real malloc with an arena lock held). glibc's fork in a multi-threaded
 * process (gcspy's writer makes every traced process one) takes every
 * malloc arena lock, and would wait forever on the one the interrupted
 * frame holds, where the same single-threaded program without gcspy forks
 * fine. Such a fork goes through _Fork (glibc 2.34, POSIX 2024's
 * async-signal-safe fork): no malloc locks, no pthread_atfork handlers (the
 * program's own included: POSIX no longer lists fork as async-signal-safe
 * for that reason), and the child does not trace. gcspy's writer thread
 * must hold no arena lock at that instant (its mallinfo2 samples): the fork
 * waits for it (daemon.c). Any other fork is the real one, with gcspy's
 * atfork handlers (life.c). */
GS_EXPORT pid_t fork(void)
{
    resolve();
    if (!gs_tls.in_hook || !real__Fork)
        return real_fork ? real_fork() : (pid_t)syscall(SYS_fork);
    gs_daemon_fork_begin();
    pid_t p = real__Fork();
    if (p == 0) {
        gs_fork_child_untraced();
        return 0; /* the child's count is never read: it has no writer */
    }
    int e = errno;
    gs_daemon_fork_end();
    errno = e;
    return p;
}

/* unshare and setns: the kernel allows a new user namespace, and joining a
 * user, mount or time namespace, only to a single-threaded process (with
 * its own file-system context); the writer thread steps aside for the call
 * (life.c). setns with nstype 0 may join any of them: it steps aside too. */
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif

GS_EXPORT int unshare(int flags)
{
    resolve();
    if (!real_unshare)
        return (int)syscall(SYS_unshare, flags);
    int parked = (flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)) && !gs_tls.in_hook
                     ? gs_alone_begin() : 0;
    int rc = real_unshare(flags);
    int e = errno;
    gs_alone_end(parked);
    errno = e;
    return rc;
}

GS_EXPORT int setns(int fd, int nstype)
{
    resolve();
    if (!real_setns)
        return (int)syscall(SYS_setns, fd, nstype);
    int parked = (!nstype || (nstype & (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWTIME))) && !gs_tls.in_hook
                     ? gs_alone_begin() : 0;
    int rc = real_setns(fd, nstype);
    int e = errno;
    gs_alone_end(parked);
    errno = e;
    return rc;
}

/* quick_exit runs the at_quick_exit handlers and ends through libc's hidden
 * _exit: the trace is ended first (with the exit scan, as at exit: this is
 * the program's own, orderly end), then the real function runs; without
 * it, the hooked _exit (exit_hooks.c) ends the process. */
GS_EXPORT void quick_exit(int status)
{
    resolve();
    if (!gs_tls.in_hook)
        gs_core_exit(status, 1);
    if (real_quick_exit)
        real_quick_exit(status);
    _exit(status);
}

/* daemon(): glibc's parent ends inside it through the hidden _exit, which no
 * hook sees, so its trace would have no end. It is rebuilt here as glibc
 * 2.36 has it (misc/daemon.c): fork, the parent ends through the hooked
 * _exit (exit_hooks.c: the scan, then the trace's end), the
 * child makes a session, moves to / and points 0, 1 and 2 at /dev/null
 * unless asked not to (ENODEV when /dev/null is not the null device). */
GS_EXPORT int daemon(int nochdir, int noclose)
{
    resolve();
    switch (fork()) {
    case -1:
        return -1;
    case 0:
        break;
    default:
        _exit(0);
    }
    if (setsid() == -1)
        return -1;
    if (!nochdir)
        (void)chdir("/");
    if (!noclose) {
        struct stat st;
        int fd = open(_PATH_DEVNULL, O_RDWR, 0);
        if (fd == -1)
            return -1;
        if (fstat(fd, &st) != 0) {
            close(fd);
            return -1;
        }
        if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
            close(fd);
            errno = ENODEV;
            return -1;
        }
        (void)dup2(fd, STDIN_FILENO);
        (void)dup2(fd, STDOUT_FILENO);
        (void)dup2(fd, STDERR_FILENO);
        if (fd > 2)
            (void)close(fd);
    }
    return 0;
}
