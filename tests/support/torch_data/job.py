"""A CPU tensor's storage holds the only copies of a malloc'd block's address.

A worker thread mallocs 3003 bytes and hands on only the address shifted
right by 4 (a Python int: the raw address is in no Python object); the
thread exits, taking its registers and stack with it. The main thread then
builds an 8 Mi-element (64 MiB) int64 tensor whose every element is the address
(computed inside the tensor: hi * 16), keeps it in a global, and calls
gcspy_scan(). The block is reachable only if the tensor's storage is
scanned for pointers.
"""
import ctypes
import threading

import torch

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
out = {}


def work():
    out["hi"] = libc.malloc(3003) >> 4


th = threading.Thread(target=work)
th.start()
th.join()
KEPT = torch.full((1 << 23,), out.pop("hi"), dtype=torch.int64) * 16
scan = getattr(ctypes.CDLL(None), "gcspy_scan", None)
if scan:
    scan()
