"""The sanitize budget policy over many nights of real-looking mail (docs/privacy-model.md, "The sanitizer's
budget policy"): the share of spans masked as [TYPE] per night and the worst value's spend, per value string
across the types it was detected as (the ledger's unit), and per (type, value) beside it.

Algorithm level, without Spark, with the stage's own functions: ``sanitize_tasks.doc_spans`` (merge and
allow-list), ``planned_values`` (the plan job's body), ``capped_strings``, ``check_schedule``, ``new_draws``,
the ledger's ``mldp_charge`` / ``compose`` / ``mldp_schedule``, and ``clusant.sanitizer.sanitize_documents`` with the
epoch's draw key (the sanitize job's call), on the sanitizer the stage builds from the settings
(``sanitizer_setup.build_sanitizer``). Documents: ``tests.fixtures.realtext`` e-mails, one mailbox
population split over the nights (lists, colleagues and correspondents recur; replayed dates); detected
spans: the annotated values of entity types (outermost; DATE as DATE_TIME), or with ``--detector`` the
``detect_pii`` stage's own detection (``pii.detect.get_analyzer`` + ``detect_many``: its types, its mistakes,
slower). Allow-list (``--allow-list
lists``): the addresses and URLs of the mailing lists, as a data team running them would declare.

Beside it, the former policy on the same nights (per-document charges, every span of a type masked once
one of its values cannot pay: main 99e840d), for comparison only.

Prints ``name: value`` lines per night and a summary; ``--json`` writes the table.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

from privtext.clusant.surrogates import AllowList, draw_id, draw_key, epoch_of
from privtext.ledger import composed_spend
from privtext.pii.hashing import normalize_value, secret_id
from privtext.privacy.budget import BudgetExceeded, charge_to_json, mldp_charge, mldp_schedule, none_charge
from privtext.sanitize_tasks import doc_spans, planned_values, sanitizer_key
from privtext.sanitizer_setup import build_sanitizer
from privtext.settings import load_settings
from privtext.stages.sanitize import (
    capped_strings,
    check_schedule,
    drawn_pairs,
    new_draws,
    string_draw_eps,
)

ENTITY_TYPES = {  # annotation type -> the entity type a detector gives it
    "PERSON": "PERSON", "EMAIL_ADDRESS": "EMAIL_ADDRESS", "PHONE_NUMBER": "PHONE_NUMBER", "URL": "URL",
    "STREET_ADDRESS": "STREET_ADDRESS", "LOCATION": "LOCATION", "IP_ADDRESS": "IP_ADDRESS",
    "ORGANIZATION": "ORGANIZATION", "DATE": "DATE_TIME"}
KEY = b"benchmark-key-0123456789abcdef"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.fixtures.realtext


def nights_of_mail(nights: int, per_night: int, seed: int):
    """[(texts, spans per document)] per night from one fixture population of nights * per_night e-mails, and
    the mailing lists' addresses and URLs (the public values a data team running them would allow-list)."""
    from tests.fixtures.realtext import generate

    documents, annotations = generate(nights * per_night, 0, seed)
    by_doc: dict[str, list[dict]] = {}
    for a in annotations:
        if a["type"] in ENTITY_TYPES:
            by_doc.setdefault(a["doc_id"], []).append(a)
    out = []
    for n in range(nights):
        chunk = documents[n * per_night:(n + 1) * per_night]
        texts = [d["text"] for d in chunk]
        spans = [[{"start": a["start"], "end": a["end"], "entity_type": ENTITY_TYPES[a["type"]], "tier": None,
                   "score": 1.0} for a in _outermost(by_doc.get(d["doc_id"], []))] for d in chunk]
        out.append((texts, spans))
    text_of = {d["doc_id"]: d["text"] for d in documents}
    lists = {text_of[a["doc_id"]][a["start"]:a["end"]] for a in annotations
             if a["kind"] in ("list_address", "list_url")}
    return out, sorted(lists)


def _outermost(spans: list[dict]) -> list[dict]:
    """Annotations not inside another (a DATE holds its WEEKDAY; a URL its URL_PART): what a detector reports."""
    return [s for s in spans if not any(o is not s and o["start"] <= s["start"] and s["end"] <= o["end"]
                                        and (o["end"] - o["start"]) > (s["end"] - s["start"]) for o in spans)]


def _entry(charge, exposures=None) -> dict:
    return json.loads(charge_to_json(charge, exposures))


