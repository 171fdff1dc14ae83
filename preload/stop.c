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
 *  - The stop is not visible as an interruption: a thread blocked in a call
 *    that a handler makes fail with EINTR whatever SA_RESTART says (pause,
 *    sigsuspend, poll and epoll_wait without a timeout, ...) has it made again
 *    when it resumes (restart_call, with the call read from
 *    /proc/self/task/TID/syscall before the signal is sent).
 *  - A thread that blocks the stop signal is not signalled when it waits in
 *    the kernel: it is parked (scanned whole, never stopped: try_park);
 *    running, it gets the signal and 100 ms to unblock it or to wait in the
 *    kernel, or the stop fails then (recheck_blocker). Threads that never acknowledge (they
 *    hang inside gcspy, or blocked the signal after they were listed) make
 *    the stop fail after a timeout: the world restarts, the scan is skipped
 *    with one line. A thread that exits meanwhile is dropped, and so is a
 *    zombie still listed (the main thread after pthread_exit: task_gone).
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
#include <time.h>
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
/* Threads inside stop_handler past its checks: a stop may not begin until
 * the last one's threads have left it (gs_stop_world). A thread still on
 * its way out blocks the stop signal (a handler runs with its own signal
 * blocked), so the next stop took it for a blocker and parked it, running:
 * rel_pause's fork mode, whose scans follow each other within
 * milliseconds, had a scan with 7 of its 8 threads stopped. */
static atomic_int in_handlers;
static atomic_uint resume_word;

static long futex(atomic_uint *w, int op, unsigned v, const struct timespec *ts)
{
    return syscall(SYS_futex, w, op, v, ts, NULL, 0);
}

/* The blocking calls a handler interrupts with EINTR whatever SA_RESTART
 * says (signal(7), "Interruption of system calls") that may safely be made
 * again with the same arguments: those with no timeout, an absolute
 * deadline, or a timeout the kernel rewrites to the time left (select,
 * pselect6, ppoll). A call with a relative timeout (nanosleep, poll or
 * epoll_wait with one, a FUTEX_WAIT with one) would start it again in full:
 * under scans more frequent than its timeout it would never end, so it
 * keeps its EINTR, as do socket calls (they see EINTR only with a socket
 * timeout) and connect. read, write, wait4 and the futex wait without a
 * timeout are restarted by the kernel itself under SA_RESTART. a[] holds
 * the call's six arguments. */
static int restartable(long nr, const greg_t *a)
{
    switch (nr) {
    case SYS_pause:
    case SYS_rt_sigsuspend:
    case SYS_ppoll:
    case SYS_select:
    case SYS_pselect6:
    case SYS_msgrcv:
    case SYS_msgsnd:
    case SYS_semop:
        return 1;
    case SYS_rt_sigtimedwait:
    case SYS_epoll_pwait2:
    case SYS_semtimedop:
        return a[nr == SYS_rt_sigtimedwait ? 2 : 3] == 0; /* no timeout */
    case SYS_io_getevents:
        return a[4] == 0;
    case SYS_clock_nanosleep:
        return (a[1] & TIMER_ABSTIME) != 0;
    case SYS_poll:
        return (int)a[2] < 0;
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
        return (int)a[3] < 0;
    case SYS_futex: {
        int cmd = (int)a[1] & FUTEX_CMD_MASK;
        return !(cmd == FUTEX_WAIT && a[3]); /* FUTEX_WAIT's timeout is relative */
    }
    }
    return 0;
}

/* What restart_call needs of a thread's slot, copied by its handler before
 * it acknowledges: once the world runs again the next stop reuses the
 * slots (nslots back to 0, each one cleared and refilled), possibly before
 * this handler got the CPU back to restart its call. Read from the slot
 * after the resume, a thread blocked in pause found the next stop's
 * "not seen in a call" there and kept its EINTR (rel_pause in fork mode,
 * whose scans follow each other within milliseconds: 4 runs of 40). A
 * stop now also waits for the last one's handlers (in_handlers), but only
 * for 200 ms: the copy keeps the call right when a thread takes longer. */
