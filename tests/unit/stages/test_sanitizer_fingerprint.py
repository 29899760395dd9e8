"""The draw id's mechanism fingerprint: a setting that can change a surrogate makes a new draw (charged anew);
the quality metrics and the encoder's batch size do not (a night that only changes them reuses the draw)."""
from conftest import make_settings
from privtext.sanitize_tasks import sanitizer_key


def _with(settings, section, **changes):
    part = getattr(settings, section).model_copy(update=changes)
    return settings.model_copy(update={section: part})


def test_operational_settings_keep_the_draw_and_mechanism_settings_change_it(tmp_path):
    base = make_settings(tmp_path / "lake")
    key = sanitizer_key(base)
    metrics = base.clusant.metrics.model_copy(update={"perplexity_tokens": 64, "max_documents": 3})
    assert sanitizer_key(_with(base, "clusant", metrics=metrics)) == key
    assert sanitizer_key(_with(base, "embed", batch_size=7, cache_dir="elsewhere")) == key
    assert sanitizer_key(_with(base, "clusant", eps={t: 2 * e for t, e in base.clusant.eps.items()})) != key
    assert sanitizer_key(_with(base, "clusant", n_clusters=base.clusant.n_clusters + 1)) != key
    assert sanitizer_key(_with(base, "embed", model="another-encoder")) != key
