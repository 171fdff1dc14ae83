/*
 * The bridge between libgcspy.so and its companion libraries (the CUPTI
 * subscriber, libgcspy_cupti.so): how they feed events into the same trace.
 * Exported by libgcspy.so; a companion looks the functions up with
 * dlsym(RTLD_DEFAULT, ...) and checks gcspy_bridge_version() first.
 *
 * Dedupe rule: an event for an address the shim already tracks is dropped,
 * and a call made while the calling thread is inside one of the shim's own
 * hooks is dropped too (the hook records it when the real call returns). So
 * an allocation seen by both a PLT hook and CUPTI is recorded once.
 *
 * Times are nanoseconds on gcspy's clock (gcspy_now_ns()): CUPTI activity
 * timestamps must be converted by the caller.
 */
#ifndef GCSPY_BRIDGE_H
#define GCSPY_BRIDGE_H

#include <stdint.h>

#define GCSPY_BRIDGE_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

int gcspy_bridge_version(void);
uint64_t gcspy_now_ns(void);
/* kind: enum gs_mem_kind; fn: enum gs_alloc_fn. with_stack: capture the
 * calling thread's stack (callbacks: yes; activity records: no, they arrive
 * later on CUPTI's thread). Returns 1 when recorded, 0 when dropped. */
int gcspy_device_alloc(uint64_t addr, uint64_t size, unsigned kind, unsigned fn,
                       unsigned device, uint64_t stream, uint64_t dur_ns, int with_stack);
int gcspy_device_free(uint64_t addr);
void gcspy_pause(uint64_t t_start_ns, uint64_t t_end_ns, unsigned kind, uint64_t a, uint64_t b);
void gcspy_device_sample(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                         uint64_t segments, uint64_t largest_free);

#ifdef __cplusplus
}
#endif

#endif /* GCSPY_BRIDGE_H */
