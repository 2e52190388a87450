"""Hand-derived vectors for join variables inside DEFINE (docs/semantics.md, "Join variables").

Each answer is worked out by hand in the comment above it; positions are 0-based and equal to
ids. Every vector is checked against the oracle and the engine, and under skip-till-any-match
and strict contiguity against the engine with every forced plan and with the masks Spark would
push down.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pytest
from match_cases import PLANS, oracle_masks, with_masks

from cep.lang import parse_pattern
from cep.lang.spark_sql import NotRenderable, render_condition
from cep.match import EventStream, compile_query, explain, find_matches
from cep.oracles import oracle_matches

ANY = "skip-till-any-match"
NEXT = "skip-till-next-match"
STRICT = "strict-contiguity"


def stream(types: str, ts: Sequence[int] | None = None, **attrs: Sequence[Any]) -> EventStream:
    """Events of the given (space separated) types; id = position, ts = position by default."""
    kinds = types.split()
    columns = {k: np.array(v, dtype=object) if any(x is None or isinstance(x, str) for x in v)
               else np.array(v) for k, v in attrs.items()}
    return EventStream.from_columns(ids=range(len(kinds)),
                                    ts=list(ts) if ts is not None else range(len(kinds)),
                                    types=kinds, attrs=columns)


def check(text: str, s: EventStream, policy: str, expected: list[tuple[int, ...]]) -> None:
    """The oracle, the engine, every plan and the pushed-down masks all give ``expected``."""
    assert [m.positions for m in oracle_matches(text, s, policy=policy)] == expected, "oracle"
    cq = compile_query(text, policy=policy)
    assert [m.positions for m in find_matches(cq, s).to_matches()] == expected, "engine"
    masked = with_masks(s, oracle_masks(text, s, policy))
    assert [m.positions for m in find_matches(cq, masked).to_matches()] == expected, "masks"
    if policy != NEXT:
        for plan in PLANS:
            got = [m.positions for m in find_matches(cq, s, plan=plan).to_matches()]
            assert got == expected, f"plan {plan}"


# ---------------------------------------------------------------------------------------------
# The P-ToPSS subscription: a quote, then a trade of the same symbol
# ---------------------------------------------------------------------------------------------

QUOTE_TRADE = ("PATTERN a; b DEFINE a AS type = 'quote' AND symbol = $s, "
               "b AS type = 'trade' AND symbol = $s")
# 0 quote IBM | 1 trade MSFT | 2 quote MSFT | 3 trade IBM | 4 trade MSFT | 5 quote IBM | 6 trade IBM
MARKET = stream("quote trade quote trade trade quote trade",
                symbol=["IBM", "MSFT", "MSFT", "IBM", "MSFT", "IBM", "IBM"])


@pytest.mark.parametrize(("policy", "expected"), [
    # any: every quote with every later trade of its symbol: IBM 0-3, 0-6, 5-6; MSFT 2-4.
    (ANY, [(0, 3), (0, 6), (2, 4), (5, 6)]),
    # next: run 0 skips trade 1 (MSFT: $s cannot be both IBM and MSFT) and takes 3; run 2
    # skips 3 (IBM) and takes 4; run 5 takes 6. Runs 1, 3, 4, 6 do not start: not quotes.
    (NEXT, [(0, 3), (2, 4), (5, 6)]),
    # strict: adjacent pairs 0-1 (IBM/MSFT), 2-3 (MSFT/IBM) fail; 5-6 (IBM/IBM) matches.
    (STRICT, [(5, 6)]),
])
def test_quote_then_trade_of_the_same_symbol(policy: str, expected: list[tuple[int, ...]]) -> None:
    check(QUOTE_TRADE, MARKET, policy, expected)


def test_without_the_variable_any_trade_follows() -> None:
    # The same classes without $s: quote 0 pairs with trades 1, 3, 4, 6 (contrast with above).
    text = "PATTERN a; b DEFINE a AS type = 'quote', b AS type = 'trade'"
    got = [m.positions for m in oracle_matches(text, MARKET, policy=ANY)]
    assert got[:4] == [(0, 1), (0, 3), (0, 4), (0, 6)]


# ---------------------------------------------------------------------------------------------
# Kleene iterations and repeated classes all agree on the variable
# ---------------------------------------------------------------------------------------------

KLEENE = ("PATTERN a; b+; c DEFINE a AS type = 'quote' AND symbol = $s, "
          "b AS type = 'trade' AND symbol = $s, c AS type = 'close'")
# 0 quote IBM | 1 trade IBM | 2 trade MSFT | 3 trade IBM | 4 close
TRADES = stream("quote trade trade trade close", symbol=["IBM", "IBM", "MSFT", "IBM", None])


@pytest.mark.parametrize(("policy", "expected"), [
    # any: b is a non-empty subset of the IBM trades {1, 3} (2 is MSFT), then close 4.
    (ANY, [(0, 1, 3, 4), (0, 1, 4), (0, 3, 4)]),
    # next: 1 is the first iteration; 2 neither closes (not a close) nor iterates (MSFT) and is
    # skipped; 3 iterates; 4 closes the run.
    (NEXT, [(0, 1, 3, 4)]),
    # strict: iterations must be contiguous: 1 then 2 (MSFT) fails, and after b = {1} the
    # close would have to be at 2.
    (STRICT, []),
])
def test_every_kleene_iteration_agrees(policy: str, expected: list[tuple[int, ...]]) -> None:
    check(KLEENE, TRADES, policy, expected)


def test_kleene_variables_are_named_per_iteration() -> None:
    (m,) = oracle_matches(KLEENE, TRADES, policy=NEXT)
    assert m.variables == ("a", "b[1]", "b[2]", "c")
    assert find_matches(compile_query(KLEENE, policy=NEXT), TRADES).to_matches() == [m]


LOGINS = ("PATTERN F, F; S DEFINE F AS status = 'denied' AND ip = $x, "
          "S AS status = 'success' AND ip = $x")
# 0 denied 1 | 1 denied 2 | 2 denied 2 | 3 success 1 | 4 success 2
ATTEMPTS = stream("login login login login login",
                  status=["denied", "denied", "denied", "success", "success"], ip=[1, 2, 2, 1, 2])


@pytest.mark.parametrize(("policy", "expected"), [
    # F1, F2 adjacent with one ip: only 1-2 (ip 2); then a success of ip 2: 4.
    (ANY, [(1, 2, 4)]),
    # run 0: F2 must be 1 (',') but its ip is 2: fails. run 1: F2 = 2, success 3 has ip 1 and
    # is skipped, 4 matches. run 2: 3 is not denied: fails.
    (NEXT, [(1, 2, 4)]),
    # strict: 1, 2 then 3, whose ip is 1.
    (STRICT, []),
])
def test_aliases_of_one_class_agree(policy: str, expected: list[tuple[int, ...]]) -> None:
    check(LOGINS, ATTEMPTS, policy, expected)


# ---------------------------------------------------------------------------------------------
# NOT, OR branches, comparisons other than '=', timestamps, unbound variables
# ---------------------------------------------------------------------------------------------

SESSION = ("PATTERN a; NOT(x); b DEFINE a AS type = 'login' AND ip = $i, "
           "x AS type = 'logout' AND ip = $i, b AS type = 'buy' AND ip = $i")
# 0 login 1 | 1 logout 2 | 2 buy 1 | 3 login 2 | 4 logout 1 | 5 buy 2 | 6 logout 2 | 7 buy 1
WEB = stream("login logout buy login logout buy logout buy", ip=[1, 2, 1, 2, 1, 2, 2, 1])


@pytest.mark.parametrize(("policy", "expected"), [
    # any: login/buy pairs of one ip: 0-2 (logout 1 has ip 2: no violation), 0-7 (logout 4
    # has ip 1: violated), 3-5 (logout 4 has ip 1: no violation).
    (ANY, [(0, 2), (3, 5)]),
    # next: run 0 takes buy 2, run 3 takes buy 5; neither NOT is violated.
    (NEXT, [(0, 2), (3, 5)]),
    # strict: no login is directly followed by a buy.
    (STRICT, []),
])
def test_negated_class_uses_the_match_value(policy: str, expected: list[tuple[int, ...]]) -> None:
    check(SESSION, WEB, policy, expected)


BRANCH = "PATTERN A; (B | C) DEFINE B AS type = 'B' AND $x = 1, C AS type = 'C' WHERE A.w = $x"
# 0 A w0 | 1 B | 2 C | 3 A w1 | 4 B | 5 C
BRANCHES = stream("A B C A B C", w=[0, None, None, 1, None, None])


@pytest.mark.parametrize(("policy", "expected"), [
    # A B needs $x = 1, so A.w = 1: 3-4. A C has no constraint from B's DEFINE: 0-2, 0-5, 3-5.
    (ANY, [(0, 2), (0, 5), (3, 4), (3, 5)]),
    # run 0: B 1 cannot be B ($x = 0), C 2 fills the OR. run 3: B 4 fills it ($x = 1).
    (NEXT, [(0, 2), (3, 4)]),
    # strict: 0-1 fails ($x = 0), 3-4 matches.
    (STRICT, [(3, 4)]),
])
def test_define_of_an_unbound_branch_is_ignored(policy: str, expected: list[tuple[int, ...]]) -> None:
    check(BRANCH, BRANCHES, policy, expected)


THRESHOLD = ("PATTERN a; b DEFINE a AS type = 'bid', b AS type = 'ask' AND price <= $p "
             "WHERE a.price = $p")
# 0 bid 10 | 1 ask 12 | 2 ask 9 | 3 bid 8 | 4 ask 8
BOOK = stream("bid ask ask bid ask", price=[10, 12, 9, 8, 8])


@pytest.mark.parametrize(("policy", "expected"), [
    # any: bid 0 ($p = 10) with asks 2 (9) and 4 (8); bid 3 ($p = 8) with ask 4 (8).
    (ANY, [(0, 2), (0, 4), (3, 4)]),
    # next: run 0 skips ask 1 (12 > 10) and takes 2; run 3 takes 4.
    (NEXT, [(0, 2), (3, 4)]),
    # strict: 0-1 (12 > 10) fails, 3-4 matches.
    (STRICT, [(3, 4)]),
])
def test_variable_in_a_comparison(policy: str, expected: list[tuple[int, ...]]) -> None:
    check(THRESHOLD, BOOK, policy, expected)


TIMED = "PATTERN A; B DEFINE B AS type = 'B' AND t(B) - $s < 3 WHERE t(A) = $s"
# 0 A ts0 | 1 B ts1 | 2 B ts4 | 3 A ts5 | 4 B ts9
CLOCK = stream("A B B A B", ts=[0, 1, 4, 5, 9])


@pytest.mark.parametrize("policy", [ANY, NEXT, STRICT])
def test_timestamp_of_the_defined_event(policy: str) -> None:
    # A 0 ($s = 0): only B 1 is less than 3 later. A 3 ($s = 5): B 4 is 4 later. Every policy
    # finds (0, 1), which is also adjacent.
    check(TIMED, CLOCK, policy, [(0, 1)])


@pytest.mark.parametrize("policy", [ANY, NEXT, STRICT])
def test_unbound_variable_is_null(policy: str) -> None:
    # Nothing gives $p a value, so price > $p is NULL and no event is an ask.
    check("PATTERN bid; ask DEFINE ask AS price > $p", stream("bid ask bid ask", price=[1, 2, 3, 4]),
          policy, [])


# ---------------------------------------------------------------------------------------------
# What is pushed down, and how the compiled query reads the DEFINE
# ---------------------------------------------------------------------------------------------


def test_only_variable_free_conjuncts_are_pushed_down() -> None:
    cq = compile_query(SESSION, columns=["type", "ts", "id", "ip"])
    push = {alias: [c.text for c in conds] for alias, conds in cq.pushdown.items()}
    assert push == {"a": ["type = 'login'"], "x": ["type = 'logout'"], "b": ["type = 'buy'"]}
    assert [p.text for p in cq.predicates] == ["a.ip = $i", "x.ip = $i", "b.ip = $i"]
    alt = cq.alternatives[0]
    assert [p.text for p in alt.cross] == ["a.ip = $i", "b.ip = $i"] and alt.variables
    assert [p.text for p in alt.negations[0].conditions["x"]] == ["x.ip = $i"]
    assert "x.ip = $i" in explain(cq)


def test_a_define_of_variables_only_keeps_every_event_in_the_class() -> None:
    cq = compile_query("PATTERN a; b DEFINE b AS symbol = $s WHERE a.symbol = $s")
    assert [c.sql for c in cq.pushdown["b"]] == ["TRUE"]
    assert [p.text for p in cq.predicates] == ["a.symbol = $s", "b.symbol = $s"]


def test_the_whole_define_is_never_rendered_for_spark() -> None:
    define = parse_pattern(QUOTE_TRADE).defines[0].condition
    with pytest.raises(NotRenderable):
        render_condition(define, {"type": "type", "symbol": "symbol"})
    cq = compile_query(QUOTE_TRADE)
    assert render_condition(cq.defines["a"].condition, {"type": "type", "symbol": "symbol"}) == \
        "`type` = 'quote'"
