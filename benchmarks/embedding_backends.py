"""Embedding rate of each CPU backend of the passage model (``pipeline.embedding_backends``).

512 released ``auto_evidence`` passages of at least 90 words (deduplicated, in file order), each
cut to its first 90 words, are embedded with batch size 32, three times per variant after one
warm-up batch, the variants taking turns (round robin) so that all see the same load from
other processes; passages per second (wall clock) and per CPU-second of this process are
printed for each run, with the load average. Variants:

- ``torch``: sentence-transformers on PyTorch, float32 (the reference);
- ``torch-int8``: the same model with ``torch.ao.quantization.quantize_dynamic`` on its Linear
  layers, per-channel int8 weights (measured only; not a backend of the workbench);
- ``onnx``, ``onnx-int8``: the workbench's ONNX Runtime backends (exported and quantised into
  ``EMBEDDING_CACHE_DIR`` on first use).

    python benchmarks/embedding_backends.py [--variants torch,onnx,onnx-int8] [--runs 3] [--passages 512]

Ranking quality per backend: ``EMBEDDING_BACKEND=<name> python benchmarks/quality/retrieval_quality.py``.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline import embedding_backends  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "factcheck-bench" / "factcheck-GPT-benchmark.jsonl"
WORDS = 90


def passages(path: Path, count: int) -> list[str]:
    seen: dict[str, None] = {}
    for line in path.open(encoding="utf-8"):
        for sentence in json.loads(line)["sentences"].values():
            for texts in sentence.get("auto_evidence") or []:
                for text in texts:
                    words = text.split()
                    if len(words) >= WORDS:
                        seen.setdefault(" ".join(words[:WORDS]))
    chosen = list(seen)[:count]
    if len(chosen) < count:
        raise SystemExit(f"only {len(chosen)} released passages have {WORDS} words or more")
    return chosen


def load(variant: str):
    if variant == "torch":
        return embedding_backends.load_torch_model()
    if variant == "torch-int8":
        import torch
        from torch.ao.quantization import per_channel_dynamic_qconfig

        model = embedding_backends.load_torch_model()
        return torch.ao.quantization.quantize_dynamic(
            model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
        )
    return embedding_backends.OnnxEncoder(embedding_backends.onnx_file(variant), backend=variant)


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="torch,torch-int8,onnx,onnx-int8")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--passages", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--data", type=Path, default=DEFAULT)
    args = parser.parse_args()

    texts = passages(args.data, args.passages)
    variants = args.variants.split(",")
    print(
        f"{len(texts)} passages of {WORDS} words, batch {args.batch_size}, {os.cpu_count()} CPUs, "
        f"load average {load_average()}"
    )
    models = {}
    for variant in variants:
        started = time.perf_counter()
        models[variant] = load(variant)
        models[variant].encode(texts[: args.batch_size], batch_size=args.batch_size, normalize_embeddings=True)
        print(f"  {variant}: loaded and warmed up in {time.perf_counter() - started:.1f} s")
    # Round robin, so that every variant sees the same changes of load from other processes.
    rates = {v: [] for v in variants}
    cpu_rates = {v: [] for v in variants}
    vectors = {}
    for run in range(1, args.runs + 1):
        for variant in variants:
            before = load_average()
            started, cpu_started = time.perf_counter(), time.process_time()
            vectors[variant] = np.asarray(
                models[variant].encode(
                    texts,
                    batch_size=args.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ),
                dtype=np.float32,
            )
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            rates[variant].append(len(texts) / wall)
            cpu_rates[variant].append(len(texts) / cpu)
            print(
                f"  run {run} {variant}: {rates[variant][-1]:.1f} passages/s, {cpu_rates[variant][-1]:.1f} "
                f"passages per CPU-second (load average before {before}, after {load_average()})"
            )
    print(f"load average at the end: {load_average()}\n")
    print(
        "| variant | passages/s, 3 runs | median | passages per CPU-second (median) | × torch (median) "
        "| cosine with torch's vectors: min / mean |\n| --- | --- | --- | --- | --- | --- |"
    )
    median = {v: sorted(r)[len(r) // 2] for v, r in rates.items()}
    for variant in variants:
        ratio = f"{median[variant] / median['torch']:.2f}" if "torch" in median else "–"
        agreement = "–"
        if "torch" in vectors and variant != "torch":
            cosines = np.sum(vectors[variant] * vectors["torch"], axis=1)
            agreement = f"{cosines.min():.4f} / {cosines.mean():.4f}"
        cpu_median = sorted(cpu_rates[variant])[len(cpu_rates[variant]) // 2]
        print(
            f"| {variant} | {', '.join(f'{r:.1f}' for r in rates[variant])} | {median[variant]:.1f} "
            f"| {cpu_median:.1f} | {ratio} | {agreement} |"
        )


if __name__ == "__main__":
    main()
