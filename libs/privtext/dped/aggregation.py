"""DPED noisy multi-layer aggregation (Alg. 1 lines 13-28, Eq. 1-2, Sec. 3.4) and its accounting.

Guarantee: (epsilon, delta)-DP for add/remove of one privacy unit (a user when shards are keyed by
``user_id``, else a document; see ``sharding``), composed with the PLD accountant over all queries
(and the DP vocabulary selection when it runs). Such a change alters one shard, hence one teacher,
arbitrarily; the per-query sensitivities implemented (tighter-but-correct versions of App. B.2):

* hidden mean H(x) = (1/N) sum_i h_i(x) with ||h_i(x)|| <= C_h: the changed teacher's vector can
  go from h to -h, so Delta_H = 2 C_h / N (the paper's C_h / N is too small by 2).
* votes V(x) = sum_i y_i(x), each teacher voting for a SET of at most k words: the changed teacher
  can drop k bins and raise k others by 1, so Delta_V (L2) = sqrt(2k) (the paper's 1 holds only for a
  single vote under L1 with replace-one-vote; for k = 1 it is sqrt 2).
* consensus check (confident-GNMax, Papernot et al. 2018): max_w V(x)[w] changes by <= 1, so the
  check  max_w V(x)[w] + N(0, sigma_T^2) >= T  is a Gaussian mechanism with sensitivity 1. The
  paper's exact-count threshold (Alg. 1 line 18) is not DP; abstaining here is decided by the noisy
  count only, and releasing the decision is paid for.

Accounting is data-independent: every query is charged for the check AND both releases, whether it
abstains or not (PATE's data-dependent smooth-sensitivity analysis is not implemented). The
queries are M public words fixed before the private data is read (the released vocabulary is a
subset chosen by DP post-processing, so charging M >= its size is an upper bound).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe

from privtext.dped.settings import DpedSettings
from privtext.errors import Refused
from privtext.privacy.accounting import epsilon_of
from privtext.privacy.mechanisms import gaussian_release
from privtext.privacy.secret_protection import gdp_mu_from_eps_delta


@dataclass(frozen=True)
class NoiseMultipliers:
    """z = sigma / L2-sensitivity per mechanism (per query for the query mechanisms); None = not run."""

    threshold: float
    hidden: float | None = None
    vote: float | None = None
    vocabulary: float | None = None


def sensitivities(settings: DpedSettings) -> dict[str, float]:
    """L2 sensitivities per query (module docstring) and of the vocabulary counts (sqrt L0)."""
    return {
        "threshold": 1.0,
        "hidden": 2.0 * settings.clip_hidden / settings.n_teachers,
        "vote": float(np.sqrt(2 * settings.top_k)),
        "vocabulary": float(np.sqrt(settings.vocab_words_per_unit)),
    }


def sigmas(settings: DpedSettings, multipliers: NoiseMultipliers) -> dict[str, float | None]:
    """Noise standard deviations sigma = z * sensitivity."""
    sens = sensitivities(settings)
    return {k: (None if z is None else z * sens[k]) for k, z in vars(multipliers).items()}


def split_noise(z: float, settings: DpedSettings, n_queries: int) -> NoiseMultipliers:
    """Per-mechanism multipliers from one overall z: a mechanism with budget share s gets
    mu^2 = s / z^2 in total, i.e. z * sqrt(M / s) per query (z / sqrt(s) for the one-shot vocabulary).
    All mechanisms together are then exactly (1/z)-GDP."""
    shares = settings.active_shares()
    per_query = {k: z * np.sqrt(n_queries / s) for k, s in shares.items() if k != "vocabulary"}
    vocab = float(z / np.sqrt(shares["vocabulary"])) if "vocabulary" in shares else None
    return NoiseMultipliers(vocabulary=vocab, **{k: float(v) for k, v in per_query.items()})


def dped_event(settings: DpedSettings, noise_multipliers: NoiseMultipliers, n_queries: int) -> dpe.DpEvent:
    """The DpEvent of a DPED run: [vocabulary selection] + M x (check + hidden + votes)."""
    per_query = [
        dpe.GaussianDpEvent(z)
        for z in (noise_multipliers.threshold, noise_multipliers.hidden, noise_multipliers.vote)
        if z is not None
    ]
    events: list[dpe.DpEvent] = [dpe.SelfComposedDpEvent(dpe.ComposedDpEvent(per_query), int(n_queries))]
    if noise_multipliers.vocabulary is not None:
        events.insert(0, dpe.GaussianDpEvent(noise_multipliers.vocabulary))
    return dpe.ComposedDpEvent(events)


def calibrate(settings: DpedSettings, n_queries: int) -> NoiseMultipliers:
    """The smallest noise (one overall z split by ``noise_split``) meeting (epsilon, delta) in conf.

    ``split_noise(z)`` composes Gaussians only, whose composition is exactly the Gaussian mechanism
    GaussianDpEvent(z), i.e. (1/z)-GDP (Dong et al. 2019), so z = 1/mu with mu the exact GDP
    parameter for (epsilon, delta) (closed form; a PLD bracket search over M self-composed
    low-noise Gaussians is too slow), shrunk by 1e-4 relative so that the pessimistic PLD grid
    cannot land above the target; the full ``dped_event`` is then checked with the PLD accountant.
    """
    z = (1 + 1e-4) / gdp_mu_from_eps_delta(settings.epsilon, settings.delta)
    multipliers = split_noise(z, settings, n_queries)
    spent = epsilon_of(dped_event(settings, multipliers, n_queries), settings.delta)
    if spent > settings.epsilon:
        raise RuntimeError(f"calibrated DPED event spends epsilon={spent:.6g} > {settings.epsilon}")
    return multipliers


class NoiseDominated(Refused):
    """The calibrated noise drowns every released channel even in the best case: refused before the charge."""


def best_case_snr(settings: DpedSettings, multipliers: NoiseMultipliers, n_queries: int) -> dict[str, float]:
    """Signal-to-noise per released query in the most favourable data (all N teachers agree), from the
    settings and the calibrated noise only (data-independent, so deciding on it costs no privacy):

    * hidden: C_h / (sigma_h sqrt(d)): the noiseless mean has norm <= C_h, the noise norm is ~ sigma_h sqrt(d);
    * vote: N / (sigma_v sqrt(2 ln M)): the winning bin holds <= N votes, the largest of the M noisy
      bins is ~ sigma_v sqrt(2 ln M) above its mean.

    Below 1 the channel's released value is noise-dominated whatever the private data holds.
    """
    sig = sigmas(settings, multipliers)
    out = {}
    if sig["hidden"] is not None:
        out["hidden"] = float(settings.clip_hidden / (sig["hidden"] * np.sqrt(settings.dim)))
    if sig["vote"] is not None:
        out["vote"] = float(settings.n_teachers / (sig["vote"] * np.sqrt(2 * np.log(max(n_queries, 2)))))
    return out


def require_signal(settings: DpedSettings, multipliers: NoiseMultipliers, n_queries: int) -> dict[str, float]:
    """Fail closed before any charge when every released channel's best-case SNR is below
    ``settings.min_snr`` (0 disables): a charge that can only buy noise is refused."""
    snr = best_case_snr(settings, multipliers, n_queries)
    if settings.min_snr > 0 and max(snr.values()) < settings.min_snr:
        sig = sigmas(settings, multipliers)
        detail = ", ".join(f"{k} {v:.3g} (sigma {sig[k]:.3g})" for k, v in snr.items())
        raise NoiseDominated(
            f"DPED at epsilon={settings.epsilon:g} with N={settings.n_teachers} teachers, M={n_queries} queries, "
            f"d={settings.dim} would release noise: best-case signal/noise per query {detail} < dped.min_snr="
            f"{settings.min_snr:g}; nothing charged (raise N or epsilon, lower M or d)")
    return snr


def vote_histogram(vote_sets: Iterable[np.ndarray], n_queries: int) -> sp.csr_matrix:
    """V(x) of Eq. 1: [M, M] counts, summed over teachers' [M, k] vote sets (-1 = no vote)."""
    rows, cols = [], []
    for votes in vote_sets:
        r, c = np.nonzero(votes >= 0)
        rows.append(r)
        cols.append(votes[r, c])
    r, c = (np.concatenate(rows), np.concatenate(cols)) if rows else (np.zeros(0, int), np.zeros(0, int))
    return sp.csr_matrix((np.ones(r.size, dtype=np.float64), (r, c)), shape=(n_queries, n_queries))


