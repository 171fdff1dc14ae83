/*
 * rel_unshare MODE: calls the kernel allows only in a single-threaded
 * process (tests/integration/rel_unshare.sh). MODE user: unshare(CLONE_NEWUSER);
 * MODE mnt: setns(open("/proc/self/ns/mnt"), CLONE_NEWNS) (root: CAP_SYS_ADMIN).
 * gcspy's writer thread used to make both fail with EINVAL.
 *
 * Allocates 500 blocks of 611 bytes (kept), makes the call, prints
 * "call=0" or "call=<errno name>", allocates 500 blocks of 622 bytes
 * (kept), sleeps 400 ms and exits 0 when the call succeeded, 1 otherwise.
 *
 * Expected under the shim: "call=0", exit 0, a complete trace with both
 * sets of blocks live; with periodic scans on, a scan completes after the
 * call (the writer thread, which runs them, is back).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep[1000];

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "user") && strcmp(argv[1], "mnt"))) {
        fprintf(stderr, "usage: rel_unshare user|mnt\n");
        return 2;
    }
    for (int i = 0; i < 500; i++)
        keep[i] = malloc(611);
    int rc;
    if (!strcmp(argv[1], "user")) {
        rc = unshare(CLONE_NEWUSER);
    } else {
        int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        rc = fd < 0 ? -1 : setns(fd, CLONE_NEWNS);
    }
    int e = errno;
    if (rc == 0)
        printf("call=0\n");
    else
        printf("call=%s\n", strerrorname_np(e));
    fflush(stdout);
    for (int i = 500; i < 1000; i++)
        keep[i] = malloc(622);
    usleep(400000);
    return rc != 0;
}
