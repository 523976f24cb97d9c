#!/usr/bin/env python3
"""Where a GPU process's host memory goes, stage by stage.

Loads the CUDA runtime and NCCL with ctypes (as the agent does with dlopen),
and prints VmRSS / RssAnon / RssFile / VmHWM after each stage, so the share of
the CUDA driver, of NCCL's library image and of a communicator is visible.
Usage: gpu_rss_breakdown.py LIBCUDART LIBNCCL"""
import ctypes
import sys


def mem():
    want = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in want:
                out[key] = int(line.split()[1]) // 1024
    return out


def show(stage):
    m = mem()
    print(f"| {stage} | {m['VmRSS']} | {m['RssAnon']} | {m['RssFile']} | "
          f"{m['RssShmem']} | {m['VmHWM']} |", flush=True)


print("| stage | VmRSS MiB | RssAnon | RssFile | RssShmem | VmHWM |")
print("|---|---:|---:|---:|---:|---:|")
show("python, nothing loaded")
cudart = ctypes.CDLL(sys.argv[1])
show("libcudart loaded")
cudart.cudaSetDevice(0)
cudart.cudaFree(None)
show("CUDA context on GPU 0")
nccl = ctypes.CDLL(sys.argv[2])
ver = ctypes.c_int()
nccl.ncclGetVersion(ctypes.byref(ver))
show(f"libnccl loaded, ncclGetVersion = {ver.value}")
comm = ctypes.c_void_p()
devs = (ctypes.c_int * 1)(0)
rc = nccl.ncclCommInitAll(ctypes.byref(comm), 1, devs)
show(f"ncclCommInitAll, 1 GPU (rc {rc})")
buf = ctypes.c_void_p()
cudart.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(64 << 20))
stream = ctypes.c_void_p()
cudart.cudaStreamCreate(ctypes.byref(stream))
for _ in range(10):
    nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(16 << 20), 7, 0, comm, stream)
cudart.cudaStreamSynchronize(stream)
show("10 all_reduces of 64 MiB")
