/*
 * Stopping and restarting the world for a leak scan, with signals (no ptrace:
 * it must work under gdb, strace and in containers).
 *
 * The contract (bdwgc's pthread_stop_world.c and LLVM's
 * sanitizer_stoptheworld.h are the models):
 *  - The scanning thread lists the process's threads from /proc/self/task
 *    with raw getdents64 (no opendir: no malloc), sends each one the stop
 *    signal with tgkill, and waits for every one to acknowledge. It repeats
 *    the listing until a pass finds no new thread, so threads created during
 *    the stop are caught too.
 *  - The handler saves errno, copies the interrupted registers and stack
 *    pointer from its ucontext into the thread's slot, acknowledges, and
 *    waits on a futex until the world restarts. It calls nothing but raw
 *    syscalls: no malloc, no libc lock, nothing that could wait on a stopped
 *    thread.
 *  - A thread interrupted inside gcspy (its recursion flag set) may hold a
 *    gcspy lock or be halfway through a table update; it is not stopped
 *    there: the handler notes the request and returns, and the hook's exit
 *    path (gs_leave, shim.h) re-raises the signal once the thread has left
 *    gcspy. So a stopped world never has a gcspy lock held or a table
 *    mid-update.
 *  - Threads that never acknowledge (they block the signal, or hang inside
 *    gcspy) make the stop fail after a timeout: the world restarts, the scan
 *    is skipped with one line. A thread that exits meanwhile is dropped.
 *  - gcspy's own threads (the writer: gs_own_tids, shim.h) and the scanning
 *    thread itself are not stopped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "mem.h"
#include "stop.h"

#define GS_STOP_TIMEOUT_NS (3ull * 1000000000ull)

/* The stop signal and the stop-in-progress flag are gs_stop_sig and
 * gs_stop_active (state.c): gs_leave, on every hook's way out, reads them. */
static struct gs_stopped *slots;
static int nslots;
static atomic_uint acks;
static atomic_uint resume_word;

static long futex(atomic_uint *w, int op, unsigned v, const struct timespec *ts)
{
    return syscall(SYS_futex, w, op, v, ts, NULL, 0);
}

static void stop_handler(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    int saved = errno;
    if (!atomic_load(&gs_stop_active)) {
        errno = saved;
        return; /* a late signal from a stop that already ended */
    }
    if (gs_tls.in_hook) {
        gs_tls.stop_pending = 1; /* gs_leave re-raises on the way out */
        errno = saved;
        return;
    }
    int tid = gs_raw_gettid();
    struct gs_stopped *me = NULL;
    for (int i = 0; i < nslots; i++)
        if (slots[i].tid == tid) {
            me = &slots[i];
            break;
        }
    if (!me || atomic_load(&me->state) != 0) {
        errno = saved;
        return;
    }
    ucontext_t *uc = ucv;
    unsigned gen = atomic_load(&resume_word);
    for (int r = 0; r < GS_NREGS && r < NGREG; r++)
        me->regs[r] = (uintptr_t)uc->uc_mcontext.gregs[r];
    me->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    atomic_store(&me->state, 1);
    atomic_fetch_add(&acks, 1);
    futex(&acks, FUTEX_WAKE_PRIVATE, 1, NULL);
    while (atomic_load(&resume_word) == gen)
        futex(&resume_word, FUTEX_WAIT_PRIVATE, gen, NULL);
    errno = saved;
}

/* In a forked child: the parent's gcspy threads do not exist here. */
void gs_stop_atfork_child(void)
{
    gs_own_ntids = 0;
    atomic_store(&gs_stop_active, 0);
}

int gs_stop_init(void)
{
    if (gs_stop_sig)
        return 0;
    /* A real-time signal nobody handles: the program's own are left alone. */
    for (int s = SIGRTMAX - 2; s > SIGRTMIN + 4; s--) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = stop_handler;
            sa.sa_flags = SA_SIGINFO | SA_RESTART;
            sigfillset(&sa.sa_mask);
            if (sigaction(s, &sa, NULL) == 0) {
                gs_stop_sig = s;
                return 0;
            }
        }
    }
    return -1;
}

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Calls fn for every thread id of the process. */
static int each_task(void (*fn)(int tid, void *), void *arg)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            off += d->d_reclen;
            int tid = 0;
            const char *c = d->d_name;
            if (*c < '0' || *c > '9')
                continue;
            for (; *c >= '0' && *c <= '9'; c++)
                tid = tid * 10 + (*c - '0');
            fn(tid, arg);
        }
    }
    syscall(SYS_close, fd);
    return 0;
}

