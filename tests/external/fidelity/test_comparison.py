"""The comparison itself (no cluster): what is normalised away, what is a difference."""

from __future__ import annotations

from tests.external.fidelity.normalise import Symbols, differences, normalise
from tests.external.fidelity.runner import Case, Exchange, compare


def test_allocated_ids_compare_by_appearance_and_the_rest_verbatim() -> None:
    real = normalise({"producer_id": 4000, "node_id": 1, "port": 9092, "offset": 3,
                      "topics": [{"producer_id": 4000}, {"producer_id": 4001}]}, Symbols())
    ours = normalise({"producer_id": 7, "node_id": 0, "port": 1, "offset": 3,
                      "topics": [{"producer_id": 7}, {"producer_id": 8}]}, Symbols())
    assert differences(real, ours) == []
    swapped = normalise({"producer_id": 7, "node_id": 0, "port": 1, "offset": 3,
                         "topics": [{"producer_id": 8}, {"producer_id": 7}]}, Symbols())
    assert differences(real, swapped)  # a different producer in the same place is a difference
    assert differences({"offset": 3}, {"offset": 4}) == [".offset: real=3 embedded=4"]


def test_a_case_that_stopped_on_both_sides_is_not_the_same() -> None:
    case = Case("c", ("Metadata",), lambda s: None)
    stopped = [Exchange("raised", "-", -1, "CaseFailed: timed out")]
    assert compare([case], {"c": stopped}, {"c": stopped})[0].diffs
    fine = [Exchange("Metadata", "Metadata", 12, {"error_code": 0})]
    assert compare([case], {"c": fine}, {"c": fine})[0].same
