#!/usr/bin/env python3
"""Training pairs for the fine-tuning speed benchmark, from the docir suite.

For each task of tasks/docir/suite.yaml: one positive, the (first) expected document's text,
and NEG negatives, other documents of the suite's corpus chosen by a seeded random generator
(never a document the task expects). A document's text is its Markdown body after the front
matter, cut to the first CHARS characters; its id is the front matter's `id`, else the file
stem (as engine/src/corpus/markdown.rs reads records). Output: JSON lines
{"query", "passage", "label"} (label 1.0 or 0.0), the same bytes on every run.

Usage: pairs.py [SUITE] [OUT] (defaults: tasks/docir/suite.yaml, pairs.jsonl beside this file).
"""
import json
import os
import random
import sys

import yaml

NEG = 3
CHARS = 1500
SEED = 27


def read_record(path):
    """(id, body) of one Markdown record."""
    text = open(path, encoding="utf-8").read()
    stem = os.path.splitext(os.path.basename(path))[0]
    doc_id, body = stem, text
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                front = yaml.safe_load("\n".join(lines[1:i])) or {}
                doc_id = str(front.get("id") or stem)
                body = "\n".join(lines[i + 1 :])
                break
    return doc_id, body.strip()


def expected_ids(expected):
    """The ids a task expects with grade >= 1: one id, a list, or a map id -> grade."""
    if isinstance(expected, str):
        return [expected]
    if isinstance(expected, list):
        return [str(e) for e in expected]
    if isinstance(expected, dict):
        return [str(k) for k, g in expected.items() if int(g) >= 1]
    raise SystemExit(f"unreadable expected: {expected!r}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    suite_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tasks/docir/suite.yaml")
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "pairs.jsonl")
    suite = yaml.safe_load(open(suite_path, encoding="utf-8"))
    corpus_dir = os.path.normpath(os.path.join(os.path.dirname(suite_path), suite["corpus"]))
    docs = {}
    for name in sorted(os.listdir(corpus_dir)):
        if name.endswith(".md"):
            doc_id, body = read_record(os.path.join(corpus_dir, name))
            docs[doc_id] = body[:CHARS]
    ids = sorted(docs)
    rng = random.Random(SEED)
    out = []
    for task in suite["tasks"]:
        wanted = expected_ids(task["expected"])
        positive = wanted[0]
        if positive not in docs:
            raise SystemExit(f"task {task['id']}: expected {positive!r} is not in {corpus_dir}")
        out.append({"query": task["query"], "passage": docs[positive], "label": 1.0})
        pool = [d for d in ids if d not in wanted]
        for neg in rng.sample(pool, NEG):
            out.append({"query": task["query"], "passage": docs[neg], "label": 0.0})
    with open(out_path, "w", encoding="utf-8") as f:
        for p in out:
            f.write(json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n")
    pos = sum(1 for p in out if p["label"] == 1.0)
    print(f"{len(out)} pairs ({pos} positive, {len(out) - pos} negative) from "
          f"{len(suite['tasks'])} tasks and {len(docs)} documents -> {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
