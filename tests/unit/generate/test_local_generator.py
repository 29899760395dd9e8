"""The local SmolLM2-135M generator (llama.cpp engine through the prebuilt ``xllamacpp``, the CPU default) on
tiny workloads: 16 new tokens at most, a handful of prompts; the transformers engine (what a GPU runs) on CPU; plus
the prompt filling and perplexity arithmetic without a model."""
from __future__ import annotations

import hashlib
import math
import os
import random
from pathlib import Path

import numpy as np
import pytest

from privtext.generate import GenerateSettings, backend_for, get_generator, perplexity
from privtext.generate.base import Generator
from privtext.generate.local import (
    TransformersLM,
    _load_float32,
    _perplexities,
    resolve_model_path,
    token_batches,
)

SETTINGS = GenerateSettings(engine="llama_cpp", max_new_tokens=16, seed=5)
FLUENT = "The package arrived two days late and the box was badly damaged."


@pytest.fixture(scope="module")
def first_load(tmp_path_factory):
    """The GGUF's first load, once for the module: ``_load_float32`` de-quantizes it (gguf's pure-Python reader,
    the slow part) and writes its float32 copy, into the configured cache when that has none yet (the module's
    later loads, the scorer's and the transformers engine's, then read it), else into a fresh folder. Returns
    (GGUF path, cache folder, tokenizer, ``_digests`` of its weights)."""
    path = resolve_model_path("smollm2")
    cache = SETTINGS.cache_dir
    if (Path(cache) / f"{path.stem}-{path.stat().st_size}-float32" / "model.safetensors").is_file():
        cache = str(tmp_path_factory.mktemp("llm-cache"))
    tokenizer, model = _load_float32(path, cache)
    return path, cache, tokenizer, _digests(model)


def _digests(model) -> dict[str, tuple]:
    """Each weight tensor's dtype, shape and sha256 of its bytes: equal digests are equal weights, bit for bit (the
    module keeps these, not a second 540 MB model)."""
    return {name: (str(t.dtype), tuple(t.shape), hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest())
            for name, t in model.state_dict().items()}


@pytest.fixture(scope="module")
def generator(first_load):
    return get_generator(SETTINGS, "default")


def test_bundled_model_resolves_offline():
    path = resolve_model_path("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50e6


def test_random_gives_clean_nonempty_texts_per_label(generator):
    texts = {label: generator.random(1, label, seed=11) for label in ("billing", "delivery")}
    for out in texts.values():
        assert len(out) == 1 and out[0].strip()
        assert "<|im" not in out[0] and "Reply with the message only" not in out[0]  # prompt stripped
    assert texts["billing"] != texts["delivery"]
    assert generator.random(1, "billing", seed=11) == texts["billing"]  # a seed reproduces


def test_variation_returns_L_per_input(generator):
    out = generator.variation(["My card was charged twice.", FLUENT], 2, label="billing", seed=3)
    assert [len(v) for v in out] == [2, 2]
    assert all(t.strip() for v in out for t in v)
    assert generator.variation([], 2, label="billing") == []


def test_one_model_per_process(generator):
    assert backend_for(SETTINGS) is generator.backend
    assert get_generator(SETTINGS, "default").backend is generator.backend
    with pytest.raises(KeyError, match="configured: default, movie_reviews"):
        get_generator(SETTINGS, "no_such_dataset")


def test_a_prompt_set_caps_its_own_replies(generator):
    """A prompt set's max_new_tokens replaces generate.max_new_tokens for its dataset only: the same
    seeded draw stops earlier (a prefix of the uncapped reply), other datasets keep the global cap."""
    movie = get_generator(SETTINGS, "movie_reviews")
    assert movie.backend.settings.max_new_tokens == SETTINGS.prompts["movie_reviews"].max_new_tokens == 32
    short = SETTINGS.prompts["default"].model_copy(update={"max_new_tokens": 4})
    capped = get_generator(SETTINGS.model_copy(update={"prompts": {"default": short}}), "default")
    assert capped.backend.settings.max_new_tokens == 4 and generator.backend.settings.max_new_tokens == 16
    full, cut = generator.random(3, "billing", seed=11), capped.random(3, "billing", seed=11)
    for whole, prefix in zip(full, cut):
        assert whole.startswith(prefix) and len(prefix) < len(whole)


def test_perplexity_is_lower_for_fluent_text(generator):
    words = FLUENT.rstrip(".").split()
    shuffled = " ".join(random.Random(0).sample(words, len(words))) + "."
    fluent_ppl, shuffled_ppl, empty = perplexity([FLUENT, shuffled, ""], SETTINGS)
    assert 1 < fluent_ppl < shuffled_ppl / 2
    assert math.isnan(empty)


def test_perplexity_arithmetic():
    logits = np.log(np.array([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [1 / 3, 1 / 3, 1 / 3]]]))
    targets = np.array([[0, 1, 2]])
    mask = np.array([[True, True, False]])  # the last position is padding
    expected = math.exp(-(math.log(0.5) + math.log(0.8)) / 2)
    assert _perplexities(logits, targets, mask)[0] == pytest.approx(expected)


