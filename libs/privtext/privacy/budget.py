"""The privacy budget: typed charges, composition per protected unit, limits that fail closed.

Every charge names the UNIT it protects (``params["unit"]``) and carries its DOMINATING PAIR as data
(``params["pair"]``, direction P = unit present || Q = unit absent), so that any later composition
re-accounts it from scratch:

* ``secret`` (SecPE Def. 3.1: a secret present / absent in the records holding it), pair
  ``secret_mixture``: per round P = sum_k Pr[C=k] N(sqrt(m) k, sigma^2), Q = N(0, sigma^2), T rounds,
  one count pmf per *variant* (the secret's rho multiset, Alg. 2 line 7); or ``dp_event`` (Aug-PE:
  a Gaussian event whose sensitivity is already the secret's record count).
* ``value occurrence`` (metric LDP, CluSanT): pair ``pure`` with the worst-case pure-LDP eps of one
  replaced occurrence; the metric-LDP eps per occurrence is ``spend["epsilon"]``.
* ``record`` / ``user`` (add/remove one record or user, DPED): pair ``dp_event`` (dp-accounting).
* ``none`` (an action without a guarantee) and ``empirical`` (a measured audit): recorded, not budgeted.

EXPOSURES say which units a charge touched: ``{unit_id: Exposure}`` (unit_id = keyed secret_id, never a
raw value; ``occurrences`` = independent draws of the unit in this release; ``variant`` = index of its
pair variant; ``records`` = records (users, for user-level adjacency) holding it in the data the release
read), or None: every unit (only for value occurrences and record/user events; a secret charge must name
its secrets, ``validate_exposures``).

One account: secret ids are keyed by the lakehouse's HMAC key, so every charge on a secret composes
with every other charge on it whatever its ``dataset``; the ledger composes ALL its entries and a
dataset name only selects the limits (``privtext.ledger``).

Composition (``compose``), over all charges of the ledger (every dataset), across stages and nights:

* metric LDP, per (entity type, value): total = sum of eps * occurrences (the metric-LDP guarantee of n
  independent releases of one value, exact: e^(sum eps_i d_T(x,x')) bounds the ratio for the metric d_T of
  its type) <= ``mldp_eps_max``. The unit is the value as one type because the adjacency is (same type,
  same format): a string detected as two types meets two mechanisms with two metrics, and its guarantee
  for swapping x -> x' in both is the sum of the two, each <= the limit. Its pure-LDP eps (below) still
  composes per secret over every type. ``mldp_schedule``: the data-independent bound sanitize checks.
* record/user DP: all record/user-level DpEvents composed with the PLD accountant (every such charge
  covers every record), eps(delta_max) <= ``eps_max`` (a PLD upper bound).
* secret protection, per secret: one currency, the privacy loss distribution of the product of all
  dominating pairs the secret met: its SecPE mixtures (T rounds each), Aug-PE events, the pure-LDP
  pair of every sanitized occurrence (sum of pure eps: a pure-DP upper bound of their composition,
  dominated by binary randomized response, Kairouz et al. 2015), and record/user DpEvents with their
  sensitivity scaled by the secret's record count g (group privacy of a Gaussian: L2 sensitivity at
  most g times, by the triangle inequality; only Gaussian/Laplace events scale, others are refused).
  g is the event's OWN count for the secret: the records (or users, for user-level adjacency) holding it
  in everything that event read (``Exposure.records``); a charge that keeps the set of records it read
  gets these from the ledger, joined to the spans at every composition (``privacy.reads``: whichever
  stage ran first), and a secret absent from its exposures was not in its data (g = 0: the event does
  not touch it). A legacy record-level row without exposures scales by the largest ``records`` any charge
  recorded for the secret. Aug-PE with its per-record event (``record_event``) composes per secret at its
  own g; a secret SecPE read as public (variant ``privacy.reads.UNPROTECTED``) has no guarantee.
  Adjacency of the secret pair: D and D' differ only in the presence of the secret (SecPE Def. 3.1); the
  sanitizer's pure-LDP pair holds for values of the same entity type and surface format (the format class
  is published, ``clusant.surface_format``), so p is the adversary's prior over the values of the
  secret's type AND format: for a prior pi over values spread over formats, the class-conditional prior
  is pi(x) / pi(format of x), and a format holding a share P(f) of the prior needs p = p_overall / P(f).
  Within a class the figure is an upper bound of the truth (exact Bayes-optimal attack:
  ``tests/unit/privacy/test_format_prior.py``); read over all formats it is not (the same test's control).
  The composed blow-up B(p) = sup{P(E): Q(E) <= p} (Hayes et al. 2023, Thm. 2) at p = min p of the
  secret's SecPE/Aug-PE charges must stay <= r_over_p_max * p. This replaces Thm. 3's sum of r,
  which is unsound for adaptive releases: after the first output the posterior exceeds p, so the next
  release's (p, r) no longer applies (five r/p = 10 runs truly give r/p ~ 103, not 50).
  Exact vs bound: every pair is a dominating pair (exact for SecPE's mixture and Gaussians, an upper
  bound for pure LDP and group scaling); PLDs are pessimistic, so B is an upper bound. For speed each
  secret is first screened with Renyi DP (additive over releases; B(p) <= min_a (e^{D_a} p)^{(a-1)/a},
  Mironov 2017 Prop. 10, also an upper bound); only secrets the screen cannot certify, and the few
  worst, are composed exactly. The reported r is the largest of these per-secret upper bounds.

Memory: O(exposures) arrays and one cached PLD per distinct (charge, variant).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from dp_accounting import dp_event as dpe
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import sparse
from scipy.special import logsumexp

from privtext.errors import PrivtextError, Refused
from privtext.privacy.accounting import epsilon_of, event_from_json, event_to_json
from privtext.privacy.secret_protection import blowup, mixture_pld

GUARANTEES = ("secret_protection", "gdp", "approx_dp", "mldp", "empirical_mpl", "detection_recall", "none")
UNITS = ("secret", "value occurrence", "record", "user", "none", "empirical")
ORDERS = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0,
          64.0, 128.0, 256.0)
DISCRETIZATION = 1e-3  # PLD grid shared by every pair (compositions need one grid)
NEAR_LIMIT = 0.8  # a unit is "near the limit" above this share of it
EXACT_WORST = 4  # units composed exactly for the report even when the Renyi screen certifies them
HOPELESS = 50.0  # nats of Renyi divergence at every order: no exact PLD is attempted (its grid would explode)


class BudgetExceeded(Refused):
    """A charge would exceed the dataset's privacy budget; nothing was written. ``total``: the composed
    spend that was refused (``compose``'s output)."""

    def __init__(self, message: str, total: dict | None = None):
        super().__init__(message)
        self.total = total


class MalformedExposures(PrivtextError, ValueError):
    """A charge's exposures the composer cannot account (null for a secret charge, bad counts); nothing written."""


@dataclass(frozen=True)
class Exposure:
    occurrences: int = 1
    variant: int = 0
    records: int = 1


@dataclass(frozen=True)
class Charge:
    """One privacy spend. Build it with the constructors below, not by hand."""

    dataset: str
    stage: str
    run_id: str
    mechanism: str
    guarantee: str
    params: dict
    spend: dict
    dp_event: str | None = None  # dp-accounting event as JSON (privacy.accounting.event_to_json)

    def __post_init__(self):
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"unknown guarantee {self.guarantee!r}; allowed: {', '.join(GUARANTEES)}")
        if self.params.get("unit") not in UNITS:
            raise ValueError(f"a charge must name its unit (params['unit'] in {UNITS})")
        if self.guarantee in ("gdp", "approx_dp") and not self.dp_event:
            raise ValueError(f"a {self.guarantee} charge needs its dp_event")


