/*
 * Descriptors and file limits the program owns (tests/integration/rel_fds.sh;
 * issue 15, items 1, 2 and 11). Run in a directory of its own; the files it
 * makes there are its own and must hold exactly what it wrote.
 *
 *   closerange   leaks 251 blocks of 5000..5250 bytes, waits 300 ms (the
 *                trace has chunks by then), closes every descriptor from 3
 *                up (close_range), opens own.dat and writes "OWNDAT" to it,
 *                leaks 251 more, waits 300 ms, exits 0. Expected: own.dat
 *                is those 6 bytes; the trace is complete and holds all 502
 *                leaked blocks, definitely lost in the exit scan.
 *   dup2         the same, but raises its descriptor limit to the hard one,
 *                finds the trace's descriptor (a link to *.trace in
 *                /proc/self/fd) and makes own.dat that number with dup2
 *                before writing through it. Same expectations.
 *   stdout       writes one byte to descriptor 1 and exits 0 if that
 *                worked, 3 if it failed: started with stdout closed, 3.
 *   std          closes 0, 1 and 2, opens d0, d1, d2 (they become 0, 1, 2)
 *                and writes "data\n" to each: each file is those 5 bytes.
 *   exec         a child closes every descriptor from 3 up, opens
 *                child.out, writes "child\n", leaks 10 blocks and execs
 *                /bin/true; the
 *                parent waits: child.out is those 6 bytes, status 0.
 *   nofile       opens /dev/null: 0 if that worked, 4 if not (run with a
 *                descriptor limit of 4: 0, 1, 2 and this one).
 *   big N        makes N allocations of 16..4111 bytes, frees them, exits 0
 *                (a trace larger than a small RLIMIT_FSIZE).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink; /* keeps the compiler from eliding malloc/free */

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts))
        ;
}

/* Allocates and forgets: nothing of the program points at these blocks. */
static __attribute__((noinline)) void leak(int n)
{
    for (int i = 0; i < n; i++) {
        char *p = malloc(5000 + (size_t)i);
        if (!p)
            exit(2);
        memset(p, 0x5a, 5000);
    }
}

static int close_from_3(void)
{
    return (int)syscall(SYS_close_range, 3u, ~0u, 0);
}

/* The descriptor of a *.trace file, or -1. */
static int trace_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    int found = -1;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        char link[300], to[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, to, sizeof to - 1);
        if (n > 6) {
            to[n] = 0;
            if (!strcmp(to + n - 6, ".trace"))
                found = atoi(e->d_name);
        }
    }
    closedir(d);
    return found;
}

static int write_str(int fd, const char *s)
{
    return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
}

static int own_file(int dup_onto_trace)
{
    leak(251);
    pause_ms(300);
    int target = -1;
    if (dup_onto_trace) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        target = trace_fd();
    } else if (close_from_3()) {
        perror("close_range");
        return 2;
    }
    int fd = open("own.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    if (target >= 0 && target != fd) {
        if (dup2(fd, target) != target)
            return 2;
        close(fd);
        fd = target;
    }
    if (write_str(fd, "OWNDAT"))
        return 2;
    leak(251);
    pause_ms(300);
    return close(fd) ? 2 : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "closerange"))
        return own_file(0);
    if (!strcmp(mode, "dup2"))
        return own_file(1);
    if (!strcmp(mode, "stdout"))
        return write(1, "x", 1) == 1 ? 0 : 3;
    if (!strcmp(mode, "std")) {
        close(0);
        close(1);
        close(2);
        const char *names[] = {"d0", "d1", "d2"};
        for (int i = 0; i < 3; i++)
            if (open(names[i], O_WRONLY | O_CREAT | O_TRUNC, 0644) != i || write_str(i, "data\n"))
                return 2;
        return 0;
    }
    if (!strcmp(mode, "exec")) {
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            close_from_3();
            int fd = open("child.out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || write_str(fd, "child\n"))
                _exit(2);
            leak(10); /* events the exec's flush writes */
            char *args[] = {"true", NULL};
            execv("/bin/true", args); /* hooked: the old image flushes */
            _exit(2);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid)
            return 2;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
    }
    if (!strcmp(mode, "nofile"))
        return open("/dev/null", O_RDONLY) >= 0 ? 0 : 4;
    if (!strcmp(mode, "big") && argc > 2) {
        long n = atol(argv[2]);
        unsigned x = 12345;
        for (long i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            sink = malloc(16 + (x >> 8) % 4096);
            free(sink);
        }
        return 0;
    }
    fprintf(stderr, "usage: rel_fds closerange|dup2|stdout|std|exec|nofile|big N\n");
    return 2;
}
