"""mPL / PBmPL leakage audit with learned adversaries and the AmPL perturb-audit-adapt loop
(mpl-ampl-paper.txt). Entry points: ``audit.audit``, ``tune.tune``, ``perturb.perturb``,
``remap.bayes_remap``; data in ``sequences``; configuration in ``settings.AmplSettings``."""