def _params(params: dict | None, unit: str, pair: dict, deterministic: bool) -> dict:
    return {**(params or {}), "unit": unit, "pair": pair, "deterministic": bool(deterministic)}


def secret_charge(dataset, stage, run_id, mechanism, *, p: float, r: float, sigma: float, rounds: int,
                  releases_per_round: int, count_pmfs, params=None, deterministic=False) -> Charge:
    """SecPE (Alg. 2 x T, calibrated by Alg. 1): (p, r)-secret protection; one count pmf per variant."""
    pair = {"kind": "secret_mixture", "sigma": float(sigma), "rounds": int(rounds),
            "releases_per_round": int(releases_per_round),
            "count_pmfs": [[float(x) for x in np.asarray(pmf, dtype=np.float64)] for pmf in count_pmfs]}
    return Charge(dataset, stage, run_id, mechanism, "secret_protection",
                  _params(params, "secret", pair, deterministic), {"p": float(p), "r": float(r)})


def secret_event_charge(dataset, stage, run_id, mechanism, *, p: float, r: float, event, params=None,
                        deterministic=False, record_event=None) -> Charge:
    """(p, r)-secret protection of a DpEvent whose sensitivity already covers a whole secret (Aug-PE).
    ``record_event``: the same release for one record (sensitivity 1); with it a secret composes at its own
    group size g (the event scaled by g), also for a secret found after the charge (``privacy.reads``)."""
    pair = {"kind": "dp_event", **({"record_event": event_to_json(record_event)} if record_event is not None else {})}
    return Charge(dataset, stage, run_id, mechanism, "secret_protection",
                  _params(params, "secret", pair, deterministic), {"p": float(p), "r": float(r)},
                  event_to_json(event))


def dp_charge(dataset, stage, run_id, mechanism, *, event, delta: float, unit: str, params=None,
              deterministic=False) -> Charge:
    """(eps, delta)-DP for add/remove one ``unit`` (record or user) of a dp-accounting event."""
    if unit not in ("record", "user"):
        raise ValueError(f"a DP charge protects a record or a user, not {unit!r}")
    spend = {"epsilon": epsilon_of(event, delta), "delta": float(delta)}
    return Charge(dataset, stage, run_id, mechanism, "approx_dp",
                  _params(params, unit, {"kind": "dp_event"}, deterministic), spend, event_to_json(event))


