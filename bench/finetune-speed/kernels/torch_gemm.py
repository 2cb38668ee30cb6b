"""GFLOP/s of PyTorch's (MKL's) matrix products on one training step's shapes.

The same shapes, layouts and timing as `ranklab-kernel-rates gemm THREADS` (src/main.rs): a
product `[m x k] . [k x n]`, A read transposed when ta (stored k x m), B when tb (stored n x k),
a batch of 192 as one `torch.bmm`; median of 5 timings of about 0.15 s each, wall and process
CPU seconds. One JSON line per shape on stdout.

    /work/torchvenv/bin/python torch_gemm.py THREADS
"""

import json
import sys
import time

import torch

SHAPES = [
    # name, batch, m, k, n, ta, tb, per_layer
    ("qkvo fwd x·Wt [4096x384]·[384x384]", 1, 4096, 384, 384, False, True, 4),
    ("qkvo dx dy·W [4096x384]·[384x384]", 1, 4096, 384, 384, False, False, 4),
    ("qkvo dW dyt·x [384x4096]·[4096x384]", 1, 384, 4096, 384, True, False, 4),
    ("up fwd x·Wt [4096x384]·[384x1536]", 1, 4096, 384, 1536, False, True, 1),
    ("up dx dy·W [4096x1536]·[1536x384]", 1, 4096, 1536, 384, False, False, 1),
    ("up dW dyt·x [1536x4096]·[4096x384]", 1, 1536, 4096, 384, True, False, 1),
    ("down fwd x·Wt [4096x1536]·[1536x384]", 1, 4096, 1536, 384, False, True, 1),
    ("down dx dy·W [4096x384]·[384x1536]", 1, 4096, 384, 1536, False, False, 1),
    ("down dW dyt·x [384x4096]·[4096x1536]", 1, 384, 4096, 1536, True, False, 1),
    ("attn S=Q·Kt, dP=dO·Vt 192x[256x32]·[32x256]", 192, 256, 32, 256, False, True, 2),
    ("attn O=P·V, dQ=dS·K 192x[256x256]·[256x32]", 192, 256, 256, 32, False, False, 2),
    ("attn dV=Pt·dO, dK=dSt·Q 192x[256x256]t·[256x32]", 192, 256, 256, 32, True, False, 2),
]


def operand(batch, rows, cols, transposed, gen):
    """A batch x rows x cols view, stored transposed (cols x rows) when asked."""
    if transposed:
        t = torch.rand((batch, cols, rows), generator=gen) * 2 - 1
        return t.transpose(1, 2)
    return torch.rand((batch, rows, cols), generator=gen) * 2 - 1


def timed(f):
    f()
    t = time.perf_counter()
    f()
    once = max(time.perf_counter() - t, 1e-6)
    reps = max(int(0.15 / once), 1)
    walls, cpus = [], []
    for _ in range(5):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(reps):
            f()
        walls.append((time.perf_counter() - w0) / reps)
        cpus.append((time.process_time() - c0) / reps)
    return sorted(walls)[2], sorted(cpus)[2]


def main():
    threads = int(sys.argv[1])
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(1)
    for name, batch, m, k, n, ta, tb, per_layer in SHAPES:
        a = operand(batch, m, k, ta, gen)
        b = operand(batch, k, n, tb, gen)
        if batch == 1:
            a, b = a[0], b[0]
            out = torch.empty((m, n))
            f = lambda: torch.matmul(a, b, out=out)  # noqa: E731
        else:
            out = torch.empty((batch, m, n))
            f = lambda: torch.bmm(a, b, out=out)  # noqa: E731
        wall, cpu = timed(f)
        flops = 2.0 * batch * m * k * n
        print(json.dumps({
            "what": "gemm", "impl": f"PyTorch {torch.__version__} (MKL)", "shape": name,
            "threads": threads, "per_step": 12 * per_layer, "gflop": round(flops / 1e9, 4),
            "ms": round(wall * 1e3, 3), "cpu_ms": round(cpu * 1e3, 3),
            "gflops": round(flops / wall / 1e9, 1), "gflops_per_cpu_s": round(flops / cpu / 1e9, 1),
        }, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
