"""The sanitize budget policy for years of nightly mail (docs/privacy-model.md, "The sanitizer's budget
policy"): allow-lists, one surrogate draw per (type, value) per epoch, a data-independent schedule.

Each claim is checked against an independent computation (exact enumeration of a night's output
distribution, Monte Carlo of the keyed draws, a plain-Python sum over the ledger) and a negative control
that an unprotected policy would fail (the former count-dependent masking rule on the D / D' pair, a
per-occurrence adjacency, look-alike allow-list entries, charging every night)."""
from __future__ import annotations

import datetime as dt
import json
import math
import unicodedata

import numpy as np
import pytest
from scipy.stats import norm

from privtext.clusant.sanitizer import ClusantSanitizer, placeholder, sanitize_documents
from privtext.clusant.settings import ClusantSettings, VocabularySettings
from privtext.clusant.surrogates import AllowList, draw_id, draw_key, epoch_of, value_rng
from privtext.pii.hashing import normalize_value, secret_id
from privtext.privacy.budget import (
    BudgetExceeded,
    charge_to_json,
    compose,
    exposure_arrays,
    mldp_charge,
    mldp_schedule,
    none_charge,
)
from privtext.sanitize_tasks import doc_spans, planned_values
from privtext.settings import DatasetBudget
from privtext.stages.sanitize import (
    capped_strings,
    check_schedule,
    drawn_pairs,
    new_draws,
    string_draw_eps,
)
from unit.clusant.test_clusant_sanitizer import hash_encode

KEY = b"k" * 32
START = dt.date(2026, 1, 1) - dt.timedelta(days=dt.date(2026, 1, 1).toordinal() % 7)  # an epoch's first day (E = 7)
TIERS = {"PERSON": "PII", "DATE_TIME": "PoII", "EMAIL_ADDRESS": "PII"}
LIMIT = 200.0
BUDGET = DatasetBudget(r_over_p_max=50.0, eps_max=10.0, delta_max=1e-5, mldp_eps_max=LIMIT)


@pytest.fixture(scope="module")
def sanitizer(tmp_path_factory):
    settings = ClusantSettings(entity_types=tuple(TIERS), n_clusters=6, k=4.0, eps={"PII": 2.0, "PoII": 4.0},
                               vocabulary=VocabularySettings(size=60))
    return ClusantSanitizer.build(settings, TIERS.get, hash_encode, "hash", cache_dir=str(tmp_path_factory.mktemp("v")))


# --------------------------------------------------------------------------- allow-list

PUBLIC = ["announce@lists.acme.org", "https://lists.acme.org/mailman/listinfo/announce", "Acme Widget", "Café Crème"]


def test_allow_list_lets_through_the_exact_value_and_its_canonical_encoding_only():
    allow = AllowList(PUBLIC)
    assert all(v in allow for v in PUBLIC)
    assert unicodedata.normalize("NFD", "Café Crème") in allow  # the same characters, decomposed: NFC equal
    look_alikes = {
        "case": ["Announce@lists.acme.org", "ANNOUNCE@LISTS.ACME.ORG", "acme widget"],
        "superstring": ["announce@lists.acme.org.evil.com", "xannounce@lists.acme.org", "Acme Widgets",
                        "<announce@lists.acme.org>", " Acme Widget"],
        "substring": ["announce@lists.acme.or", "Acme"],
        "NFKC variant": ["ａｎｎｏｕｎｃｅ@lists.acme.org", "Acme\u00a0Widget", "Acme\u2002Widget",
                         "announce@lists.acme.org".replace("@", "\uff20"), "Café Crème".replace("f", "\uff46")],
        "confusable": ["\u0430nnounce@lists.acme.org", "Acme Widg\u0435t",
                       "Caf\u00e9 Cr\u00e8me".replace("C", "\u0421")],
    }
    assert all(unicodedata.normalize("NFKC", v) in PUBLIC for v in look_alikes["NFKC variant"])
    for kind, values in look_alikes.items():
        for v in values:
            assert v not in allow, (kind, v)
    # they are real look-alikes: a looser normalisation (NFKC + case folding, the secret key's) would let
    # most of them through -- the control that shows the exact match is what refuses them
    loose = {normalize_value("URL", p) for p in PUBLIC}
    assert sum(normalize_value("URL", v) in loose for vs in look_alikes.values() for v in vs) >= 6


