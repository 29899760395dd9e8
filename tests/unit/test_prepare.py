"""The demo's one-time builds in the background (``privtext.prepare``): what counts as missing follows the
caches the stages read, the child process builds exactly those caches, and a stage waits for its build."""
from __future__ import annotations

import contextlib
import subprocess
import sys
import time

from privtext import prepare
from privtext.pii import tagger
from privtext.settings import load_settings


def _tiny_conll(path) -> str:
    path.write_text("\n\n".join(f"hey\tO\nname{i}\tB-person\nin\tO\ntown{i}\tB-geo-loc" for i in range(6)),
                    encoding="utf-8")
    return str(path)


def _settings(tmp_path, **detector):
    return load_settings(None, overrides={
        "pii": {"detector": {"layers": 1, "synthetic_sentences": 8, "epochs": 1, "batch_size": 8, "max_length": 32,
                             "cache_dir": str(tmp_path / "detector"),
                             "train_data": _tiny_conll(tmp_path / "t.conll"), **detector}},
        "clusant": {"entity_types": ["PERSON", "AGE"], "vocabulary": {"size": 40}, "phrase_encoder": "transformer",
                    "cache_dir": str(tmp_path / "vocab")},
        "generate": {"cache_dir": None}})  # no LM copy to build (test_the_scoring_lm_is_missing_... covers it)


def test_the_detector_is_missing_until_trained_and_never_without_its_data(tmp_path):
    settings = _settings(tmp_path)
    assert prepare.detector_missing(settings)
    tagger.ensure_trained(settings.pii.detector)
    assert not prepare.detector_missing(settings)
    assert prepare.detector_missing(_settings(tmp_path, seed=14))  # another key: not trained yet
    assert not prepare.detector_missing(_settings(tmp_path, train_data=str(tmp_path / "absent.conll")))
    off = settings.model_copy(update={"pii": settings.pii.model_copy(update={
        "recognizers": settings.pii.recognizers.model_copy(update={"trained_ner": False})})})
    assert not prepare.detector_missing(off)


def test_the_background_process_builds_the_vocabularies_the_stage_reads(tmp_path):
    settings = _settings(tmp_path)
    settings = settings.model_copy(update={"pii": settings.pii.model_copy(update={
        "recognizers": settings.pii.recognizers.model_copy(update={"trained_ner": False})})})
    assert prepare.vocabularies_missing(settings)
    background = prepare.start(settings)
    assert list(background.running) == ["vocabularies"]
    background.wait("vocabularies")
    assert background.done["vocabularies"][2] == 0
    assert not prepare.vocabularies_missing(settings)
    files = sorted(p.name for p in (tmp_path / "vocab").iterdir())
    assert len(files) == 4 and sum(f.endswith(".phrases.json") for f in files) == 2  # phrases + embeddings per type
    bigger = settings.model_copy(update={"clusant": settings.clusant.model_copy(update={
        "vocabulary": settings.clusant.vocabulary.model_copy(update={"size": 41})})})
    assert prepare.vocabularies_missing(bigger)
    assert prepare.start(settings).running == {}  # nothing missing: nothing started


def test_a_stage_waits_for_the_build_it_reads_under_a_line_of_its_own():
    seen = []

    @contextlib.contextmanager
    def lines(name):
        seen.append(f"start {name}")
        yield
        seen.append(f"end {name}")

    background = prepare.Background()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    background.add("detector", sleeper)
    stage = background.waiting(lines)
    with stage("ingest"):
        assert sleeper.poll() is None  # ingest reads no build: it does not wait
    with stage("detect_pii"):
        assert sleeper.poll() == 0
    assert seen == ["start ingest", "end ingest", "start detector", "end detector",
                    "start detect_pii", "end detect_pii"]
    assert background.running == {} and background.done["detector"][2] == 0
    assert background.summary()[0].startswith("one-time     built in the background, cached for later runs: detector ")
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    started = time.perf_counter()
    background.add("vocabularies+llm", finished)  # one process, both read by sanitize
    finished.wait()
    exited = time.perf_counter() - started
    time.sleep(1.0)  # the build ends long before the stage that reads it
    with stage("sanitize"):  # a build already finished: no line of its own
        pass
    assert seen[-2:] == ["start sanitize", "end sanitize"]
    built, waited, code = background.done["vocabularies+llm"]
    assert code == 0 and built <= exited + 0.2  # its own run time, not the time until the stage came
    assert time.perf_counter() - started >= exited + 1.0 and waited < 0.5


def test_the_builds_a_stage_reads_share_one_process_the_detector_has_its_own():
    assert prepare.groups(["llm", "vocabularies", "detector"]) == [["detector"], ["vocabularies", "llm"]]
    assert prepare.groups(["llm", "detector"]) == [["detector"], ["llm"]]
    assert prepare.groups(["llm"]) == [["llm"]] and prepare.groups([]) == []


def test_one_process_builds_its_jobs_one_after_the_other(tmp_path, monkeypatch):
    import io

    built = []
    monkeypatch.setattr(prepare, "build", lambda job, settings: built.append((job, settings.run.seed)))
    settings = load_settings(None, overrides={"run": {"seed": 5}})
    monkeypatch.setattr(sys, "stdin", io.StringIO(settings.model_dump_json()))
    assert prepare.main(["vocabularies", "llm"]) == 0
    assert built == [("vocabularies", 5), ("llm", 5)]


def test_each_background_build_computes_on_one_thread(tmp_path, monkeypatch):
    envs, real = [], subprocess.Popen

    def popen(args, **kwargs):  # the real process, without the builds: only its environment is under test
        envs.append(kwargs["env"])
        return real([sys.executable, "-c", "import sys; sys.stdin.read()"], **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    background = prepare.start(_settings(tmp_path))
    assert sorted(background.running) == ["detector", "vocabularies"] and len(envs) == 2
    for name in list(background.running):
        background.wait(name)
    assert all(env[name] == "1" for env in envs for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                              "MKL_NUM_THREADS"))
    threads = real([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=envs[0],
                   stdout=subprocess.PIPE, text=True).communicate()[0]
    assert threads.strip() == "1"  # torch's intra-op pool follows it (two cores here give 2 without it)


def test_stop_ends_a_build_the_demo_no_longer_needs():
    background = prepare.Background()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    background.add("vocabularies", sleeper)
    background.stop()
    assert sleeper.poll() is not None and background.running == {}



def test_the_scoring_lm_is_missing_until_its_float32_copy_is_cached_and_only_when_perplexity_is_measured(tmp_path):
    from privtext.generate.local import float32_copy, resolve_model_path

    def settings(metrics=None, **generate):
        return load_settings(None, overrides={"generate": {"cache_dir": str(tmp_path / "llm"), **generate},
                                              "clusant": {"metrics": metrics or {}}})

    assert prepare.llm_missing(settings())
    copy = float32_copy(resolve_model_path(settings().generate.model), str(tmp_path / "llm"))
    copy.mkdir(parents=True)
    assert prepare.llm_missing(settings())  # a folder without weights (a build that died) is no copy
    (copy / "model.safetensors").write_bytes(b"")
    assert not prepare.llm_missing(settings())
    assert prepare.llm_missing(settings(cache_dir=str(tmp_path / "other")))
    assert not prepare.llm_missing(settings({"perplexity": False}, cache_dir=str(tmp_path / "other")))
    assert not prepare.llm_missing(settings({"max_documents": 0}, cache_dir=str(tmp_path / "other")))
    assert not prepare.llm_missing(settings(model=str(tmp_path / "absent.gguf"), cache_dir=str(tmp_path / "other")))
