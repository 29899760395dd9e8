"""The report's word-vector card says what a DPED charge bought: noise per vector vs the largest signal."""
from privtext.dped.aggregation import best_case_snr, calibrate
from privtext.dped.settings import DpedSettings
from privtext.report import _word_vector_usefulness


def test_card_states_noise_over_signal_recorded_with_the_charge():
    s = DpedSettings(epsilon=8.0, n_teachers=100, dim=25, vocabulary_mode="public", variant="hidden_only")
    snr = best_case_snr(s, calibrate(s, 418), 418)
    (line,) = _word_vector_usefulness({"params": {"best_case_snr": snr}, "spend": {"epsilon": 8.0}})
    # sigma_h sqrt(d) / C_h from the calibrated noise, written as "x times the largest possible signal"
    ratio = 1 / snr["hidden"]
    assert 1.0 < ratio < 1.5 and f"{ratio:.3g} times the largest possible signal" in line
    assert line.startswith("Not useful at this budget")
    # above the measured range the card claims no measurement
    (above,) = _word_vector_usefulness({"params": {"best_case_snr": snr}, "spend": {"epsilon": 32.0}})
    assert above.startswith("Usefulness not measured above") and f"{ratio:.3g} times" in above
    # a charge recorded before best_case_snr existed (or an output-only run) claims nothing
    assert _word_vector_usefulness({"params": {}, "spend": {"epsilon": 8.0}}) == []
    assert _word_vector_usefulness({"params": {"best_case_snr": {"vote": 2.0}}, "spend": {"epsilon": 8.0}}) == []
