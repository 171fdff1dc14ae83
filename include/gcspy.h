/*
 * gcspy's public C API, for programs that want to talk to the shim when it is
 * loaded (LD_PRELOAD=libgcspy.so). Every function is safe to call when the
 * shim is absent only if looked up at run time (dlsym(RTLD_DEFAULT, ...) in C,
 * ctypes.CDLL(None) in Python); linking against libgcspy.so makes it required.
 *
 *   import ctypes; g = ctypes.CDLL(None)
 *   if hasattr(g, "gcspy_mark"): g.gcspy_mark(b"epoch 3")
 */
#ifndef GCSPY_H
#define GCSPY_H

#ifdef __cplusplus
extern "C" {
#endif

/* Records a user marker (a label on the trace's time axis). Thread-safe. */
void gcspy_mark(const char *label);

/* Runs a leak scan now (stop-the-world or fork mode, per GCSPY_SCAN_MODE) and
 * records its results in the trace. The calling thread's stack is read from
 * its caller's frame up, with the registers the caller kept: what the
 * caller still holds is reachable, nothing of gcspy's own frames is.
 * Returns 0 on success, -1 when tracing is off or a scan is already
 * running. Safe to call from a signal handler only through the
 * GCSPY_SCAN_SIGNAL mechanism. */
int gcspy_scan(void);

/* What a scan found lost, memcheck's classes; each of the new_ counts is
 * the part of its class that no earlier API scan (gcspy_scan or this) had
 * found lost: the blocks that became unreachable since then. Host memory
 * only (the CUDA caching allocator's blocks are in the trace, not here). */
struct gcspy_leak_count {
    unsigned long long blocks, bytes;
};
struct gcspy_leaks {
    struct gcspy_leak_count definite, indirect, possible;
    struct gcspy_leak_count new_definite, new_indirect, new_possible;
};

/* gcspy_scan(), and its verdict into *out (may be NULL): what the Python
 * package's gcspy.scan() and its pytest plugin's per-test verdict use.
 * Returns 0, or -1 when no scan ran (as gcspy_scan) or it was skipped (the
 * reason is on stderr); *out is then left as it was. Same calling rules as
 * gcspy_scan(): not from a signal handler. */
int gcspy_scan_leaks(struct gcspy_leaks *out);

/* PyTorch-aware mode: records the CUDA caching allocator's state now
 * (torch.cuda.memory._snapshot(): segments, blocks, and the memory history
 * when recorded) as POOL_* trace records. Takes the GIL itself. Returns 0
 * when a snapshot was recorded, -1 when the process has no torch using CUDA
 * (or tracing is off). In a process where torch uses CUDA, gcspy_scan()
 * takes such a snapshot before each scan by itself. */
int gcspy_pool_snapshot(void);

#ifdef __cplusplus
}
#endif

#endif /* GCSPY_H */
