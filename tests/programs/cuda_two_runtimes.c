/* Two CUDA runtimes in one process (issue 18, risk 10): libcuda_rt12.so is
 * bound to libcudart.so.12, libcuda_rt13.so to libcudart.so.13 (two builds
 * of the runtime double, one driver). Each allocates and frees one device
 * block through its own runtime (1 MiB and 2 MiB) and checks, by that
 * runtime's last error, that its calls reached it.
 * Expected under gcspy: prints "ok"; two device blocks (1 and 2 MiB, fn
 * cuda_runtime), each freed; nothing CUDA live at exit. */
#include <stddef.h>
#include <stdio.h>

int rt12_check(size_t size);
int rt13_check(size_t size);

int main(void)
{
    int a = rt12_check((size_t)1 << 20);
    int b = rt13_check((size_t)2 << 20);
    if (a || b) {
        printf("runtime 12: step %d failed; runtime 13: step %d failed (0: fine)\n", a, b);
        return 1;
    }
    printf("ok\n");
    return 0;
}
