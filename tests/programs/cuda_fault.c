/* Device memory is not host memory: the host faults on a device pointer.
 *
 * `cuda_fault deref` reads a device byte on the host and must die of
 * SIGSEGV (the selftest checks the status). `cuda_fault` checks the same in
 * a child process, and that pinned and managed memory, by contrast, are
 * host-readable; prints "ok". Not a leak scenario: frees everything. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

/* Reads one byte at p in a child; returns the child's wait status. */
static int read_in_child(const void *p)
{
    fflush(NULL);
    pid_t pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
        volatile unsigned char c = *(const volatile unsigned char *)p;
        (void)c;
        _exit(0);
    }
    int st = 0;
    EXPECT(waitpid(pid, &st, 0) == pid);
    return st;
}

int main(int argc, char **argv)
{
    void *d = NULL;
    CK(cudaMalloc(&d, 4096));
    if (argc > 1 && strcmp(argv[1], "deref") == 0) {
        volatile unsigned char c = *(volatile unsigned char *)d;
        printf("read a device byte on the host: %d\n", c);
        return 0;
    }
    int st = read_in_child(d);
    EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    st = read_in_child((char *)d + 4095);
    EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);

    void *h = NULL, *m = NULL;
    CK(cudaMallocHost(&h, 4096));
    CK(cudaMallocManaged(&m, 4096, cudaMemAttachGlobal));
    st = read_in_child(h);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = read_in_child(m);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CK(cudaFreeHost(h));
    CK(cudaFree(m));
    CK(cudaFree(d));
    printf("ok\n");
    return 0;
}
