/*
 * Allocation stacks through a C++ runtime built without frame pointers:
 * main (frame pointers kept) leaks two arrays with new[], from two lines.
 * Debian's libstdc++ is built -O2 without frame pointers, so operator new
 * has no frame of its own in the frame-pointer chain: a walk that follows
 * only saved frame pointers goes from operator new straight to main's
 * caller and loses main (and makes both sites one stack).
 *
 * Expected (tests/integration/stack_walk.sh), with the default walker:
 *   two definite leaks, 100 bytes (new int[25]) and 200 bytes
 *   (new int[50]); each stack is operator new[] (libstdc++), then main at
 *   the line marked LINE-25 or LINE-50 below, the line valgrind's memcheck
 *   names too; two different stacks.
 * Exit status 0.
 */
#include <cstdio>

static int *volatile sink;

int main()
{
    sink = new int[25]; // LINE-25
    sink = new int[50]; // LINE-50
    sink = nullptr;
    std::printf("leaked\n");
    return 0;
}
