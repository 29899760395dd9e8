"""Static phrase embeddings distilled from the sentence encoder (Model2Vec-style, Tulkens & van Dongen 2024).

Each wordpiece of the encoder's vocabulary is run through the encoder once, alone (``[CLS] piece [SEP]``,
mean-pooled like the sentence model); a phrase is the L2-normalised mean of its pieces' vectors. No
transformer runs per phrase, so encoding is tokenisation plus a mean: ~40x the transformer's phrases
per second on one CPU core (``benchmarks/export/sanitize_throughput.py``). The table is a function of the model
only (public); it is cached as .npy under a key of the model's files.

Used for CluSanT's span values and candidates (``clusant.phrase_encoder: static``): the mechanism's
metric is the distance in whatever embedding space the vocabulary and the inputs share, so the
guarantee's form is unchanged; the vocabulary is re-embedded with this encoder (its own cache key) and
the exact pure-LDP bound (``ldp_eps``) is recomputed from those embeddings.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from privtext.embed.encoder import get_encoder, resolve_model
from privtext.embed.settings import EmbedSettings

_CHUNK = 512


def table_path(settings: EmbedSettings, cache_dir: str | Path) -> Path:
    """Where ``piece_table`` caches the table: keyed by the model's name and its files' names and sizes."""
    model = Path(resolve_model(settings.model))
    files = sorted(p for p in model.rglob("*") if p.is_file()
                   and p.suffix in {".json", ".safetensors", ".bin", ".txt"}) \
        if model.is_dir() else []
    digest = hashlib.sha256(settings.model.encode())
    for path in files:
        digest.update(f"{path.relative_to(model)}:{path.stat().st_size}".encode())
    return Path(cache_dir) / f"static-pieces-{digest.hexdigest()[:24]}.npy"


def piece_table(settings: EmbedSettings, cache_dir: str | Path) -> np.ndarray:
    """float32 ``[vocab, dim]``: the encoder's output for each wordpiece alone (cached)."""
    path = table_path(settings, cache_dir)
    if path.exists():
        return np.load(path)
    import torch

    model = get_encoder(settings)
    tokenizer, transformer = model.tokenizer, model[0].auto_model
    pieces = torch.arange(tokenizer.vocab_size)
    table = np.zeros((tokenizer.vocab_size, model.get_embedding_dimension()), dtype=np.float32)
    with torch.inference_mode():
        for offset in range(0, len(pieces), _CHUNK):
            chunk = pieces[offset:offset + _CHUNK]
            ids = torch.stack([torch.full_like(chunk, tokenizer.cls_token_id), chunk,
                               torch.full_like(chunk, tokenizer.sep_token_id)], dim=1).to(transformer.device)
            hidden = transformer(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            table[offset:offset + len(chunk)] = hidden.mean(dim=1).float().cpu().numpy()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, table)
    os.replace(tmp, path)
    return table


def get_tokenizer(settings: EmbedSettings):
    """The encoder's wordpiece tokenizer alone: a ``tokenizers.Tokenizer`` read from the model's
    tokenizer.json (~0.1 s; transformers' AutoTokenizer costs ~4 s of imports in every Python worker),
    the file's truncation and padding off. A model without that file: transformers' fast tokenizer's backend."""
    path = Path(resolve_model(settings.model)) / "tokenizer.json"
    if path.is_file():
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
    else:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(resolve_model(settings.model),
                                                  local_files_only=not settings.allow_download).backend_tokenizer
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def encode_static(phrases: Sequence[str], table: np.ndarray, tokenizer) -> np.ndarray:
    """float64 ``[len(phrases), dim]`` unit rows: the mean of each phrase's piece vectors (a phrase
    without pieces, e.g. empty, gets the [UNK] vector)."""
    if not len(phrases):
        return np.zeros((0, table.shape[1]))
    ids = [e.ids for e in tokenizer.encode_batch([p if isinstance(p, str) else "" for p in phrases],
                                                 add_special_tokens=False)]
    unk = tokenizer.token_to_id(tokenizer.model.unk_token)
    out = np.stack([table[i or [unk]].mean(axis=0) for i in ids]).astype(np.float64)
    return out / np.linalg.norm(out, axis=1, keepdims=True).clip(min=1e-12)