def mldp_charge(dataset, stage, run_id, mechanism, *, epsilon: float, pure_epsilon: float, metric: str, k,
                params=None, deterministic=False) -> Charge:
    """eps-metric-LDP per replaced occurrence (e^(eps d(x,x')) for ``metric`` with factor ``k``);
    ``pure_epsilon``: its worst-case pure-LDP eps, used where the value meets other guarantees."""
    if not (math.isfinite(pure_epsilon) and pure_epsilon >= 0):
        raise ValueError("a metric-LDP charge needs a finite pure-LDP epsilon (else it has no guarantee: none_charge)")
    pair = {"kind": "pure", "epsilon": float(pure_epsilon)}
    return Charge(dataset, stage, run_id, mechanism, "mldp",
                  _params({**(params or {}), "metric": metric, "k": k}, "value occurrence", pair, deterministic),
                  {"epsilon": float(epsilon), "pure_epsilon": float(pure_epsilon)})


def none_charge(dataset, stage, run_id, mechanism, *, reason: str, params=None, deterministic=False) -> Charge:
    """An action without a formal guarantee (CusText, a gate override), recorded with its reason."""
    return Charge(dataset, stage, run_id, mechanism, "none",
                  _params({**(params or {}), "reason": reason}, "none", {"kind": "none"}, deterministic), {})


def measurement(dataset, stage, run_id, mechanism, *, guarantee: str, values: dict, params=None,
                deterministic=False) -> Charge:
    """A measured figure recorded in the ledger, not a guarantee and not budgeted (e.g. canary recall)."""
    if guarantee not in ("empirical_mpl", "detection_recall"):
        raise ValueError(f"{guarantee!r} is not a measurement")
    return Charge(dataset, stage, run_id, mechanism, guarantee,
                  _params(params, "empirical", {"kind": "none"}, deterministic), values)


def validate_exposures(charge: Charge, exposures) -> None:
    """Refuse (``MalformedExposures``) exposures the composer could not account, before anything is
    written: empty exposures ``{}`` (of any charge: a release that exposed no unit names none, None or a read
    set says "every unit" / "what it read"); a secret charge must name its secrets (null = "every secret"
    gives the composer no secret to account) unless it carries the set of records it read
    (``params["read"]``, joined to the secrets by the ledger: ``privacy.reads``); unit ids are non-empty
    strings; occurrences and records are integers >= 1 (records: the units holding the secret in the data
    the release read); a variant indexes the charge's count pmfs."""
    where = f"{charge.stage}/{charge.mechanism} charge ({charge.params['unit']})"
    if isinstance(exposures, dict) and not exposures:
        raise MalformedExposures(f"{where}: exposures are empty ({{}}); name the units it exposed, or pass None with "
                                 "the records it read (params['read'])")
    if exposures is None:
        if charge.params["unit"] == "secret" and not charge.params.get("read"):
            raise MalformedExposures(f"{where}: exposures are null; a secret charge must name the secrets it exposed "
                                     "({secret_id: Exposure(occurrences, variant, records)})")
        return
    if not isinstance(exposures, dict):
        raise MalformedExposures(f"{where}: exposures must be a dict secret_id -> Exposure or int, got "
                                 f"{type(exposures).__name__}")
    variants = len(charge.params["pair"].get("count_pmfs") or [None])

    def whole(x) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    for unit, e in exposures.items():
        if not (isinstance(unit, str) and unit):
            raise MalformedExposures(f"{where}: a unit id must be a non-empty string (a keyed secret_id), got {unit!r}")
        e = e if isinstance(e, Exposure) else Exposure(occurrences=e)
        if not (whole(e.occurrences) and e.occurrences >= 1 and whole(e.records) and e.records >= 1):
            raise MalformedExposures(f"{where}: occurrences and records must be integers >= 1, got {e.occurrences!r}, "
                                     f"{e.records!r}")
        if not (whole(e.variant) and 0 <= e.variant < variants):
            raise MalformedExposures(f"{where}: variant {e.variant!r} is not one of the charge's {variants} pair variant(s)")


def charge_to_json(charge: Charge, exposures: dict | None = None) -> str:
    """One JSON object: the charge as the ledger records it (``privtext privacy compose`` reads these)."""
    obj = {k: getattr(charge, k) for k in ("dataset", "stage", "run_id", "mechanism", "guarantee", "params",
                                           "spend", "dp_event")}
    obj["exposures"] = None if exposures is None else [
        {"unit": u, "occurrences": e.occurrences, "variant": e.variant, "records": e.records}
        for u, e in _exposures(exposures).items()]
    return json.dumps(obj, sort_keys=True, default=_json_default)


def charge_from_json(text: str) -> tuple[dict, list | None]:
    obj = json.loads(text)
    return {k: obj.get(k) for k in ("dataset", "stage", "run_id", "mechanism", "guarantee", "params", "spend",
                                    "dp_event")}, obj.get("exposures")


