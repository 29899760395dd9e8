"""One-time builds in the background: the trained detector, the sanitizer's vocabularies, the scoring LM.

A fresh clone has none cached: the trained NER (``privtext train detector``, about a CPU minute on one
thread), CluSanT's vocabularies (the static phrase encoder's piece table, one encoder pass over
30,522 wordpieces, plus every type's phrases and their embeddings, about a CPU minute) and the float32
copy of the generator's GGUF that sanitize's perplexity metric loads (``generate.cache_dir``: gguf's
pure-Python reader, about 40 s of a core; without it each Spark worker of the metrics job de-quantizes
its own copy at once, two on two cores). ``privtext demo`` starts what is missing at its beginning
(``start``): one background process per stage that reads a build (``groups``: the detector; the
vocabularies then the LM), and waits for each only right before that stage (``Background.before``):
detect_pii for the detector, sanitize for the vocabularies and the LM. Each
builds with the same functions, settings and content-keyed caches as the stages
(``tagger.ensure_trained``, ``sanitizer_setup.build_sanitizer``, ``generate.local.TransformersLM``), so what
the stages read is exactly what they would have built themselves, and a cached build costs nothing. A
background build that fails changes nothing: detect_pii then runs without the trained NER (it says so),
sanitize builds its vocabularies and its workers de-quantize the LM. Nothing here reads private data:
every build uses public sources only.

Each background process computes on one thread (``BUILD_THREADS``: torch, OpenMP and the BLAS): its builds run
beside the demo's stages on the same cores, where a second thread per build spun on contended cores (the piece
table took 2.2x the CPU on two threads, to the same bits; docs/benchmarks.md, "The first demo's background
builds on one thread").
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from privtext.settings import Settings

JOBS = {"detector": "detect_pii", "vocabularies": "sanitize", "llm": "sanitize"}  # build -> the first stage reading it
BUILD_THREADS = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def groups(missing: list[str]) -> list[list[str]]:
    """The missing builds as one process each per reading stage, in ``JOBS`` order: the detector (one thread,
    waited for first, right after ingest) alone, the builds sanitize reads one after the other in a second
    process. On two cores the detector then has a core to itself once ingest is done; three builds at once
    took a third of a core each from it (docs/benchmarks.md, "Where the first demo's CPU goes")."""
    stages: dict[str, list[str]] = {}
    for job in JOBS:
        if job in missing:
            stages.setdefault(JOBS[job], []).append(job)
    return list(stages.values())


def detector_missing(settings: Settings) -> bool:
    """True when the trained NER is switched on, its training data exists and its weights are not cached."""
    from privtext.pii.tagger import MANIFEST, model_dir

    if not settings.pii.recognizers.trained_ner:
        return False
    try:
        directory, _, _ = model_dir(settings.pii.detector)
    except FileNotFoundError:  # no training data: detection runs without it, as before
        return False
    return not (directory / MANIFEST).exists()


def vocabularies_missing(settings: Settings) -> bool:
    """True when the static encoder's piece table or a type's phrases or embeddings are not cached yet."""
    from privtext.clusant.vocabulary import cached_vocabulary_path, embedded_vocabulary_path
    from privtext.settings import resolve_uri

    clusant = settings.clusant
    if clusant.phrase_encoder == "static":
        from privtext.embed.static_phrases import table_path

        if not table_path(settings.embed, resolve_uri(settings.embed.cache_dir)).exists():
            return True
        model_name = f"{settings.embed.model}+static-pieces"
    else:
        model_name = settings.embed.model
    cache_dir = resolve_uri(clusant.cache_dir)
    for entity_type in clusant.entity_types:
        phrases = cached_vocabulary_path(entity_type, clusant.vocabulary, cache_dir)
        if phrases is None or not phrases.exists():
            return True
        words = json.loads(phrases.read_text(encoding="utf-8"))
        if not embedded_vocabulary_path(entity_type, words, model_name, cache_dir).exists():
            return True
    return False


def llm_missing(settings: Settings) -> bool:
    """True when sanitize's metrics score perplexity and the generator's GGUF has no float32 copy cached yet
    (a model folder, or no ``generate.cache_dir``, has nothing to build)."""
    from privtext.generate.local import float32_copy, resolve_model_path
    from privtext.settings import resolve_uri

    metrics, generate = settings.clusant.metrics, getattr(settings, "generate", None)
    if not (metrics.perplexity and metrics.max_documents) or generate is None or not generate.cache_dir:
        return False
    try:
        path = resolve_model_path(generate.model)
    except (RuntimeError, FileNotFoundError):  # the model is not installed: sanitize measures no perplexity
        return False
    return path.is_file() and not (float32_copy(path, resolve_uri(generate.cache_dir)) / "model.safetensors").is_file()


def build(job: str, settings: Settings) -> None:
    """Build ``job`` into its cache, in this process."""
    if job == "detector":
        from privtext.pii.tagger import ensure_trained

        ensure_trained(settings.pii.detector)
    elif job == "vocabularies":
        from privtext.sanitizer_setup import build_sanitizer

        build_sanitizer(settings)
    elif job == "llm":
        from privtext.generate.local import TransformersLM, resolve_model_path
        from privtext.settings import resolve_uri

        generate = settings.generate.model_copy(update={"cache_dir": resolve_uri(settings.generate.cache_dir)})
        TransformersLM(generate, resolve_model_path(generate.model))
    else:
        raise ValueError(f"unknown one-time build {job!r}; allowed: {', '.join(JOBS)}")


@dataclass
class Background:
    """The background builds of one demo run: their processes and, once waited for, their times. A process is
    named by its builds, ``+``-joined (``vocabularies+llm``)."""

    running: dict[str, tuple[subprocess.Popen, threading.Thread]] = field(default_factory=dict)
    ended: dict[str, float] = field(default_factory=dict)  # name -> seconds from its start to its exit
    done: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # name -> (build s, waited s, exit code)

    def add(self, job: str, process: subprocess.Popen) -> None:
        """Follow ``process``: a watcher thread notes when it exits."""
        started = time.perf_counter()

        def watch():
            process.wait()
            self.ended[job] = time.perf_counter() - started

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        self.running[job] = (process, watcher)

    def wait(self, job: str) -> None:
        if job not in self.running:
            return
        process, watcher = self.running.pop(job)
        waiting = time.perf_counter()
        watcher.join()
        self.done[job] = (self.ended[job], time.perf_counter() - waiting, process.returncode)

    def before(self, stage: str, lines) -> None:
        """Wait for the builds ``stage`` reads, under a stage line of its own while one is still running."""
        for name in [name for name in self.running if JOBS[name.split("+")[0]] == stage]:
            with lines(name) if self.running[name][0].poll() is None else contextlib.nullcontext():
                self.wait(name)

    def waiting(self, lines):
        """``lines`` (the demo's stage lines) that first wait for the builds each stage reads."""
        @contextlib.contextmanager
        def stage(name: str):
            self.before(name, lines)
            with lines(name):
                yield
        return stage

    def stop(self) -> None:
        """End builds still running (the demo failed before it needed them); their caches stay unwritten."""
        for process, watcher in self.running.values():
            process.terminate()
            watcher.join()
        self.running.clear()

    def summary(self) -> list[str]:
        if not self.done:
            return []
        parts = [f"{job} {_seconds(built)} (waited {_seconds(waited)})" + (f", failed: exit {code}" if code else "")
                 for job, (built, waited, code) in self.done.items()]
        return [f"one-time     built in the background, cached for later runs: {'; '.join(parts)}"]


def _seconds(value: float) -> str:
    return f"{int(value // 60)} min {value % 60:.0f} s" if value >= 60 else f"{value:.0f} s"


def start(settings: Settings) -> Background:
    """Start the missing builds, one background process per ``groups`` entry, each on one thread
    (``BUILD_THREADS``); their output goes where this process's stdout and stderr go (the demo's log)."""
    background = Background()
    missing = [job for job, test in (("detector", detector_missing), ("vocabularies", vocabularies_missing),
                                     ("llm", llm_missing)) if test(settings)]
    for jobs in groups(missing):
        process = subprocess.Popen([sys.executable, "-m", "privtext.prepare", *jobs], stdin=subprocess.PIPE,
                                   text=True, env={**os.environ, **BUILD_THREADS})
        process.stdin.write(settings.model_dump_json())
        process.stdin.close()
        background.add("+".join(jobs), process)
    return background


def main(argv: list[str] | None = None) -> int:
    """``python -m privtext.prepare JOB...`` with the settings as JSON on stdin (what ``start`` runs): builds
    the jobs one after the other."""
    import logging

    from privtext.settings import LOG_FORMAT, use_offline_models

    use_offline_models()
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    jobs = argv if argv is not None else sys.argv[1:]
    settings = Settings.model_validate_json(sys.stdin.read())
    for job in jobs:
        started = time.perf_counter()
        build(job, settings)
        logging.getLogger("privtext").info("one-time build %s done in %.1f s", job, time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
