# A 2-rank DistributedDataParallel training on CPU (gloo), started by
# torchrun (tests/integration/job_torchrun.sh). Rank 1 alone leaks 64
# blocks of 16 KiB from libc's malloc (the addresses dropped: definite)
# and keeps a 256 KiB tensor per step (growth); rank 0 does neither.
import ctypes
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(8, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
kept = []
for step in range(8):
    loss = model(torch.randn(16, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 1:
        kept.append(torch.randn(64 * 1024))
        for _ in range(8):
            ctypes.memset(libc.malloc(16384), 1, 16384)
    # A step lasts as a training step does: allocation records carry the
    # writer's coarse clock (one flush interval), and 8 steps of this tiny
    # model ran within 10 ms on an idle machine, too fast to fit a growth
    # per step to (rank 1's growth outlier was missing in 2 runs of 4).
    time.sleep(0.05)
print("rank", rank, "done", flush=True)
dist.destroy_process_group()
