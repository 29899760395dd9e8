"""``privtext tune sanitize``: the AmPL loop over CluSanT's tier eps on a sample, written as a conf file.

Reads the date's documents and detected spans (restricted zone; a bounded sample of ``ampl.max_documents``
collected to the driver, in memory only), simulates CluSanT releases at candidate tier eps
(``ampl.sanitizer_tune``), audits each with the learned adversary and picks the eps minimising
lambda_1 * violation ratio + lambda_2 * expected utility loss (``ampl.tune``), audited like the audit stage
(its candidates, companions and (type, format) groups, CluSanT's D_k as the distance). The result is an
environment file: the ``--conf`` file's content with ``clusant.eps`` replaced, so
``privtext --conf conf/tuned/clusant.yaml run sanitize ...`` uses it. Printed: the trade-off of every
evaluated (eps_PII, eps_PoII), aggregates only; the same points go to ``protected.eps_frontier`` (source
``tune``), which the privacy report plots.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import yaml

from privtext.platform.utility_reports import write_frontier
from privtext.settings import PROJECT_ROOT, Settings


def tune_sanitize(settings: Settings, date: str, out: Path, env_file: str | None = None,
                  adversary: str = "transformer") -> dict:
    """Run the loop and write ``out``; returns {"eps": {...}, "history": [...]} (aggregates only)."""
    from privtext.ampl.sanitizer_tune import clusant_losses, clusant_release, mechanisms_at
    from privtext.ampl.tune import tune_release
    from privtext.clusant.surface_format import render, surface_format
    from privtext.platform.context import RunContext
    from privtext.privacy.mechanisms import make_rng
    from privtext.stages.audit import Unauditable, candidate_batch, encoder, sample_tokens

    ctx = RunContext.create(settings, date=date)
    ampl, clusant = settings.ampl, settings.clusant
    rng = make_rng(settings.run.deterministic, settings.run.seed)
    start = ctx.date - dt.timedelta(days=ampl.window_days - 1)
    docs, _ = sample_tokens(ctx, None, start, ampl.max_documents, ampl.max_tokens, int(rng.integers(0, 2**31 - 1)))
    if len(docs) < ampl.min_documents:
        raise Unauditable(f"tune sanitize: {len(docs)} documents with sensitive tokens on {ctx.date} "
                         f"(ampl.min_documents = {ampl.min_documents})")
    # the audit stage's candidates, groups and D_k, with the stage's sanitizer (vocabularies, phrase encoder)
    batch, distance, sanitizer, phrase_encode = candidate_batch(ctx, docs, f"tune sanitize for {ctx.date}")
    encode = encoder(ctx)
    values = np.asarray(phrase_encode(list(batch.candidate_values)), dtype=np.float64)
    tier_of = {t: settings.pii.tiers.get(t, "PII") for t in clusant.entity_types}
    base = {t: ts.mechanism for t, ts in sanitizer.per_type.items()}
    eps_base = clusant.eps["PoII"]
    audit_eps = ampl.audit_eps or clusant.eps["PII"]
    seen: dict[str, np.ndarray] = {}  # phrase as written -> the audit encoder's vector (one Spark job per release)

    def released_vectors(draws):
        written = {t: [render(t, sanitizer.per_type[t].phrases[d],
                              surface_format(t, batch.candidate_values[c], clusant.date_keep))
                       for d, c in zip(drawn, rows)] for t, (drawn, rows) in draws.items()}
        new = sorted({p for ps in written.values() for p in ps} - seen.keys())
        if new:
            seen.update(zip(new, encode(new)))
        return {t: np.stack([seen[p] for p in ps]) for t, ps in written.items()}

    def mechanisms(alphas):
        return mechanisms_at(base, tier_of, clusant.method, eps_base, alphas)

    def release(alphas, gen):
        return clusant_release(batch, mechanisms(alphas), values, released_vectors, gen)

    result = tune_release(batch.secrets, release,
                          lambda a: clusant_losses(batch, mechanisms(a), values), batch.candidates, eps=audit_eps,
                          adversary=adversary, settings=ampl, rng=rng,
                          groups=np.asarray(batch.candidate_groups, dtype=object), distance=distance)
    eps = {"PII": round(result.alphas[0] * eps_base, 6), "PoII": round(result.alphas[1] * eps_base, 6)}
    history = [{"eps_pii": s.alphas[0] * eps_base, "eps_poii": s.alphas[1] * eps_base,
                "violation_ratio": s.violation_ratio, "utility_loss": s.utility_loss,
                "utility_loss_remapped": s.utility_loss_remapped, "objective": s.objective} for s in result.history]
    header = (f"# written by `privtext tune sanitize --date {ctx.date}` (AmPL over CluSanT tier eps, adversary "
              f"{adversary}, audited eps {audit_eps:g}, {batch.release.n} documents)\n"
              f"# objective {result.best.objective:.4f} = {ampl.lambda_1:g} * violation "
              f"{result.best.violation_ratio:.4f} + {ampl.lambda_2:g} * utility loss {result.best.utility_loss:.4f}\n")
    write_conf(out, env_file, eps, header)
    write_frontier(ctx, "sanitized_documents", "tune", [
        {"eps_pii": h["eps_pii"], "eps_poii": h["eps_poii"], "violation_ratio": h["violation_ratio"],
         "utility_loss": h["utility_loss"], "chosen": step.alphas == result.alphas}
        for h, step in zip(history, result.history)])
    return {"eps": eps, "history": history, "documents": batch.release.n}


def write_conf(out: Path, env_file: str | None, eps: dict[str, float], header: str) -> None:
    """``out``: the ``env_file``'s content (none: empty) with ``clusant.eps`` replaced, under ``header``."""
    data = {}
    if env_file is not None:
        path = Path(env_file)
        data = yaml.safe_load((path if path.is_absolute() else PROJECT_ROOT / path).read_text()) or {}
    data.setdefault("clusant", {})["eps"] = eps
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(header + yaml.safe_dump(data, sort_keys=False))


def cmd_tune_sanitize(args) -> int:
    from privtext.settings import load_settings

    report = tune_sanitize(load_settings(args.conf), args.date, Path(args.out), env_file=args.conf,
                           adversary=args.adversary)
    for step in report["history"]:
        print("  ".join(f"{k}: {v:.4g}" for k, v in step.items()))
    print(f"recommended clusant.eps: PII {report['eps']['PII']:g}, PoII {report['eps']['PoII']:g} -> {args.out}")
    return 0


def register(sub) -> None:
    tune = sub.add_parser("tune", help="tune a mechanism with the AmPL loop")
    tune_sub = tune.add_subparsers(dest="tune_command", required=True)
    sanitize = tune_sub.add_parser("sanitize", help="AmPL over CluSanT's tier eps; writes a conf file")
    sanitize.add_argument("--date", required=True, help="YYYY-MM-DD whose documents and spans are sampled")
    sanitize.add_argument("--adversary", default="transformer", choices=("transformer", "lstm", "rnn"))
    sanitize.add_argument("--out", default=str(PROJECT_ROOT / "conf" / "tuned" / "clusant.yaml"))
    sanitize.set_defaults(func=cmd_tune_sanitize)
