"""Does llama_cpp.server survive real prompts on this machine? Run by `just llama-server-tests`
before the tests of harness/tests/llm_endpoint_server.rs.

It starts the server as those tests do (the SmolLM2 GGUF, 127.0.0.1, n_ctx 512, logits_all), sends
the one-token warm-up and then three scoring prompts of the tests' kind (completions and chat, with
log-probabilities), with 2 threads and, if that server dies, with 1. It prints the thread count of
the first server that answered everything and exits 0. When every server died of a signal it
prints what is known (the signal, the CPU, the end of the server's log, with Python's faulthandler
traceback and llama.cpp's system line) and exits 3: the server cannot run here, before ranklab
sends it anything. Any other failure exits 1.

Usage: python probe.py  (RANKLAB_LLAMA_GGUF, or the model store's smollm2-135m-instruct)
"""
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def gguf():
    if os.environ.get("RANKLAB_LLAMA_GGUF"):
        return os.environ["RANKLAB_LLAMA_GGUF"]
    root = os.environ.get("RANKLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ranklab")
    found = sorted(glob.glob(os.path.join(root, "models", "smollm2-135m-instruct", "*.gguf")))
    if not found:
        sys.exit(f"probe: no GGUF under {root}/models/smollm2-135m-instruct (ranklab models fetch)")
    return found[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


PASSAGE = ("Every capture request carries an idempotency key. The payment service stores the key "
           "with the response of the first request and returns that stored response to any retry "
           "with the same key, so a client that times out and retries never captures twice. ") * 3
USER = f"Query: idempotency key for a replayed capture\nPassage: {PASSAGE}\n\nDoes the passage answer the query? Answer yes or no."
PROMPT = ("<|im_start|>system\nYou are a search relevance judge.<|im_end|>\n<|im_start|>user\n"
          f"{USER}<|im_end|>\n<|im_start|>assistant\n")


def attempt(model, threads, log):
    port = free_port()
    out = open(log, "wb")
    child = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-m", "llama_cpp.server", "--model", model,
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads),
         "--n_ctx", "512", "--logits_all", "true", "--model_alias", "smollm2", "--verbose", "true"],
        stdout=out, stderr=subprocess.STDOUT)
    try:
        while True:
            if child.poll() is not None:
                return child.returncode
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5).read()
                break
            except OSError:
                time.sleep(0.25)
        try:
            post(port, "completions", {"prompt": "hi", "max_tokens": 1})
            for _ in range(2):
                post(port, "completions", {"prompt": PROMPT, "max_tokens": 1, "temperature": 0,
                                           "logprobs": 20})
            post(port, "chat/completions", {
                "messages": [{"role": "system", "content": "You are a search relevance judge."},
                             {"role": "user", "content": USER}],
                "max_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": 20})
        except OSError:
            time.sleep(1)
            if child.poll() is not None:
                return child.returncode
            raise
        return None
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        out.close()


def cpu():
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "unknown"
    model = next((l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("model name")), "?")
    flags = next((l.split(":", 1)[1].split() for l in text.splitlines() if l.startswith("flags")), [])
    simd = [f for f in flags if f.startswith(("avx", "fma", "f16c", "amx", "sse4"))]
    return f"{model}; {' '.join(simd)}"


def main():
    model = gguf()
    tmp = tempfile.mkdtemp(prefix="llama-probe-")
    deaths = []
    for threads in (2, 1):
        log = os.path.join(tmp, f"server-{threads}.log")
        code = attempt(model, threads, log)
        if code is None:
            if deaths:
                print(f"probe: with 2 threads llama_cpp.server died ({deaths[0]}); with 1 it answered",
                      file=sys.stderr)
            print(threads)
            return 0
        what = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
        deaths.append(what)
        tail = open(log, "rb").read()[-6000:].decode("utf-8", "replace")
        print(f"probe: llama_cpp.server with {threads} thread(s) died ({what}) on the probe's prompts; "
              f"the end of its log:\n{tail}\n", file=sys.stderr)
        if code > 0:
            return 1
    print(f"probe: CPU: {cpu()}", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
