"""Issue 46 (3): the SecPE centres' noise and Aug-PE's sigma are functions of the private secrets' structure, so
``synthesize`` keeps them in the protected zone (``protected.utility_reports``, target ``synthetic_noise``)
and publishes nothing computed from them (its result is what the runner logs to MLflow and prints).

The issue's two inputs: 9 private documents with 9 distinct secrets, and the same 9 forming three groups of 3
sharing a secret. Negative control: the figure the stage used to publish (2 R sigma / n_k) tells them apart;
the published surface (the result's fields) carries nothing that could.
"""
import dataclasses

import numpy as np
import pytest

from privtext.secpe.aug_pe import augpe_secret_sigma
from privtext.secpe.secret_clustering import group_secret_noise
from privtext.secpe.settings import SecpeSettings
from privtext.stages.synthesize import NOISE_SD_WARN, SynthesizeResult, noise_figures

INPUTS = {"distinct": ([[i] for i in range(9)], [1] * 9, 9), "three groups": ([[0], [1], [2]], [3, 3, 3], 3)}


class _Release:  # a round's NoisyCenters as noise_figures reads it (its per-centre noise sd)
    def __init__(self, noise_sd):
        self.noise_sd = np.asarray(noise_sd)


def test_the_noise_depends_on_the_private_structure_and_only_the_protected_figures_hold_it():
    cfg = SecpeSettings()
    n_k, before, protected = 4, {}, {}
    for name, (groups, sizes, n_secrets) in INPUTS.items():
        sigma = group_secret_noise(groups, np.array(sizes), n_secrets, cfg.p, cfg.r, cfg.rounds).sigma
        before[name] = 2 * cfg.clip_radius * sigma / n_k  # what the stage published as centre_noise_sd
        protected[name] = noise_figures(sigma, [(0, _Release([before[name]] * 3))])
        assert protected[name]["centre_noise_sd"] == pytest.approx(before[name])
        assert protected[name]["noise_above_warn"] == float(before[name] > NOISE_SD_WARN)
    assert before["three groups"] > 2 * before["distinct"]  # the control: the old figure tells the inputs apart
    aug = {name: augpe_secret_sigma(cfg.p, cfg.r, cfg.rounds, max(sizes)) for name, (_, sizes, _) in INPUTS.items()}
    assert aug["three groups"] == pytest.approx(3 * aug["distinct"])  # Aug-PE's sigma gives c_max away
    published = {f.name for f in dataclasses.fields(SynthesizeResult)}
    assert not published & {"sigma", "centre_noise_sd", "secret_groups", "noise_above_warn"}
    assert noise_figures(aug["distinct"], []) == {"sigma": aug["distinct"]}  # Aug-PE: sigma only, protected
