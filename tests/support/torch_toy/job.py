"""A job on the toy caching allocator (toy_cuda.py) with planted tensor
leaks; tests/integration/torch_aware.sh checks what gcspy reports.

  kept      3 tensors of 3,000 bytes held in a list: reachable
  freed     2 tensors of 100,000 bytes freed: cached free, never a leak
  dropped   plant_dropped(): 5,000 and 700,000 bytes whose storage is
            deleted but whose block is never returned: unreachable blocks
            (definite), 5,120 and 700,416 bytes once rounded
  argv[1]   "api": a gcspy_scan() call at the end; "signal": SIGUSR2 to
            itself (for GCSPY_SCAN_SIGNAL=12), then a second of Python code
  lost      plant_lost(): a 40,000-byte tensor whose storage object nothing
            points to any more: the storage definite (host, 24 bytes), its
            block (40,448 bytes) indirect
"""
import ctypes
import os
import signal
import sys
import time

import toy_cuda as T

warm = T.Tensor(512)  # the first segment: gcspy switches the history on
for _ in range(20000):  # ... at the main thread's next safe point
    pass
print("history", T.recording, T.history_calls)
kept = [T.Tensor(3000) for _ in range(3)]
freed = [T.Tensor(100000) for _ in range(2)]
for t in freed:
    t.free()


def plant_dropped(n):
    t = T.Tensor(n)
    t.drop_storage()


def plant_lost(n):
    t = T.Tensor(n)
    t.forget()


plant_dropped(5000)
plant_dropped(700000)
plant_lost(40000)
mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "api":  # gcspy_scan() through ctypes (which drops the GIL)
    g = ctypes.CDLL(None)
    print("scan", g.gcspy_scan())
elif mode == "signal":  # GCSPY_SCAN_SIGNAL=12: a scan requested by SIGUSR2
    os.kill(os.getpid(), signal.SIGUSR2)
    end = time.monotonic() + 1.0  # Python code running meanwhile
    n = 0
    while time.monotonic() < end:
        n += sum(range(100))
print("done")
