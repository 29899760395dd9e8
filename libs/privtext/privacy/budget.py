"""The privacy budget's public interface: typed charges, composition per protected unit, limits that fail closed.

What each guarantee protects, how units compose and why (the specification): docs/privacy-model.md, "The
privacy ledger". The parts: ``charges`` (what a release spends, and the ledger's row format), ``pairs``
(the dominating pairs an accountant composes), ``composition`` and ``secret_composition`` (the composed
spend per unit), ``accountant`` (``LedgerAccountant``: supports / compose / get_epsilon / spend, one error
type), ``spend`` (the ``ComposedSpend`` result) and ``checks`` (limits, words, rows).
"""
from privtext.privacy.accountant import LedgerAccountant, UnsupportedCharge
from privtext.privacy.charges import (
    GUARANTEES,
    UNITS,
    Charge,
    Exposure,
    MalformedExposures,
    as_exposures,
    charge_from_json,
    charge_to_json,
    dp_charge,
    dumps,
    exposure_rows,
    measurement,
    mldp_charge,
    none_charge,
    secret_charge,
    secret_event_charge,
    validate_exposures,
)
from privtext.privacy.checks import BudgetExceeded, check, describe, usage
from privtext.privacy.composition import compose, exposure_arrays, flatten, mldp_per_value, mldp_schedule
from privtext.privacy.pairs import mixture_rdp, pure_rdp
from privtext.privacy.spend import NEAR_LIMIT, ComposedSpend, DpSpend, MldpSpend, SecretSpend, exceeds

__all__ = ["GUARANTEES", "NEAR_LIMIT", "UNITS", "BudgetExceeded", "Charge", "ComposedSpend", "DpSpend", "Exposure",
           "LedgerAccountant", "MalformedExposures", "MldpSpend", "SecretSpend", "UnsupportedCharge", "as_exposures",
           "charge_from_json", "charge_to_json", "check", "compose", "describe", "dp_charge", "dumps", "exceeds",
           "exposure_arrays", "exposure_rows", "flatten", "measurement", "mixture_rdp", "mldp_charge",
           "mldp_per_value", "mldp_schedule", "none_charge", "pure_rdp", "secret_charge", "secret_event_charge",
           "usage", "validate_exposures"]
