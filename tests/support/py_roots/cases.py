# The Python cases tests/integration/py_roots.sh runs under libgcspy.so with
# every interpreter it covers (Debian roots, pyenv). Each planted thing sits
# on a line marked "# CASE name", which the test looks up:
#   drop  a 40013-byte native buffer from ctypes, its address dropped
#         (restype None: no Python int ever holds it): lost, at this line;
#   keep  three 77777-byte bytearrays kept in a global: live at exit, at
#         this line in keep_buffers (Python frames at the script's lines);
#   gc    once gcspy's GC callback is in gc.callbacks, 3 gc.collect() calls
#         with reference cycles: 3 python-gc pauses of generation 2;
#   grow  with torch (argument "torch"): STEPS optimizer steps, each keeping
#         one new 64 KiB tensor in a list: STEPS step markers, a growth
#         suspect at this line. Each step lasts 0.1 s, as a training step
#         does: allocation records carry the writer's coarse clock (one
#         flush interval, GCSPY_FLUSH_MS), so steps much shorter than it
#         sample a site's live bytes too unevenly for a fit.
import ctypes
import gc
import sys
import time

STEPS = 30
libc = ctypes.CDLL(None)
libc.malloc.restype = None
libc.malloc.argtypes = [ctypes.c_size_t]
kept = []


def drop_native():
    libc.malloc(40013)  # CASE drop


def keep_buffers():
    for _ in range(3):
        kept.append(bytearray(77777))  # CASE keep


class Cycle:
    def __init__(self):
        self.me = self


def collect_cycles():
    deadline = time.time() + 10
    while not any("gcspy" in repr(c) for c in gc.callbacks) and time.time() < deadline:
        time.sleep(0.01)
    for _ in range(3):
        for _ in range(100):
            Cycle()
        gc.collect()  # CASE gc


def train():
    import torch
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.ones(32, 64)
    history = []
    for _ in range(STEPS):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        history.append(torch.ones(16384))  # CASE grow
        time.sleep(0.1)
    return history


drop_native()
keep_buffers()  # CASE call_keep
collect_cycles()
if sys.argv[1:] == ["torch"]:
    kept.append(train())
print("cases done", sys.version_info[0], sys.version_info[1])
