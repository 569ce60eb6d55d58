"""A small but real distributed data-parallel training program (the llama-sft stand-in).

gloo on CPU, nccl when CUDA is present. A tiny regression model on synthetic data; rank 0 logs
the loss and writes a checkpoint every CKPT_EVERY steps to CKPT_DIR (shared by all nodes); a
restarted run (requeue, retry) resumes from the latest checkpoint.

Environment: CKPT_DIR (default ./checkpoints), STEPS (default 60), CKPT_EVERY (default 20),
STEP_SLEEP (seconds per step, default 0: lets tests interrupt a run midway).
"""

from __future__ import annotations

import glob
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def latest_checkpoint(ckpt_dir: str) -> str | None:
    paths = glob.glob(os.path.join(ckpt_dir, "ckpt-*.pt"))
    return max(paths, key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0])) if paths else None


def main() -> None:
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local_rank}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)

    # every rank joins one process group: the sum of all ranks comes back to each of them
    t = torch.tensor([float(rank)], device=device)
    dist.all_reduce(t)
    if rank == 0:
        print(f"process group: backend {backend}, world size {world}, all_reduce(sum of ranks) = "
              f"{int(t.item())} (expected {world * (world - 1) // 2})", flush=True)

    steps = int(os.environ.get("STEPS", "60"))
    every = int(os.environ.get("CKPT_EVERY", "20"))
    pause = float(os.environ.get("STEP_SLEEP", "0"))
    ckpt_dir = os.environ.get("CKPT_DIR", "checkpoints")
    os.makedirs(ckpt_dir, exist_ok=True)

    torch.manual_seed(0)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = 0
    path = latest_checkpoint(ckpt_dir) if rank == 0 else None
    if path:
        state = torch.load(path, map_location=device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        print(f"resumed from {os.path.basename(path)} at step {start}", flush=True)
    # rank 0's checkpoint rules (a checkpoint directory need not be shared): every rank resumes at
    # its step, and DDP hands rank 0's weights to the others when it wraps the model
    step_t = torch.tensor([start], device=device)
    dist.broadcast(step_t, 0)
    start = int(step_t.item())
    ddp = DDP(model)
    w_true = torch.linspace(-1, 1, 16, device=device).unsqueeze(1)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard of the data
    for step in range(start, steps):
        x = torch.randn(64, 16, generator=gen).to(device)
        y = x @ w_true + 0.01 * torch.randn(64, 1, generator=gen).to(device)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and (step % 10 == 0 or step == steps - 1):
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if rank == 0 and (step + 1) % every == 0:
            tmp = os.path.join(ckpt_dir, f".ckpt-{step + 1}.tmp")
            torch.save({"step": step + 1, "model": model.state_dict(), "opt": opt.state_dict()}, tmp)
            os.replace(tmp, os.path.join(ckpt_dir, f"ckpt-{step + 1}.pt"))
            print(f"checkpoint ckpt-{step + 1}.pt", flush=True)
        if pause:
            time.sleep(pause)
    # an orderly end: every rank done, DDP's reducer gone, then the process group
    dist.barrier()
    del ddp
    dist.destroy_process_group()
    if rank == 0:
        print("done", flush=True)
    # leave without running C++ static destructors: under gloo one can abort the process at exit
    # ("terminate called without an active exception") after all the work is done
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
