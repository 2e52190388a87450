"""Worked examples (docs/predict.md sections 3 and 6): the login subscription's instances and time
lists, the paper's five-hot-days machine, and golden errors with code, line and column."""

from __future__ import annotations

import numpy as np
import pytest

from cep.lang.errors import PatternError
from cep.predict import (Events, PredictArgumentError, SequenceMachine, compile_subscription, predict,
                         run_leaf)
from cep.predict.events import instances, signatures

LOGIN = ("PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S "
         "DEFINE F AS status = 'denied' AND ip = $x, S AS status = 'success' AND ip = $x")
EVENTS = [("10:00:00", "ip1", "denied"), ("10:01:00", "ip2", "denied"), ("10:01:30", "ip1", "denied"),
          ("10:02:00", "ip1", "denied"), ("10:03:00", "ip2", "denied"), ("10:09:00", "ip2", "denied"),
          ("10:10:00", "ip1", "success"), ("10:11:00", "ip3", "success")]


def _login_events() -> Events:
    ts = np.array([f"2010-06-01T{t}" for t, _, _ in EVENTS], dtype="datetime64[us]")
    return Events.from_columns(ts=ts, keys=["srv"] * len(EVENTS),
                               attrs={"ip": [ip for _, ip, _ in EVENTS],
                                      "status": [s for _, _, s in EVENTS]})


def _us(clock: str) -> int:
    return int(np.datetime64(f"2010-06-01T{clock}", "us").astype(np.int64))


def test_login_instances_table() -> None:
    r = predict(LOGIN, _login_events(), lookahead=3)
    table = {inst: (state, matches, events) for inst, state, matches, events in
             zip(r.rows["instance"], r.rows["state"], r.rows["matches"], r.rows["events"])}
    assert table == {"ip1": ("F1 F2 F3 S", 1, 4), "ip2": ("F1", 0, 3), "ip3": ("-", 0, 1)}


def test_login_time_lists_and_prune() -> None:
    sub = compile_subscription(LOGIN)
    ev, starts = instances(sub, _login_events())
    sym, sigs = signatures(sub, ev)
    leaf = sub.leaves[0]
    m = SequenceMachine.from_sequence(leaf)
    # Run ip2's events one at a time to see its time list after each (the paper's figure 7).
    ip2 = np.flatnonzero(ev.attrs["ip"] == "ip2")
    seen = []
    configs = None
    for i in ip2:
        r = run_leaf(m, leaf, sym[i:i + 1], sigs, ev.ts[i:i + 1], np.array([0]), start_configs=configs)
        configs = [r.end_configs[0]]
        seen.append(sorted(configs[0]))
    assert seen == [
        [(0, (None,)), (1, (_us("10:01:00"),))],
        [(0, (None,)), (1, (_us("10:03:00"),)), (2, (_us("10:01:00"),))],
        # t(F3) - t(F1) = 8 minutes fails; (2, 10:03) can no longer meet the 5-minute bound: pruned.
        [(0, (None,)), (1, (_us("10:09:00"),))],
    ]
    whole = run_leaf(m, leaf, sym, sigs, ev.ts, starts)
    assert whole.accepted.tolist() == [False, False, False, True, False, False, False, False]


def test_heat_wave_machine_has_the_papers_states() -> None:
    sub = compile_subscription("PATTERN H, H, H, H, H DEFINE H AS tmax_c > 30")
    m = SequenceMachine.from_sequence(sub.leaves[0])
    table = m.table(np.array([0, 1]))
    # states 0..5 hot days in a row; a cool day goes back to 0, a hot day after five stays matched
    assert [m.progress(int(x)) for x in table.masks] == [0, 1, 2, 3, 4, 5]
    assert table.next[:, 0].tolist() == [0, 0, 0, 0, 0, 0]
    assert table.next[:, 1].tolist() == [1, 2, 3, 4, 5, 5]
    assert table.accepting.tolist() == [False] * 5 + [True]


