"""torch.cuda's memory API backed by a toy caching allocator on the CUDA
test double (tests/programs/torch_toy_alloc.cpp), for testing gcspy's
PyTorch-aware mode on a machine whose PyTorch has no CUDA.

Importing this module imports the real (CPU) torch and replaces exactly what
gcspy's shim calls: torch.cuda.is_initialized, torch.cuda.memory._snapshot
and torch.cuda.memory._record_memory_history. The snapshot has PyTorch's
shape: torch 2.x's {"segments": [...], "device_traces": [[...]]} with block
"address", "state", "requested_size" and "frames", or with TOY_FORMAT=1.13
torch 1.13's list of segments whose blocks have no address and carry their
frames in "history". Frames, as in PyTorch, are recorded only while memory
history is on, innermost first.

TOY_MODE (read by the library too) is PyTorch's PYTORCH_CUDA_ALLOC_CONF:
"expandable" (expandable_segments:True) shows the mapped pages as one
segment with "is_expandable", as PyTorch does for contiguous pages; "async"
(backend:cudaMallocAsync) has no snapshot and no memory history (both raise,
as in PyTorch), and get_allocator_backend() says "cudaMallocAsync".
"""
import ctypes
import os
import sys
import time
import traceback

import torch

lib = ctypes.CDLL(os.environ["TOY_ALLOC"])
lib.toy_tensor_new.restype = ctypes.c_void_p
lib.toy_tensor_new.argtypes = [ctypes.c_size_t]
lib.toy_tensor_data.restype = ctypes.c_void_p
lib.toy_tensor_data.argtypes = [ctypes.c_void_p]
lib.toy_tensor_free.argtypes = [ctypes.c_void_p]
lib.toy_tensor_drop_storage.argtypes = [ctypes.c_void_p]


class ToyBlock(ctypes.Structure):
    _fields_ = [("seg", ctypes.c_uint64), ("addr", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("requested", ctypes.c_uint64), ("allocated", ctypes.c_int32),
                ("small", ctypes.c_int32)]


lib.toy_blocks.restype = ctypes.c_size_t
lib.toy_blocks.argtypes = [ctypes.POINTER(ToyBlock), ctypes.c_size_t]

FORMAT = os.environ.get("TOY_FORMAT", "2")
MODE = os.environ.get("TOY_MODE", "")
recording = False
history_calls = []
frames_of = {}  # keyed by hex(address): a dict keyed by the int itself
events = []     # would keep the address as a raw word (its hash) in its table


def _frames():
    st = traceback.extract_stack()[:-2]  # not _frames, not Tensor.__init__
    return [{"filename": f.filename, "line": f.lineno, "name": f.name} for f in reversed(st)]


def _event(action, addr, size, frames=None):
    if recording:
        events.append({"action": action, "addr": addr, "size": size, "stream": 0,
                       "frames": frames or [], "time_us": int(time.time() * 1e6)})


class Tensor:
    """A CUDA tensor's storage: a c10::StorageImpl on the C++ heap, held here
    by its raw address (a ctypes c_void_p keeps the pointer's bytes, as a
    THPVariable keeps its TensorImpl pointer)."""

    def __init__(self, nbytes):
        p = lib.toy_tensor_new(nbytes)
        self.storage = ctypes.c_void_p(p)
        self.data = lib.toy_tensor_data(p)
        if recording:
            fr = _frames()
            frames_of[hex(self.data)] = fr
            _event("alloc", self.data, nbytes, fr)

    def free(self):
        _event("free_requested", self.data, 0)
        lib.toy_tensor_free(self.storage)
        _event("free_completed", self.data, 0)
        frames_of.pop(hex(self.data), None)
        self.forget()

    def drop_storage(self):
        """The planted bug: the storage dies, its block is never returned."""
        lib.toy_tensor_drop_storage(self.storage)
        self.forget()

    def forget(self):
        """Drops this object's pointer to the storage, and wipes its bytes:
        CPython's arenas are roots, and a freed object's stale bytes would
        keep the storage reachable."""
        ctypes.memset(ctypes.addressof(self.storage), 0, ctypes.sizeof(self.storage))
        self.storage = None
        self.data = 0


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None):
    """torch 2.1+'s signature and defaults (1.13's takes a bool only);
    records the arguments as they take effect."""
    global recording
    if MODE == "async":
        raise RuntimeError("cudaMallocAsync does not yet support recordHistory")
    if FORMAT == "1.13":
        if not isinstance(enabled, bool) or (context, stacks, max_entries) != ("all", "all", sys.maxsize):
            raise TypeError("_record_memory_history() of torch 1.13 takes a bool")
        history_calls.append(enabled)
    else:
        history_calls.append((enabled, context, stacks, max_entries))
    recording = bool(enabled) and enabled != "None"


def _snapshot(device=None):
    if MODE == "async":
        raise RuntimeError("Calling snapshot with backend:cudaMallocAsync is not meaningful")
    arr = (ToyBlock * 65536)()
    n = lib.toy_blocks(arr, len(arr))
    segs = {}
    for b in arr[:n]:
        seg = segs.get(b.seg)
        if seg is None:
            seg = segs[b.seg] = {"device": 0, "address": b.seg, "total_size": 0,
                                 "allocated_size": 0, "active_size": 0, "requested_size": 0,
                                 "stream": 0, "segment_type": "small" if b.small else "large",
                                 "blocks": []}
        seg["total_size"] += b.size
        state = "active_allocated" if b.allocated else "inactive"
        if b.allocated:
            seg["allocated_size"] += b.size
            seg["active_size"] += b.size
            seg["requested_size"] += b.requested
        fr = frames_of.get(hex(b.addr)) if b.allocated else None
        if FORMAT == "1.13":
            blk = {"size": b.size, "state": state}
            if fr is not None:
                blk["history"] = [{"addr": b.addr, "real_size": b.requested, "frames": fr}]
        else:
            blk = {"address": b.addr, "size": b.size, "requested_size": b.requested,
                   "state": state}
            if fr is not None:
                blk["frames"] = fr
        seg["blocks"].append(blk)
    if MODE == "expandable":  # contiguous mapped pages: one segment
        merged = []
        for seg in sorted(segs.values(), key=lambda g: g["address"]):
            seg["is_expandable"] = True
            last = merged[-1] if merged else None
            if last and last["address"] + last["total_size"] == seg["address"]:
                for k in ("total_size", "allocated_size", "active_size", "requested_size"):
                    last[k] += seg[k]
                last["blocks"] += seg["blocks"]
            else:
                merged.append(seg)
        segs = {g["address"]: g for g in merged}
    if FORMAT == "1.13":
        return list(segs.values())
    return {"segments": list(segs.values()), "device_traces": [list(events)]}


torch.cuda.is_initialized = lambda: True
torch.cuda.memory.get_allocator_backend = lambda: "cudaMallocAsync" if MODE == "async" else "native"
torch.cuda.memory._snapshot = _snapshot
torch.cuda.memory._record_memory_history = _record_memory_history
