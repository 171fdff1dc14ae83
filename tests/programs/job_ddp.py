# A 2-rank DistributedDataParallel training on CPU (gloo), started by
# torchrun (tests/integration/job_torchrun.sh). Rank 1 alone leaks 64
# blocks of 16 KiB from libc's malloc (the addresses dropped: definite)
# and keeps a 256 KiB tensor per step (growth); rank 0 does neither.
import ctypes
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
print("rank", rank, "done", flush=True)
dist.destroy_process_group()
