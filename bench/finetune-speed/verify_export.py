#!/usr/bin/env python3
"""Checks the exported model folder against candle: PyTorch's logits (transformers'
AutoModelForSequenceClassification, eval mode) on the pairs export_dequantized scored must equal
candle's float forward (OUT/candle_logits.json) within TOL. Prints both; exits 1 if not.

Usage: verify_export.py MODEL_DIR
"""
import json
import sys

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

TOL = 1e-3


def main():
    folder = sys.argv[1]
    want = json.load(open(f"{folder}/candle_logits.json"))
    pairs = [json.loads(l) for l in open(want["pairs"])][: len(want["rows"])]
    tok = AutoTokenizer.from_pretrained(folder)
    model, info = AutoModelForSequenceClassification.from_pretrained(
        folder, output_loading_info=True
    )
    missing = [k for k in info["missing_keys"] if not k.endswith("position_ids")]
    if missing or info["unexpected_keys"]:
        print(f"loading: missing {missing}, unexpected {info['unexpected_keys']}")
        sys.exit(1)
    model.eval()
    worst = 0.0
    print(f"{'pair':>4} {'tokens':>6} {'candle':>12} {'torch':>12} {'|diff|':>10}")
    for i, (p, row) in enumerate(zip(pairs, want["rows"])):
        enc = tok(p["query"], p["passage"], truncation="longest_first",
                  max_length=want["max_length"], return_tensors="pt")
        with torch.no_grad():
            got = model(**enc).logits[0, 0].item()
        n = enc["input_ids"].shape[1]
        if n != row["tokens"]:
            print(f"pair {i}: {n} tokens in transformers, {row['tokens']} in candle")
            sys.exit(1)
        d = abs(got - row["logit"])
        worst = max(worst, d)
        print(f"{i:>4} {n:>6} {row['logit']:>12.6f} {got:>12.6f} {d:>10.2e}")
    ok = worst <= TOL
    print(f"largest difference {worst:.2e} ({'within' if ok else 'OVER'} {TOL})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
