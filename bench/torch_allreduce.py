"""torch.distributed.all_reduce timed like nccl-tests, the reference for
bench/gpu_allreduce.sh.

Run under torchrun (one process per GPU). For each size: float32 tensor,
warm-up, a barrier, then `iters` all_reduces between two CUDA events on the
current stream; the time per op is averaged over ranks (nccl-tests -a 1,
as efa-preflight's sweep does). all_reduce is in place. Rank 0 prints one
JSON object per size: bytes, time_us, algbw_gbps, busbw_gbps, wrong.

    torchrun --nproc_per_node=2 bench/torch_allreduce.py --sizes 8,16,... \
        --iters 20 --warmup 5
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True, help="bytes, comma-separated")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    world = dist.get_world_size()
    rank = dist.get_rank()
    factor = 2.0 * (world - 1) / world if world > 1 else 1.0
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)

    for nbytes in (int(s) for s in args.sizes.split(",")):
        count = max(nbytes // 4, 1)
        buf = torch.full((count,), float(rank + 1), dtype=torch.float32,
                         device=dev)
        for _ in range(args.warmup):
            dist.all_reduce(buf)
        dist.barrier()
        torch.cuda.synchronize()
        start.record()
        for _ in range(args.iters):
            dist.all_reduce(buf)
        stop.record()
        stop.synchronize()
        per_op = start.elapsed_time(stop) / 1e3 / args.iters
        t = torch.tensor([per_op], dtype=torch.float64, device=dev)
        dist.all_reduce(t)
        per_op = t.item() / world
        # a light check: ones-based values stay exact for a few steps only,
        # so check a fresh all_reduce of the rank values
        buf.fill_(float(rank + 1))
        dist.all_reduce(buf)
        want = world * (world + 1) / 2
        wrong = int((buf != want).sum().item())
        del buf
        if rank == 0:
            algbw = count * 4 / per_op / 1e9
            print(json.dumps({"bytes": count * 4, "time_us": per_op * 1e6,
                              "algbw_gbps": algbw,
                              "busbw_gbps": algbw * factor, "wrong": wrong}),
                  flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
