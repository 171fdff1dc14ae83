"""torch_probe.py: the PyTorch facts gcspy's PyTorch-aware mode depends on,
measured in a few seconds on the GPU machine by scripts/gpu-check.sh --run
(no gcspy needed): which snapshot keys and block states the installed torch
returns (is_expandable among them), how long _snapshot() takes with memory
history on, which runtime and CUPTI libc10_cuda loads, and the allocator
backend. Prints one 'torch_probe: ...' line per fact; never fails hard:
every part is guarded. Taken from the audit's sketch (shared/gpu-probe).

  python3 torch_probe.py [--expandable | --async]   (sets PYTORCH_CUDA_ALLOC_CONF itself)
"""
import os
import sys
import time

if "--expandable" in sys.argv:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
elif "--async" in sys.argv:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"


def say(*a):
    print("torch_probe:", *a, flush=True)


say("python", sys.version.split()[0], "(gcspy's Python frames and PyTorch-aware mode need 3.11)")
t0 = time.time()
try:
    import torch
except Exception as e:  # noqa: BLE001
    say("no torch:", repr(e))
    sys.exit(0)
say("torch", torch.__version__, "cuda", torch.version.cuda, "import %.1f s" % (time.time() - t0))
if not torch.cuda.is_available():
    say("torch.cuda not available")
    sys.exit(0)

# How libc10_cuda reaches the runtime: a dynamic libcudart is what the PLT hooks need.
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
for so in ("libc10_cuda.so", "libtorch_cuda.so"):
    p = os.path.join(lib, so)
    try:
        import subprocess
        out = subprocess.run(["readelf", "-d", p], capture_output=True, text=True, timeout=20).stdout
        needed = [l.split("[")[1].rstrip("]") for l in out.splitlines() if "(NEEDED)" in l]
        say(so, "NEEDED", " ".join(n for n in needed if "cuda" in n or "cupti" in n or "nccl" in n))
    except Exception as e:  # noqa: BLE001
        say(so, "readelf failed:", repr(e))
maps = open("/proc/self/maps").read()
say("loaded before CUDA init:", sorted({l.split()[-1].rsplit("/", 1)[-1] for l in maps.splitlines()
                                        if "libcud" in l or "libcupti" in l}))
torch.cuda.init()
x = torch.empty(1 << 20, device="cuda")
maps = open("/proc/self/maps").read()
say("loaded after CUDA init:", sorted({l.split()[-1] for l in maps.splitlines()
                                       if "libcud" in l or "libcupti" in l or "libnccl" in l}))
try:
    say("allocator backend", torch.cuda.get_allocator_backend())
except Exception as e:  # noqa: BLE001
    say("allocator backend ?", repr(e))

# Memory history: the cheap form gcspy should use, then the costly default.
mem = torch.cuda.memory
for kw in ({"enabled": "all", "context": "alloc", "stacks": "python", "max_entries": 100000},
           {"enabled": "all"}):
    try:
        t = time.time()
        mem._record_memory_history(**kw)
        blocks = [torch.empty(4096 + i, device="cuda") for i in range(2000)]
        del blocks[::2]
        leak = torch.cuda.caching_allocator_alloc(5 * 2**20 + 768)
        t1 = time.time()
        s = mem._snapshot()
        t2 = time.time()
        segs = s["segments"] if isinstance(s, dict) else s
        nblk = sum(len(g["blocks"]) for g in segs)
        ev = sum(len(d) for d in s.get("device_traces", [])) if isinstance(s, dict) else 0
        states = sorted({b["state"] for g in segs for b in g["blocks"]})
        keys_seg = sorted(segs[0].keys()) if segs else []
        keys_blk = sorted(segs[0]["blocks"][0].keys()) if segs and segs[0]["blocks"] else []
        mine = [b for g in segs for b in g["blocks"] if b["address"] == leak]
        fr = mine[0].get("frames", []) if mine else []
        say("history", kw, "alloc loop %.2f s, _snapshot %.2f s: %d segments, %d blocks, %d events"
            % (t1 - t, t2 - t1, len(segs), nblk, ev))
        say("  segment keys", keys_seg, "block keys", keys_blk, "states", states)
        say("  expandable", sorted({g.get("is_expandable") for g in segs}),
            "planted block", mine[0]["size"] if mine else None, mine[0]["state"] if mine else None,
            "frames", len(fr), "first", [(f.get("name"), f.get("filename"), f.get("line")) for f in fr[:3]])
        torch.cuda.caching_allocator_delete(leak)
        del blocks
        mem._record_memory_history(enabled=None)
    except Exception as e:  # noqa: BLE001
        say("history", kw, "failed:", repr(e))
say("done")
