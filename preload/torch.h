/*
 * PyTorch-aware mode (torch.c). Everything it does for the layers below is
 * registered at start (gs_torch_init): the stack-bits provider (scan.c), the
 * scan policy (scan_trigger.c) and the exit step (python.c).
 */
#ifndef GCSPY_TORCH_H
#define GCSPY_TORCH_H

#include "shim.h"

void gs_torch_init(void);         /* after gs_py_init */
/* A device block is about to be recorded (the CUDA hooks and the bridge
 * call this, before gs_on_alloc_ex): the first one under Python looks for
 * torch.cuda right away, so its memory history starts as early as it can. */
void gs_torch_note_device(void);
/* VMM too: with expandable_segments PyTorch maps all its memory with
 * cuMemMap and never calls cudaMalloc. */
static inline void gs_torch_note_kind(unsigned kind)
{
    if (kind == GS_MEM_DEVICE || kind == GS_MEM_VMM)
        gs_torch_note_device();
}

#endif /* GCSPY_TORCH_H */
