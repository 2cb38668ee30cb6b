"""Shared fixtures: trec_eval's own test files (RANKLAB_SHARED_DATA/trec_eval, as the Rust
conformance tests read them). A missing data directory fails the tests: they must not pass
silently."""

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def trec_dir() -> Path:
    base = os.environ.get("RANKLAB_SHARED_DATA")
    root = Path(base) if base else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    d = root / "trec_eval"
    assert (d / "qrels.test").is_file(), (
        f"trec_eval test data not found at {d}: set RANKLAB_SHARED_DATA to the shared data "
        "directory (the one holding trec_eval/)"
    )
    return d


def read_trec(path, run: bool) -> dict:
    """A TREC run or qrels file as pytrec_eval's dicts (a plain Python reader, the oracle's)."""
    d: dict = {}
    with open(path) as f:
        for line in f:
            a = line.split()
            if not a:
                continue
            d.setdefault(a[0], {})[a[2]] = float(a[4]) if run else int(a[3])
    return d
