"""Type stubs of the extension module (python/src/lib.rs); the public API is treclab's."""

from typing import Any, Dict, List, Optional, Tuple

RANKLAB_VERSION: str
SUPPORTED: List[str]
DEFAULT_SEED: int

def evaluate(
    qrels: Any,
    run: Any,
    measures: List[str],
    per_query: bool,
    relevance_level: int,
    judged_only: bool,
    complete: bool,
    skip_missing: bool,
    summary_lines: bool,
) -> Tuple[Dict[str, Any], Optional[Dict[str, Dict[str, Any]]]]: ...
def measure_names(measures: List[str]) -> List[str]: ...
def compare(
    qrels: Any,
    runs: List[Tuple[str, Any]],
    measures: List[str],
    relevance_level: int,
    complete: bool,
    seed: int,
    judged_at: int,
    per_query: bool,
) -> str: ...
