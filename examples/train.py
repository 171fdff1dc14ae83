#!/usr/bin/env python3
"""A small but real PyTorch training job, the example gcspy is shown on.

A small CNN learns to classify synthetic 28x28 "images" (Gaussian noise
labelled by a fixed random linear teacher) with Adam, fed by a DataLoader
whose two worker processes generate the samples. Everything is seeded:
stdout (the losses, 6 decimals) is the same on every run, bare or under
gcspy, which the tests compare. Runs on CPU, or on CUDA when available.

    /usr/bin/python3 examples/train.py [--steps N] [options]
    build/gcspy run -- /usr/bin/python3 examples/train.py --leak-native

Options:
  --steps N            training steps (default 1000)
  --batch N            batch size (default 32)
  --log-every K        print the loss every K steps (default 10; 1: every step)
  --workers N          DataLoader worker processes (default 2)
  --threads N          torch intra-op threads (default 1, for exact repeatability)
  --device D           auto (default), cpu or cuda
  --seed S             seed of the data, the teacher and the model (default 1234)
  --timing             print per-step timing on stderr at the end:
                       "timing: steps N median_step_ms X mean_step_ms Y total_s Z"
                       (the first 5 steps are warm-up and not counted)
  --markers            when gcspy is loaded, call gcspy_mark("step N") every step

Planted problems, all off by default (each one is a bug gcspy should find):
  --leak-growth        every step's loss tensor, with its autograd graph, is
                       appended to a global list; backward() runs with
                       retain_graph=True (the usual "fix" for the error a second
                       backward raises), so each step's saved activations
                       (about 3 MB at batch 32) stay alive: steady growth.
  --leak-native [step|once]
                       malloc() a native buffer through ctypes, fill it, and
                       drop the pointer: a definite leak, every step (default)
                       or once at the first step.
  --leak-bytes N       size of each --leak-native buffer (default 65536)
  --cycle              every step builds a reference cycle of two Python
                       objects holding a --cycle-bytes tensor; automatic GC is
                       disabled during the run and gc.collect() runs every
                       --gc-every steps, so memory saw-tooths and each
                       collection is a GC pause at a known step (not a leak).
  --cycle-bytes N      size of the tensor in each cycle (default 4194304)
  --gc-every K         steps between explicit gc.collect() calls (default 10)
  --cuda-leak          on CUDA only: cudaMalloc() --leak-bytes of device memory
                       through ctypes on libcudart and drop the pointer, every
                       step. Ignored with a note on stderr without CUDA.
  --cached-leak        on CUDA only: take --leak-bytes from PyTorch's caching
                       allocator (torch.cuda.caching_allocator_alloc) and drop
                       the pointer, every step: a tensor-sized block inside a
                       segment that no storage owns (gcspy's PyTorch-aware
                       mode reports it at this line). Ignored with a note on
                       stderr without CUDA.

Exit status: 0 on success, 2 on bad options.
"""

import argparse
import ctypes
import gc
import statistics
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

IMAGE = 28
CLASSES = 10
WARMUP_STEPS = 5

# Kept alive on purpose by --leak-growth.
LEAKED_LOSSES = []


class SyntheticImages(Dataset):
    """Noise images labelled by a fixed random linear teacher.

    Each sample is generated from its own index, so the data do not depend on
    which worker process produces it or in what order.
    """

    def __init__(self, size, seed):
        self.size = size
        self.seed = seed
        g = torch.Generator().manual_seed(seed)
        self.teacher = torch.randn(IMAGE * IMAGE, CLASSES, generator=g)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed * 1000003 + index)
        x = torch.randn(1, IMAGE, IMAGE, generator=g)
        y = int(torch.argmax(x.reshape(-1) @ self.teacher))
        return x, y


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, CLASSES),
        )

    def forward(self, x):
        return self.head(self.features(x))


class Node:
    """One half of a --cycle reference cycle."""

    def __init__(self, payload=None):
        self.payload = payload
        self.other = None


def positive_int(text):
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Small PyTorch training job with optional planted memory problems.")
    p.add_argument("--steps", type=positive_int, default=1000)
    p.add_argument("--batch", type=positive_int, default=32)
    p.add_argument("--log-every", type=positive_int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=positive_int, default=1)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--timing", action="store_true")
    p.add_argument("--markers", action="store_true")
    p.add_argument("--leak-growth", action="store_true")
    p.add_argument("--leak-native", nargs="?", const="step", choices=("step", "once"))
    p.add_argument("--leak-bytes", type=positive_int, default=65536)
    p.add_argument("--cycle", action="store_true")
    p.add_argument("--cycle-bytes", type=positive_int, default=4 << 20)
    p.add_argument("--gc-every", type=positive_int, default=10)
    p.add_argument("--cuda-leak", action="store_true")
    p.add_argument("--cached-leak", action="store_true")
    args = p.parse_args(argv)
    if args.workers < 0:
        p.error("--workers must be 0 or more")
    return args


