/*
 * rel_exec_paths MODE: the exec and exit paths that do not go through
 * execve()/execv()/exit()/_exit() by their public names
 * (tests/integration/rel_exec_paths.sh). glibc's execl, execle and execlp
 * build an argv and call its hidden __execve; fexecve and execveat make the
 * system call themselves; quick_exit and daemon's parent end the process
 * through the hidden _exit. A shim that hooks only the public names misses
 * them all and leaves an empty trace.
 *
 * Every mode first allocates 1000 blocks of 777 bytes and keeps them, and
 * prints "pid=<pid>" (write(2)). Then:
 *   execl execle execlp fexecve execveat : exec /bin/true that way
 *                                          (status 0, or 99 if the call
 *                                          returned);
 *   quick_exit : quick_exit(5);
 *   daemon     : daemon(1, 1); the parent ends inside it (status 0), the
 *                child prints "daemon pid=<pid>" and exits 0.
 *
 * Expected under the shim: the first image's trace holds the 1000 blocks
 * live; for the exec modes it has an EXEC record (naming /bin/true, or
 * /proc/self/fd/N for fexecve); for quick_exit it is complete with exit
 * status 5; for daemon the parent's trace is complete with status 0 and the
 * daemon child writes a complete trace of its own (1000 inherited blocks).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
static void *volatile keep[1000];

static void say(const char *what)
{
    char b[64];
    int n = snprintf(b, sizeof b, "%spid=%d\n", what, (int)getpid());
    if (write(1, b, (size_t)n) != n)
        _exit(9);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rel_exec_paths execl|execle|execlp|fexecve|execveat|quick_exit|daemon\n");
        return 2;
    }
    const char *m = argv[1];
    for (int i = 0; i < 1000; i++)
        keep[i] = malloc(777);
    say("");
    char *const args[] = {"true", NULL};
    if (!strcmp(m, "execl")) {
        execl("/bin/true", "true", (char *)NULL);
    } else if (!strcmp(m, "execle")) {
        execle("/bin/true", "true", (char *)NULL, environ);
    } else if (!strcmp(m, "execlp")) {
        execlp("true", "true", (char *)NULL);
    } else if (!strcmp(m, "fexecve")) {
        int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return 98;
        fexecve(fd, args, environ);
    } else if (!strcmp(m, "execveat")) {
        execveat(AT_FDCWD, "/bin/true", args, environ, 0);
    } else if (!strcmp(m, "quick_exit")) {
        quick_exit(5);
    } else if (!strcmp(m, "daemon")) {
        if (daemon(1, 1))
            return 97;
        say("daemon ");
        return 0;
    } else {
        return 2;
    }
    return 99;
}
