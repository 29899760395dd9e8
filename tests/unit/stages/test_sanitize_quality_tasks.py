"""The metrics job's layout: spread over every slot with the perplexity (the LM's ~0.2 s a document), one task with
the similarity alone (one sentence-encoder load in one Python worker, not one per slot)."""
from privtext.clusant.settings import SanitizeMetricsSettings
from privtext.stages.sanitize import quality_spread


def test_the_similarity_alone_runs_in_one_task_and_the_perplexity_spreads():
    assert quality_spread(SanitizeMetricsSettings())  # the default measures the perplexity
    assert quality_spread(SanitizeMetricsSettings(similarity=False))
    assert not quality_spread(SanitizeMetricsSettings(perplexity=False))
