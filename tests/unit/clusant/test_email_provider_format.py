"""An e-mail address at a consumer mailbox provider keeps the provider; every other address is the draw whole
(``surface_format.MAIL_PROVIDERS``, issue 44: character similarity of the export). Exact distributions over a
small vocabulary, as ``test_clusant_surface_format`` does for dates. Addresses are made up."""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from hypothesis import given, settings as hsettings, strategies as st

from privtext.clusant.clustering import cluster_vocabulary
from privtext.clusant.mechanism import build_mechanism
from privtext.clusant.settings import VocabularySettings
from privtext.clusant.surface_format import MAIL_PROVIDERS, format_kept, render, surface_format
from privtext.clusant.vocabulary import build_vocabulary


def test_a_provider_address_keeps_its_provider_and_nothing_else_of_the_value():
    fmt = surface_format("EMAIL_ADDRESS", "Jane.Doe77@GMail.com")
    assert fmt == surface_format("EMAIL_ADDRESS", "x@gmail.com") == "email:gmail.com"
    assert render("EMAIL_ADDRESS", "lopezmaria@example.net", fmt) == "lopezmaria@gmail.com"
    assert format_kept("EMAIL_ADDRESS", "jane@gmail.com", "lopezmaria@gmail.com")
    assert not format_kept("EMAIL_ADDRESS", "jane@gmail.com", "lopezmaria@example.net")
    # a company's or a university's domain identifies: no class, the draw is used whole
    for value in ["jane@acme-widgets.com", "jd@cs.cmu.edu", "gmail.com", "jane@gmail.com.evil.org"]:
        assert surface_format("EMAIL_ADDRESS", value) is None, value
        assert render("EMAIL_ADDRESS", "lopezmaria@example.net", None) == "lopezmaria@example.net"
    assert all(d == d.casefold() and "." in d and "@" not in d for d in MAIL_PROVIDERS)


def _distribution(mech, embedding, phrases, fmt, leak=""):
    out: dict[str, float] = defaultdict(float)
    for phrase, p in zip(phrases, mech.probabilities(embedding)):
        out[render("EMAIL_ADDRESS", phrase, fmt) + leak] += p
    return out


def test_the_bound_holds_within_a_provider_and_providers_are_disjoint():
    """Exact: same provider -> the mechanism's bound on every rendered output; another provider or a company
    address -> disjoint supports (the provider is what is published); a render that also leaked the value's
    first letter breaks the bound (negative control)."""
    phrases = build_vocabulary("EMAIL_ADDRESS", VocabularySettings(size=80))
    rng = np.random.default_rng(5)
    emb = rng.normal(size=(len(phrases) + 3, 12))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    vocab, inputs = emb[:len(phrases)], emb[len(phrases):]
    mech = build_mechanism("clusant", vocab, cluster_vocabulary(vocab, "kmeans", 5, np.random.default_rng(0)),
                           2.0, 8.0)
    x, x_same, x_other = "ann.lee@yahoo.com", "bo99@yahoo.com", "ann.lee@aol.com"
    fmt = surface_format("EMAIL_ADDRESS", x)
    p = _distribution(mech, inputs[0], phrases, fmt)
    q = _distribution(mech, inputs[1], phrases, surface_format("EMAIL_ADDRESS", x_same))
    assert set(p) == set(q) and math.isclose(sum(p.values()), 1.0) and all(o.endswith("@yahoo.com") for o in p)
    bound = float(mech.log_ratio_bound(inputs[0], inputs[1])[0])
    worst = max(abs(math.log(p[o]) - math.log(q[o])) for o in p)
    assert worst <= bound + 1e-9 and worst > 0.1 * bound
    other = _distribution(mech, inputs[2], phrases, surface_format("EMAIL_ADDRESS", x_other))
    company = _distribution(mech, inputs[2], phrases, surface_format("EMAIL_ADDRESS", "ann@acme.com"))
    assert not set(other) & set(p) and not set(company) & set(p)
    assert not set(_distribution(mech, inputs[0], phrases, fmt, x[0])) & set(
        _distribution(mech, inputs[1], phrases, fmt, x_same[0]))


@hsettings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=30), st.sampled_from(sorted(MAIL_PROVIDERS) + ["example.org", "ｇｍａｉｌ.ｃｏｍ"]),
       st.text(max_size=30))
def test_the_rendered_address_holds_only_the_draw_and_the_public_provider(local, domain, candidate):
    value = f"{local}@{domain}"
    fmt = surface_format("EMAIL_ADDRESS", value)
    out = render("EMAIL_ADDRESS", candidate, fmt)
    if fmt is None:
        assert out == candidate
    else:
        provider = fmt[len("email:"):]
        assert provider in MAIL_PROVIDERS and out.endswith("@" + provider)
        assert out == render("EMAIL_ADDRESS", candidate, surface_format("EMAIL_ADDRESS", f"other@{domain}"))