def _exposures(exposures: dict) -> dict[str, Exposure]:
    return {str(u): (e if isinstance(e, Exposure) else Exposure(occurrences=int(e))) for u, e in exposures.items()}


def _json_default(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


# ---------------------------------------------------------------------------------------------
# Renyi DP of each pair (the screen) and its PLD (the exact composition)
# ---------------------------------------------------------------------------------------------

def mixture_rdp(count_pmf, sigma: float, releases_per_round: int, orders=ORDERS) -> np.ndarray:
    """D_a(P || Q) for one round's pair P = sum_k w_k N(sqrt(m) k / sigma, 1), Q = N(0, 1), per order a:
    (1/(a-1)) log E_Q[(P/Q)^a], integrated on a fine grid (trapezoid on a smooth integrand of width 1:
    spectrally accurate). Closed form for one atom: a s^2 / 2."""
    w = np.asarray(count_pmf, dtype=np.float64)
    k = np.flatnonzero(w > 0)
    w = w[k]
    s = math.sqrt(releases_per_round) * k / sigma
    if s[-1] == 0:
        return np.zeros(len(orders))
    out = []
    for a in orders:
        x = np.arange(-12.0, a * s[-1] + 12.0, 0.02)
        loss = logsumexp(np.outer(x, s) - 0.5 * s**2, b=w, axis=1)
        log_int = logsumexp(a * loss - 0.5 * x**2) + math.log(0.02) - 0.5 * math.log(2 * math.pi)
        out.append(max(0.0, log_int / (a - 1)))
    return np.asarray(out)


def pure_rdp(epsilon: float, orders=ORDERS) -> np.ndarray:
    """Renyi divergence of binary randomized response with eps (the dominating pair of eps-DP)."""
    if epsilon == 0:
        return np.zeros(len(orders))
    lp, lq = -np.logaddexp(0.0, -epsilon), -np.logaddexp(0.0, epsilon)  # log p, log q, p = e^eps/(1+e^eps)
    a = np.asarray(orders)
    return np.logaddexp(a * lp + (1 - a) * lq, a * lq + (1 - a) * lp) / (a - 1)


def event_rdp(event: dpe.DpEvent, orders=ORDERS) -> np.ndarray:
    accountant = rdp_privacy_accountant.RdpAccountant(list(orders))
    return np.asarray(accountant.compose(event)._rdp, dtype=np.float64)  # noqa: SLF001


def scale_event(event: dpe.DpEvent, group: int) -> dpe.DpEvent:
    """The event for a group of ``group`` units: Gaussian/Laplace noise relative to the sensitivity
    divided by ``group`` (L2/L1 sensitivity at most ``group`` times). Other events: refused."""
    if group == 1:
        return event
    if isinstance(event, dpe.GaussianDpEvent):
        return dpe.GaussianDpEvent(event.noise_multiplier / group)
    if isinstance(event, dpe.LaplaceDpEvent):
        return dpe.LaplaceDpEvent(event.noise_multiplier / group)
    if isinstance(event, dpe.SelfComposedDpEvent):
        return dpe.SelfComposedDpEvent(scale_event(event.event, group), event.count)
    if isinstance(event, dpe.ComposedDpEvent):
        return dpe.ComposedDpEvent([scale_event(e, group) for e in event.events])
    if isinstance(event, dpe.NoOpDpEvent):
        return event
    raise ValueError(f"cannot scale a {type(event).__name__} to a group of {group}: refusing the charge")


def event_pld(event: dpe.DpEvent) -> pld.PrivacyLossDistribution:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=DISCRETIZATION)
    return accountant.compose(event)._pld  # noqa: SLF001


def pure_pld(epsilon: float) -> pld.PrivacyLossDistribution:
    return pld.from_privacy_parameters(pld_common.DifferentialPrivacyParameters(epsilon, 0.0),
                                       value_discretization_interval=DISCRETIZATION)


def rdp_blowup(rdp: np.ndarray, p: float, orders=ORDERS) -> float:
    """B(p) <= min_a (e^{D_a} p)^{(a-1)/a} (Renyi probability preservation)."""
    a = np.asarray(orders)
    with np.errstate(over="ignore"):
        return float(min(1.0, np.exp(np.min((a - 1) / a * (rdp + math.log(p))))))


# ---------------------------------------------------------------------------------------------
# Composition over a dataset's charges
# ---------------------------------------------------------------------------------------------

@dataclass
class _Flat:
    """Exposures of all charges as parallel arrays (charge index, unit code, occurrences, variant, records)."""

    charge: np.ndarray
    unit: np.ndarray
    occ: np.ndarray
    variant: np.ndarray
    records: np.ndarray
    units: list = field(default_factory=list)


