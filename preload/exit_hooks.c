/*
 * exit, _exit and _Exit, interposed. Each is an assembly stub that notes,
 * before any frame of gcspy's is pushed, where the program left its stack:
 * the caller's stack pointer after the call, and its callee-saved registers
 * (a pointer the program holds only in rbx..r15 is still its). The exit
 * scan reads the exiting thread's stack from there up, as memcheck and
 * LeakSanitizer do: the frames of exit() (__run_exit_handlers, the
 * handlers, gcspy's own) lie over dead frames of the program with slots
 * they never wrote, and the program's last pointer to a leaked block left
 * in such a slot kept it "reachable" (leak_exit_dead_frame). The note goes
 * in life.c's thread-local gs_exit_from; then the stub jumps to the C part
 * here.
 *
 * exit() then runs the program's exit handlers and gcspy's (life.c), which
 * scans. _exit and _Exit run none: gcspy scans there, before writing the
 * trace's end (multiprocessing children, DataLoader workers and many C
 * programs and shells leave this way; a forked worker that leaked passed
 * `gcspy check` when it had no scan). A vfork child, which shares our
 * memory, is left alone by gs_core_exit (its pid differs), and so is a
 * call from inside gcspy (a signal handler that interrupted a hook).
 *
 * Built without LTO: the stubs name C symbols. x86-64 only; elsewhere these
 * are plain C wrappers (the scan starts from gcspy's frame).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dlsym.h"
#include "exit_hooks.h"
#include "life.h"

static void (*real_exit)(int);
static void (*real__exit)(int);
static void (*real__Exit)(int);

/* The C parts, after the stubs' note (hidden: the stubs jump to them). */
GS_HIDDEN _Noreturn __attribute__((used)) void gs_exit_c(int status)
{
    if (!real_exit)
        gs_exit_hooks_resolve();
    if (real_exit)
        real_exit(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

static _Noreturn void end_now(void (*real)(int), int status)
{
    if (!gs_tls.in_hook)
        gs_core_exit(status, 1); /* the scan, then the trace's end */
    if (real)
        real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

GS_HIDDEN _Noreturn __attribute__((used)) void gs__exit_c(int status)
{
    if (!real__exit)
        gs_exit_hooks_resolve();
    end_now(real__exit, status);
}

GS_HIDDEN _Noreturn __attribute__((used)) void gs__Exit_c(int status)
{
    if (!real__Exit)
        gs_exit_hooks_resolve();
    end_now(real__Exit, status);
}

#if defined(__x86_64__)
GS_ENTRY_STUB(exit, gs_exit_from, gs_exit_c);
GS_ENTRY_STUB(_exit, gs_exit_from, gs__exit_c);
GS_ENTRY_STUB(_Exit, gs_exit_from, gs__Exit_c);
#else
__attribute__((visibility("default"))) void exit(int status) { gs_exit_c(status); }
__attribute__((visibility("default"))) void _exit(int status) { gs__exit_c(status); }
__attribute__((visibility("default"))) void _Exit(int status) { gs__Exit_c(status); }
#endif

/* dlsym(handle, "exit") found libc's: the program gets the stub. */
static void *exit_filter(const char *name, void *p)
{
    if (p == (void *)real_exit && !strcmp(name, "exit"))
        return (void *)&exit;
    if (p == (void *)real__exit && !strcmp(name, "_exit"))
        return (void *)&_exit;
    if (p == (void *)real__Exit && !strcmp(name, "_Exit"))
        return (void *)&_Exit;
    return p;
}

void gs_exit_hooks_resolve(void)
{
    static int done;
    real_exit = (void (*)(int))dlsym(RTLD_NEXT, "exit");
    real__exit = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
    real__Exit = (void (*)(int))dlsym(RTLD_NEXT, "_Exit");
    if (!done) {
        done = 1;
        gs_dlsym_add_filter(exit_filter);
    }
}
