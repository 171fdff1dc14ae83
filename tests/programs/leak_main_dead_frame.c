/*
 * leak_main_dead_frame: the program's last pointer to a leaked block lies in
 * dead stack below the frame that returns from main: a helper fills 4 KiB of its
 * frame with copies of the only pointer to a 1001-byte block and returns,
 * and main returns without clearing the stack. The exit scan must read
 * the exiting thread's stack only from where the program left it (libc's
 * frame that called main, and then exit), not from inside gcspy's exit
 * handler: the frames of exit() (__run_exit_handlers), of the handler and
 * of the scan lie over the dead ones (main's among them), with slots they
 * never wrote. Definitely lost, as memcheck says
 * (it reads no stack below the stack pointer, and counts stale words in new
 * frames as undefined). leak_exit_dead_frame is the same for exit().
 *
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 * @block exit 1001=definite
 */
#include <stdlib.h>

#include "leak_case.h"

int main(void)
{
    leak_into_dead_frame(1001);
    return 0;
}
