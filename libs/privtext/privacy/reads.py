"""What a release read, joined to the secrets whenever they are found: composition that does not depend on
the order of the stages.

A release computed from records (a record/user-level DP event: DPED; the Aug-PE and SecPE votes) keeps the
SET of records it read in its ledger entry (``params["read"]``, ``read_set``): keyed pseudonyms of the
doc_ids (``record_key``, 16 hex of ``pii.hashing.doc_pseudonym``, never an id), with the keyed unit of
each record for user-level adjacency, and the entity types that count as secrets for it. At every
composition the ledger joins each read set to the spans that exist THEN (``restricted.pii_spans``,
``holders``), so an event that ran before ``detect_pii`` reaches a secret as soon as it is found, with
g = the distinct units among the records it read that hold the secret (the group size of its Gaussian:
L2 sensitivity g, ``privacy.budget.scale_event``).

How a joined secret composes, by the charge's kind (``reach``):

* record/user DP event: its exposures are the join, each secret at its g (the join replaces what the stage
  counted at charge time: the spans found since are part of what the event read);
* Aug-PE (a secret charge whose pair holds its per-record ``record_event``): its stored exposures and the
  join, per secret the larger g, the per-record event scaled by g;
* SecPE (a mixture pair): a secret it was not calibrated for (absent from its exposures, or held by more of
  the records it read than it counted) sat in records it read as public, without noise: variant
  ``UNPROTECTED``, no guarantee (r/p = 1/p for that secret: fail closed).

Doc ids are unique across dates (every stage joins spans on doc_id alone); a doc id reused on another date
joins that date's spans too, which can only raise g. Memory: a read set is O(records read) in its ledger
row (about 19 bytes a record); the join is O(spans + records read) on the driver.
"""
from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from privtext.pii.hashing import doc_pseudonym, load_hmac_key

UNPROTECTED = -1  # the variant of a secret a SecPE charge read as public (no noise): no guarantee
KEY_HEX = 16


def record_key(key: bytes, doc_id: str) -> str:
    """A record's key in a read set (64 bits of its keyed pseudonym: a collision only raises a g)."""
    return doc_pseudonym(key, doc_id)[:KEY_HEX]


def unit_key(key: bytes, unit: str) -> str:
    """A user's key in a read set (the domain prefix keeps it apart from record keys)."""
    return doc_pseudonym(key, "privtext.read.unit\x00" + unit)[:KEY_HEX]


def run_key(run) -> bytes:
    """The lakehouse's HMAC key from the ``run`` settings section (``pii.hashing.load_hmac_key``)."""
    return load_hmac_key(run.hmac_key_env, run.hmac_key_file, run.deterministic)


def read_set(key: bytes, records: Iterable[tuple[str, str | None]], types: Iterable[str] | None = None) -> dict:
    """``params["read"]`` of a release: ``records`` are (doc_id, unit) pairs, unit None for record-level
    adjacency (each record its own unit), else the user; ``types``: the entity types that count as
    secrets for this release (None: every detected type)."""
    records = sorted(set(records))
    out: dict = {"records": [record_key(key, d) for d, _ in records]}
    if any(u is not None for _, u in records):
        out["units"] = [unit_key(key, u if u is not None else "doc:" + d) for d, u in records]
    if types is not None:
        out["types"] = sorted(set(types))
    return out


def holders(key: bytes, doc_ids, secret_ids, entity_types) -> pd.DataFrame:
    """The spans as the join reads them: (record key, secret_id, entity_type), one row per distinct triple."""
    frame = pd.DataFrame({"doc": pd.Series(doc_ids, dtype=object), "secret": pd.Series(secret_ids, dtype=object),
                          "type": pd.Series(entity_types, dtype=object)}).drop_duplicates()
    frame["record"] = frame["doc"].map({d: record_key(key, d) for d in pd.unique(frame["doc"])})
    return frame[["record", "secret", "type"]].drop_duplicates()


def joined(read: dict, spans: pd.DataFrame) -> dict[str, int]:
    """secret_id -> g: the distinct units among the records of ``read`` that hold it in ``spans``."""
    units = read.get("units") or read["records"]
    mine = pd.DataFrame({"record": read["records"], "unit": units})
    found = spans if read.get("types") is None else spans[spans["type"].isin(read["types"])]
    both = found.merge(mine, on="record")
    return {str(s): int(g) for s, g in both.groupby("secret")["unit"].nunique().items()}


def _arrays(rows: dict[str, tuple[int, int, int]]):
    units = list(rows)
    return (units, [rows[u][0] for u in units], [rows[u][1] for u in units], [rows[u][2] for u in units])


def reach(entries: list[dict], spans: pd.DataFrame | None) -> list:
    """Per ledger entry, the exposure arrays the composer accounts (``privacy.budget.exposure_arrays``):
    its stored exposures, joined to ``spans`` where it carries a read set (module doc). ``spans``: ``holders``
    output, or None (no join: the stored exposures)."""
    from privtext.privacy.budget import exposure_arrays

    out = []
    for entry in entries:
        stored = exposure_arrays(entry.get("exposures"))
        read = entry["params"].get("read")
        if spans is None or not read:
            out.append(stored)
            continue
        found = joined(read, spans)
        pair = entry["params"].get("pair", {})
        if entry["guarantee"] != "secret_protection":  # a record/user event: the join is its exposures
            out.append(_arrays({s: (1, 0, g) for s, g in found.items()}))
            continue
        units, occ, variant, records = stored if stored is not None else ([], [], [], [])
        counted: dict[str, int] = {}
        for u, r in zip(units, records):
            counted[u] = max(counted.get(u, 0), int(r))
        extra_u, extra_o, extra_v, extra_r = [], [], [], []
        for s, g in found.items():
            if g <= counted.get(s, 0):
                continue
            if pair.get("record_event"):  # Aug-PE: the per-record event at the larger g
                extra_v.append(0)
            else:  # SecPE: read without noise
                extra_v.append(UNPROTECTED)
            extra_u.append(s)
            extra_o.append(1)
            extra_r.append(g)
        if pair.get("record_event"):  # the stored row of a secret the join counts higher gives way to the join
            keep = [i for i, u in enumerate(units) if found.get(u, 0) <= counted.get(u, 0)]
            units, occ, variant, records = ([list(a)[i] for i in keep] for a in (units, occ, variant, records))
        out.append((list(units) + extra_u, list(occ) + extra_o, list(variant) + extra_v, list(records) + extra_r))
    return out


def has_reads(entries: list[dict]) -> bool:
    return any(e["params"].get("read") for e in entries)

