"""From the raw figures to what-would.json (what-would.md, sections 1-4).

Reads raw/kernels.jsonl (kernels.sh), flops.py's count and results.json (the quiet epoch of
trainer 3 against the PyTorch loop) and the profile shares of trainer 3 as merged (train46's
results.md, quoted below), and prints one JSON object: per implementation and thread count,
GFLOP/s per shape (median over rounds, wall and per CPU second), the matrix products' CPU and
wall seconds for one step (each shape times how often a step runs it), and the budget they
leave the rest of the step.

    python3 bench/finetune-speed/kernels/analyse.py > bench/finetune-speed/what-would.json
"""

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
PAIRS_PER_STEP = 16

# trainer 3 as merged, perf, first 32 pairs (train46's results.md, "profiled again 11:21 UTC")
PROFILE_TRAINER3 = {
    "matrix products (gemm AVX2 kernel + packing)": 0.442,
    "candle elementwise passes": 0.138,
    "candle pool barrier waits": 0.069,
    "fused ops (softmax, LayerNorm, GELU, AdamW)": 0.109,
    "erf and exp (libm scalar)": 0.077,
    "memset and memmove": 0.062,
    "kernel (page faults, scheduling)": 0.091,
    "other": 0.012,
}


def landed():
    """The alternated A/B of one training step, main's build against the patched gemm-common
    with x86-v4 on (raw/gemm-pinned-ab.jsonl: a line naming the build, then its result)."""
    path = os.path.join(BENCH, "raw", "gemm-pinned-ab.jsonl")
    if not os.path.exists(path):
        return None
    runs, build = [], None
    for line in open(path):
        r = json.loads(line)
        if "build" in r:
            build = r
        else:
            runs.append({**build, **r})
    cpu = {b: [r["train_cpu_s"] for r in runs if r["build"] == b and r["pairs"] == 16]
           for b in ("before", "after")}
    return {
        "runs": runs,
        "same_bits": len({(r["weights_fnv"], tuple(r["score_bits"]), r["pairs"]) for r in runs
                          if r["pairs"] == 16}) == 1,
        "cpu_s_16_pairs_mean": {b: statistics.mean(v) for b, v in cpu.items() if v},
    }


def main():
    flops = json.loads(subprocess.run(
        [sys.executable, os.path.join(HERE, "flops.py")], capture_output=True, check=True,
        text=True).stdout)
    quiet = json.load(open(os.path.join(BENCH, "results.json")))
    rows = [json.loads(line) for line in open(os.path.join(BENCH, "raw", "kernels.jsonl"))]
    peak = [r for r in rows if r["what"] in ("peak", "clock")]
    loads = [r["uptime"] for r in rows if r["what"] == "load"]
    gem = {}
    for r in rows:
        if r["what"] == "gemm":
            gem.setdefault((r["impl"], r["threads"], r["shape"]), []).append(r)
    impls = {}
    for (impl, threads, shape), rs in sorted(gem.items()):
        med = lambda k: statistics.median(x[k] for x in rs)  # noqa: E731
        d = impls.setdefault(f"{impl}, {threads} thread(s)", {
            "impl": impl, "threads": threads, "shapes": [], "step_matmul_cpu_s": 0.0,
            "step_matmul_wall_s": 0.0})
        per_step, gflop = rs[0]["per_step"], rs[0]["gflop"]
        d["shapes"].append({"shape": shape, "per_step": per_step, "gflop": gflop,
                            "runs": len(rs), "gflops_wall": med("gflops"),
                            "gflops_per_cpu_s": med("gflops_per_cpu_s")})
        d["step_matmul_cpu_s"] += per_step * gflop / med("gflops_per_cpu_s")
        d["step_matmul_wall_s"] += per_step * gflop / med("gflops")
    mm_gflop = flops["matmul_gflop_per_step"]
    for d in impls.values():
        d["step_matmul_gflops_per_cpu_s"] = mm_gflop / d["step_matmul_cpu_s"]
        d["step_matmul_gflops_wall"] = mm_gflop / d["step_matmul_wall_s"]
    torch_cpu_step = quiet["torch_cpu_s_per_pair"] * PAIRS_PER_STEP
    ours_cpu_step = quiet["ranklab_cpu_s_per_pair"] * PAIRS_PER_STEP
    gflop_pair = flops["total_gflop_per_step"] / PAIRS_PER_STEP

    def find(prefix, threads):
        return next(d for d in impls.values()
                    if d["impl"].startswith(prefix) and d["threads"] == threads)

    # The budget uses the 1-thread CPU rates: CPU time counts only while a thread runs, so it
    # is the figure load moves least; the 2-thread runs (load 5.7-6.9) add spinning at
    # barriers when the other core is taken (MKL's 2-thread CPU per step equals PyTorch's whole
    # quiet step), and their wall figures are not a measure of either library.
    torch1 = find("PyTorch", 1)
    t46 = find("train46", 1)
    off1 = find("gemm x86-v4 off", 1)
    v41 = find("gemm x86-v4 on", 1)
    ours_rest = ours_cpu_step - off1["step_matmul_cpu_s"]
    ours_rest_profile = ours_cpu_step * (1 - PROFILE_TRAINER3["matrix products (gemm AVX2 kernel + packing)"])
    torch_rest = torch_cpu_step - torch1["step_matmul_cpu_s"]
    budget = torch_cpu_step - v41["step_matmul_cpu_s"]
    out = {
        "flops": flops,
        "peak": peak,
        "loads": loads,
        "quiet_epoch": {k: quiet[k] for k in (
            "ranklab_pairs_per_s", "torch_pairs_per_s", "ranklab_cpu_s_per_pair",
            "torch_cpu_s_per_pair", "ranklab_peak_rss_mb", "torch_peak_rss_mb")},
        "achieved_gflop_per_cpu_s": {
            "torch": gflop_pair / quiet["torch_cpu_s_per_pair"],
            "ranklab_trainer3": gflop_pair / quiet["ranklab_cpu_s_per_pair"],
        },
        "step_cpu_s": {"torch": torch_cpu_step, "ranklab_trainer3": ours_cpu_step},
        "profile_trainer3": PROFILE_TRAINER3,
        "torch_step": {
            "matmul_cpu_s_at_mkl_1_thread_rates": torch1["step_matmul_cpu_s"],
            "matmul_share": torch1["step_matmul_cpu_s"] / torch_cpu_step,
            "rest_cpu_s": torch_rest,
        },
        "ranklab_step": {
            "matmul_cpu_s_gemm_off_1_thread_rates": off1["step_matmul_cpu_s"],
            "matmul_share_measured": off1["step_matmul_cpu_s"] / ours_cpu_step,
            "matmul_share_profile": PROFILE_TRAINER3["matrix products (gemm AVX2 kernel + packing)"],
            "rest_cpu_s": ours_rest,
            "rest_cpu_s_from_profile": ours_rest_profile,
            "with_gemm_v4_kernels_matmul_cpu_s": v41["step_matmul_cpu_s"],
            "with_gemm_v4_kernels_step_cpu_s": v41["step_matmul_cpu_s"] + ours_rest,
            "with_gemm_v4_kernels_cpu_s_per_pair": (v41["step_matmul_cpu_s"] + ours_rest) / PAIRS_PER_STEP,
            "with_train46_kernel_matmul_cpu_s": t46["step_matmul_cpu_s"],
            "rest_budget_cpu_s_for_torch_parity_with_gemm_v4_kernels": budget,
            "rest_must_shrink_by": ours_rest / budget,
        },
        "landed_pinned_gemm_common": landed(),
        "implementations": impls,
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