struct seen_call {
    long sc_nr;
    int ran_seen;
    uintptr_t sc_pc;
    uintptr_t sc_args[6];
};

/* The stop signal must not be seen as an interruption: when it interrupted
 * one of the calls above (the one the thread was seen blocked in before it
 * was signalled: same return address, same six arguments, the kernel's
 * EINTR in rax, a syscall instruction just before), the call is made again
 * on the way out, as the kernel restarts a call itself: rax back to the
 * call's number, rip back onto the syscall instruction. Not when another
 * signal the interrupted code accepts is pending: its handler runs next,
 * and the program must see EINTR for it, as without gcspy. */
static void restart_call(const struct seen_call *me, ucontext_t *uc)
{
    greg_t *g = uc->uc_mcontext.gregs;
    if (g[REG_RAX] != -EINTR)
        return;
    const greg_t a[6] = {g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]};
    const unsigned char *ip = (const unsigned char *)g[REG_RIP];
    long nr = me->sc_nr;
    if (nr < 0) {
        /* Seen running when /proc was read, then it entered the call before
         * the signal came (rel_pause's epoll_wait, about one run in six):
         * the call's number from the wrapper's "mov $NR, %eax" right before
         * the syscall instruction (glibc's wrappers), or no restart. The
         * syscall instruction lies within the thread's own code, which
         * /proc showed it running. */
        if (!me->ran_seen || ip[-2] != 0x0f || ip[-1] != 0x05 || ip[-7] != 0xb8)
            return;
        int32_t imm;
        memcpy(&imm, ip - 6, sizeof imm);
        nr = imm;
    } else {
        if ((uintptr_t)ip != me->sc_pc)
            return;
        for (int i = 0; i < 6; i++)
            if ((uintptr_t)a[i] != me->sc_args[i])
                return;
    }
    if (!restartable(nr, a))
        return;
    if (ip[-2] != 0x0f || ip[-1] != 0x05)
        return;
    uint64_t pending = 0, blocked;
    if (syscall(SYS_rt_sigpending, &pending, sizeof pending))
        return;
    memcpy(&blocked, &uc->uc_sigmask, sizeof blocked);
    if (pending & ~blocked & ~(1ull << (gs_stop_sig - 1)))
        return;
    g[REG_RAX] = nr;
    g[REG_RIP] -= 2;
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
    if (!me || atomic_load(&me->state) != GS_STOP_SIGNALLED) {
        errno = saved;
        return;
    }
    atomic_fetch_add(&in_handlers, 1);
    ucontext_t *uc = ucv;
    struct seen_call seen = {me->sc_nr, me->ran_seen, me->sc_pc, {0}};
    memcpy(seen.sc_args, me->sc_args, sizeof seen.sc_args);
    unsigned gen = atomic_load(&resume_word);
    for (int r = 0; r < GS_NREGS && r < NGREG; r++)
        me->regs[r] = (uintptr_t)uc->uc_mcontext.gregs[r];
    me->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    atomic_store(&me->state, GS_STOP_STOPPED);
    atomic_fetch_add(&acks, 1);
    futex(&acks, FUTEX_WAKE_PRIVATE, 1, NULL);
    while (atomic_load(&resume_word) == gen)
        futex(&resume_word, FUTEX_WAIT_PRIVATE, gen, NULL);
    restart_call(&seen, uc);
    atomic_fetch_sub(&in_handlers, 1);
    errno = saved;
}