def former_policy(state: dict, texts, spans, eps_of, limit: float) -> tuple[int, int, set[str]]:
    """main 99e840d's rule on one night: (spans, spans masked, masked types); ``state``: value -> spend."""
    docs: dict[str, Counter] = {}
    total = 0
    for text, doc in zip(texts, spans):
        total += len(doc)
        for t, v in {(s["entity_type"], secret_id(KEY, normalize_value(s["entity_type"], text[s["start"]:s["end"]])))
                     for s in doc}:
            docs.setdefault(t, Counter())[v] += 1
    tonight: dict[str, float] = {}
    for t, values in docs.items():
        for v, n in values.items():
            tonight[v] = tonight.get(v, 0.0) + eps_of(t) * n
    over = {v for v, cost in tonight.items() if state.get(v, 0.0) + cost > limit}
    masked_types = {t for t, values in docs.items() if over & values.keys()}
    for t, values in docs.items():
        if t not in masked_types:
            for v, n in values.items():
                state[v] = state.get(v, 0.0) + eps_of(t) * n
    masked = sum(1 for doc in spans for s in doc if s["entity_type"] in masked_types)
    return total, masked, masked_types


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conf", default="conf/local.yaml")
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--mail-per-night", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch-days", type=int, default=None,
                        help="clusant.surrogate_epoch_days (default: the conf's)")
    parser.add_argument("--allow-list", choices=("lists", "none"), default="lists")
    parser.add_argument("--start", default="2026-01-01")
    parser.add_argument("--detector", action="store_true", help="spans from the detector instead of the annotations")
    parser.add_argument("--json", help="write the per-night table here")
    args = parser.parse_args(argv)

    settings = load_settings(args.conf)
    nights, lists = nights_of_mail(args.nights, args.mail_per_night, args.seed)
    if args.detector:
        from privtext.pii.detect import detect_many, get_analyzer

        analyzer = get_analyzer(settings.pii)
        nights = [(texts,
                   [[{"start": x.start, "end": x.end, "entity_type": x.entity_type, "tier": x.tier, "score": x.score}
                            for x in doc] for doc in detect_many(analyzer, texts, settings.pii)])
                  for texts, _ in nights]
    allow_values = lists if args.allow_list == "lists" else []
    epoch_days = args.epoch_days or settings.clusant.surrogate_epoch_days
    clusant = settings.clusant.model_copy(update={"allow_list": tuple(allow_values),
                                                  "surrogate_epoch_days": epoch_days})
    settings = settings.model_copy(update={"clusant": clusant})
    sanitizer, encode = build_sanitizer(settings)
    allow = AllowList(settings.clusant.allow_list)
    budget = settings.budget(settings.run.dataset)
    limit = budget.mldp_eps_max
    fingerprint = sanitizer_key(settings)
    draw_eps = max(ts.mechanism.epsilon for ts in sanitizer.per_type.values())
    per_string = settings.clusant.types_per_value
    string_eps = string_draw_eps([ts.mechanism.epsilon for ts in sanitizer.per_type.values()], per_string)
    eps_of = lambda t: sanitizer.per_type[t].mechanism.epsilon if t in sanitizer.per_type else 0.0  # noqa: E731
    print(f"nights: {args.nights}\nmail_per_night: {args.mail_per_night}\nepoch_days: {epoch_days}\n"
          f"allow_list_entries: {len(allow)}\nmldp_eps_max: {limit:g}\ndraw_eps: {draw_eps:g}\n"
          f"draw_string_eps: {string_eps:g}\ntypes_per_value: {per_string}\ndrawn_types: {len(sanitizer.per_type)}")
    entries: list[dict] = []
    former: dict = {}
    rows = []
    start = dt.date.fromisoformat(args.start)
    for n, (texts, spans) in enumerate(nights):
        started = time.perf_counter()
        day = start + dt.timedelta(days=n)
        epoch = epoch_of(day, epoch_days)
        draw = draw_id(epoch, fingerprint)
        try:
            schedule = check_schedule(entries, draw, string_eps, limit, "bench")
        except BudgetExceeded:
            rows.append({"night": n + 1, "refused": True})
            print(f"night_{n + 1:02d}: refused by the schedule")
            continue
        plan = planned_values(texts, spans, allow, frozenset(sanitizer.per_type), KEY)
        capped = capped_strings(entries, draw, plan, per_string)
        drawn = drawn_pairs(plan, capped)
        new = new_draws(entries, draw, drawn)
        params = {"draw": draw, "draw_eps": draw_eps, "draw_string_eps": string_eps, "string_units": True,
                  "epoch": epoch, "date": day.isoformat()}
        tonight = [_entry(mldp_charge("bench", "sanitize", f"n{n}", "clusant", epsilon=eps_of(t),
                                      pure_epsilon=eps_of(t),
                                      metric="D_k", k=settings.clusant.k, params={**params, "entity_type": t}), values)
                   for t, values in sorted(new.items())]
        entries += tonight or [_entry(none_charge("bench", "sanitize", f"n{n}", "clusant", reason="reused",
                                                  params=params))]
        planned = [doc_spans(t, s, allow) for t, s in zip(texts, spans)]
        out = _sanitized(sanitizer, encode, texts, [k for k, _ in planned], draw_key(KEY, epoch, fingerprint), capped)
        total = sum(len(k) + a for k, a in planned)
        masked = sum(sum(m.values()) for m in out.masked)
        allowed = sum(a for _, a in planned)
        composed = composed_spend(entries, budget).mldp
        independent = _independent_worst(entries)
        per_type = _independent_worst(entries, by_type=True)
        f_total, f_masked, f_types = former_policy(former, texts, spans, eps_of, limit)
        row = {"night": n + 1, "date": day.isoformat(), "spans": total, "masked_share": masked / max(1, total),
               "masked_types": sorted({t for m in out.masked for t in m}), "allowed_share": allowed / max(1, total),
               "values_drawn": len(drawn), "capped": len(capped), "values_charged": sum(len(v) for v in new.values()),
               "worst_spend": composed.epsilon if composed else 0.0, "worst_spend_independent": independent,
               "worst_type_value_spend": per_type,
               "schedule_bound": mldp_schedule(entries)["bound"], "limit": limit,
               "former_masked_share": f_masked / max(1, f_total), "former_masked_types": sorted(f_types),
               "former_worst_spend": max(former.values(), default=0.0), "seconds": time.perf_counter() - started}
        assert math.isclose(row["worst_spend"], independent) and independent <= schedule["bound"] <= limit
        rows.append(row)
        print(f"night_{n + 1:02d}: spans {total} masked {row['masked_share']:.2%} {row['masked_types']} allowed "
              f"{row['allowed_share']:.2%} drawn {len(drawn)} charged {row['values_charged']} "
              f"worst string {row['worst_spend']:g} (independent {independent:g}; per (type, value) {per_type:g}; "
              f"schedule {row['schedule_bound']:g} of {limit:g}) | former policy: masked "
              f"{row['former_masked_share']:.2%} {row['former_masked_types']} worst {row['former_worst_spend']:g}")
    done = [r for r in rows if not r.get("refused")]
    print(f"first_night_masked_share: {done[0]['masked_share']:.4f}")
    print(f"max_masked_share: {max(r['masked_share'] for r in done):.4f}")
    print(f"mean_allowed_share: {sum(r['allowed_share'] for r in done) / len(done):.4f}")
    print(f"final_worst_spend: {done[-1]['worst_spend']:g}")
    print(f"final_worst_type_value_spend: {done[-1]['worst_type_value_spend']:g}")
    print(f"final_schedule_bound: {done[-1]['schedule_bound']:g}")
    print(f"horizon_epochs: {int(limit // string_eps)}")
    print(f"horizon_days: {int(limit // string_eps) * epoch_days}")
    print(f"former_first_night_masked_share: {done[0]['former_masked_share']:.4f}")
    print(f"former_last_night_masked_share: {done[-1]['former_masked_share']:.4f}")
    print(f"refused_nights: {len(rows) - len(done)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def _sanitized(sanitizer, encode, texts, docs, key, capped):
    from privtext.clusant.sanitizer import sanitize_documents

    keep = (lambda t, v: (t, secret_id(KEY, normalize_value("", v))) not in capped) if capped else None
    return sanitize_documents(sanitizer, encode, None, texts, docs, draw_key=key, keep=keep)


def _independent_worst(entries: list[dict], by_type: bool = False) -> float:
    """Plain Python: the largest eps * occurrences summed per value string (the unit, whatever the row's type)
    over the ledger's mldp rows; ``by_type``: per (entity type, value), the former unit."""
    sums: dict = {}
    for e in entries:
        if e["guarantee"] == "mldp":
            for x in e["exposures"]:
                key = (e["params"]["entity_type"], x["unit"]) if by_type else x["unit"]
                sums[key] = sums.get(key, 0.0) + e["spend"]["epsilon"] * x["occurrences"]
    return max(sums.values(), default=0.0)


if __name__ == "__main__":
    raise SystemExit(main())