def test_allow_list_membership_is_nfc_equality_on_generated_unicode():
    from hypothesis import given, settings as hsettings, strategies as st

    @hsettings(max_examples=150, deadline=None)
    @given(st.text(max_size=12), st.text(max_size=12))
    def check(text, entry):
        nfc = unicodedata.normalize("NFC", text) == unicodedata.normalize("NFC", entry)
        assert (text in AllowList([entry])) == nfc
        assert (text in AllowList([])) is False

    check()


MAIL = ("From: Jane Roe <jane.roe@example.net>\nTo: announce@lists.acme.org\nDate: Mon, 30 Sep 2002 10:01:12 +0100\n"
        "Subject: Re: launch\n\nOn Mon, 30 Sep 2002, Jane Roe wrote:\n> the Acme Widget ships\n\nThanks,\nJim\n"
        "_______________________________________________\nAnnounce mailing list\nannounce@lists.acme.org\n"
        "https://lists.acme.org/mailman/listinfo/announce\n")


def _spans(text: str, found: list[tuple[str, str]]) -> list[dict]:
    out = []
    for value, entity_type in found:
        start = 0
        while (at := text.find(value, start)) >= 0:
            out.append({"start": at, "end": at + len(value), "entity_type": entity_type,
                        "tier": TIERS.get(entity_type, "PII"), "score": 0.9})
            start = at + len(value)
    return out


def test_an_allow_listed_span_is_left_as_written_charged_nothing_and_a_look_alike_is_replaced(sanitizer):
    spans = _spans(MAIL, [("Jane Roe", "PERSON"), ("jane.roe@example.net", "EMAIL_ADDRESS"),
                          ("announce@lists.acme.org", "EMAIL_ADDRESS"), ("Mon, 30 Sep 2002", "DATE_TIME"),
                          ("Jim", "PERSON")])
    allow = AllowList(["announce@lists.acme.org"])
    kept, allowed = doc_spans(MAIL, spans, allow)
    assert allowed == 2 and len(kept) == len(spans) - 2  # the To: header's and the list footer's
    drawn = drawn_pairs(planned_values([MAIL], [spans], allow, frozenset(TIERS), KEY))
    assert ("EMAIL_ADDRESS", secret_id(KEY, "announce@lists.acme.org")) not in drawn
    assert {v for t, v in drawn if t == "EMAIL_ADDRESS"} == {secret_id(KEY, "jane.roe@example.net")}
    out = sanitize_documents(sanitizer, hash_encode, None, [MAIL], [kept], draw_key=KEY).texts[0]
    assert out.count("announce@lists.acme.org") == 2 and "jane.roe@example.net" not in out and "Jane Roe" not in out
    # the same mail where the list address is written in another case: replaced, not let through
    upper = MAIL.replace("To: announce@", "To: Announce@")
    kept_u, allowed_u = doc_spans(upper, _spans(upper, [("Announce@lists.acme.org", "EMAIL_ADDRESS"),
                                                        ("announce@lists.acme.org", "EMAIL_ADDRESS")]), allow)
    assert allowed_u == 1 and [upper[s:e] for s, e, _, _ in kept_u] == ["Announce@lists.acme.org"]


# --------------------------------------------------------------------------- consistent surrogates


def test_a_value_gets_one_surrogate_in_every_document_and_batch_of_the_epoch_and_a_fresh_one_next_epoch(sanitizer):
    texts = [f"Hi Jane Roe, note {i} from jane.roe@example.net" for i in range(6)]
    docs = [[(3, 11, "PERSON", "PII"), (t.index("jane."), len(t), "EMAIL_ADDRESS", "PII")] for t in texts]
    k1 = draw_key(KEY, 7, "fp")
    whole = sanitize_documents(sanitizer, hash_encode, None, texts, docs, draw_key=k1).texts
    halves = (sanitize_documents(sanitizer, hash_encode, None, texts[3:], docs[3:], draw_key=k1).texts
              + sanitize_documents(sanitizer, hash_encode, None, texts[:3], docs[:3], draw_key=k1).texts)
    assert whole == halves[3:] + halves[:3]  # any batch, any order: the same draw
    assert len({t.split(",")[0] for t in whole}) == 1  # one surrogate for Jane Roe across the 6 documents
    # a spelling with the same value key (case) gets the same surrogate: the draw is of the key
    other = sanitize_documents(sanitizer, hash_encode, None, ["Hi JANE ROE"], [[(3, 11, "PERSON", "PII")]],
                               draw_key=k1).texts
    assert normalize_value("PERSON", other[0][3:]) == normalize_value("PERSON", whole[0][3:whole[0].index(",")])
    # other epochs draw afresh: over 40 epochs the surrogates of Jane Roe are not all the same
    names = {sanitize_documents(sanitizer, hash_encode, None, texts[:1], docs[:1], draw_key=draw_key(KEY, e, "fp"))
             .texts[0].split(",")[0] for e in range(40)}
    assert len(names) > 1