def _flatten(exposures: list) -> _Flat:
    """``exposures``: per charge None (every unit) or (units, occurrences, variants, records) arrays."""
    parts = [(i, e) for i, e in enumerate(exposures) if e is not None]
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return _Flat(z, z, z, z, z, [])
    units = np.concatenate([np.asarray(e[0], dtype=object) for _, e in parts])
    codes, uniques = pd.factorize(units)
    return _Flat(np.concatenate([np.full(len(e[0]), i) for i, e in parts]), codes,
                 np.concatenate([np.asarray(e[1], dtype=np.int64) for _, e in parts]),
                 np.concatenate([np.asarray(e[2], dtype=np.int64) for _, e in parts]),
                 np.concatenate([np.asarray(e[3], dtype=np.int64) for _, e in parts]), list(uniques))


def exposure_arrays(exposures: dict | list | None):
    """A charge's exposures (dict unit -> Exposure|int, or the ledger's list of dicts) as arrays."""
    if exposures is None:
        return None
    if isinstance(exposures, dict):
        items = _exposures(exposures)
        return (list(items), [e.occurrences for e in items.values()], [e.variant for e in items.values()],
                [e.records for e in items.values()])
    return ([e["unit"] for e in exposures], [e["occurrences"] for e in exposures],
            [e.get("variant", 0) for e in exposures], [e.get("records", 1) for e in exposures])


def compose(charges: list[dict], exposures: list, budget) -> dict:
    """Composed spend of one dataset per guarantee, each for its worst unit, with counts of units near
    the limit. ``charges``: ledger entries (dicts with guarantee, params, spend, dp_event);
    ``exposures``: per charge, ``exposure_arrays`` output or None. ``budget``: the dataset's limits."""
    flat = _flatten(exposures)
    total: dict = {}
    kinds = [c["guarantee"] for c in charges]
    mldp = _compose_mldp(charges, exposures, flat, kinds, budget)
    if mldp:
        total["mldp"] = mldp
    dp = [i for i, c in enumerate(charges) if c["guarantee"] in ("gdp", "approx_dp")
          and c["params"].get("unit") in ("record", "user")]
    if dp:
        events = [event_from_json(charges[i]["dp_event"]) for i in dp]
        event = events[0] if len(events) == 1 else dpe.ComposedDpEvent(events)
        units = sorted({charges[i]["params"]["unit"] for i in dp})
        total["approx_dp"] = {"epsilon": epsilon_of(event, budget.delta_max), "delta": budget.delta_max,
                              "releases": len(dp), "unit": "/".join(units)}
    sp = _compose_secrets(charges, exposures, flat, budget, dp)
    if sp:
        total["secret_protection"] = sp
    return total


def mldp_per_value(charges: list[dict], exposures: list, flat: "_Flat", field: str = "epsilon"):
    """``spend[field]`` of the mldp charges summed per (entity type, value) (eps * occurrences of each
    exposure). A charge naming its ``entity_type`` adds to that type's key; one without (legacy) to every
    type of its value, or to the value's own key ("", value) when no typed charge names it. Returns
    (keys, sums, wildcard): the wildcard is the sum over mldp charges without exposures (every key spends it)."""
    is_mldp = np.array([c["guarantee"] == "mldp" for c in charges], dtype=bool)
    weight = np.array([float(c["spend"].get(field, 0.0)) if m else 0.0 for c, m in zip(charges, is_mldp)])
    types = np.array([(c["params"].get("entity_type") or "") if m else "" for c, m in zip(charges, is_mldp)], dtype=object)
    rows = np.flatnonzero(is_mldp[flat.charge]) if len(flat.charge) else np.zeros(0, dtype=np.int64)
    frame = pd.DataFrame({"type": types[flat.charge[rows]], "unit": flat.unit[rows],
                          "w": weight[flat.charge[rows]] * flat.occ[rows]})
    typed = frame[frame["type"] != ""].groupby(["type", "unit"])["w"].sum()
    untyped = frame[frame["type"] == ""].groupby("unit")["w"].sum()
    typed_units = typed.index.get_level_values("unit")
    alone = untyped[~untyped.index.isin(typed_units)]
    keys = [(t, flat.units[u]) for t, u in typed.index] + [("", flat.units[u]) for u in alone.index]
    sums = np.concatenate([typed.to_numpy() + untyped.reindex(typed_units).fillna(0.0).to_numpy(), alone.to_numpy()])
    wild = float(sum(weight[i] for i, e in enumerate(exposures) if e is None and is_mldp[i]))
    return keys, sums.astype(np.float64), wild


def _compose_mldp(charges, exposures, flat, kinds, budget) -> dict | None:
    idx = [i for i, k in enumerate(kinds) if k == "mldp"]
    if not idx:
        return None
    keys, per_key, wild = mldp_per_value(charges, exposures, flat, "epsilon")
    _, per_key_pure, wild_pure = mldp_per_value(charges, exposures, flat, "pure_epsilon")
    values = per_key + wild if keys else np.array([wild])
    worst = float(values.max())
    limit = budget.mldp_eps_max
    return {"epsilon": worst, "unit": "value", "values": len(keys),
            "values_near_limit": int((values > NEAR_LIMIT * limit).sum()),
            "pure_epsilon": float((per_key_pure + wild_pure).max() if keys else wild_pure),
            "releases": len(idx)}


