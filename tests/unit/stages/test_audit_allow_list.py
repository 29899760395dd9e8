"""The audit reads allow-listed spans as context (issue 45): sanitize leaves them as written, so as secrets they
would be verbatim copies, which the released view's copy component counts as leakage of a declared-public value."""
import datetime as dt

import pandas as pd

from privtext.clusant.surrogates import AllowList
from privtext.stages.audit import _tokens_task

TEXT = "Write to announce@lists.acme.org or ask Maria Lopez today"
ALLOWED = (9, 32)  # announce@lists.acme.org
NAME = (40, 51)  # Maria Lopez


def _tokens(allow):
    spans = [{"start": a, "end": b, "secret_id": sid, "tier": "PII", "entity_type": t}
             for (a, b), sid, t in ((ALLOWED, "k1", "EMAIL_ADDRESS"), (NAME, "k2", "PERSON"))]
    sanitized = TEXT[:NAME[0]] + "Ana Ruiz" + TEXT[NAME[1]:]  # the allow-listed address left as written
    frame = pd.DataFrame({"text": [TEXT], "sanitized_text": [sanitized], "spans": [spans],
                          "date": [dt.date(2026, 1, 15)]})  # the document's date: its surrogate epoch
    return next(_tokens_task(32, allow)([frame])).iloc[0]


def test_an_allow_listed_span_is_context_and_a_look_alike_stays_a_secret():
    assert TEXT[slice(*ALLOWED)] == "announce@lists.acme.org" and TEXT[slice(*NAME)] == "Maria Lopez"
    row = _tokens(AllowList(["announce@lists.acme.org"]))
    assert row.aligned and [s for s in row.secret_id if s is not None] == ["k2"]
    assert "Ana Ruiz" in row.released and "Maria Lopez" in row.original
    for entry in ("Announce@lists.acme.org", "announce@lists.acme.org.evil.com", "announce＠lists.acme.org"):
        row = _tokens(AllowList([entry]))  # another case, a superstring, a full-width @: not the span's text
        assert [s for s in row.secret_id if s is not None] == ["k1", "k2"]