/* In a forked child: the parent's gcspy threads do not exist here. */
void gs_stop_atfork_child(void)
{
    gs_own_ntids = 0;
    atomic_store(&gs_stop_active, 0);
    atomic_store(&in_handlers, 0); /* the parent's other threads are not here */
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

/* Reads lower-case hex digits from *c on, moving *c past them. */
static uint64_t read_hex(const char **c)
{
    uint64_t x = 0;
    for (;; (*c)++) {
        int d = **c >= '0' && **c <= '9' ? **c - '0' : **c >= 'a' && **c <= 'f' ? **c - 'a' + 10 : -1;
        if (d < 0)
            return x;
        x = x * 16 + (uint64_t)d;
    }
}

/* Parses "N 0xA1 ... 0xA6 0xSP 0xPC" (blocked in call N), "-1 0xSP 0xPC"
 * (blocked outside a call) or "running" from /proc/self/task/TID/syscall.
 * 0 when the thread is blocked (s->sp, s->sc_* set), -1 when it runs. */
static int read_syscall(int tid, struct gs_stopped *s)
{
    char path[64], buf[256];
    gs_fmt(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    ssize_t n = gs_read_file(path, buf, sizeof buf - 1);
    if (n <= 0 || (buf[0] != '-' && (buf[0] < '0' || buf[0] > '9')))
        return -1;
    buf[n] = 0;
    uintptr_t v[8] = {0};
    int k = 0;
    long nr = 0;
    const char *c = buf;
    if (*c == '-') {
        nr = -1;
        while (*c && *c != ' ')
            c++;
    } else {
        for (; *c >= '0' && *c <= '9'; c++)
            nr = nr * 10 + (*c - '0');
    }
    while (*c == ' ' && k < 8) {
        c++;
        if (c[0] == '0' && c[1] == 'x')
            c += 2;
        v[k++] = (uintptr_t)read_hex(&c);
    }
    if (nr >= 0 && k == 8) {
        memcpy(s->sc_args, v, sizeof s->sc_args);
        s->sp = v[6];
        s->sc_pc = v[7];
    } else if (nr < 0 && k == 2) {
        s->sp = v[0];
    } else {
        return -1;
    }
    s->sc_nr = nr;
    return 0;
}

/* Whether the thread blocks the stop signal (SigBlk in its status). */
static int blocks_stop_signal(int tid)
{
    char path[64], buf[4096];
    gs_fmt(path, sizeof path, "/proc/self/task/%d/status", tid);
    ssize_t n = gs_read_file(path, buf, sizeof buf - 1);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *c = strstr(buf, "\nSigBlk:");
    if (!c)
        return 0;
    c += 8;
    while (*c == ' ' || *c == '\t')
        c++;
    uint64_t mask = read_hex(&c);
    return (int)((mask >> (gs_stop_sig - 1)) & 1);
}

/* A thread that blocks the stop signal cannot be stopped. Blocked in the
 * kernel (a helper thread waiting for work: node's inspector thread), it
 * is parked instead of signalled: its stack is scanned whole, as the kernel
 * reports its stack pointer but not its registers, and the scanner holds
 * every shard lock meanwhile (scan.c), so that if it wakes it waits at its
 * first allocation. One that runs is signalled all the same (glibc blocks
 * every signal for a moment in pthread_create, posix_spawn, ...: the
 * signal waits and stops it when it unblocks); if it still blocks the
 * signal after GS_BLOCKER_GRACE_NS it is parked if it now waits in the
 * kernel, and otherwise makes the stop fail then, not after the timeout. */
#define GS_BLOCKER_GRACE_NS 100000000ull

static int try_park(struct gs_stopped *s)
{
    if (read_syscall(s->tid, s) || !s->sp)
        return -1;
    atomic_store(&s->state, GS_STOP_PARKED);
    return 0;
}

/* A signalled thread that has not acknowledged: past the grace, parked,
 * or known to run with the signal blocked (GS_STOP_RUNNING). */
static void recheck_blocker(struct gs_stopped *s, uint64_t now)
{
    if (!s->t_blocked || now - s->t_blocked < GS_BLOCKER_GRACE_NS)
        return;
    if (!blocks_stop_signal(s->tid)) {
        s->t_blocked = 0; /* it unblocked: the signal stops it */
        return;
    }
    if (try_park(s))
        atomic_store(&s->state, GS_STOP_RUNNING);
}

/* Whether a listed thread has ended: gone from /proc/self/task, or still
 * listed as a zombie (state Z or X in its stat). The main thread stays
 * listed as a zombie after pthread_exit() or a raw SYS_exit until the whole
 * process ends; no signal reaches it and nothing of it runs (its stack is
 * dead memory, like any ended thread's). Waiting for it, every scan of such
 * a process gave up after its 3 s (with the workers held stopped all that
 * time), and its end had no exit scan (rel_life.sh zombie). A stat that
 * cannot be read (no descriptor left) says nothing: the thread counts as
 * gone only if its directory is. */
static int task_gone(int tid)
{
    char path[64], buf[512];
    gs_fmt(path, sizeof path, "/proc/self/task/%d/stat", tid);
    ssize_t n = gs_read_file(path, buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        const char *c = strrchr(buf, ')'); /* the command may hold ')' */
        return c && c[1] == ' ' && (c[2] == 'Z' || c[2] == 'X');
    }
    gs_fmt(path, sizeof path, "/proc/self/task/%d", tid);
    return syscall(SYS_faccessat, AT_FDCWD, path, F_OK, 0) != 0;
}

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
    s->sc_nr = -1;
    nslots++;
    c->added++;
    if (task_gone(tid)) {
        atomic_store(&s->state, GS_STOP_GONE); /* a zombie: nothing to stop */
        return;
    }
    int blocker = blocks_stop_signal(tid);
    if (blocker && try_park(s) == 0)
        return;
    /* What it is blocked in, if anything, for restart_call; read before
     * the signal is sent. */
    if (read_syscall(tid, s) || s->sc_nr < 0) {
        /* "running", or "-1 SP PC": in user space, off the CPU (preempted,
         * or between a restarted call's sigreturn and its syscall
         * instruction): it may enter the call before the signal comes
         * (rel_pause in fork mode: pause woke with EINTR in 4 runs of 40) */
        s->sc_nr = -1;
        s->ran_seen = 1;
    }
    s->sp = 0;
    s->t_blocked = blocker ? gs_now_fine() | 1 : 0;
    if (syscall(SYS_tgkill, getpid(), tid, gs_stop_sig) != 0)
        atomic_store(&s->state, GS_STOP_GONE); /* already gone */
}


/* Waits until every signalled thread acknowledged (or is gone). */
static int wait_acks(uint64_t deadline)
{
    for (;;) {
        int pending = 0;
        uint64_t now = gs_now_fine();
        for (int i = 0; i < nslots; i++)
            if (atomic_load(&slots[i].state) == GS_STOP_SIGNALLED) {
                if (task_gone(slots[i].tid))
                    atomic_store(&slots[i].state, GS_STOP_GONE);
                else
                    recheck_blocker(&slots[i], now);
                if (atomic_load(&slots[i].state) == GS_STOP_RUNNING)
                    return -1;
                pending += atomic_load(&slots[i].state) == GS_STOP_SIGNALLED;
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
    /* The last stop's threads out of the handler first (in_handlers): they
     * were resumed and leave within microseconds; one that never does (it
     * died there) costs 200 ms. */
    for (uint64_t until = gs_now_fine() + 200000000ull;
         atomic_load(&in_handlers) > 0 && gs_now_fine() < until;) {
        struct timespec ts = {0, 50000};
        syscall(SYS_nanosleep, &ts, NULL);
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
            int stuck = 0, running = 0;
            for (int i = 0; i < nslots; i++)
                if (atomic_load(&slots[i].state) == GS_STOP_RUNNING)
                    running = slots[i].tid;
                else if (atomic_load(&slots[i].state) == GS_STOP_SIGNALLED)
                    stuck = slots[i].tid;
            if (running)
                gs_fmt(why, whylen, "thread %d blocks signal %d and does not wait in the kernel",
                       running, gs_stop_sig);
            else
                gs_fmt(why, whylen, "thread %d did not stop within 3 s (it blocks signal %d?)",
                       stuck, gs_stop_sig);
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