struct add_ctx {
    int self;
    int added;
    int overflow;
};

static void add_task(int tid, void *arg)
{
    struct add_ctx *c = arg;
    if (tid == c->self)
        return;
    for (int i = 0; i < gs_own_ntids; i++)
        if (gs_own_tids[i] == tid)
            return;
    for (int i = 0; i < nslots; i++)
        if (slots[i].tid == tid)
            return;
    if (nslots >= GS_MAX_STOPPED) {
        c->overflow = 1;
        return;
    }
    struct gs_stopped *s = &slots[nslots];
    memset(s, 0, sizeof *s);
    s->tid = tid;
    nslots++;
    if (syscall(SYS_tgkill, getpid(), tid, gs_stop_sig) != 0)
        atomic_store(&s->state, 2); /* already gone */
    c->added++;
}

static int task_alive(int tid)
{
    char path[64];
    gs_fmt(path, sizeof path, "/proc/self/task/%d", tid);
    return syscall(SYS_faccessat, AT_FDCWD, path, F_OK, 0) == 0;
}

/* Waits until every signalled thread acknowledged (or is gone). */
static int wait_acks(uint64_t deadline)
{
    for (;;) {
        int pending = 0;
        for (int i = 0; i < nslots; i++)
            if (atomic_load(&slots[i].state) == 0) {
                if (!task_alive(slots[i].tid))
                    atomic_store(&slots[i].state, 2);
                else
                    pending++;
            }
        if (!pending)
            return 0;
        if (gs_now_fine() > deadline)
            return -1;
        unsigned seen = atomic_load(&acks);
        struct timespec ts = {0, 2000000};
        futex(&acks, FUTEX_WAIT_PRIVATE, seen, &ts);
    }
}

int gs_stop_world(struct gs_stopped **out, int *n, char *why, size_t whylen)
{
    if (!gs_stop_sig) {
        gs_fmt(why, whylen, "no free real-time signal to stop threads with");
        return -1;
    }
    if (!slots && !(slots = gs_pages_alloc(GS_MAX_STOPPED * sizeof *slots))) {
        gs_fmt(why, whylen, "out of memory");
        return -1;
    }
    struct sigaction cur;
    if (sigaction(gs_stop_sig, NULL, &cur) || cur.sa_sigaction != stop_handler) {
        gs_fmt(why, whylen, "the program replaced gcspy's handler of signal %d", gs_stop_sig);
        return -1;
    }
    nslots = 0;
    atomic_store(&acks, 0);
    atomic_store(&gs_stop_active, 1);
    struct add_ctx c = {gs_raw_gettid(), 0, 0};
    uint64_t deadline = gs_now_fine() + GS_STOP_TIMEOUT_NS;
    do {
        c.added = 0;
        if (each_task(add_task, &c))
            break;
        if (wait_acks(deadline)) {
            int stuck = 0;
            for (int i = 0; i < nslots; i++)
                if (atomic_load(&slots[i].state) == 0)
                    stuck = slots[i].tid;
            gs_fmt(why, whylen, "thread %d did not stop within 3 s (it blocks signal %d?)", stuck,
                   gs_stop_sig);
            gs_start_world();
            return -1;
        }
    } while (c.added && !c.overflow);
    if (c.overflow) {
        gs_fmt(why, whylen, "more than %d threads", GS_MAX_STOPPED);
        gs_start_world();
        return -1;
    }
    *out = slots;
    *n = nslots;
    return 0;
}

void gs_start_world(void)
{
    /* Clear the flag first: a signal still in flight finds no stop and
     * returns at once. */
    atomic_store(&gs_stop_active, 0);
    atomic_fetch_add(&resume_word, 1);
    futex(&resume_word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL);
}