def mldp_schedule(charges: list[dict]) -> dict:
    """The data-independent bound on any (type, value)'s metric-LDP spend, from the ledger's public schedule.

    A sanitize night records its surrogate draw (``params["draw"]``: the epoch and mechanism, and
    ``params["draw_eps"]``: the largest eps of any of the mechanism's types) on every entry it writes,
    charged or not, and charges each (type, value) at most once per draw (``surrogates``): so a (type,
    value) has spent at most the sum of ``draw_eps`` over the distinct draws of the ledger, whatever the
    data held. Legacy mldp charges without a draw add their eps times their largest occurrences; charges
    without exposures their eps. Returns {"bound", "draws", "draw_eps" (draw -> eps), "legacy"}. The bound
    depends on which nights ran and under which settings, never on which values occurred."""
    draws: dict[str, float] = {}
    legacy = 0.0
    for c in charges:
        draw = c["params"].get("draw")
        if draw:
            draws[draw] = max(draws.get(draw, 0.0), float(c["params"].get("draw_eps", 0.0)))
        elif c["guarantee"] == "mldp":
            occ = max((int(e["occurrences"]) for e in c.get("exposures") or []), default=1)
            legacy += float(c["spend"].get("epsilon", 0.0)) * occ
    return {"bound": sum(draws.values()) + legacy, "draws": len(draws), "draw_eps": draws, "legacy": legacy}


class _SecretAccountant:
    """Per-secret composition: Renyi screen for every secret, exact PLD for the few that need it."""

    def __init__(self, charges, budget, dp_record):
        self.charges, self.budget, self.dp_record = charges, budget, dp_record
        self._rdp: dict = {}
        self._pld: dict = {}

    def rdp(self, comp) -> np.ndarray:
        if comp not in self._rdp:
            self._rdp[comp] = self._make(comp, rdp=True)
        return self._rdp[comp]

    def pld(self, comp):
        if comp not in self._pld:
            self._pld[comp] = self._make(comp, rdp=False)
        return self._pld[comp]

    def _make(self, comp, rdp: bool):
        kind = comp[0]
        if kind == "mix":  # ("mix", sigma, rounds, releases per round, pmf): T rounds of the mixture pair
            _, sigma, rounds, m, pmf = comp
            if sigma <= 0:  # no noise (r >= 1): no protection
                return np.full(len(ORDERS), np.inf) if rdp else None
            if rdp:
                return rounds * mixture_rdp(pmf, sigma, m)
            one = mixture_pld(pmf, sigma, m, DISCRETIZATION)
            return one.self_compose(rounds) if rounds > 1 else one
        if kind == "pure":  # ("pure", total eps)
            return pure_rdp(comp[1]) if rdp else pure_pld(comp[1])
        if kind == "event":  # ("event", event JSON, group): a DpEvent, scaled to a group
            event = scale_event(event_from_json(comp[1]), comp[2])
            return event_rdp(event) if rdp else event_pld(event)
        if kind == "unprotected":  # read without noise (privacy.reads.UNPROTECTED): no guarantee
            return np.full(len(ORDERS), np.inf) if rdp else None
        raise AssertionError(kind)

    def components(self, mix, pure_eps, group) -> list:
        """``mix``: the secret's own pairs; plus its pure-LDP total and every record/user event without
        per-secret counts (legacy rows, ``dp_record``) scaled to ``group``."""
        comps = list(mix)
        if pure_eps > 0:
            comps.append(("pure", round(float(pure_eps), 12)))
        comps += [("event", self.charges[i]["dp_event"], int(group)) for i in self.dp_record]
        return comps

    def exact(self, comps, p) -> float:
        composed = None
        for comp, times in _counted(comps):
            one = self.pld(comp)
            if one is None:
                return 1.0
            one = one.self_compose(times) if times > 1 else one
            composed = one if composed is None else composed.compose(one)
        return blowup(composed, p) if composed is not None else p


def _counted(comps):
    out: dict = {}
    for comp in comps:
        out[comp] = out.get(comp, 0) + 1
    return sorted(out.items(), key=lambda kv: repr(kv[0]))