def _vectors(sanitizer, values):
    return np.asarray(hash_encode([normalize_value("PERSON", v) for v in values]), dtype=np.float64)


def test_the_night_release_of_a_value_meets_metric_ldp_exactly_and_the_keyed_draws_follow_the_mechanism(sanitizer):
    """Independent computation: a value with n occurrences in the epoch releases (y, ..., y) with probability
    P_x(y) (one draw), so the night's output distribution is the mechanism's own; its log-ratio against any
    x' is at most eps * D_k(x, x') (exact enumeration over the vocabulary) -- whatever n. Monte Carlo: the
    keyed draws over 1,500 draw keys match P_x(y) within binomial bounds (Bonferroni over the vocabulary)."""
    mech = sanitizer.per_type["PERSON"].mechanism
    x, x2 = _vectors(sanitizer, ["Jane Roe", "Jim Smith"])
    px, px2 = mech.probabilities(x), mech.probabilities(x2)
    bound = mech.epsilon * float(mech.metric(x[None], x2[None])[0])
    for n in (1, 5, 250):  # the night's output (y repeated n times): same pmf whatever n
        worst = float(np.max(np.abs(np.log(px) - np.log(px2))))
        assert worst <= bound * (1 + 1e-9), n
    # negative control: independent draws per occurrence (the former per-document rule) compose to n times
    n = 5
    joint_ratio = n * float(np.max(np.log(px) - np.log(px2)))
    assert joint_ratio > bound  # what consistency saves: one draw instead of n
    draws = 1500
    phrases = sanitizer.per_type["PERSON"].phrases
    index = {p: i for i, p in enumerate(sorted(set(phrases)))}
    exact = np.zeros(len(index))
    np.add.at(exact, [index[p] for p in phrases], px)  # a phrase listed twice: its rows' probabilities
    counts = np.zeros(len(index))
    for e in range(draws):
        pick = sanitizer.replace(value_rng(draw_key(KEY, e, "mc"), "PERSON", "jane roe"), ["PERSON"], x[None])[0]
        counts[index[pick]] += 1
    px = exact
    z = norm.isf(1e-6 / (2 * len(index)))
    tolerance = z * np.sqrt(px * (1 - px) / draws) + 1.0 / draws
    assert np.all(np.abs(counts / draws - px) <= tolerance)


def test_consistency_discloses_which_spans_are_equal_so_one_occurrence_alone_is_not_protected(sanitizer):
    """Negative control of the adjacency: D holds x at all k positions, D' holds x' at one of them. Under
    consistent draws D gives k equal surrogates with probability 1, D' with probability sum_y P_x(y) P_x'(y)
    < 1: the event "not all equal" has probability 0 under D and > 0 under D', an unbounded ratio. So the
    guarantee is for swapping the value in ALL its occurrences (its identity), not one occurrence; the
    count of equal surrogates (the value's occurrences) is published."""
    mech = sanitizer.per_type["PERSON"].mechanism
    x, x2 = _vectors(sanitizer, ["Jane Roe", "Jim Smith"])
    same = float(mech.probabilities(x) @ mech.probabilities(x2))
    assert 0.0 < 1.0 - same  # Pr_D'[not all equal] > 0 = Pr_D[not all equal]
    k = 4
    texts = ["Jane Roe"] * k
    docs = [[(0, 8, "PERSON", "PII")]] * k
    out = sanitize_documents(sanitizer, hash_encode, None, texts, docs, draw_key=draw_key(KEY, 1, "fp")).texts
    assert len(set(out)) == 1 and out.count(out[0]) == k  # the count of x's occurrences, as published


# --------------------------------------------------------------------------- D / D': decisions do not depend on counts


def _entry(charge, exposures=None) -> dict:
    return json.loads(charge_to_json(charge, exposures))


def _ledger_with_history(value_key: str) -> list[dict]:
    """40 earlier epochs, each a draw in which the date value was charged once (80 of eps 2 spent)."""
    out = []
    for e in range(40):
        params = {"draw": f"{e}:fp", "draw_eps": 4.0, "entity_type": "DATE_TIME"}
        out.append(_entry(mldp_charge("d", "sanitize", f"r{e}", "clusant", epsilon=2.0, pure_epsilon=6.0,
                                      metric="D_k", k=4, params=params), {value_key: 1}))
    return out


