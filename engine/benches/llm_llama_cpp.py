"""llama.cpp's side of engine/benches/llm.rs: prompt tokens per second on the same token ids.

Usage: python llm_llama_cpp.py MODEL.gguf PROMPTS.json THREADS
PROMPTS.json is a list of token-id lists (written by the Rust benchmark). Each prompt is
evaluated once from an empty cache (reset, then eval), as the reranker scores a pair; only the
eval calls are timed. Prints `TOKENS_PER_SECOND <x>`.
"""

import json
import sys
import time

from llama_cpp import Llama


def main() -> None:
    model, prompts_path, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(prompts_path, encoding="utf-8") as f:
        prompts = json.load(f)
    longest = max(len(p) for p in prompts)
    llm = Llama(
        model_path=model,
        n_ctx=max(512, longest + 8),
        n_batch=longest + 8,
        n_ubatch=longest + 8,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    llm.reset()
    llm.eval(prompts[0][:8])  # warm-up, not timed
    elapsed = 0.0
    for ids in prompts:
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(ids)
        elapsed += time.perf_counter() - t0
    print(f"TOKENS_PER_SECOND {sum(len(p) for p in prompts) / elapsed:.3f}")


if __name__ == "__main__":
    main()
