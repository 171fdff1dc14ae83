/* The time a synchronising allocation call takes (pause tests).
 *
 * With GS_CUDA_DOUBLE_SYNC_US=N the double makes cudaMalloc and cudaFree
 * take at least N microseconds; this program times one of each, prints
 * "malloc_us=A free_us=B", checks both are >= N (when N is set), and prints
 * "ok". Under gcspy: no leak, one device block (65536 bytes) allocated and
 * freed, each call lasting >= N us. */
#include <time.h>

#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int main(void)
{
    const char *env = getenv("GS_CUDA_DOUBLE_SYNC_US");
    long long want = env ? atoll(env) : 0;
    void *d = NULL;
    CK(cudaFree(NULL)); /* the runtime's customary warm-up call */
    long long t0 = now_us();
    CK(cudaMalloc(&d, 65536));
    long long t1 = now_us();
    CK(cudaFree(d));
    long long t2 = now_us();
    printf("malloc_us=%lld free_us=%lld\n", t1 - t0, t2 - t1);
    EXPECT(t1 - t0 >= want);
    EXPECT(t2 - t1 >= want);
    printf("ok\n");
    return 0;
}
