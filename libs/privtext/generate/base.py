"""The generator interface of Aug-PE / SecPE: RANDOM_API and VARIATION_API over label-conditioned
prompts from conf (``generate.prompts.<dataset>``).

A backend only has to return ``k`` completions for each of a list of prompts; ``Generator`` turns the
dataset's templates into those prompts. ``get_generator`` keeps one backend (one loaded model, one HTTP
client) per process and settings, so a Spark task builds it in the worker from the settings and nothing
unpicklable crosses the wire. Generated text is never logged: progress reports counts only.
"""
from __future__ import annotations

import logging
import re
import sys
import threading
from typing import Protocol, Sequence

from privtext.generate.settings import PromptSet

log = logging.getLogger(__name__)



class Backend(Protocol):
    def complete(self, prompts: Sequence[str], k: int, seed: int) -> list[list[str]]:
        """``k`` sampled completions (clean text) for each chat prompt, in order."""


class Generator:
    """RANDOM_API / VARIATION_API of one dataset's prompt set on a backend."""

    def __init__(self, backend: Backend, prompts: PromptSet, default_seed: int = 0):
        self.backend = backend
        self.prompts = prompts
        self.default_seed = default_seed

    def _label(self, label: str | None) -> str:
        if label is None:
            return ""
        return self.prompts.labels.get(str(label).lower(), str(label))

    def random(self, n: int, label: str | None, seed: int | None = None) -> list[str]:
        """``n`` new samples of class ``label`` (Aug-PE's RANDOM_API)."""
        if n <= 0:
            return []
        prompt = _fill(self.prompts.random, label=self._label(label))
        return self.backend.complete([prompt], n, self._seed(seed))[0]

    def variation(self, texts: Sequence[str], L: int, label: str | None = None,
                  seed: int | None = None) -> list[list[str]]:
        """``L`` variations of each text (Aug-PE's VARIATION_API), one list per input, in order."""
        if L <= 0 or not texts:
            return [[] for _ in texts]
        word = self._label(label)
        prompts = [_fill(self.prompts.variation, label=word, text=text) for text in texts]
        return self.backend.complete(prompts, L, self._seed(seed))

    def _seed(self, seed: int | None) -> int:
        return self.default_seed if seed is None else int(seed)


def _fill(template: str, label: str, text: str | None = None) -> str:
    """``template`` with ``{label}`` (and ``{text}``) filled; other braces are left alone."""
    out = template.replace("{label}", label)
    if not label:  # unlabeled: "about a {label} problem" -> "about a problem"
        out = re.sub(r" {2,}", " ", out)
    return out if text is None else out.replace("{text}", text)


def clean(text: str) -> str:
    """One generated sample: whitespace collapsed, wrapping quotes removed."""
    text = " ".join(text.split())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


class Progress:
    """Done/total of a generation call: a tqdm bar when tqdm is installed and stderr is a terminal,
    else an INFO log line at every tenth of the way. Counts only, never text."""

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.done, self._logged = total, desc, 0, 0
        self._lock = threading.Lock()
        self._bar = None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None and sys.stderr.isatty():
            self._bar = tqdm(total=total, desc=desc, unit="text", leave=False)

    def update(self, n: int) -> None:
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.update(n)
            elif self.done * 10 >= (self._logged + 1) * self.total or self.done == self.total:
                self._logged = self.done * 10 // max(self.total, 1)
                log.info("%s: %d/%d", self.desc, self.done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