def former_masked_types(entries, values_by_type: dict[str, dict[str, int]], eps: float, limit: float) -> set[str]:
    """The rule this policy replaces (main 99e840d, stages.sanitize._spent_types): a type is masked when one of
    its values' ledger spend plus eps per document tonight passes the limit. Kept here as the control the
    D / D' test must catch."""
    keys, sums, everyone = _per_value(entries)
    spent = dict(zip(keys, sums))
    return {t for t, values in values_by_type.items() if any(everyone + spent.get(v, 0.0) + eps * n > limit
                                                             for v, n in values.items())}


def _per_value(entries):
    from privtext.privacy.budget import flatten, mldp_per_value

    exposures = [exposure_arrays(e["exposures"]) for e in entries]
    return mldp_per_value(entries, exposures, flatten(exposures))


def _night(sanitizer, texts, spans, entries, day):
    """The stage's night at the algorithm level (stages.sanitize's own functions): the schedule check, the
    plan, the charge set, the output."""
    allow = AllowList([])
    epoch = epoch_of(day, 30)
    draw = draw_id(epoch, "fp")
    try:
        check_schedule(entries, draw, sum(ts.mechanism.epsilon for ts in sanitizer.per_type.values()), LIMIT, "d")
    except BudgetExceeded:
        return "refused", None, None
    planned = planned_values(texts, spans, allow, frozenset(sanitizer.per_type), KEY)
    new = new_draws(entries, draw, drawn_pairs(planned))
    docs = [doc_spans(t, s, allow)[0] for t, s in zip(texts, spans)]
    out = sanitize_documents(sanitizer, hash_encode, None, texts, docs, draw_key=draw_key(KEY, epoch, "fp"))
    return "published", new, out


def test_d_and_d_prime_differing_in_one_occurrence_of_one_date_get_the_same_decisions(sanitizer):
    """The re-audit's pair: D' = D plus one occurrence of a date that D holds in 60 documents, on a ledger where
    that date has spent 80. The former rule masks every DATE_TIME span of D' and none of D (it fails this
    test); the policy's decisions -- refuse or not, which spans are masked, which are left -- are the same,
    and D's documents come out identical in D'."""
    date = "Mon, 30 Sep 2002"
    texts = [f"Date: {date} 10:0{i % 10}\nOn {date}, Jim wrote: see you {i}" for i in range(60)]
    texts += ["Sent on 1 Oct 2002 by Jim"] * 13
    spans = [_spans(t, [(date, "DATE_TIME"), ("1 Oct 2002", "DATE_TIME"), ("Jim", "PERSON")]) for t in texts]
    d_texts, d_spans = texts, spans
    extra = f"Moved to {date}."
    dp_texts, dp_spans = texts + [extra], spans + [_spans(extra, [(date, "DATE_TIME")])]
    entries = _ledger_with_history(secret_id(KEY, normalize_value("DATE_TIME", date)))
    docs_d = {"DATE_TIME": {secret_id(KEY, normalize_value("DATE_TIME", date)): 60,
                            secret_id(KEY, normalize_value("DATE_TIME", "1 Oct 2002")): 13}}
    docs_dp = {"DATE_TIME": {**docs_d["DATE_TIME"], secret_id(KEY, normalize_value("DATE_TIME", date)): 61}}
    # the control: the former rule flips on this pair
    assert former_masked_types(entries, docs_d, 2.0, LIMIT) == set()
    assert former_masked_types(entries, docs_dp, 2.0, LIMIT) == {"DATE_TIME"}
    day = dt.date(2002, 10, 1)
    state_d, new_d, out_d = _night(sanitizer, d_texts, d_spans, entries, day)
    state_dp, new_dp, out_dp = _night(sanitizer, dp_texts, dp_spans, entries, day)
    assert state_d == state_dp == "published"
    assert out_d.texts == out_dp.texts[:-1]  # D's documents identical in D'
    assert out_d.masked == out_dp.masked[:-1] and not any(out_dp.masked)
    assert new_d == new_dp  # the same values are charged: the extra occurrence costs nothing
    assert all(placeholder("DATE_TIME") not in t for t in out_dp.texts)
    # a ledger that differs only in which values it exposed (the data) refuses or not alike
    other = [{**e, "exposures": [{"unit": "another", "occurrences": 1, "variant": 0, "records": 1}]} for e in entries]
    assert _night(sanitizer, d_texts, d_spans, other, day)[0] == state_d


