#!/usr/bin/env python3
"""Which mappings hold a GPU process's host memory after NCCL's init.

Creates a CUDA context and a one-GPU NCCL communicator (as
gpu_rss_breakdown.py does), then reads /proc/self/smaps and prints the
largest anonymous mappings with their size, RSS and the thread count, plus
VmHWM. Run it under different environments to see what moves the peak.
Usage: gpu_rss_where.py LIBCUDART LIBNCCL [LABEL]"""
import ctypes
import os
import sys


def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k = line.split(":")[0]
            if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(line.split()[1]) // 1024
    return out


def anon_maps():
    maps, cur = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and ":" not in head[0]:
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                name = head[5] if len(head) > 5 else "[anon]"
                cur = [name, (hi - lo) >> 10, 0, head[0]]
                maps.append(cur)
            elif head[0] == "Rss:" and cur:
                cur[2] = int(head[1])
    return [m for m in maps if m[0].startswith("[")]


label = sys.argv[3] if len(sys.argv) > 3 else "default"
cudart = ctypes.CDLL(sys.argv[1])
cudart.cudaSetDevice(0)
cudart.cudaFree(None)
ctx = status()
nccl = ctypes.CDLL(sys.argv[2])
comm = ctypes.c_void_p()
devs = (ctypes.c_int * 1)(0)
rc = nccl.ncclCommInitAll(ctypes.byref(comm), 1, devs)
m = status()
threads = len(os.listdir("/proc/self/task"))
maps = sorted(anon_maps(), key=lambda x: -x[2])
big = sum(x[2] for x in maps if x[2] >= 1024) >> 10
print(f"{label}: rc {rc}, context {ctx['VmRSS']} MiB -> after init VmRSS "
      f"{m['VmRSS']} (anon {m['RssAnon']}, file {m['RssFile']}, shmem "
      f"{m['RssShmem']}), VmHWM {m['VmHWM']} MiB, {threads} threads, "
      f"anon mappings >= 1 MiB RSS hold {big} MiB", flush=True)
if label == "default" or os.environ.get("SHOW_MAPS"):
    for name, size, rss, rng in maps[:14]:
        print(f"    {name:8s} size {size >> 10:6d} MiB  rss {rss >> 10:5d} MiB  {rng}")

# What the two largest mappings contain: the first bytes, and whether the
# library file's sections (read from disk) appear in them byte for byte.
if os.environ.get("PROBE"):
    import re
    lib = open(sys.argv[2], "rb").read()
    magic = b"\x50\xed\x55\xba"
    for name, size, rss, rng in maps[:2]:
        lo, hi = (int(x, 16) for x in rng.split("-"))
        mem = ctypes.string_at(lo, hi - lo)
        fat = [mo.start() for mo in re.finditer(re.escape(magic), mem)]
        elf = mem.count(b"\x7fELF\x02\x01\x01")
        zero = mem.count(b"\x00" * 4096)
        print(f"  {name} {rng}: first bytes {mem[:16].hex()}, {len(fat)} fatbin "
              f"headers, {elf} ELF headers, {zero} zero pages")
        # sample 64 KiB blocks of the file and look for them in the mapping
        hits = 0
        for off in range(0, len(lib) - 65536, len(lib) // 64):
            if mem.find(lib[off:off + 65536]) >= 0:
                hits += 1
        print(f"    file blocks found in it: {hits} of 64")
        if fat:
            f0 = fat[0]
            print(f"    first fatbin header at +{f0}: {mem[f0:f0 + 16].hex()}")
