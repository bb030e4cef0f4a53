"""GPU micro-benchmarks for the pre-flight gate, run in a child process (``python -m
gpufleet.ops.gpubench gemm|hbm --seconds S``) so a hung kernel or a CUDA crash cannot take the
caller down and the parent's timeout is a hard budget. Prints one JSON line per GPU.

GEMM TFLOP/s = 2·n³·iterations / seconds / 1e12 (a square n×n matmul does n³ multiply-adds).
HBM GB/s = 2·bytes·iterations / seconds / 1e9 (a device-to-device copy reads and writes each byte).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _gemm(torch, dev: int, seconds: float, n: int) -> float:
    a = torch.randn(n, n, device=f"cuda:{dev}", dtype=torch.bfloat16)
    b = torch.randn(n, n, device=f"cuda:{dev}", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize(dev)
    iters, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize(dev)
        iters += 10
    return 2 * n**3 * iters / (time.perf_counter() - t0) / 1e12


def _hbm(torch, dev: int, seconds: float, mib: int) -> float:
    x = torch.empty(mib * 2**20, dtype=torch.uint8, device=f"cuda:{dev}")
    y = torch.empty_like(x)
    y.copy_(x)
    torch.cuda.synchronize(dev)
    iters, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            y.copy_(x)
        torch.cuda.synchronize(dev)
        iters += 10
    return 2 * x.numel() * iters / (time.perf_counter() - t0) / 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gpubench")
    ap.add_argument("kind", choices=("gemm", "hbm"))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--mib", type=int, default=2048)
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print(json.dumps({"skipped": "torch not installed"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch sees no CUDA device"}))
        return 0
    for dev in range(torch.cuda.device_count()):
        name = torch.cuda.get_device_name(dev)
        if args.kind == "gemm":
            value = _gemm(torch, dev, args.seconds, args.n)
        else:
            value = _hbm(torch, dev, args.seconds, args.mib)
        print(json.dumps({"gpu": dev, "name": name, "value": round(value, 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