# --------------------------------------------------------------------------- schedule, ledger and an independent sum


def _independent_sums(entries: list[dict], by_type: bool = False) -> dict:
    """Plain Python: eps * occurrences summed per value string (its unit, whatever the row's type) over the
    ledger's mldp rows; ``by_type``: per (entity type, value) instead, the former unit (the mutation)."""
    out: dict = {}
    for e in entries:
        if e["guarantee"] != "mldp":
            continue
        for x in e["exposures"]:
            key = (e["params"]["entity_type"], x["unit"]) if by_type else x["unit"]
            out[key] = out.get(key, 0.0) + e["spend"]["epsilon"] * x["occurrences"]
    return out


EPS = {"PERSON": 2.0, "EMAIL_ADDRESS": 2.0, "ORGANIZATION": 4.0, "NRP": 4.0}


def _night_rows(night: int, draw: str, new: dict, eps: dict = EPS) -> list[dict]:
    """The stage's ledger rows of one night (``stages.sanitize._charge``): one mldp row per type with new draws,
    or one ``none`` entry naming the draw."""
    params = {"draw": draw, "draw_eps": max(eps.values()), "draw_string_eps": sum(eps.values()), "string_units": True}
    rows = [_entry(mldp_charge("d", "sanitize", f"n{night}", "clusant", epsilon=eps[t], pure_epsilon=5.0,
                               metric="D_k", k=4, params={**params, "entity_type": t}), values)
            for t, values in sorted(new.items())]
    return rows or [_entry(none_charge("d", "sanitize", f"n{night}", "clusant", reason="reused", params=params))]


def _simulate(nights: int, epoch_days: int, dedup: bool = True, reruns=(3, 17)) -> list[dict]:
    """Nights of a mailbox through the stage's charge rule: a colleague every night (as PERSON, and as
    ORGANIZATION on even nights), a list address every night, rare values; reruns of some nights."""
    rng = np.random.default_rng(5)
    entries: list[dict] = []
    for night in [*range(nights), *reruns]:
        draw = draw_id(epoch_of(START + dt.timedelta(days=night), epoch_days), "fp")
        drawn = {("PERSON", "colleague"), ("EMAIL_ADDRESS", "list")} | {("PERSON", f"rare{rng.integers(1000)}")}
        if night % 2 == 0:
            drawn.add(("ORGANIZATION", "colleague"))
        new = new_draws(entries, draw, drawn) if dedup else {t: {v: 1 for tt, v in drawn if tt == t} for t, _ in drawn}
        entries += _night_rows(night, draw, new)
    return entries


def test_no_value_passes_its_limit_the_schedule_bounds_every_value_and_an_independent_sum_agrees():
    entries = _simulate(nights=90, epoch_days=7)
    sums = _independent_sums(entries)
    total = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], BUDGET).mldp
    assert total.epsilon == pytest.approx(max(sums.values()))
    assert total.values == len(sums)
    schedule = mldp_schedule(entries)
    epochs = len({epoch_of(START + dt.timedelta(days=n), 7) for n in range(90)})
    assert schedule["draws"] == epochs and schedule["bound"] == pytest.approx(sum(EPS.values()) * epochs)
    assert max(sums.values()) <= schedule["bound"] <= LIMIT
    # the colleague, every night, as PERSON and (some nights) ORGANIZATION: one draw of each type per epoch,
    # whatever the nights and reruns, and one unit across the two types
    assert sums["colleague"] == pytest.approx((2.0 + 4.0) * epochs) == total.epsilon
    # the mutation: keyed per (type, value) the worst is one type's draws only, below what the string met
    per_type = max(_independent_sums(entries, by_type=True).values())
    assert per_type == pytest.approx(4.0 * epochs) and per_type < total.epsilon
    # negative control: charging every night (no reuse) passes the schedule's bound: the bound would lie
    loose = _independent_sums(_simulate(nights=90, epoch_days=7, dedup=False))
    assert max(loose.values()) > schedule["bound"]


