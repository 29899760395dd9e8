"""Per-secret composition: each secret's blow-up over every dominating pair it met, in two phases.

``screen``: Renyi DP of every secret at once (additive over pairs; B(p) <= min_a (e^{D_a} p)^{(a-1)/a},
Mironov 2017 Prop. 10: an upper bound). ``exact``: the privacy loss distribution of the product of one
secret's pairs (pessimistic PLDs: an upper bound, tighter), for the secrets the screen cannot certify and
the few worst (``exact_slots``). The secret's figure is the smaller of the two bounds. Which pairs a secret
meets and why: docs/privacy-model.md ("Composition per secret").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from privtext.privacy.pairs import ORDERS, EventPair, PurePair, pair_of, pure_rdp
from privtext.privacy.secret_protection import blowup
from privtext.privacy.spend import NEAR_LIMIT, SecretSpend, exceeds

EXACT_WORST = 4  # secrets composed exactly for the report even when the Renyi screen certifies them
HOPELESS = 50.0  # nats of Renyi divergence at every order: no exact PLD is attempted (its grid would explode)


class PairCache:
    """The Renyi divergences and the PLD of each distinct pair, computed once per composition."""

    def __init__(self):
        self._rdp: dict = {}
        self._pld: dict = {}

    def rdp(self, pair) -> np.ndarray:
        if pair not in self._rdp:
            self._rdp[pair] = pair.rdp()
        return self._rdp[pair]

    def pld(self, pair):
        if pair not in self._pld:
            self._pld[pair] = pair.pld()
        return self._pld[pair]


@dataclass
class SecretExposures:
    """What each secret met, as arrays. A secret is a SLOT: one per secret a secret charge named, plus one
    for the secrets met only by secret charges on everyone (no exposures). ``slot``, ``charge``, ``occ``,
    ``variant``, ``records``: one entry per exposure row of a slotted secret; ``secret_row`` marks rows of
    secret charges, ``counted_row`` rows of record/user events that counted the secret's records. Per
    charge: ``p`` (inf unless a secret charge), ``pure_eps`` (mldp charges), ``everyone``. Record/user
    events without exposures (``everyone_events``) reach every secret at its largest recorded group."""

    charges: list
    secrets: int
    slots: int
    releases: int
    slot: np.ndarray
    charge: np.ndarray
    occ: np.ndarray
    variant: np.ndarray
    records: np.ndarray
    secret_row: np.ndarray
    counted_row: np.ndarray
    is_secret: np.ndarray
    p: np.ndarray
    pure_eps: np.ndarray
    everyone: np.ndarray
    everyone_events: list

    def everyone_pairs(self) -> list:
        """The pairs of the secret charges on everyone: every secret meets each once."""
        return [pair_of(self.charges[i], 0) for i in np.flatnonzero(self.everyone) if self.is_secret[i]]

    def row_pair(self, k: int):
        """The pair exposure row ``k`` puts on its secret (a record/user event at the secret's own count)."""
        if self.secret_row[k]:
            return pair_of(self.charges[self.charge[k]], self.variant[k], self.records[k])
        return EventPair(self.charges[self.charge[k]]["dp_event"], int(self.records[k]))


def secret_exposures(charges: list[dict], exposures: list, flat,
                     record_events: list[int]) -> SecretExposures | None:
    """The secrets that secret charges touched and every exposure row on them (None: no secret charge, or
    none touched a secret). ``record_events``: the record/user-level DP charges."""
    secret = [i for i, c in enumerate(charges) if c["guarantee"] == "secret_protection"]
    if not secret:
        return None
    n = len(charges)
    counted = np.zeros(n, dtype=bool)  # record/user events with their per-secret counts
    counted[[i for i in record_events if exposures[i] is not None]] = True
    is_secret = np.zeros(n, dtype=bool)
    is_secret[secret] = True
    everyone = np.array([exposures[i] is None for i in range(n)], dtype=bool)
    touched = np.unique(flat.unit[is_secret[flat.charge]])  # codes into flat.units
    everyone_only = bool((is_secret & everyone).any())  # the slot of secrets met by charges on everyone only
    if touched.size == 0 and not everyone_only:
        return None
    slot = np.full(len(flat.units), -1, dtype=np.int64)
    slot[touched] = np.arange(touched.size)
    rows = np.flatnonzero(slot[flat.unit] >= 0) if len(flat.units) else np.zeros(0, dtype=np.int64)
    charge = flat.charge[rows]
    return SecretExposures(
        charges=charges, secrets=int(touched.size), slots=touched.size + int(everyone_only), releases=len(secret),
        slot=slot[flat.unit[rows]], charge=charge, occ=flat.occ[rows], variant=flat.variant[rows],
        records=flat.records[rows], secret_row=is_secret[charge], counted_row=counted[charge], is_secret=is_secret,
        p=np.array([float(c["spend"]["p"]) if is_secret[i] else np.inf for i, c in enumerate(charges)]),
        pure_eps=np.array([float(c["spend"].get("pure_epsilon", 0.0)) if c["guarantee"] == "mldp" else 0.0
                           for c in charges]),
        everyone=everyone, everyone_events=[i for i in record_events if exposures[i] is None])


@dataclass
class Screen:
    """Per slot: Renyi divergences at ``ORDERS``, prior p (the smallest of its secret charges), summed
    pure-LDP eps, group size (largest records), and the Renyi bound of the blow-up B(p)."""

    rdp: np.ndarray
    p: np.ndarray
    pure: np.ndarray
    group: np.ndarray
    bound: np.ndarray


def screen(se: SecretExposures, cache: PairCache) -> Screen:
    """The screen phase: every slot's Renyi DP and its bound of B(p), vectorised over exposure rows."""
    m = se.slots
    rdp = np.zeros((m, len(ORDERS)))
    sec = np.flatnonzero(se.secret_row)
    if len(sec):
        keys = np.stack([se.charge[sec], se.variant[sec], se.records[sec]], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        pair_rdp = np.array([cache.rdp(pair_of(se.charges[i], v, g)) for i, v, g in uniq])
        times = sparse.csr_matrix((se.occ[sec].astype(np.float64), (se.slot[sec], inverse.ravel())),
                                  shape=(m, len(uniq)))
        with np.errstate(invalid="ignore"):  # inf (no noise) times 0 exposures
            rdp += np.nan_to_num(times @ pair_rdp, nan=np.inf)
    p = np.full(m, np.inf)
    np.minimum.at(p, se.slot, se.p[se.charge])
    pure = np.bincount(se.slot, weights=se.pure_eps[se.charge] * se.occ, minlength=m).astype(np.float64)
    group = np.ones(m, dtype=np.int64)
    np.maximum.at(group, se.slot, se.records)
    for i in np.flatnonzero(se.everyone):
        if se.is_secret[i]:
            rdp += cache.rdp(pair_of(se.charges[i], 0))
            p = np.minimum(p, se.p[i])
        pure += se.pure_eps[i]
    if se.everyone_events:
        for g in np.unique(group):
            rdp[group == g] += sum(cache.rdp(EventPair(se.charges[i]["dp_event"], int(g)))
                                   for i in se.everyone_events)
    counted = np.flatnonzero(se.counted_row)
    if len(counted):  # each record/user event scaled to the secret's record count in the data it read
        keys = np.stack([se.charge[counted], se.records[counted]], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        pair_rdp = np.array([cache.rdp(EventPair(se.charges[i]["dp_event"], int(g))) for i, g in uniq])
        times = sparse.csr_matrix((se.occ[counted].astype(np.float64), (se.slot[counted], inverse.ravel())),
                                  shape=(m, len(uniq)))
        rdp += times @ pair_rdp
    for value in np.unique(pure[pure > 0]):
        rdp[pure == value] += pure_rdp(value)
    a = np.asarray(ORDERS)
    with np.errstate(over="ignore", invalid="ignore"):
        bound = np.minimum(1.0, np.exp(np.min((a - 1) / a * (rdp + np.log(p)[:, None]), axis=1)))
    return Screen(rdp, p, pure, group, bound)


def exact_slots(sc: Screen, limit: float) -> list[int]:
    """The slots the exact phase composes: the ``EXACT_WORST`` worst by the screen and every slot the screen
    cannot certify within ``limit``, except hopeless ones (their Renyi bound stands: fail closed)."""
    order = np.argsort(-(sc.bound / sc.p), kind="stable")
    chosen = set(order[:EXACT_WORST].tolist()) | set(np.flatnonzero(sc.bound > limit * sc.p).tolist())
    return sorted(u for u in chosen if sc.rdp[u].min() < HOPELESS)


def slot_pairs(se: SecretExposures, sc: Screen, u: int, rows: list[int]) -> tuple:
    """Every pair slot ``u`` met, one per occurrence: charges on everyone, its exposure ``rows``, the sum of
    its pure-LDP eps, and the record/user events without exposures at its group size."""
    pairs = se.everyone_pairs()
    for k in rows:
        if se.secret_row[k] or se.counted_row[k]:
            pairs += [se.row_pair(k)] * int(se.occ[k])
    if sc.pure[u] > 0:
        pairs.append(PurePair(round(float(sc.pure[u]), 12)))
    pairs += [EventPair(se.charges[i]["dp_event"], int(sc.group[u])) for i in se.everyone_events]
    return tuple(pairs)


def exact_blowup(pairs: tuple, p: float, cache: PairCache) -> float:
    """B(p) of the product of ``pairs`` by PLD composition (1 when one of them has no guarantee)."""
    counts: dict = {}
    for pair in pairs:
        counts[pair] = counts.get(pair, 0) + 1
    composed = None
    for pair, times in sorted(counts.items(), key=lambda kv: repr(kv[0])):  # a fixed order: fixed rounding
        one = cache.pld(pair)
        if one is None:
            return 1.0
        one = one.self_compose(times) if times > 1 else one
        composed = one if composed is None else composed.compose(one)
    return blowup(composed, p) if composed is not None else p


def exact(se: SecretExposures, sc: Screen, slots: list[int], cache: PairCache) -> dict[int, float]:
    """The exact phase: B(p) of each of ``slots`` (slots that met the same pairs are composed once)."""
    rows_of: dict[int, list[int]] = {}
    for k in np.flatnonzero(np.isin(se.slot, slots)):
        rows_of.setdefault(int(se.slot[k]), []).append(int(k))
    done: dict = {}
    out = {}
    for u in slots:
        pairs = slot_pairs(se, sc, u, rows_of.get(u, []))
        if pairs not in done:
            done[pairs] = exact_blowup(pairs, sc.p[u], cache)
        out[u] = done[pairs]
    return out


def compose_secrets(charges: list[dict], exposures: list, flat, budget,
                    record_events: list[int]) -> SecretSpend | None:
    """The most exposed secret's (p, r) against ``budget.r_over_p_max``: screened, then exact where needed."""
    se = secret_exposures(charges, exposures, flat, record_events)
    if se is None:
        return None
    limit = budget.r_over_p_max
    cache = PairCache()
    sc = screen(se, cache)
    slots = exact_slots(sc, limit)
    ratio = sc.bound / sc.p
    for u, b in exact(se, sc, slots, cache).items():
        ratio[u] = min(sc.bound[u], b) / sc.p[u]
    worst = int(np.argmax(ratio))
    return SecretSpend(p=float(sc.p[worst]), r=float(ratio[worst] * sc.p[worst]), r_over_p=float(ratio[worst]),
                       secrets=se.secrets or 1, secrets_near_limit=int((ratio > NEAR_LIMIT * limit).sum()),
                       secrets_over_limit=int(exceeds(ratio, limit).sum()), releases=se.releases,
                       exactly_composed=len(slots))
