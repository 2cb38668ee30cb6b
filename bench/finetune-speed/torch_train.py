#!/usr/bin/env python3
"""Training speed of PyTorch on the pairs ranklab's finetune_speed example trains on, from the
same starting weights (the dequantized model folder written by export_dequantized), with
ranklab's settings: binary cross-entropy on the logit, AdamW lr 2e-5, weight decay 0.01 (none
on biases and LayerNorm), linear warm-up over ceil(10% of the steps) then linear decay to 0,
gradient clipped to global norm 1.0, batch 16, one epoch, max_length 256 (longest-first
truncation), no dropout (hidden and attention dropout set to 0 in the config), 2 threads.

Two trainers (--trainer):
  st    sentence-transformers' CrossEncoder.fit (since v4 a wrapper over CrossEncoderTrainer,
        i.e. transformers' Trainer): shuffled batches padded to their longest pair. Its
        scheduler counts len(pairs) // batch steps while the Trainer also runs the last partial
        batch, so that step gets learning rate 0 (140 pairs: 8 scheduled, 9 run).
  loop  a plain PyTorch loop that feeds the very batches ranklab does: ranklab's pair order
        (SplitMix64 Fisher-Yates, seed 42), each window of 8 batches sorted by length, padded to
        the batch's longest pair, ranklab's learning-rate schedule.

Run 1 is cold: its total counts from the start of the process (importing torch and
transformers, loading the tokenizer and the model, then the epoch). Runs 2.. are warm: the
model reloaded from the folder (not timed), then the epoch again. Each run prints one JSON line
(wall seconds, and CPU seconds of the process over all threads, over the same spans).

Usage: torch_train.py MODEL_DIR PAIRS [--trainer st|loop] [--runs N] [--threads 2]
"""
import time

START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForSequenceClassification, AutoTokenizer  # noqa: E402

BATCH, LR, WARMUP, WD, CLIP, MAXLEN, SEED, BUCKET_BATCHES = 16, 2e-5, 0.1, 0.01, 1.0, 256, 42, 8
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
M64 = (1 << 64) - 1


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def epoch_order(n, seed, epoch):
    """ranklab's rerank::finetune::epoch_order."""
    state = seed ^ ((epoch * 0xD1B54A32D192ED03) & M64)
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        state, r = splitmix(state)
        j = r % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def bucketed(order, lens, batch):
    """ranklab's rerank::finetune::bucketed."""
    out, w = [], batch * BUCKET_BATCHES
    for k in range(0, len(order), w):
        out += sorted(order[k : k + w], key=lambda i: lens[i])
    return out


def learning_rate(step, total):
    """ranklab's rerank::finetune::learning_rate."""
    warm = max(math.ceil(WARMUP * total), 1)
    if step < warm:
        return LR * (step + 1) / warm
    return LR * (total - step) / max(total - warm, 1)


def train_loop(folder, tok, pairs):
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1, **NO_DROPOUT)
    model.train()
    start, cpu = time.perf_counter(), time.process_time()
    no_decay = lambda n: n.endswith(".bias") or "LayerNorm" in n  # noqa: E731
    params = list(model.named_parameters())
    opt = torch.optim.AdamW(
        [
            {"params": [p for n, p in params if not no_decay(n)], "weight_decay": WD},
            {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0},
        ],
        lr=LR,
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    lens = [
        min(len(tok(p["query"], p["passage"], truncation="longest_first", max_length=MAXLEN)["input_ids"]), MAXLEN)
        for p in pairs
    ]
    order = bucketed(epoch_order(len(pairs), SEED, 0), lens, BATCH)
    total = math.ceil(len(pairs) / BATCH)
    t0 = time.perf_counter()
    loss_sum = 0.0
    for step in range(total):
        batch = [pairs[i] for i in order[step * BATCH : (step + 1) * BATCH]]
        enc = tok(
            [p["query"] for p in batch],
            [p["passage"] for p in batch],
            truncation="longest_first",
            max_length=MAXLEN,
            padding=True,
            return_tensors="pt",
        )
        labels = torch.tensor([p["label"] for p in batch], dtype=torch.float32)
        for g in opt.param_groups:
            g["lr"] = learning_rate(step, total)
        logits = model(**enc).logits.view(-1)
        loss = loss_fn(logits, labels)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        loss_sum += loss.item() * len(batch)
        now = time.perf_counter()
        print(f"  step {step + 1}/{total} loss {loss.item():.4f} {now - t0:.2f} s", file=sys.stderr)
        t0 = now
    return time.perf_counter() - start, time.process_time() - cpu, total, loss_sum / len(pairs)


def train_st(folder, tok, pairs):
    from sentence_transformers import CrossEncoder, InputExample
    from torch.utils.data import DataLoader

    model = CrossEncoder(folder, num_labels=1, max_length=MAXLEN, device="cpu", config_kwargs=dict(NO_DROPOUT))
    cfg = model.model.config
    print(f"  dropout: hidden {cfg.hidden_dropout_prob}, attention {cfg.attention_probs_dropout_prob}; "
          f"max_length {model.max_length}", file=sys.stderr)
    examples = [InputExample(texts=[p["query"], p["passage"]], label=float(p["label"])) for p in pairs]
    torch.manual_seed(SEED)
    loader = DataLoader(examples, shuffle=True, batch_size=BATCH)
    steps = math.ceil(len(pairs) / BATCH)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(
        train_dataloader=loader,
        epochs=1,
        warmup_steps=math.ceil(WARMUP * steps),
        optimizer_params={"lr": LR},
        weight_decay=WD,
        max_grad_norm=CLIP,
        show_progress_bar=False,
    )
    return time.perf_counter() - start, time.process_time() - cpu, steps, float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("pairs")
    ap.add_argument("--trainer", choices=["st", "loop"], default="st")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(SEED)
    pairs = [json.loads(l) for l in open(a.pairs, encoding="utf-8")]
    tok = AutoTokenizer.from_pretrained(a.folder)
    train = train_loop if a.trainer == "loop" else train_st
    name = {"loop": "PyTorch loop (ranklab's batches)", "st": "sentence-transformers CrossEncoder.fit"}[a.trainer]
    print(
        f"{name}: {len(pairs)} pairs, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"threads {torch.get_num_threads()}",
        file=sys.stderr,
    )
    for run in range(1, a.runs + 1):
        cold = run == 1
        train_s, train_cpu, steps, loss = train(a.folder, tok, pairs)
        total_s = time.perf_counter() - START if cold else train_s
        load_s = total_s - train_s
        row = {
            "trainer": name,
            "run": "cold" if cold else "warm",
            "pairs": len(pairs),
            "steps": steps,
            "load_s": load_s,
            "train_s": train_s,
            "total_s": total_s,
            "pairs_per_s_train": len(pairs) / train_s,
            "pairs_per_s_total": len(pairs) / total_s,
            "train_cpu_s": train_cpu,
            "total_cpu_s": time.process_time() if cold else train_cpu,
            "epoch_loss": None if math.isnan(loss) else loss,
            "threads": torch.get_num_threads(),
            # The process's peak resident memory so far (Linux reports KiB).
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