def test_the_schedule_refuses_the_draw_that_would_pass_the_limit_whatever_the_data():
    per_draw = sum(EPS.values())  # 12: a string may be detected as every type of the mechanism
    epochs = int(LIMIT // per_draw)
    entries = _simulate(nights=epochs * 7, epoch_days=7, reruns=())
    assert mldp_schedule(entries)["bound"] == pytest.approx(per_draw * epochs) and per_draw * (epochs + 1) > LIMIT
    last = START + dt.timedelta(days=epochs * 7 - 1)
    check_schedule(entries, draw_id(epoch_of(last, 7), "fp"), per_draw, LIMIT, "d")  # a rerun in the last epoch
    with pytest.raises(BudgetExceeded, match="surrogate draw"):
        check_schedule(entries, draw_id(epoch_of(last, 7) + 1, "fp"), per_draw, LIMIT, "d")
    emptied = [{**e, "exposures": None} if e["guarantee"] == "mldp" else e for e in entries]
    assert mldp_schedule(emptied)["bound"] == mldp_schedule(entries)["bound"]  # the data does not move it
    assert math.isclose(mldp_schedule([])["bound"], 0.0)


# --------------------------------------------------------------------------- the unit: a value string, across types


def _ledger_of_nights(nights: list[tuple[list[str], list[list[dict]]]], eps: dict = EPS) -> list[dict]:
    """The stage's plan and charge rule (``planned_values``, ``drawn_pairs``, ``new_draws``, ``_charge``) over
    nights of one draw."""
    entries: list[dict] = []
    for n, (texts, spans) in enumerate(nights):
        planned = planned_values(texts, spans, AllowList([]), frozenset(eps), KEY)
        new = new_draws(entries, "1:fp", drawn_pairs(planned))
        entries += _night_rows(n, "1:fp", new, eps)
    return entries


def test_a_string_typed_three_ways_composes_to_the_sum_of_its_three_draws():
    """The issue's case: one name detected as NRP, ORGANIZATION and PERSON on one night meets three draws (2 + 4
    + 4); the ledger's figure is that sum, equal to an independent plain-Python sum per string over the rows,
    and within the schedule's bound. The mutation (the former per-(type, value) keying) reports 4."""
    texts = ["Greetings from the Jordan team", "Jordan wrote back", "the Jordan community"]
    spans = [_spans(t, [("Jordan", ty)]) for t, ty in zip(texts, ["ORGANIZATION", "PERSON", "NRP"])]
    entries = _ledger_of_nights([(texts, spans), (texts[:1], spans[:1])])  # night 2: a rerun
    total = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], BUDGET).mldp
    sums = _independent_sums(entries)
    assert sums == {secret_id(KEY, "jordan"): 2.0 + 4.0 + 4.0}
    assert total.epsilon == pytest.approx(10.0) and total.values == 1
    assert max(_independent_sums(entries, by_type=True).values()) == 4.0 < total.epsilon  # the mutation fails
    assert total.epsilon <= mldp_schedule(entries)["bound"] == sum(EPS.values())


def test_width_and_case_variants_are_one_unit_a_confusable_is_another_and_a_code_type_names_its_string():
    """The unit is the string's key (NFKC, case folded, spaces collapsed, edge punctuation stripped): the key
    the draw is made of, so a full-width or upper-case spelling shares the draw and the unit (an adversary's
    variant cannot split it). A confusable (Cyrillic "о") is another string: another draw, another unit (it is
    not merged: its draw is its own, and merging another value would charge one string for another's draws).
    A code type keys letters and digits only; its row names the string's key too, so "+44 20 7946 0000" as
    PHONE_NUMBER and as DATE_TIME composes across the two types."""
    phone = "+44 20 7946 0000"
    texts = ["Jordan Lee", "ＪＯＲＤＡＮ ＬＥＥ", "JORDAN  LEE.", "J\u043erdan Lee", f"call {phone}", f"at {phone}"]
    found = [("Jordan Lee", "PERSON"), ("ＪＯＲＤＡＮ ＬＥＥ", "ORGANIZATION"), ("JORDAN  LEE.", "NRP"),
             ("J\u043erdan Lee", "PERSON"), (phone, "PHONE_NUMBER"), (phone, "DATE_TIME")]
    spans = [_spans(t, [f]) for t, f in zip(texts, found)]
    entries = _ledger_of_nights([(texts, spans)], {**EPS, "PHONE_NUMBER": 2.0, "DATE_TIME": 4.0})
    sums = _independent_sums(entries)
    name, confusable = secret_id(KEY, "jordan lee"), secret_id(KEY, "j\u043erdan lee")
    assert sums[name] == 2.0 + 4.0 + 4.0 and sums[confusable] == 2.0
    assert sums[secret_id(KEY, normalize_value("", phone))] == 2.0 + 4.0  # the string, across its two types
    assert sums[secret_id(KEY, "442079460000")] == 2.0  # the code key the spans' secret_id hashes
    total = compose(entries, [exposure_arrays(e["exposures"]) for e in entries], BUDGET).mldp
    assert total.epsilon == pytest.approx(max(sums.values())) and total.values == len(sums) == 4
    # control: keyed on the raw text (no normalisation) the name would be three units of one draw each
    raw = {(f[1], f[0]) for f in found[:3]}
    assert len({v for _, v in raw}) == 3


