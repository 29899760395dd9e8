"""The shared real-text fixtures (``tests.fixtures.realtext``): reproducible, annotations that point at what they
say (checked by independent parsers: RFC 2822 dates by ``email.utils``, addresses by ``ipaddress``), and the
files ``privtext ingest`` reads."""
from __future__ import annotations

import email.utils
import ipaddress
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.fixtures import realtext

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus():
    return realtext.generate(30, 8, seed=3, long_digest_chars=15_000)


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another(corpus):
    assert realtext.generate(30, 8, seed=3, long_digest_chars=15_000) == corpus
    assert realtext.generate(30, 0, seed=4)[0] != [d for d in corpus[0] if d["kind"] == "mail"][:30]


def test_annotations_point_at_values_of_their_type(corpus):
    docs, anns = corpus
    text = {d["doc_id"]: d["text"] for d in docs}
    seen = Counter()
    for a in anns:
        value = text[a["doc_id"]][a["start"]:a["end"]]
        assert (0 <= a["start"] < a["end"] <= len(text[a["doc_id"]])
                and (value.strip() == value or a["type"] == "PUNCT")), a
        seen[a["type"]] += 1
        if a["kind"] == "date_header":
            assert email.utils.parsedate_tz(value) is not None, value
        if a["type"] == "IP_ADDRESS":
            assert ipaddress.ip_address(value).version == 4
        if a["type"] == "EMAIL_ADDRESS":
            assert re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", value), value
        if a["type"] == "PERSON":
            assert any(c.isalpha() for c in value) and "\n" not in value
        if a["type"] in ("WEEKDAY", "MONTH", "TIME_ZONE"):
            assert any(b["type"] == "DATE" and b["start"] <= a["start"] and a["end"] <= b["end"]
                       for b in anns if b["doc_id"] == a["doc_id"]) or a["doc_id"].startswith("chat")
    for needed in ("PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "URL", "URL_PART", "DATE", "TIME_ZONE", "WEEKDAY",
                   "MONTH", "PUNCT", "VERSION"):
        assert seen[needed] > 0, needed


def test_mail_has_headers_quotes_and_signatures_and_chats_are_speaker_turns(corpus):
    docs, _ = corpus
    mail = [d["text"] for d in docs if d["kind"] == "mail"]
    chats = [d["text"] for d in docs if d["kind"] == "chat"]
    assert all(re.search(r"(?m)^Date: ", t) and re.search(r"(?m)^Subject: ", t) for t in mail)
    assert any(re.search(r"(?m)^> ", t) for t in mail) and any("\n-- \n" in t for t in mail)
    assert max(len(t) for t in mail) >= 15_000  # the long digest
    assert all(re.match(r"(?:\S[^\n:]{0,30}: |\*\*\* |\[|\S+ signed in)", t) for t in chats)
    assert {d["label"] for d in docs if d["kind"] == "mail"} <= {"personal", "work", "list", "newsletter", "spam"}


def test_the_cli_writes_what_ingest_reads(tmp_path):
    out = tmp_path / "fx"
    subprocess.run([sys.executable, "-m", "tests.fixtures.realtext", "--out", str(out), "--mail", "5", "--chat", "0",
                    "--seed", "1"], cwd=ROOT, check=True, capture_output=True)
    rows = [json.loads(line) for line in (out / "documents" / "mail.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all({"doc_id", "user_id", "text", "label"} <= set(r) for r in rows)
    assert (not (out / "documents" / "chat.jsonl").exists()
            and len((out / "annotations.jsonl").read_text().splitlines()) > 50)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mail"] == 5 and manifest["chat"] == 0
    bad = subprocess.run([sys.executable, "-m", "tests.fixtures.realtext", "--out", str(out), "--date", "2002-13-01"],
                         cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--date" in bad.stderr