def _compose_secrets(charges, exposures, flat, budget, dp_record) -> dict | None:
    secret = [i for i, c in enumerate(charges) if c["guarantee"] == "secret_protection"]
    if not secret:
        return None
    limit = budget.r_over_p_max
    n = len(charges)
    # record/user events with their per-secret counts (scaled per secret by its own count) and without (legacy)
    is_dpx = np.zeros(n, dtype=bool)
    is_dpx[[i for i in dp_record if exposures[i] is not None]] = True
    acc = _SecretAccountant(charges, budget, [i for i in dp_record if exposures[i] is None])
    is_secret = np.zeros(n, dtype=bool)
    is_secret[secret] = True
    pure_eps = np.array([float(c["spend"].get("pure_epsilon", 0.0)) if c["guarantee"] == "mldp" else 0.0
                         for c in charges])
    p_of = np.array([float(c["spend"]["p"]) if is_secret[i] else np.inf for i, c in enumerate(charges)])
    wild = np.array([exposures[i] is None for i in range(n)], dtype=bool)
    # the units a secret charge touched (codes into flat.units), plus one pseudo-unit exposed to wildcards only
    touched = np.unique(flat.unit[is_secret[flat.charge]])
    with_wild_only = bool((is_secret & wild).any())
    if touched.size == 0 and not with_wild_only:
        return None
    slot = np.full(len(flat.units), -1, dtype=np.int64)
    slot[touched] = np.arange(touched.size)
    m = touched.size + int(with_wild_only)
    rows = np.flatnonzero(slot[flat.unit] >= 0) if len(flat.units) else np.zeros(0, dtype=np.int64)
    r_slot, r_charge, r_occ = slot[flat.unit[rows]], flat.charge[rows], flat.occ[rows]
    r_var, r_rec = flat.variant[rows], flat.records[rows]

    def comp_of(i, variant, records=1):  # keyed by the pair's content, so equal releases self-compose
        pair = charges[i]["params"]["pair"]
        if variant < 0:  # a secret the release read as public (privacy.reads.UNPROTECTED)
            return ("unprotected",)
        if pair["kind"] == "secret_mixture":
            return ("mix", float(pair["sigma"]), int(pair["rounds"]), int(pair["releases_per_round"]),
                    tuple(pair["count_pmfs"][int(variant)]))
        if pair.get("record_event"):  # the per-record event at the secret's own group size
            return ("event", pair["record_event"], int(records))
        return ("event", charges[i]["dp_event"], 1)

    # per-unit Renyi DP, p, pure eps and group size, vectorised over exposure rows
    rdp = np.zeros((m, len(ORDERS)))
    sec_rows = is_secret[r_charge]
    keys = np.stack([r_charge[sec_rows], r_var[sec_rows], r_rec[sec_rows]], axis=1)
    if len(keys):
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        comp_rdp = np.array([acc.rdp(comp_of(i, v, g)) for i, v, g in uniq])
        times = sparse.csr_matrix((r_occ[sec_rows].astype(np.float64), (r_slot[sec_rows], inverse.ravel())),
                                  shape=(m, len(uniq)))
        with np.errstate(invalid="ignore"):  # inf (no noise) times 0 exposures
            rdp += np.nan_to_num(times @ comp_rdp, nan=np.inf)
    p_unit = np.full(m, np.inf)
    np.minimum.at(p_unit, r_slot, p_of[r_charge])
    pure_unit = np.bincount(r_slot, weights=pure_eps[r_charge] * r_occ, minlength=m).astype(np.float64)  # no rows: int
    group = np.ones(m, dtype=np.int64)
    np.maximum.at(group, r_slot, flat.records[rows])
    wild_comps = []
    for i in np.flatnonzero(wild):
        if is_secret[i]:
            wild_comps.append(comp_of(i, 0))
            rdp += acc.rdp(comp_of(i, 0))
            p_unit = np.minimum(p_unit, p_of[i])
        pure_unit += pure_eps[i]
    if acc.dp_record:
        for g in np.unique(group):
            rdp[group == g] += sum(acc.rdp(("event", charges[i]["dp_event"], int(g))) for i in acc.dp_record)
    dpx_rows = is_dpx[r_charge]
    if dpx_rows.any():  # each record/user event scaled to the secret's record count in the data it read
        pairs = np.stack([r_charge[dpx_rows], r_rec[dpx_rows]], axis=1)
        uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
        comp_rdp = np.array([acc.rdp(("event", charges[i]["dp_event"], int(g))) for i, g in uniq])
        times = sparse.csr_matrix((r_occ[dpx_rows].astype(np.float64), (r_slot[dpx_rows], inverse.ravel())),
                                  shape=(m, len(uniq)))
        rdp += times @ comp_rdp
    for value in np.unique(pure_unit[pure_unit > 0]):
        rdp[pure_unit == value] += pure_rdp(value)
    a = np.asarray(ORDERS)
    with np.errstate(over="ignore", invalid="ignore"):
        bound = np.minimum(1.0, np.exp(np.min((a - 1) / a * (rdp + np.log(p_unit)[:, None]), axis=1)))
    ratio = bound / p_unit

    # exact PLD composition for the units the screen cannot certify and the few worst
    order = np.argsort(-ratio, kind="stable")
    exact_units = set(order[:EXACT_WORST].tolist()) | set(np.flatnonzero(bound > limit * p_unit).tolist())
    exact_units = {u for u in exact_units if rdp[u].min() < HOPELESS}  # else the screen's bound stands (fail closed)
    rows_of: dict[int, list[int]] = {}
    for k in np.flatnonzero(np.isin(r_slot, list(exact_units))):
        rows_of.setdefault(int(r_slot[k]), []).append(int(k))
    cache: dict = {}
    for u in exact_units:
        mix = list(wild_comps)
        for k in rows_of.get(u, []):
            if sec_rows[k]:
                mix += [comp_of(r_charge[k], r_var[k], r_rec[k])] * int(r_occ[k])
            elif dpx_rows[k]:
                mix += [("event", charges[r_charge[k]]["dp_event"], int(r_rec[k]))] * int(r_occ[k])
        comps = tuple(acc.components(mix, pure_unit[u], group[u]))
        if comps not in cache:
            cache[comps] = acc.exact(list(comps), p_unit[u])
        ratio[u] = min(bound[u], cache[comps]) / p_unit[u]
    worst = int(np.argmax(ratio))
    return {"p": float(p_unit[worst]), "r": float(ratio[worst] * p_unit[worst]), "r_over_p": float(ratio[worst]),
            "unit": "secret", "secrets": int(touched.size) or 1,
            "secrets_near_limit": int((ratio > NEAR_LIMIT * limit).sum()),
            "secrets_over_limit": int((ratio > limit * (1 + 1e-12)).sum()), "releases": len(secret),
            "exactly_composed": len(exact_units),
            "method": "per-secret PLD (Renyi-screened), pessimistic upper bound",
            "prior": "p over the values of the secret's entity type and surface format (both published)"}