def test_an_older_ledger_never_under_counts_a_string():
    """Rows written before the per-string unit: a code type's row named only its letters-and-digits key, so the
    string it drew is unknown. Such a row counts for every value once per (type, draw): the string "+0100",
    drawn as PHONE_NUMBER (key "0100") and as DATE_TIME ("+0100") in one older draw, composes to at least 2 + 4
    (an over-count for other values, never an under-count), within the schedule's term for older draws; a
    non-code older row composes on its own unit, as the new rows do."""
    params = {"draw": "0:fp", "draw_eps": 4.0}
    old = [_entry(mldp_charge("d", "sanitize", f"o{n}", "clusant", epsilon=eps, pure_epsilon=5.0, metric="D_k", k=4,
                              params={**params, "entity_type": t}), {unit: 1})
           for n, (t, eps, unit) in enumerate([("PHONE_NUMBER", 2.0, secret_id(KEY, "0100")),
                                               ("PHONE_NUMBER", 2.0, secret_id(KEY, "0200")),
                                               ("DATE_TIME", 4.0, secret_id(KEY, "+0100")),
                                               ("PERSON", 2.0, secret_id(KEY, "jim"))])]
    exposures = [exposure_arrays(e["exposures"]) for e in old]
    total = compose(old, exposures, BUDGET).mldp
    units, sums, everyone = _per_value(old)
    assert everyone == 2.0  # PHONE_NUMBER once for the draw, whatever how many keys it charged
    assert dict(zip(units, sums)) == {secret_id(KEY, "+0100"): 4.0, secret_id(KEY, "jim"): 2.0}
    assert total.epsilon == 6.0 >= 2.0 + 4.0
    schedule = mldp_schedule(old)
    assert schedule["older"] == 2.0 + 4.0 + 2.0 and total.epsilon <= schedule["bound"]
    # the same rows as the stage writes them now name the string: composed on their units, no fallback
    new = [{**e, "params": {**e["params"], "string_units": True}} for e in old]
    assert _per_value(new)[2] == 0.0


# --------------------------------------------------------------------------- a string's types per draw


def _capped_nights(nights, k: int, eps: dict = EPS) -> tuple[list[dict], list[frozenset]]:
    """The stage's plan, cap and charge rule (``planned_values``, ``capped_strings``, ``drawn_pairs``,
    ``new_draws``, ``_charge``) over nights of one draw; the ledger and each night's capped pairs."""
    entries: list[dict] = []
    caps = []
    for n, (texts, spans) in enumerate(nights):
        planned = planned_values(texts, spans, AllowList([]), frozenset(eps), KEY)
        capped = capped_strings(entries, "1:fp", planned, k)
        caps.append(capped)
        entries += _night_rows(n, "1:fp", new_draws(entries, "1:fp", drawn_pairs(planned, capped)), eps)
    return entries, caps


def test_a_string_is_drawn_in_at_most_types_per_value_types_per_draw_and_its_spend_stays_within_the_schedule():
    """``clusant.types_per_value`` = 2: "Jordan" typed ORGANIZATION, PERSON and NRP on night 1 is drawn in the
    first two types by name (NRP, ORGANIZATION) and masked as PERSON; on night 2 of the same draw, typed PERSON
    and EMAIL_ADDRESS, both are masked (its two types are spent) while a new string drawn in two types is not.
    Independent check: a plain-Python sum per string over the ledger is at most ``string_draw_eps`` (the two
    largest eps: 8), and 8 exactly for Jordan. The mutation (no cap, k = 4) composes Jordan to 2 + 4 + 4 + 2 = 12,
    beyond that bound: the cap is what keeps the schedule true."""
    texts1 = ["Greetings from the Jordan team", "Jordan wrote back", "the Jordan community"]
    spans1 = [_spans(t, [("Jordan", ty)]) for t, ty in zip(texts1, ["ORGANIZATION", "PERSON", "NRP"])]
    texts2 = ["Jordan again", "mail jordan", "Kim Lee and Kim Lee"]
    spans2 = [_spans(texts2[0], [("Jordan", "PERSON")]), _spans(texts2[1], [("jordan", "EMAIL_ADDRESS")]),
              [{**_spans(texts2[2], [("Kim Lee", "PERSON")])[0]},
               {**_spans(texts2[2], [("Kim Lee", "ORGANIZATION")])[1]}]]
    jordan, kim = secret_id(KEY, "jordan"), secret_id(KEY, "kim lee")
    entries, caps = _capped_nights([(texts1, spans1), (texts2, spans2)], k=2)
    assert caps[0] == {("PERSON", jordan)}
    assert caps[1] == {("PERSON", jordan), ("EMAIL_ADDRESS", jordan)}
    sums = _independent_sums(entries)
    bound = string_draw_eps(EPS.values(), 2)
    assert bound == 8.0 and sums[jordan] == 8.0 and sums[kim] == 6.0 and max(sums.values()) <= bound
    uncapped, none = _capped_nights([(texts1, spans1), (texts2, spans2)], k=4)
    assert none == [frozenset(), frozenset()] and _independent_sums(uncapped)[jordan] == 12.0 > bound