def find_marker():
    """gcspy_mark from the preloaded shim, or None when gcspy is not loaded."""
    try:
        fn = ctypes.CDLL(None).gcspy_mark
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = None
    return fn


def load_libc():
    """malloc and memset as C code in this process calls them.

    Looked up in the global scope (dlsym(RTLD_DEFAULT)), as the dynamic linker
    binds a C extension's malloc calls: that finds a preloaded tool's malloc
    first. ctypes.CDLL("libc.so.6").malloc would not: dlsym() on libc's own
    handle returns glibc's malloc itself, which no LD_PRELOAD tool (gcspy,
    heaptrack, LSan) ever sees.
    """
    libc = ctypes.CDLL(None)
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.malloc.restype = ctypes.c_void_p
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    libc.memset.restype = ctypes.c_void_p
    return libc


def load_cudart():
    """cudaMalloc as the program's own CUDA code binds it, or None.

    libcudart is loaded RTLD_GLOBAL and cudaMalloc looked up in the global
    scope, for the same reason as in load_libc(): a tool's preloaded
    cudaMalloc must come first, as it does for PyTorch's own calls.
    """
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        try:
            fn = ctypes.CDLL(None).cudaMalloc
        except AttributeError:
            continue
        fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        fn.restype = ctypes.c_int
        return fn
    return None


def leak_native(libc, nbytes):
    # The pointer lives only in this frame's Python int, then nowhere.
    p = libc.malloc(nbytes)
    if p:
        libc.memset(p, 0x5A, nbytes)


def leak_cuda(cuda_malloc, nbytes):
    ptr = ctypes.c_void_p()
    rc = cuda_malloc(ctypes.byref(ptr), nbytes)
    if rc != 0:
        print(f"train.py: cudaMalloc({nbytes}) failed with CUDA error {rc}", file=sys.stderr)


def leak_cached(nbytes):
    # A block of the caching allocator with no tensor around it: the Python
    # int holding its address is the only trace, and it dies here.
    torch.cuda.caching_allocator_alloc(nbytes)


def make_cycle(nbytes, device):
    a = Node(torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0))
    b = Node()
    a.other, b.other = b, a


def main(argv):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    if args.device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif args.device == "cuda" and not torch.cuda.is_available():
        print("train.py: --device cuda: CUDA is not available", file=sys.stderr)
        return 2
    else:
        device = args.device
    pin = device == "cuda"

    mark = find_marker() if args.markers else None
    libc = load_libc() if args.leak_native else None
    cudart = None
    if args.cuda_leak:
        if device != "cuda":
            print("train.py: --cuda-leak ignored: not running on CUDA", file=sys.stderr)
        else:
            cudart = load_cudart()
            if cudart is None:
                print("train.py: --cuda-leak ignored: libcudart not found", file=sys.stderr)
    if args.cached_leak and device != "cuda":
        print("train.py: --cached-leak ignored: not running on CUDA", file=sys.stderr)
        args.cached_leak = False
    if args.cycle:
        # Only explicit collections below free the cycles, at known steps.
        gc.disable()

    dataset = SyntheticImages(max(args.batch * 64, 2048), args.seed)
    loader = DataLoader(
        dataset, batch_size=args.batch, shuffle=True, drop_last=True,
        num_workers=args.workers, persistent_workers=args.workers > 0,
        pin_memory=pin, generator=torch.Generator().manual_seed(args.seed + 1))

    model = SmallCNN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    step = 0
    step_times = []
    started = time.perf_counter()
    batches = iter(loader)
    while step < args.steps:
        t0 = time.perf_counter()
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            continue
        step += 1
        if mark is not None:
            mark(f"step {step}".encode())
        x, y = x.to(device, non_blocking=pin), y.to(device, non_blocking=pin)

        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward(retain_graph=args.leak_growth)
        opt.step()
        if args.leak_growth:
            LEAKED_LOSSES.append(loss)

        if args.leak_native == "step" or (args.leak_native == "once" and step == 1):
            leak_native(libc, args.leak_bytes)
        if cudart is not None:
            leak_cuda(cudart, args.leak_bytes)
        if args.cached_leak:
            leak_cached(args.leak_bytes)
        if args.cycle:
            make_cycle(args.cycle_bytes, device)
            if step % args.gc_every == 0:
                gc.collect()

        if step % args.log_every == 0 or step == args.steps:
            print(f"step {step} loss {loss.item():.6f}", flush=True)
        if device == "cuda":
            torch.cuda.synchronize()
        if step > WARMUP_STEPS:
            step_times.append(time.perf_counter() - t0)

    total = time.perf_counter() - started
    if args.cycle:
        gc.collect()
        gc.enable()
    print(f"done steps {step} device {device}", flush=True)
    if args.timing:
        if step_times:
            med = statistics.median(step_times) * 1e3
            mean = statistics.fmean(step_times) * 1e3
        else:
            med = mean = float("nan")
        print(f"timing: steps {len(step_times)} median_step_ms {med:.3f} "
              f"mean_step_ms {mean:.3f} total_s {total:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