def check(total: dict, budget, dataset: str) -> None:
    """Refuse (BudgetExceeded) when any composed spend exceeds its limit."""
    problems = []
    sp = total.get("secret_protection")
    if sp and sp["r_over_p"] > budget.r_over_p_max * (1 + 1e-12):
        problems.append(f"secret protection r/p = {sp['r_over_p']:.4g} > r_over_p_max = {budget.r_over_p_max:g}"
                        f" (worst of {sp['secrets']:,} secrets; {sp['secrets_over_limit']:,} over the limit; each composed "
                        f"over its {sp['releases']} (p, r) release(s), sanitized occurrences and record/user events)")
    adp = total.get("approx_dp")
    if adp and not adp["epsilon"] <= budget.eps_max:
        problems.append(f"epsilon({adp['delta']:g}) = {adp['epsilon']:.4g} > eps_max = {budget.eps_max:g}")
    mldp = total.get("mldp")
    if mldp and mldp["epsilon"] > budget.mldp_eps_max * (1 + 1e-12):
        problems.append(f"metric-LDP epsilon of one value = {mldp['epsilon']:.4g} > mldp_eps_max = "
                        f"{budget.mldp_eps_max:g}")
    if problems:
        raise BudgetExceeded(f"privacy budget of dataset {dataset!r} would be exceeded: " + "; ".join(problems), total)


def describe(total: dict, budget) -> list[str]:
    """The composed spend in plain words, one sentence per guarantee."""
    out = []
    sp = total.get("secret_protection")
    if sp:
        out.append(f"Secrets: the most exposed of {sp['secrets']:,} secrets can be guessed by an attacker who "
                   f"starts with at most a {sp['p']:.2g} chance among the values of its entity type and surface format "
                   f"(both are published) with probability at most {sp['r']:.3g} "
                   f"({sp['r_over_p']:.3g} times the prior; limit {budget.r_over_p_max:g} times); "
                   f"{sp['secrets_near_limit']} secret(s) are above {NEAR_LIMIT:.0%} of the limit.")
    adp = total.get("approx_dp")
    if adp:
        out.append(f"Each {adp['unit']}: ({adp['epsilon']:.3g}, {adp['delta']:.2g})-DP over {adp['releases']} "
                   f"release(s) (limit eps {budget.eps_max:g}).")
    mldp = total.get("mldp")
    if mldp:
        out.append(f"Replaced values: the most drawn of {mldp['values']:,} (type, value) pairs has metric-LDP eps "
                   f"{mldp['epsilon']:.3g} summed over its draws (limit {budget.mldp_eps_max:g}); "
                   f"{mldp['values_near_limit']} value(s) are above {NEAR_LIMIT:.0%} of the limit.")
    return out


def usage(total: dict, budget) -> list[dict]:
    """The composed spend as one row per protected unit: its worst unit's spend against the limit."""
    rows = []
    sp = total.get("secret_protection")
    if sp:
        rows.append({"guarantee": "secret_protection", "unit": "secret", "measure": "r / p (posterior / prior)",
                     "spent": sp["r_over_p"], "limit": budget.r_over_p_max, "units": sp["secrets"],
                     "near_limit": sp["secrets_near_limit"], "releases": sp["releases"]})
    adp = total.get("approx_dp")
    if adp:
        rows.append({"guarantee": "approx_dp", "unit": adp["unit"], "measure": f"epsilon at delta {adp['delta']:.0e}",
                     "spent": adp["epsilon"], "limit": budget.eps_max, "units": None, "near_limit": None,
                     "releases": adp["releases"]})
    mldp = total.get("mldp")
    if mldp:
        rows.append({"guarantee": "mldp", "unit": "value", "measure": "metric-LDP epsilon, summed over occurrences",
                     "spent": mldp["epsilon"], "limit": budget.mldp_eps_max, "units": mldp["values"],
                     "near_limit": mldp["values_near_limit"], "releases": mldp["releases"]})
    return rows
