"""PII detection of one long document: a ~1 MB mailing-list digest of the real-text fixtures
(``tests/fixtures/realtext``: generated mails with headers, quotes, signatures and footers, every personal
value annotated), detected whole by ``detect_spans`` (windows of ``pii.max_chunk_chars`` with
``pii.chunk_overlap_chars`` of context, spans reassembled), conf/base.yaml's ``pii`` settings.

Prints the document's size and windows, the spans per type, the share of annotated personal values overlapped
by a span (any type: the sanitizer replaces it), the share of annotated dates typed DATE_TIME and of non-entity
tokens (time zones, weekdays, months, punctuation, versions ...) overlapped by another type, the seconds and
milliseconds per 1,000 characters, and the process's peak RSS. Only counts and rates.

    .venv/bin/python benchmarks/export/pii_long_document.py [chars, default 1000000] [seed]
"""
from __future__ import annotations

import bisect
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.fixtures.realtext
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.pii.detect import chunk_windows, detect_spans, get_analyzer  # noqa: E402
from privtext.settings import load_settings  # noqa: E402
from tests.fixtures.realtext import generate  # noqa: E402

NON_ENTITIES = {"TIME_ZONE", "WEEKDAY", "MONTH", "PUNCT", "VERSION", "FILENAME", "WORD", "LAUGHTER"}


def main() -> None:
    chars = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    docs, anns = generate(mail=0, chat=0, seed=seed, long_digest_chars=chars)
    text = docs[0]["text"]
    settings = load_settings(None, environ={}).pii
    analyzer = get_analyzer(settings)
    windows = chunk_windows(text, settings.max_chunk_chars, settings.chunk_overlap_chars)
    start = time.perf_counter()
    spans = detect_spans(analyzer, text, settings)
    seconds = time.perf_counter() - start
    print(f"long_document_chars: {len(text)}")
    print(f"long_document_utf8_bytes: {len(text.encode('utf-8'))}")
    print(f"long_document_windows: {len(windows)}")
    print(f"long_document_spans: {len(spans)}")
    print(f"long_document_seconds: {seconds:.1f}")
    print(f"long_document_ms_per_1000_chars: {1000 * seconds / (len(text) / 1000):.2f}")
    print(f"long_document_peak_rss_mib: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    for kind, n in sorted(Counter(s.entity_type for s in spans).items()):
        print(f"long_document_spans_{kind}: {n}")
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:])), "overlapping spans"

    starts = [s.start for s in spans]  # sorted, non-overlapping: a value's candidates are found by bisection

    def overlapped(a, kinds=None) -> bool:
        first = max(bisect.bisect_right(starts, a["start"]) - 1, 0)
        last = bisect.bisect_left(starts, a["end"])
        return any(s.start < a["end"] and a["start"] < s.end and (kinds is None or s.entity_type in kinds)
                   for s in spans[first:last])

    personal = [a for a in anns if a["personal"]]
    dates = [a for a in anns if a["type"] == "DATE"]
    noise = [a for a in anns if a["type"] in NON_ENTITIES]
    print(f"long_document_personal_values: {len(personal)}")
    print(f"long_document_personal_overlapped: {sum(map(overlapped, personal)) / max(1, len(personal)):.4f}")
    print("long_document_dates_typed_date: "
          f"{sum(overlapped(a, {'DATE_TIME'}) for a in dates) / max(1, len(dates)):.4f}")
    other = {t for t in Counter(s.entity_type for s in spans)} - {"DATE_TIME"}
    print(f"long_document_non_entities_other_type: {sum(overlapped(a, other) for a in noise) / max(1, len(noise)):.4f}")


if __name__ == "__main__":
    main()