def test_secondary_links_are_exact_for_self_overlapping_terms() -> None:
    # A, B, A, C on A B A B A C: the paper's link back to the term start would miss this match.
    ev = Events.from_columns(ts=list(range(6)), keys=["k"] * 6, types=list("ABABAC"))
    r = predict("PATTERN A, B, A, C", ev, lookahead=1, output="events")
    assert r.rows["matched"] == [False] * 5 + [True]


@pytest.mark.parametrize("text, code, line, column", [
    ("PATTERN A+ ; B", "CEP-PRED-001", 1, 9),
    ("PATTERN A ; NOT(B) ; C", "CEP-PRED-001", 1, 13),
    ("PATTERN (A ; (B | C)) | D", "CEP-PRED-001", 1, 14),
    ("PATTERN A ; B WITHIN 5 MINUTES", "CEP-PRED-002", 1, 22),
    ("PATTERN A ; B WHERE A.x < B.x", "CEP-PRED-002", 1, 21),
    ("PATTERN A ; B WHERE skip-till-next-match", "CEP-PRED-002", 1, 1),
    ("PATTERN A ; B @(t(A) - t(B) < 5 MINUTES)", "CEP-PRED-003", 1, 17),
    ("PATTERN A ; B @(t(B) + t(A) < 5 MINUTES)", "CEP-PRED-003", 1, 17),
    ("PATTERN A ; B DEFINE A AS ip = $x, B AS host = $x", "CEP-PRED-003", 1, 41),
    ("PATTERN A ; B DEFINE A AS ip > $x", "CEP-PRED-003", 1, 27),
    ("PATTERN (A ; B) & (C ; D @(t(D) - t(A) < 1 SECONDS))", "CEP-PRED-003", 1, 28),
])
def test_unsupported_subscriptions_fail_with_code_and_position(text: str, code: str, line: int,
                                                               column: int) -> None:
    with pytest.raises(PatternError) as info:
        compile_subscription(text)
    err = info.value
    assert (err.code, err.line, err.column) == (code, line, column), str(err)
    assert "^" in str(err)


def test_bad_arguments_name_what_was_expected() -> None:
    ev = Events.from_columns(ts=[1], keys=["k"], types=["A"])
    with pytest.raises(PredictArgumentError, match=r"lookahead: expected an integer in \[1, 100000\], found 0"):
        predict("PATTERN A", ev, lookahead=0)
    with pytest.raises(PredictArgumentError, match="threshold"):
        predict("PATTERN A", ev, lookahead=1, threshold=1.5)
    with pytest.raises(PredictArgumentError, match="output"):
        predict("PATTERN A", ev, lookahead=1, output="rows")


@pytest.mark.parametrize("ts, found", [
    (["2010-06-01", "2010-06-02"], "str '2010-06-01' at row 0"),
    ([1, "x"], "str 'x' at row 1"),
    ([True, False], "bool True at row 0"),
    ([np.datetime64("2010-06-01T00:00", "us").item(), 3], "int 3 at row 1"),
])
def test_timestamps_of_the_wrong_kind_are_a_typed_error(ts: list, found: str) -> None:
    from cep.predict import PredictEventsError
    with pytest.raises(PredictEventsError, match=f"CEP-PRED-010: .*found {found}"):
        Events.from_columns(ts=np.array(ts, dtype=object), keys=["k"] * len(ts))


def test_decimal_and_integer_objects_are_timestamps() -> None:
    from decimal import Decimal
    ev = Events.from_columns(ts=np.array([Decimal("2.5"), 1], dtype=object), keys=["k", "k"])
    assert ev.ts.tolist() == [1.0, 2.5]
    ev = Events.from_columns(ts=np.array([3, 1], dtype=object), keys=["k", "k"])
    assert ev.ts.dtype == np.int64 and ev.ts.tolist() == [1, 3]
