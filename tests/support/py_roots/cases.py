# The Python cases tests/integration/py_roots.sh runs under libgcspy.so with
# every interpreter it covers (Debian roots, pyenv). Each planted thing sits
# on a line marked "# CASE name", which the test looks up:
#   drop  a 40013-byte native buffer from ctypes, its address dropped
#         (restype None: no Python int ever holds it): lost, at this line;
#   thread  a 30011-byte native buffer dropped the same way on a thread
#         that then ends: lost at this line (glibc keeps the dead thread's
#         stack cached for reuse; its stale frames hold the address and are
#         no root);
#   keep  three 77777-byte bytearrays kept in a global: live at exit, at
#         this line in keep_buffers (Python frames at the script's lines);
#   gc    once gcspy's GC callback is in gc.callbacks, 3 gc.collect() calls
#         with reference cycles: 3 python-gc pauses of generation 2;
#   grow  with torch (argument "torch"): STEPS optimizer steps, each keeping
#         one new 64 KiB tensor in a list: STEPS step markers, a growth
#         suspect at this line. Each step lasts 0.1 s, as a training step
#         does: allocation records carry a coarse clock (a 4 ms tick
#         here, shim.h's gs_now), so steps not much longer than it sample
#         a site's live bytes too unevenly for a fit;
#   scratch  with torch: right after each opt.step() (whose first
#         allocation writes the step marker), a native block of 64 KiB
#         times the step's number, freed 0.1 s later, before the next step:
#         live at no step's checkpoint, so no growth suspect. The coarse
#         clock of allocation records lags the marker's by 3 to 5 ms, and
#         before the shim raised event times to the last marker's, each of
#         these blocks counted at the checkpoint before it: a false growth
#         suspect of 64 KiB a step;
#   data  with torch: tests/support/torch_data/job.py's case in this same
#         process (one interpreter start less per stack): a 3003-byte
#         block whose address only a 64 MiB CPU tensor's storage holds
#         (c10::alloc_cpu's, never scanned: GCSPY_TORCH_DATA) is lost at a
#         gcspy_scan() ("api" scan 1); then 64 of the tensor's words copied
#         into a bytes object, ordinary memory, and scan 2 finds the block
#         reachable (the address in the tensor is right: the control).
import ctypes
import gc
import sys
import threading
import time

STEPS = 30
libc = ctypes.CDLL(None)
libc.malloc.restype = None
libc.malloc.argtypes = [ctypes.c_size_t]
# the scratch case's own malloc and free: it keeps the address (restype)
libc_addr = ctypes.CDLL(None)
libc_addr.malloc.restype = ctypes.c_void_p
libc_addr.malloc.argtypes = [ctypes.c_size_t]
libc_addr.free.argtypes = [ctypes.c_void_p]
kept = []
scan = getattr(libc, "gcspy_scan", None)


def drop_native():
    libc.malloc(40013)  # CASE drop


def drop_in_thread():
    th = threading.Thread(target=lambda: libc.malloc(30011))  # CASE thread
    th.start()
    th.join()


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
        scratch = libc_addr.malloc(65536 * len(history))  # CASE scratch
        time.sleep(0.1)
        libc_addr.free(scratch)
    return history


def tensor_data():
    import torch
    out = {}
    # a thread of its own: the raw address dies with its registers and
    # stack (a cached stack is no root), the Python int holds it >> 4
    grab = ctypes.CDLL(None).malloc
    grab.restype = ctypes.c_void_p
    grab.argtypes = [ctypes.c_size_t]
    th = threading.Thread(target=lambda: out.update(hi=grab(3003) >> 4))
    th.start()
    th.join()
    data = torch.full((1 << 23,), out.pop("hi"), dtype=torch.int64) * 16  # CASE data
    kept.append(data)
    # The same multiply again on other numbers: torch's intra-op threads
    # computed the address and keep the last one in a register while they
    # wait (sid's torch 2.14), and a stopped thread's registers are roots,
    # as in LeakSanitizer: that copy is really there, so it goes first.
    torch.full((1 << 23,), 7, dtype=torch.int64) * 16
    if scan:
        scan()
    kept.append(ctypes.string_at(data.data_ptr(), 64 * 8))
    if scan:
        scan()


drop_native()
drop_in_thread()
keep_buffers()  # CASE call_keep
collect_cycles()
if sys.argv[1:] == ["torch"]:
    kept.append(train())
    tensor_data()
print("cases done", sys.version_info[0], sys.version_info[1])