def test_the_cap_holds_for_any_strings_any_types_and_any_nights():
    """Property over generated Unicode (any script, case, width): documents holding generated strings each
    typed at random, over one to three nights of one draw, for every cap k in 1..3. Checked independently on
    the ledger the stage would write: a plain sum per unit is at most ``string_draw_eps`` (the k largest eps),
    a string is charged in at most k types, and every planned (type, string) is either drawn or masked,
    never both."""
    from hypothesis import given, settings as hsettings, strategies as st

    value = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8).filter(
        lambda v: normalize_value("", v) and v == v.strip() and "|" not in v)
    doc = st.lists(st.tuples(value, st.sampled_from(sorted(EPS))), min_size=1, max_size=4)
    nights = st.lists(st.lists(doc, min_size=1, max_size=3), min_size=1, max_size=3)

    def night(docs):
        texts, spans = [], []
        for found in docs:
            text, ds = "", []
            for v, t in found:
                text += " | " if text else ""
                ds.append({"start": len(text), "end": len(text) + len(v), "entity_type": t, "tier": "PII",
                           "score": 0.9})
                text += v
            texts.append(text)
            spans.append(ds)
        return texts, spans

    @hsettings(max_examples=60, deadline=None)
    @given(nights, st.integers(1, 3))
    def check(generated, k):
        made = [night(docs) for docs in generated]
        entries, caps = _capped_nights(made, k)
        bound = string_draw_eps(EPS.values(), k)
        assert max(_independent_sums(entries).values(), default=0.0) <= bound
        types: dict = {}
        for e in entries:
            for x in e.get("exposures") or []:
                types.setdefault(x["unit"], set()).add(e["params"]["entity_type"])
        strings = {sid for texts, spans in made
                   for _, _, sid in planned_values(texts, spans, AllowList([]), frozenset(EPS), KEY)}
        assert all(len(types.get(sid, ())) <= k for sid in strings)
        for (texts, spans), capped in zip(made, caps):
            planned = planned_values(texts, spans, AllowList([]), frozenset(EPS), KEY)
            assert capped <= {(t, sid) for t, _, sid in planned}
            assert not {(t, sid) for t, sid in capped} & drawn_pairs(planned, capped)

    check()


def test_a_capped_span_is_masked_and_the_summary_says_why(sanitizer):
    """The rewrite: a span whose (type, string) is capped is written as its type's placeholder, the same
    string's other spans get its one surrogate; the masking summary names the cap and its setting."""
    from privtext.clusant.masking import summary, words

    text = "Jordan Lee wrote to Jordan Lee"
    docs = [[(0, 10, "PERSON", "PII"), (20, 30, "EMAIL_ADDRESS", "PII")]]
    out = sanitize_documents(sanitizer, hash_encode, None, [text], docs, draw_key=b"d" * 32,
                             keep=lambda t, v: t != "EMAIL_ADDRESS")
    assert out.texts[0].endswith(placeholder("EMAIL_ADDRESS")) and "Jordan Lee" not in out.texts[0]
    assert out.masked == [{"EMAIL_ADDRESS": 1}] and out.replaced == [{"PERSON": 1}]
    said = words(summary(2, 1, {"EMAIL_ADDRESS": 1}, 0, 0, capped=1, types_per_value=2))
    assert "already drawn in 2 other type(s)" in said and "no public replacement vocabulary" not in said
