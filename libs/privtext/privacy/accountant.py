"""The ledger's accountant, with dp_accounting's ``PrivacyAccountant`` interface: ``supports`` a ledger row,
``compose`` it with what it exposed, ``get_epsilon`` of the record/user-level events, and ``spend`` per
protected unit; a row it does not support is refused with one error type (``UnsupportedCharge``), never
skipped or read as another (docs/privacy-model.md, "Row compatibility"). The composition itself:
``privacy.composition``."""
from __future__ import annotations

from privtext.privacy.accounting import event_from_json
from privtext.privacy.charges import GUARANTEES
from privtext.privacy.composition import compose as compose_spend, compose_record_events, record_event_indices
from privtext.privacy.pairs import UnknownPair, UnsupportedCharge
from privtext.privacy.spend import ComposedSpend

PAIR_KINDS = ("secret_mixture", "dp_event", "pure", "none")  # params["pair"]["kind"] of the rows composed here
SECRET_PAIR_KINDS = ("secret_mixture", "dp_event")  # the pairs a secret's accountant composes (``pairs.pair_of``)

__all__ = ["LedgerAccountant", "UnsupportedCharge"]


def refusal(entry: dict) -> UnsupportedCharge | None:
    """Why the accountant cannot compose ``entry`` (a ledger row), as the error it raises, or None when it can."""
    guarantee, params = entry.get("guarantee"), entry.get("params") or {}
    where = f"{entry.get('stage')}/{entry.get('mechanism')} charge"
    if guarantee not in GUARANTEES:
        return UnsupportedCharge(f"{where}: guarantee {guarantee!r} is not one this accountant composes "
                                 f"({', '.join(GUARANTEES)}); refused (a newer ledger row?)")
    kind = (params.get("pair") or {}).get("kind")
    if kind is not None and kind not in PAIR_KINDS:
        return UnknownPair(f"{where}: pair kind {kind!r} is not one this accountant composes "
                           f"({', '.join(PAIR_KINDS)}); refused (a newer ledger row?)")
    if guarantee == "secret_protection" and kind not in SECRET_PAIR_KINDS:
        return UnknownPair(f"{where}: a secret charge needs a pair of kind {' or '.join(SECRET_PAIR_KINDS)}, "
                           f"got {kind!r}; refused")
    if guarantee in ("gdp", "approx_dp") and params.get("unit") in ("record", "user"):
        try:
            event_from_json(entry.get("dp_event") or "")
        except (ValueError, TypeError, KeyError) as error:
            return UnsupportedCharge(f"{where}: its dp_event cannot be read ({error}); refused")
    return None


class LedgerAccountant:
    """Composes ledger rows per protected unit under ``budget`` (the limits in force: its ``delta_max`` is the
    delta of the record/user-level epsilon; the others count units near a limit). Rows are composed in the
    order given; ``compose`` returns the accountant, as dp_accounting's does."""

    def __init__(self, budget):
        self.budget = budget
        self.charges: list[dict] = []
        self.exposures: list = []

    def supports(self, entry: dict) -> bool:
        """Whether ``entry`` (a ledger row: guarantee, params, spend, dp_event) can be composed here."""
        return refusal(entry) is None

    def compose(self, entry: dict, exposures=None) -> LedgerAccountant:
        """Add one row and the units it exposed (``composition.exposure_arrays`` output; None: every unit of its
        kind). Refuses a row it does not support (``UnsupportedCharge``; ``UnknownPair`` for a pair kind)."""
        error = refusal(entry)
        if error is not None:
            raise error
        self.charges.append(entry)
        self.exposures.append(exposures)
        return self

    def get_epsilon(self, target_delta: float) -> float:
        """The epsilon at ``target_delta`` of every record/user-level event composed (PLD, an upper bound): each
        record or user is (epsilon, target_delta)-DP over them; 0.0 when there is none."""
        spend = compose_record_events(self.charges, record_event_indices(self.charges), target_delta)
        return 0.0 if spend is None else spend.epsilon

    def spend(self) -> ComposedSpend:
        """The composed spend per guarantee, each for its worst unit (``composition.compose``)."""
        return compose_spend(self.charges, self.exposures, self.budget)
