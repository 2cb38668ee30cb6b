"""BM25 over SciFact with the Python `bm25s` package: index the corpus, retrieve the top 100 of
the 300 test queries, print the times (index, retrieval alone) and nDCG@10-free sanity figures.

Same settings as ranklab's BM25 where bm25s has them: Lucene's scoring, k1 = 0.9, b = 0.4,
English stop words, Snowball English stemming (PyStemmer), title + text per document.
Usage: python bm25s_scifact.py SCIFACT_DIR
"""

import json
import sys
import time

import bm25s
import Stemmer


def main():
    d = sys.argv[1]
    t0 = time.perf_counter()
    ids, texts = [], []
    with open(f"{d}/corpus.jsonl") as f:
        for line in f:
            r = json.loads(line)
            ids.append(r["_id"])
            texts.append((r.get("title") or "") + "\n" + (r.get("text") or ""))
    judged = set()
    with open(f"{d}/qrels/test.tsv") as f:
        next(f)
        for line in f:
            judged.add(line.split("\t")[0])
    queries = []
    with open(f"{d}/queries.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r["_id"] in judged:
                queries.append(r["text"])
    stemmer = Stemmer.Stemmer("english")
    t1 = time.perf_counter()
    corpus_tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(corpus_tokens, show_progress=False)
    t2 = time.perf_counter()
    q_tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = retriever.retrieve(q_tokens, k=100, show_progress=False, n_threads=1)
    t3 = time.perf_counter()
    print(
        json.dumps(
            {
                "queries": len(queries),
                "docs": len(ids),
                "load_s": round(t1 - t0, 4),
                "index_s": round(t2 - t1, 4),
                "retrieve_300_top100_s": round(t3 - t2, 4),
                "top1_of_first_query": ids[int(docs[0][0])],
            }
        )
    )


if __name__ == "__main__":
    main()