@dataclass(frozen=True)
class Aggregate:
    answered: np.ndarray  # [M] bool: the noisy consensus check passed
    hidden: np.ndarray | None  # [M, d] noisy mean hidden vectors H~(x) (NaN where abstained)
    labels: np.ndarray | None  # [M, k] top-k of the noisy votes V~(x), positions into the queries (-1 where abstained)


def aggregate(
    hidden_sum: np.ndarray | None, votes: sp.csr_matrix, settings: DpedSettings,
    multipliers: NoiseMultipliers, rng: np.random.Generator, chunk: int = 1024, first_query: int = 0,
) -> Aggregate:
    """Alg. 1 lines 13-28 with the noisy check: answer x iff max_w V(x)[w] + N(0, sigma_T^2) >= T,
    then release H~ = (1/N) sum_i h_i(x) + N(0, sigma_h^2 I_d) and the top-k of
    V~ = V(x) + N(0, sigma_v^2 I_M) (a post-processing of V~; the query word itself is excluded).

    ``hidden_sum`` is sum_i h_i(x) over the N teachers of already-clipped vectors
    (``teacher.teacher_answers`` clips); the sensitivities assume ||h_i(x)|| <= C_h. Rows are
    independent: row r of ``votes`` ([rows, M]) is query ``first_query + r``, so a block of queries
    can be released on its own (the Spark stage releases blocks in executor tasks).
    """
    sig, sens = sigmas(settings, multipliers), sensitivities(settings)
    m = votes.shape[0]
    max_votes = votes.max(axis=1).toarray().ravel()
    answered = gaussian_release(rng, max_votes, sig["threshold"], sens["threshold"]) >= settings.threshold
    ans = np.flatnonzero(answered)
    hidden = None
    if multipliers.hidden is not None:
        hidden = np.full((m, hidden_sum.shape[1]), np.nan)
        mean = hidden_sum[ans] / settings.n_teachers
        hidden[ans] = gaussian_release(rng, mean, sig["hidden"], sens["hidden"])
    labels = None
    if multipliers.vote is not None:
        k = min(settings.top_k, votes.shape[1] - 1)
        labels = np.full((m, settings.top_k), -1, dtype=np.int64)
        for s in range(0, ans.size, chunk):
            rows = ans[s:s + chunk]
            noisy = gaussian_release(rng, votes[rows].toarray(), sig["vote"], 1.0)  # a teacher moves >= 1 vote
            noisy[np.arange(rows.size), rows + first_query] = -np.inf
            top = np.argpartition(-noisy, k - 1, axis=1)[:, :k]
            labels[rows, :k] = top
    return Aggregate(answered=answered, hidden=hidden, labels=labels)
