/* A device pointer kept only on another thread's stack, while that thread
 * is blocked.
 *
 * Expected under gcspy, at the gcspy_scan() call:
 *   no leak;
 *   reachable: the device block (GS_MEM_DEVICE, 3145728 bytes) whose only
 *              pointer is the local `d` of holder() on the second thread,
 *              which is blocked in sem_wait: thread stacks are roots.
 * At exit: nothing live (the thread frees the buffer after the scan).
 *
 * Alone: the thread's buffer holds its bytes across the wait; prints "ok". */
#include <pthread.h>
#include <semaphore.h>

#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#define SIZE ((size_t)3 << 20)

static sem_t allocated, release;

static __attribute__((noinline)) void *holder(void *arg)
{
    (void)arg;
    void *volatile d = NULL; /* in this frame, in memory, nowhere else */
    void *tmp = NULL;
    CK(cudaMalloc(&tmp, SIZE));
    d = tmp;
    tmp = NULL;
    CK(cudaMemset(d, 0x7e, SIZE));
    clobber_stack();
    sem_post(&allocated);
    while (sem_wait(&release) != 0)
        ;
    unsigned char back[16];
    CK(cudaMemcpy(back, (char *)d + SIZE - sizeof back, sizeof back, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sizeof back; i++)
        EXPECT(back[i] == 0x7e);
    CK(cudaFree(d));
    return NULL;
}

int main(void)
{
    pthread_t t;
    EXPECT(sem_init(&allocated, 0, 0) == 0 && sem_init(&release, 0, 0) == 0);
    EXPECT(pthread_create(&t, NULL, holder, NULL) == 0);
    while (sem_wait(&allocated) != 0)
        ;
    clobber_stack();
    maybe_scan();
    sem_post(&release);
    EXPECT(pthread_join(t, NULL) == 0);
    printf("ok\n");
    return 0;
}