class EchoBackend:
    def __init__(self):
        self.calls = []

    def complete(self, prompts, k, seed):
        self.calls.append((list(prompts), k, seed))
        return [[p] * k for p in prompts]


def test_prompts_are_label_conditioned_and_unlabeled_reads_cleanly():
    backend = EchoBackend()
    generator = Generator(backend, GenerateSettings().prompts["default"], default_seed=9)
    assert "about a billing problem" in generator.random(2, "billing")[0]
    assert backend.calls[-1][1:] == (2, 9)
    [[variant]] = generator.variation(["Where is my {parcel}?"], 1)
    assert variant.startswith("Rewrite this customer support message with small changes")
    assert variant.endswith("Message: Where is my {parcel}?")  # braces in private text are not fields
    assert "about  " not in generator.random(1, None)[0]


def test_engine_and_device_follow_the_hardware(monkeypatch):
    """``engine: auto`` is the engine measured fastest on the resolved device; llama.cpp stays on CPU;
    ``device: cuda`` without CUDA is refused naming the key (the CPU fallback is what CI runs)."""
    import torch

    from privtext.generate.local import local_engine

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert local_engine(GenerateSettings()) == ("llama_cpp", "cpu")
    assert local_engine(GenerateSettings(engine="transformers")) == ("transformers", "cpu")
    with pytest.raises(RuntimeError, match="generate.device is 'cuda'"):
        local_engine(GenerateSettings(device="cuda"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert local_engine(GenerateSettings()) == ("transformers", "cuda")
    assert local_engine(GenerateSettings(engine="llama_cpp")) == ("llama_cpp", "cpu")
    assert local_engine(GenerateSettings(device="cpu")) == ("llama_cpp", "cpu")


@pytest.fixture(scope="module")
def transformers_generator(first_load):
    """The engine a GPU runs (transformers' batched generation of the same GGUF), here on CPU as CI runs it."""
    pytest.importorskip("gguf")
    settings = GenerateSettings(engine="transformers", device="cpu", max_new_tokens=6, batch_size=4,
                                temperature=0.0, seed=5)
    return get_generator(settings, "default")


def test_transformers_engine_batches_with_left_padding(transformers_generator):
    """Greedy replies do not depend on the batch: a short prompt batched with a longer one (left-padded,
    masked) gets the reply it gets alone; a seeded sampled draw reproduces."""
    backend = transformers_generator.backend
    assert (backend.device, backend.settings.batch_size) == ("cpu", 4)
    short, long = "My card was charged twice.", FLUENT + " " + FLUENT + " Nobody answered my emails for a week."
    [[alone]] = transformers_generator.variation([short], 1, label="billing")
    together = transformers_generator.variation([long, short], 1, label="billing")
    assert alone.strip() and "<|im" not in alone
    assert together[1] == [alone] and together[0] != [alone]
    sampled = get_generator(backend.settings.model_copy(update={"temperature": 1.0}), "default")
    assert sampled.random(3, "billing", seed=7) == sampled.random(3, "billing", seed=7)


def test_transformers_and_llama_cpp_score_the_same_weights_alike(transformers_generator, generator):
    """The same GGUF weights through both engines: llama.cpp's log-probability of each token of its own greedy
    continuation, and transformers' of the same tokens after the same prompt tokens, agree within 0.1 nats
    on average (llama.cpp multiplies Q4_1 weights by Q8-quantized activations, transformers by float32
    ones; a wrong tokenizer or weight layout is off by nats). ``perplexity`` (transformers for both
    engines) rates fluent text far below shuffled text (about 90 against 9,000)."""
    import torch

    words = FLUENT.rstrip(".").split()
    texts = [FLUENT, " ".join(random.Random(0).sample(words, len(words))) + "."]
    ours = perplexity(texts, transformers_generator.backend.settings)
    assert ours[0] < ours[1] / 20
    assert np.allclose(perplexity(texts, SETTINGS), ours, rtol=1e-4)
    reply = generator.backend.server.handle_completions({"prompt": FLUENT, "max_tokens": 8, "temperature": 0.0,
                                                         "logprobs": 1, "return_tokens": True})
    steps = reply["choices"][0]["logprobs"]["content"]
    ids, llama = [step["id"] for step in steps], np.array([step["logprob"] for step in steps])
    backend = transformers_generator.backend
    prompt = backend.tokenizer(FLUENT, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = backend.model(input_ids=torch.tensor([prompt + ids])).logits[0].double()
    rows = torch.log_softmax(logits[len(prompt) - 1:-1], dim=-1)
    mine = rows[torch.arange(len(ids)), torch.tensor(ids)].numpy()
    assert len(ids) == 8 and abs(mine - llama).mean() < 0.1
    assert abs(mine - llama).mean() < abs(np.roll(mine, 1) - llama).mean()  # token by token, not on average only


@pytest.mark.parametrize("lengths, rows, tokens", [([5, 40, 7, 7, 300, 1], 3, 64), ([2048] * 5, 16, 2048),
                                                    ([10] * 20, 16, 4096), ([], 4, 10)])
def test_token_batches_cover_each_text_once_within_the_caps(lengths, rows, tokens):
    batches = token_batches(lengths, rows, tokens)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert lengths[batch[0]] == width and len(batch) <= rows
        assert len(batch) == 1 or len(batch) * width <= tokens  # only a lone sequence may pass the token cap


def test_perplexity_batched_by_tokens_equals_each_text_alone(first_load):
    """Texts of ~150, ~130, ~100 and a few tokens under a 512-token cap (three long ones share a padded pass, the
    short ones another): the scorer ``perplexity`` uses gives the same values as each scored alone (sorting,
    padding, batching)."""
    path, cache, _, _ = first_load
    settings = SETTINGS.model_copy(update={"perplexity_batch_tokens": 512, "cache_dir": cache})
    scorer = TransformersLM(settings, path)  # not the process's backend: its own cap, freed after the test
    long = " ".join(["the parcel arrived late again and nobody answered my mails"] * 15)
    texts = [FLUENT, long[:825], "Thanks.", long[:550], long[:690]]
    lengths = [len(scorer.tokenizer(t, add_special_tokens=False)["input_ids"]) + 1 for t in texts]
    assert sorted(map(sorted, token_batches(lengths, settings.batch_size, 512))) == [[0, 2], [1, 3, 4]]
    together = scorer.perplexity(texts)
    alone = [scorer.perplexity([t])[0] for t in texts]
    assert together == pytest.approx(alone, rel=1e-4)


def test_perplexity_scores_the_first_max_tokens_of_each_text(generator):
    """``max_tokens`` scores each text's start: a text and its first ~12 tokens score alike when capped there,
    and not without the cap (the metric of a 1 MB digest costs what its start does)."""
    text = FLUENT + " " + " ".join(random.Random(1).sample(FLUENT.split() * 4, 40))
    capped, short = perplexity([text, FLUENT], SETTINGS, max_tokens=12)
    whole = perplexity([text], SETTINGS)[0]
    assert short == pytest.approx(capped, rel=1e-4) and whole != pytest.approx(capped, rel=0.1)


def test_the_cached_float32_copy_is_the_gguf_model(first_load):
    """The first load de-quantizes the GGUF file and writes a transformers folder (renamed from its temporary
    name); the next loads that folder (~1 s, not ~40 s) and gets the same tokenizer and weights, bit for bit."""
    path, cache, tokenizer, digests = first_load
    copy = Path(cache) / f"{path.stem}-{path.stat().st_size}-float32"
    assert (copy / "model.safetensors").is_file() and not copy.with_name(f"{copy.name}.{os.getpid()}.tmp").exists()
    cached_tokenizer, cached = _load_float32(path, cache)
    text = "Ünïcode ١٢٣ 東京 — the parcel"
    assert cached_tokenizer(text)["input_ids"] == tokenizer(text)["input_ids"]
    assert _digests(cached) == digests
