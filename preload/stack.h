/*
 * Call stacks (stack.c): capture at each allocation, and interning into a
 * tree of (parent, ip) nodes so that each distinct stack is written once
 * (STACK records) and events carry a small id.
 */
#ifndef GCSPY_STACK_H
#define GCSPY_STACK_H

#include "shim.h"

/* Captures the caller's stack, given the frame address of the hook (fp walk
 * starts there; frames inside libgcspy are skipped for libunwind). */
int gs_stack_capture(void *hook_frame, uintptr_t *ips, int max);
/* Interns a stack (ips[0] innermost). Emits STACK records for new nodes. */
uint32_t gs_stack_intern(const uintptr_t *ips, int n);
/* Capture and intern in one: the hot path (fused walk and hash). */
uint32_t gs_stack_id(void *hook_frame);
/* fork: every node again into the child's trace (caller holds the stack
 * lock and the meta lock), and the stack lock itself. */
void gs_stack_reemit(void);
void gs_stack_lock(void);
void gs_stack_unlock(void);

/* Per-stack-id bits for the scanner. WEAK: a frame of the caching
 * allocator's code anywhere in the stack (the block is its metadata).
 * DATA: the innermost frame is in code that allocates pointer-free memory
 * (a tensor's storage): the block is never scanned for pointers. */
enum { GS_SB_WEAK = 1, GS_SB_DATA = 2 };
/* Stack tree walk: nodes [from, count) get bits[id] = of(ip) |
 * (bits[parent] & GS_SB_WEAK), where ip is the node's (innermost) frame;
 * returns the node count. */
uint32_t gs_stack_bits_fill(uint8_t **bits, uint64_t *cap, uint32_t from,
                            uint8_t (*of)(uint64_t ip));

#endif /* GCSPY_STACK_H */
