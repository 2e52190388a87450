"""Conformance cases of MATCH_RECOGNIZE: input rows, a statement, the rows the standard gives.

Each expected answer follows from the semantics as Trino's and Oracle's documentation state
them (docs/match-recognize.md cites the rule behind each case): greedy and reluctant
quantifiers, alternation and PERMUTE preferring the left / listed order, anchors per
partition, exclusions, empty matches and their numbering, unmatched rows, every skip mode,
RUNNING/FINAL, logical and physical navigation, aggregates and SUBSETs.

Input rows have the columns ``p STRING, ts INT, v STRING, x INT``. ``stream("k1: a1 b5 |
k2: c2")`` writes them compactly: per partition ``p``, one token per row, the letter is ``v``,
the number ``x`` (``?`` for NULL), and ``ts`` counts 1, 2, ... within the partition. A case's
statement reads ``input``; expected rows are compared as a multiset, in the output's column
order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Row = tuple[Any, ...]


def stream(text: str) -> list[Row]:
    """The rows written as ``"k1: a1 b5 | k2: c?"`` (a single partition may omit ``k1:``)."""
    rows = []
    for part in text.split("|"):
        key, _, body = part.rpartition(":")
        key = key.strip() or "p"
        for ts, token in enumerate(body.split(), start=1):
            x = None if token[1:] == "?" else int(token[1:])
            rows.append((key, ts, token[0], x))
    return rows


@dataclass(frozen=True)
class Case:
    """One conformance case (``error``: the CEP code the statement must fail with)."""

    name: str
    rows: list[Row]
    sql: str
    expected: list[Row] | None = None
    error: str | None = None


ABC = "DEFINE A AS v = 'a', B AS v = 'b', C AS v = 'c'"
PO = "PARTITION BY p ORDER BY ts"


def _mr(body: str, select: str = "*") -> str:
    if ABC in body:  # define only the letters the PATTERN uses (DEFINE of others is an error)
        pattern = body[body.find("PATTERN") + 7:body.index(ABC)] if "PATTERN" in body else "A"
        used = [f"{v} AS v = '{v.lower()}'" for v in "ABC" if v in pattern]
        body = body.replace(ABC, ("DEFINE " + ", ".join(used)) if used else "")
    return f"SELECT {select} FROM input MATCH_RECOGNIZE ({body})"


# DEFINE conditions that read other rows of the match, asked per thread (running semantics:
# the row tested counts as mapped to the variable being defined).
DEFINE_READS_MATCH: list[Case] = [
    # Flink's documentation ("Logical offsets"): a V of strictly falling then one rising price,
    # START_ROW undefined (always true). Ticker ACME, prices per second from 10:00:00.
    Case("flink_price_down_logical_offsets",
         stream("a12 a17 a19 a21 a25 a18 a15 a14 a24 a25 a19"),
         _mr(f"{PO} MEASURES FIRST(START_ROW.ts) AS s, LAST(PRICE_DOWN.ts) AS bottom, "
             "LAST(PRICE_UP.ts) AS e AFTER MATCH SKIP TO LAST PRICE_UP "
             "PATTERN (START_ROW PRICE_DOWN+ PRICE_UP) DEFINE "
             "PRICE_DOWN AS (LAST(PRICE_DOWN.x, 1) IS NULL AND PRICE_DOWN.x < START_ROW.x) "
             "OR PRICE_DOWN.x < LAST(PRICE_DOWN.x, 1), "
             "PRICE_UP AS PRICE_UP.x > LAST(PRICE_DOWN.x, 1)"),
         [("p", 5, 8, 9)]),
    # Flink's documentation ("Aggregations"): A+ while the running average stays below 15.
    Case("flink_running_average",
         stream("a12 a17 a13 a16 a25 a2 a4 a10 a15 a25 a25 a30"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, LAST(A.ts) AS e, AVG(A.x) AS avg_x "
             "AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B) DEFINE A AS AVG(A.x) < 15"),
         [("p", 1, 4, 14.5), ("p", 6, 11, 13.5)]),
    # Trino's documentation: C rises but stays at or below the starting price A.
    Case("trino_c_at_most_a", stream("a10 b8 b6 c7 c9 d11 a5 a20 b15 c19 c21 d25"),
         _mr(f"{PO} MEASURES A.x AS starting, LAST(B.x) AS bottom, LAST(U.x) AS top "
             "PATTERN (A B+ C+ D+) SUBSET U = (C, D) DEFINE B AS x < PREV(x), "
             "C AS x > PREV(x) AND x <= A.x, D AS x > PREV(x)"),
         [("p", 10, 6, 11), ("p", 20, 15, 25)]),
    Case("other_variable_value", stream("a5 b7 b4 a3 b9"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(B.*) AS nb PATTERN (A B+) "
             "DEFINE A AS v = 'a', B AS B.x > A.x"), [("p", 1, 1), ("p", 4, 1)]),
    Case("first_of_the_match", stream("a5 a6 a7 a4 a8"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+) "
             "DEFINE B AS x > FIRST(x)"), [("p", 3), ("p", 2)]),
    Case("count_star_caps_the_length", stream("a1 a2 a3 a4 a5 a6 a7"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS COUNT(*) <= 3"),
         [("p", 3), ("p", 3), ("p", 1)]),
    Case("count_of_a_variable", stream("a1 a2 a3 b4 a5 a6 b7"),
         _mr(f"{PO} MEASURES COUNT(A.*) AS na PATTERN (A+ B) "
             "DEFINE A AS v = 'a' AND COUNT(A.*) <= 2, B AS v = 'b'"), [("p", 2), ("p", 2)]),
    Case("running_sum_threshold", stream("a3 a4 a2 a6 a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, SUM(A.x) AS total PATTERN (A+) "
             "DEFINE A AS SUM(A.x) <= 9"), [("p", 3, 9), ("p", 2, 7)]),
    Case("running_min_max", stream("a5 a7 a6 a9 a4 a8"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) "
             "DEFINE A AS MAX(A.x) - MIN(A.x) <= 3"),
         [("p", 3), ("p", 1), ("p", 1), ("p", 1)]),
    Case("prev_classifier", stream("a1 b2 a3 a4 b5"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN ((A | B)+) "
             "DEFINE A AS COALESCE(PREV(CLASSIFIER()), 'B') = 'B', B AS v = 'b'"),
         [("p", 3), ("p", 2)]),
    Case("classifier_in_define_is_the_variable", stream("a1 b2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B) "
             "DEFINE A AS CLASSIFIER() = 'A', B AS CLASSIFIER() = 'B'"), [("p", 2)]),
    Case("prev_of_last_is_physical", stream("a5 b1 b2 c5 c9"),
         _mr(f"{PO} MEASURES FIRST(C.ts) AS c PATTERN (A B+ C) DEFINE A AS v = 'a', "
             "B AS v = 'b', C AS x = PREV(FIRST(B.x), 1)"), [("p", 4)]),
    Case("less_preferred_history_wins", stream("x1 x2 x3 x4"),
         _mr(f"{PO} MEASURES CLASSIFIER() AS last_label, COUNT(B.*) AS nb "
             "PATTERN ((A | B)+ C) DEFINE C AS COUNT(A.*) = 0"), [("p", "C", 3)]),
    Case("subset_in_define", stream("a1 b2 a3 b9"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN ((A | B)+ C) SUBSET U = (A, B) "
             "DEFINE A AS v = 'a', B AS v = 'b', C AS SUM(U.x) > 5 AND v = 'a'"), []),
    Case("subset_sum_accepts", stream("a1 b2 a3 b9 a4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN ((A | B)+? C) SUBSET U = (A, B) "
             "DEFINE A AS v = 'a', B AS v = 'b', C AS SUM(U.x) > 5"), [("p", 4)]),
    Case("null_in_navigation_is_unknown", stream("a1 a? a3 a4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+) "
             "DEFINE B AS x > LAST(B.x, 1) OR LAST(B.x, 1) IS NULL"),
         [("p", 4)]),
    Case("all_rows_with_reads", stream("a1 a3 a2 a4"),
         _mr(f"{PO} MEASURES RUNNING COUNT(*) AS k ALL ROWS PER MATCH PATTERN (A B*) "
             "DEFINE B AS B.x > A.x + 1"), [("p", 1, 1, "a", 1), ("p", 2, 2, "a", 3),
                                            ("p", 3, 1, "a", 2), ("p", 4, 2, "a", 4)]),
    Case("skip_to_next_row_with_reads", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n AFTER MATCH SKIP TO NEXT ROW "
             "PATTERN (A B+) DEFINE B AS B.x > A.x"), [("p", 1, 3), ("p", 2, 2)]),
    Case("within_with_reads", stream("a1 a2 a3 a4 a5"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+) WITHIN 3 UNITS "
             "DEFINE B AS B.x > A.x"), [("p", 3), ("p", 2)]),
    Case("between_and_arithmetic", stream("a10 a12 a9 a30"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+) "
             "DEFINE B AS x BETWEEN A.x * 0.8 AND A.x * 1.25"), [("p", 3)]),
    Case("navigation_of_an_expression", stream("a2 a3 a9"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B C) "
             "DEFINE C AS x = LAST(A.x * 3) + B.x"), [("p", 3)]),
]


# Breadth beyond the cases above: quantifiers inside groups, alternation and PERMUTE
# preference, anchors and exclusions per partition, every skip mode with ALL ROWS PER MATCH,
# empty matches and unmatched rows, RUNNING/FINAL, physical and logical offsets, aggregates
# with SUBSETs and NULLs, ORDER BY with ties and NULLs, and syntax/semantic errors. Each
# answer was derived by hand and its label sequence checked against the brute-force oracle
# (cep.oracles.row_pattern_oracle).
MORE_CASES: list[Case] = [
    # --- quantifiers in groups ----------------------------------------------------------------
    # Trino docs: a quantified group repeats greedily; the greedy B? inside takes b2 and b5
    # and matches nothing after a3 (a4 starts the next iteration).
    Case("optional_inside_repeated_group", stream("a1 b2 a3 a4 b5 c6"),
         _mr(f"{PO} MEASURES COUNT(A.*) AS na, COUNT(B.*) AS nb, COUNT(*) AS n "
             f"PATTERN ((A B?)+ C) {ABC}"), [("p", 3, 2, 6)]),
    # Trino docs: {n} repeats an alternation; each iteration prefers its left branch (x=1 is
    # only a B, x=2 after x=5 only a B).
    Case("alternation_repeated_exactly_twice", stream("a1 a3 a5 a2"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, CLASSIFIER() AS c, COUNT(A.*) AS na "
             "PATTERN ((A | B){2}) DEFINE A AS x > 2, B AS x > 0"),
         [("p", 1, "A", 1), ("p", 3, "B", 1)]),
    # Trino docs: reluctant {n,m}? inside a greedy group: one A per iteration, as many
    # iterations as fit (A B A B A B; a7 alone cannot start A B).
    Case("reluctant_bounds_inside_greedy_group", stream("a1 a2 a3 a4 a5 a6 a7"),
         _mr(f"{PO} MEASURES COUNT(A.*) AS na, COUNT(B.*) AS nb, COUNT(*) AS n "
             "PATTERN ((A{1,3}? B)+) DEFINE A AS x > 0, B AS x > 0"), [("p", 3, 3, 6)]),
    # --- alternation with more than two branches ----------------------------------------------
    # Trino docs: alternation prefers its leftmost branch that matches; A B C fails at a3,
    # so A B wins at a1; A B C wins at a3; only A is left for a6.
    Case("three_branch_alternation", stream("a1 b2 a3 b4 c5 a6"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, COUNT(*) AS n, CLASSIFIER() AS c "
             f"PATTERN (A B C | A B | A) {ABC}"),
         [("p", 1, 2, "B"), ("p", 3, 3, "C"), ("p", 6, 1, "A")]),
    # --- PERMUTE ------------------------------------------------------------------------------
    # Trino docs: PERMUTE items may be quantified; (A+, B) fails at b1, (B, A+) matches.
    Case("permute_with_quantified_item", stream("b1 a2 a3 c4 a5 b6 c7"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, COUNT(A.*) AS na, FIRST(B.ts) AS b "
             f"PATTERN (PERMUTE(A+, B) C) {ABC}"), [("p", 1, 2, 1), ("p", 5, 1, 6)]),
    # Trino docs: an item of PERMUTE may be an alternation: C then (A | B) at c1 (B wins),
    # (A | B) then C at a3.
    Case("permute_with_alternation_item", stream("c1 b2 a3 c4"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, CLASSIFIER() AS c, COUNT(*) AS n "
             f"PATTERN (PERMUTE(A | B, C)) {ABC}"), [("p", 1, "B", 2), ("p", 3, "C", 2)]),
    # --- anchors --------------------------------------------------------------------------------
    # Trino docs: ^ is the start of each partition; k2 starts with b1, so it has no match.
    Case("anchor_start_all_rows_per_partition", stream("k1: a1 a2 b3 a4 | k2: b1 a2"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH PATTERN (^ A+) {ABC}"),
         [("k1", 1, 1, "a", 1), ("k1", 2, 1, "a", 2)]),
    # Trino docs: a pattern of only ^ is an empty match at each partition's first row; the
    # other rows are unmatched (WITH UNMATCHED ROWS).
    Case("anchor_only_pattern_with_unmatched_rows", stream("k1: a1 a2 | k2: b1"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, COUNT(*) AS n ALL ROWS PER MATCH "
             "WITH UNMATCHED ROWS PATTERN (^)"),
         [("k1", 1, 1, 0, "a", 1), ("k1", 2, None, None, "a", 2), ("k2", 1, 1, 0, "b", 1)]),
    # --- exclusion ------------------------------------------------------------------------------
    # Trino docs: excluded rows are not output by ALL ROWS PER MATCH but stay in the match:
    # the running count and FIRST(ts) include the excluded first row.
    Case("exclusion_at_the_start", stream("a1 b2 b3"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, CLASSIFIER() AS c, FIRST(ts) AS f "
             f"ALL ROWS PER MATCH PATTERN ({{- A -}} B+) {ABC}"),
         [("p", 2, 2, "B", 1, "b", 2), ("p", 3, 3, "B", 1, "b", 3)]),
    # Trino docs: a quantified exclusion at the end: only the A row is output, FINAL COUNT(*)
    # counts the excluded B rows.
    Case("exclusion_at_the_end_quantified", stream("a1 b2 b3 a4 b5"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, FINAL COUNT(*) AS fn ALL ROWS PER MATCH "
             f"PATTERN (A {{- B+ -}}) {ABC}"),
         [("p", 1, 1, 3, "a", 1), ("p", 4, 2, 2, "a", 4)]),
    # Trino docs: an exclusion of an alternation inside a repeated group; a5 cannot start
    # an iteration (nothing to exclude after it), so the match ends at c4.
    Case("exclusion_of_alternation_in_group", stream("a1 b2 a3 c4 a5"),
         _mr(f"{PO} MEASURES RUNNING COUNT(*) AS k, MATCH_NUMBER() AS m ALL ROWS PER MATCH "
             f"PATTERN ((A {{- B | C -}})+) {ABC}"),
         [("p", 1, 1, 1, "a", 1), ("p", 3, 3, 1, "a", 3)]),
    # Trino docs: a reluctant quantifier in a middle exclusion still takes the rows C needs;
    # COUNT(B.*) at the C row counts both excluded rows.
    Case("exclusion_in_the_middle_reluctant", stream("a1 b2 b3 c4"),
         _mr(f"{PO} MEASURES COUNT(B.*) AS nb, CLASSIFIER() AS c ALL ROWS PER MATCH "
             f"PATTERN (A {{- B*? -}} C) {ABC}"),
         [("p", 1, 0, "A", "a", 1), ("p", 4, 2, "C", "c", 4)]),
    # Trino docs: with SKIP TO NEXT ROW a row excluded from one match (b2 in match 2) is
    # output by another match (match 1).
    Case("excluded_row_output_by_overlapping_match", stream("a1 b2 b3"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c ALL ROWS PER MATCH "
             "AFTER MATCH SKIP TO NEXT ROW PATTERN ({- A -} B) "
             "DEFINE A AS x > 0, B AS v = 'b'"),
         [("p", 2, 1, "B", "b", 2), ("p", 3, 2, "B", "b", 3)]),
    # --- AFTER MATCH SKIP with ALL ROWS PER MATCH -------------------------------------------
    # Oracle: SKIP TO LAST on a SUBSET resumes at the last row of any of its variables (the
    # B row here), so each match starts one row after the previous one.
    Case("skip_to_last_subset_all_rows", stream("a1 a2 a3 a4 a5"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c ALL ROWS PER MATCH "
             "AFTER MATCH SKIP TO LAST U PATTERN (A B C) SUBSET U = (A, B) "
             "DEFINE A AS x > 0, B AS x > 0, C AS x > 0"),
         [("p", 1, 1, "A", "a", 1), ("p", 2, 1, "B", "a", 2), ("p", 3, 1, "C", "a", 3),
          ("p", 2, 2, "A", "a", 2), ("p", 3, 2, "B", "a", 3), ("p", 4, 2, "C", "a", 4),
          ("p", 3, 3, "A", "a", 3), ("p", 4, 3, "B", "a", 4), ("p", 5, 3, "C", "a", 5)]),
    # Oracle: SKIP TO FIRST on a SUBSET: the first row labelled B or C, whichever the match
    # has (C when B? is empty); no match starts at c3, the search goes on at a4.
    Case("skip_to_first_subset_all_rows", stream("a1 c2 c3 a4 b5 c6"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c ALL ROWS PER MATCH "
             "AFTER MATCH SKIP TO FIRST U PATTERN (A B? C+) SUBSET U = (B, C) "
             "DEFINE A AS x > 0, B AS v = 'b', C AS v = 'c'"),
         [("p", 1, 1, "A", "a", 1), ("p", 2, 1, "C", "c", 2), ("p", 3, 1, "C", "c", 3),
          ("p", 2, 2, "A", "c", 2), ("p", 3, 2, "C", "c", 3),
          ("p", 4, 3, "A", "a", 4), ("p", 5, 3, "B", "b", 5), ("p", 6, 3, "C", "c", 6),
          ("p", 5, 4, "A", "b", 5), ("p", 6, 4, "C", "c", 6)]),
    # Trino docs: SKIP TO NEXT ROW with ALL ROWS PER MATCH; RUNNING and FINAL counts are
    # per match, so the shared rows b2, b3 differ between matches 1 and 2.
    Case("skip_to_next_row_running_and_final", stream("a1 b2 b3"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, RUNNING COUNT(*) AS r, FINAL COUNT(*) AS f "
             "ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+) "
             "DEFINE A AS x > 0, B AS v = 'b'"),
         [("p", 1, 1, 1, 3, "a", 1), ("p", 2, 1, 2, 3, "b", 2), ("p", 3, 1, 3, 3, "b", 3),
          ("p", 2, 2, 1, 2, "b", 2), ("p", 3, 2, 2, 2, "b", 3)]),
    # --- empty matches, unmatched rows, numbering ------------------------------------------
    # Trino docs: OMIT EMPTY MATCHES hides empty matches but they keep their numbers (k1's
    # A row is match 2), numbered per partition.
    Case("omit_empty_matches_two_partitions", stream("k1: b1 a2 b3 | k2: a1 a2 b3"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH OMIT EMPTY MATCHES "
             f"PATTERN (A*) {ABC}"),
         [("k1", 2, 2, "a", 2), ("k2", 1, 1, "a", 1), ("k2", 2, 1, "a", 2)]),
    # Trino docs: WITH UNMATCHED ROWS outputs every row of every partition once, measures NULL
    # for the rows in no match (a1 in k2 starts no match: c2 is no B).
    Case("unmatched_rows_two_partitions", stream("k1: b1 a2 b3 c4 | k2: a1 c2 a3 b4"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c ALL ROWS PER MATCH "
             f"WITH UNMATCHED ROWS PATTERN (A B+) {ABC}"),
         [("k1", 1, None, None, "b", 1), ("k1", 2, 1, "A", "a", 2), ("k1", 3, 1, "B", "b", 3),
          ("k1", 4, None, None, "c", 4), ("k2", 1, None, None, "a", 1),
          ("k2", 2, None, None, "c", 2), ("k2", 3, 1, "A", "a", 3), ("k2", 4, 1, "B", "b", 4)]),
    # Trino docs: a reluctant A*? prefers zero rows, so the preferred match at every row is
    # the empty one although A matches there (SHOW EMPTY MATCHES, the default).
    Case("reluctant_star_prefers_the_empty_match", stream("a1 a2"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, COUNT(*) AS n, CLASSIFIER() AS c "
             f"ALL ROWS PER MATCH PATTERN (A*?) {ABC}"),
         [("p", 1, 1, 0, None, "a", 1), ("p", 2, 2, 0, None, "a", 2)]),
    # Trino docs: SKIP TO NEXT ROW after every match, an empty one included: matches at rows
    # 1, 2 and 3 numbered 1, 2, 3.
    Case("match_numbers_skip_to_next_row_with_empty", stream("a1 a2 b3"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, COUNT(*) AS n AFTER MATCH SKIP TO NEXT ROW "
             f"PATTERN (A*) {ABC}"), [("p", 1, 2), ("p", 2, 1), ("p", 3, 0)]),
    # --- RUNNING and FINAL ------------------------------------------------------------------
    # Trino docs: under ALL ROWS PER MATCH, FIRST/LAST/CLASSIFIER are RUNNING by default (up to
    # the current row) and FINAL reads the whole match.
    Case("running_final_first_last_classifier", stream("a1 b2 b3 c4"),
         _mr(f"{PO} MEASURES FIRST(B.x) AS fb, FINAL FIRST(B.x) AS ffb, LAST(x) AS lx, "
             "FINAL LAST(x) AS flx, CLASSIFIER() AS c, FINAL CLASSIFIER() AS fc "
             f"ALL ROWS PER MATCH PATTERN (A B+ C) {ABC}"),
         [("p", 1, None, 2, 1, 4, "A", "C", "a", 1), ("p", 2, 2, 2, 2, 4, "B", "C", "b", 2),
          ("p", 3, 2, 2, 3, 4, "B", "C", "b", 3), ("p", 4, 2, 2, 4, 4, "C", "C", "c", 4)]),
    # Trino docs: running and final aggregates (sum, avg over a variable, min, max, count).
    Case("running_final_aggregates", stream("a4 b2 b6 c3"),
         _mr(f"{PO} MEASURES SUM(x) AS s, FINAL SUM(x) AS fs, AVG(B.x) AS ab, "
             "FINAL AVG(B.x) AS fab, MIN(x) AS mn, FINAL MAX(x) AS fmx, COUNT(B.*) AS cb "
             f"ALL ROWS PER MATCH PATTERN (A B+ C) {ABC}"),
         [("p", 1, 4, 15, None, 4.0, 4, 6, 0, "a", 4),
          ("p", 2, 6, 15, 2.0, 4.0, 2, 6, 1, "b", 2),
          ("p", 3, 12, 15, 4.0, 4.0, 2, 6, 2, "b", 6),
          ("p", 4, 15, 15, 4.0, 4.0, 2, 6, 2, "c", 3)]),
    # Trino docs: LAST(A.x, 1) / FIRST(A.x, n) with running semantics count only the rows up
    # to the current one (NULL when there are too few), FINAL all of them.
    Case("running_final_logical_offsets", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES LAST(A.x, 1) AS l1, FINAL LAST(A.x, 1) AS fl1, FIRST(A.x, 1) AS f1, "
             f"FINAL FIRST(A.x, 2) AS ff2 ALL ROWS PER MATCH PATTERN (A+) {ABC}"),
         [("p", 1, None, 2, None, 3, "a", 1), ("p", 2, 1, 2, 2, 3, "a", 2),
          ("p", 3, 2, 2, 2, 3, "a", 3)]),
    # --- physical and logical offsets ---------------------------------------------------------
    # Trino docs: PREV/NEXT with offsets 0, 2, 3 step from the row FIRST/LAST names, outside
    # the match too (NULL past the partition's end).
    Case("prev_next_offsets_in_measures", stream("a1 a2 a3 b4 c5 a6 a7"),
         _mr(f"{PO} MEASURES PREV(B.x, 0) AS p0, PREV(B.x, 3) AS p3, NEXT(C.x, 2) AS n2, "
             f"NEXT(C.x, 3) AS n3, PREV(x, 2) AS px2 PATTERN (B C) {ABC}"),
         [("p", 4, 1, 7, None, 3)]),
    # Trino docs: PREV(x, 0) is the current row; PREV(x, 3) is NULL for the first three rows
    # (a NULL condition is false), so B+ can start only at row 4.
    Case("prev_offsets_in_define", stream("a5 a1 a2 a6 a3 a4 a7"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(B.*) AS nb PATTERN (A B+) "
             "DEFINE A AS x = PREV(x, 0), B AS x > PREV(x, 3)"), [("p", 3, 4)]),
    # Trino docs: FIRST/LAST with offsets over every row, over one variable (too far: NULL)
    # and over a SUBSET.
    Case("first_last_offsets_in_measures", stream("a1 b2 b3 b4 c5"),
         _mr(f"{PO} MEASURES FIRST(x, 2) AS f2, LAST(x, 2) AS l2, FIRST(B.x, 3) AS fb3, "
             "FIRST(B.x, 2) AS fb2, LAST(U.x, 1) AS lu1, FIRST(U.x, 1) AS fu1 "
             f"PATTERN (A B+ C) SUBSET U = (A, C) {ABC}"), [("p", 3, 3, None, 4, 1, 5)]),
    # --- aggregates, SUBSETs and NULLs ------------------------------------------------------
    # Trino docs: aggregates over the universal row set (count(*), sum, avg) and over SUBSETs.
    Case("aggregates_universal_and_subsets", stream("a2 b4 b6 c8 c10"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, SUM(x) AS s, AVG(x) AS a, MIN(U.x) AS mnu, "
             "MAX(U.x) AS mxu, COUNT(U.*) AS cu, SUM(V.x) AS sv, AVG(V.x) AS av "
             f"PATTERN (A B+ C+) SUBSET U = (A, C), V = (B, C) {ABC}"),
         [("p", 5, 30, 6.0, 2, 10, 3, 28, 7.0)]),
    # SQL aggregates skip NULLs: count(x) counts two of four rows, avg(x) = 4 / 2; LAST(x) is
    # the last row's NULL (not the last non-NULL value).
    Case("aggregates_skip_nulls", stream("a1 b? b3 c?"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, COUNT(x) AS cx, COUNT(B.x) AS cbx, SUM(x) AS s, "
             "AVG(x) AS a, MIN(B.x) AS mnb, MAX(x) AS mx, LAST(x) AS lx, COUNT(C.*) AS cc "
             f"PATTERN (A B+ C) {ABC}"), [("p", 4, 2, 1, 4, 2.0, 3, 3, None, 1)]),
    # Running sum in DEFINE skips NULLs; sum of only NULLs is NULL, so NULL <= 5 OR true is
    # true (three-valued OR): a?, a3, a?, a2 (sum 5) then a1 alone.
    Case("null_in_running_sum_define", stream("a? a3 a? a2 a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, SUM(x) AS s, COUNT(x) AS cx PATTERN (A+) "
             "DEFINE A AS SUM(A.x) <= 5 OR COUNT(A.x) = 0"), [("p", 4, 5, 2), ("p", 1, 1, 1)]),
    # --- ORDER BY: ties broken by a second column, DESC, NULLs ---------------------------------
    # docs/match-recognize.md: equal ts are ordered by the next ORDER BY column; ALL ROWS PER
    # MATCH outputs both ORDER BY columns after the partition column.
    Case("order_by_two_columns_all_rows",
         [("p", 1, "b", 2), ("p", 1, "a", 1), ("p", 2, "c", 3)],
         _mr("PARTITION BY p ORDER BY ts, x MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH "
             f"PATTERN (A B C) {ABC}"),
         [("p", 1, 1, "A", "a"), ("p", 1, 2, "B", "b"), ("p", 2, 3, "C", "c")]),
    # DESC NULLS FIRST: the NULL ts row comes first and is the A row.
    Case("descending_nulls_first", [("p", None, "a", 1), ("p", 2, "b", 2), ("p", 1, "c", 3)],
         _mr("PARTITION BY p ORDER BY ts DESC NULLS FIRST MEASURES FIRST(A.ts) AS fa, "
             f"LAST(C.ts) AS lc, COUNT(*) AS n PATTERN (A B C) {ABC}"), [("p", None, 1, 3)]),
    # --- DEFINE reading other rows ----------------------------------------------------------
    # Trino docs (running semantics in DEFINE): LAST(A.x, 1) is the A row before the tested
    # one; A+ rises 1, 3, 5 and B must be below the last A (A.x).
    Case("define_last_with_offset_and_other_variable", stream("a1 a3 a5 a4 a2 a6"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, LAST(A.x) AS top, B.x AS b PATTERN (A+ B) "
             "DEFINE A AS A.x > LAST(A.x, 1) OR LAST(A.x, 1) IS NULL, B AS B.x < A.x"),
         [("p", 1, 5, 4)]),
    # Running count and avg of A in B's DEFINE: b3 follows three A's averaging 6, b1 one A
    # of 4.
    Case("define_running_count_and_avg", stream("a5 a6 a7 b3 a4 b1"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, COUNT(*) AS n PATTERN (A+ B) "
             "DEFINE A AS v = 'a', B AS x = COUNT(A.*) AND x < AVG(A.x)"),
         [("p", 1, 4), ("p", 5, 2)]),
    # WITHIN (our extension) with a DEFINE that reads the match: the span stops the first
    # match at ts 2 (ts 5 is 4 units after ts 1), the running count the second at ts 8.
    Case("within_units_with_running_count",
         [("p", 1, "a", 1), ("p", 2, "b", 2), ("p", 5, "b", 3), ("p", 6, "a", 4),
          ("p", 7, "b", 5), ("p", 8, "b", 6), ("p", 9, "b", 7)],
         _mr(f"{PO} MEASURES FIRST(ts) AS s, LAST(ts) AS e, COUNT(*) AS n PATTERN (A B+) "
             "WITHIN 4 UNITS DEFINE A AS v = 'a', B AS v = 'b' AND COUNT(B.*) <= 2"),
         [("p", 1, 2, 2), ("p", 6, 8, 3)]),
    # --- the result is a table --------------------------------------------------------------
    # The clause inside a subquery, with WHERE and GROUP BY on its output.
    Case("subquery_where_group_by", stream("k1: a1 b2 a3 a4 b5 b6 | k2: a1 a2 b3"),
         "SELECT p, count(*) AS n_matches, sum(n) AS total FROM (" +
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B*) {ABC}") +
         ") WHERE n >= 2 GROUP BY p", [("k1", 2, 5), ("k2", 1, 2)]),
    # --- errors -------------------------------------------------------------------------------
    # Trino/Oracle: SUBSET members must be pattern variables.
    Case("error_unknown_subset_member", stream("a1"),
         _mr(f"{PO} PATTERN (A B) SUBSET U = (A, Z) DEFINE A AS v = 'a'"),
         error="CEP-MR-201"),
    # Trino/Oracle: AFTER MATCH SKIP TO names a pattern variable or SUBSET.
    Case("error_skip_to_unknown_variable", stream("a1"),
         _mr(f"{PO} AFTER MATCH SKIP TO LAST Z PATTERN (A B) DEFINE A AS v = 'a'"),
         error="CEP-MR-201"),
    # Trino's grammar: an alternation branch cannot be empty (write () for the empty pattern).
    Case("error_pattern_empty_alternative", stream("a1"),
         _mr(f"{PO} PATTERN (A | ) DEFINE A AS v = 'a'"), error="CEP-MR-102"),
    # A group opened inside the pattern and never closed.
    Case("error_pattern_unclosed_group", stream("a1"),
         _mr(f"{PO} PATTERN ((A B) DEFINE A AS v = 'a'"), error="CEP-MR-104"),
    # Trino: "Pattern quantifier upper bound must be greater than or equal to 1".
    Case("error_quantifier_upper_bound_zero", stream("a1"),
         _mr(f"{PO} PATTERN (A{{,0}} B) DEFINE A AS v = 'a'"), error="CEP-MR-105"),
]


# Cases taken from the public documentation of MATCH_RECOGNIZE (Oracle's "SQL for Pattern
# Matching" chapter, Trino's MATCH_RECOGNIZE and window pages, Snowflake's reference, Flink's
# pattern recognition page) and from docs/match-recognize.md. Each documented example is
# restated in this file's columns: the partition key in p, the time order in ts (1, 2, ...),
# the price or value in x; the expected rows were derived by hand from the standard's rules
# and the label sequences checked against the brute-force oracle where it can express them.
ACME = ("ACME: a12 a17 a19 a21 a25 a12 a15 a20 a24 a25 a19 a15 a25 a25 a14 a12 a14 a24 a23 "
        "a22")
"""Oracle's ticker ACME: closing prices on 1-20 April 2011 (the day is ts)."""
V_SHAPE = "DEFINE DOWN AS x < PREV(x), UP AS x > PREV(x)"
W_SHAPE = ("DEFINE D1 AS x < PREV(x), U1 AS x > PREV(x), D2 AS x < PREV(x), "
           "U2 AS x > PREV(x)")
STOCKS = ("ABCD: a50 a36 a39 a42 a30 a47 a71 a80 a75 a63 | "
          "XYZ: a89 a24 a37 a63 a65 a56 a50 a54 a30 a32")
"""Snowflake's stock_price_history: companies ABCD and XYZ, 1-10 October 2020 (ts)."""
SNOWFLAKE_V = ("PATTERN (ROW_BEFORE DECREASE+ INCREASE+) "
               "DEFINE DECREASE AS x < PREV(x), INCREASE AS x > PREV(x)")
FLINK_SUM = "XYZ: a7 a9 a10 a5 a10 a7 a14"
"""Flink's "After Match Strategy" ticker XYZ: prices at 10:00:01-10:00:07 (the second is ts)."""
FLINK_SUM_QUERY = ("PARTITION BY p ORDER BY ts MEASURES SUM(A.x) AS sum_x, FIRST(ts) AS s, "
                   "LAST(ts) AS e ONE ROW PER MATCH AFTER MATCH {skip} PATTERN (A+ C) "
                   "DEFINE A AS SUM(A.x) < 30")

DOCUMENTED_CASES: list[Case] = [
    # --- Oracle: the V and W shapes on ACME -----------------------------------------------------
    # Oracle's "simple V-shape with 1 row output per match": three V's, each resumed at its
    # last UP row (the second V starts on the first one's last row, 10 April).
    Case("oracle_v_shape_one_row", stream(ACME),
         _mr(f"{PO} MEASURES STRT.ts AS s, LAST(DOWN.ts) AS bottom, LAST(UP.ts) AS e "
             "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP PATTERN (STRT DOWN+ UP+) "
             f"{V_SHAPE}"),
         [("ACME", 5, 6, 10), ("ACME", 10, 12, 13), ("ACME", 14, 16, 18)]),
    # Oracle's V-shape with all rows per match and its aggregate on a variable: row 10 is
    # output by matches 1 (UP) and 2 (STRT); FINAL counts the whole match, RUNNING up to the row.
    Case("oracle_v_shape_all_rows_running_and_final", stream(ACME),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c, STRT.ts AS s, "
             "FINAL LAST(DOWN.ts) AS bottom, FINAL COUNT(UP.ts) AS up_days, "
             "RUNNING COUNT(ts) AS cnt, x - STRT.x AS dif ALL ROWS PER MATCH "
             f"AFTER MATCH SKIP TO LAST UP PATTERN (STRT DOWN+ UP+) {V_SHAPE}"),
         [("ACME", 5, 1, "STRT", 5, 6, 4, 1, 0, "a", 25),
          ("ACME", 6, 1, "DOWN", 5, 6, 4, 2, -13, "a", 12),
          ("ACME", 7, 1, "UP", 5, 6, 4, 3, -10, "a", 15),
          ("ACME", 8, 1, "UP", 5, 6, 4, 4, -5, "a", 20),
          ("ACME", 9, 1, "UP", 5, 6, 4, 5, -1, "a", 24),
          ("ACME", 10, 1, "UP", 5, 6, 4, 6, 0, "a", 25),
          ("ACME", 10, 2, "STRT", 10, 12, 1, 1, 0, "a", 25),
          ("ACME", 11, 2, "DOWN", 10, 12, 1, 2, -6, "a", 19),
          ("ACME", 12, 2, "DOWN", 10, 12, 1, 3, -10, "a", 15),
          ("ACME", 13, 2, "UP", 10, 12, 1, 4, 0, "a", 25),
          ("ACME", 14, 3, "STRT", 14, 16, 2, 1, 0, "a", 25),
          ("ACME", 15, 3, "DOWN", 14, 16, 2, 2, -11, "a", 14),
          ("ACME", 16, 3, "DOWN", 14, 16, 2, 3, -13, "a", 12),
          ("ACME", 17, 3, "UP", 14, 16, 2, 4, -11, "a", 14),
          ("ACME", 18, 3, "UP", 14, 16, 2, 5, -1, "a", 24)]),
    # Oracle's W-shape (down, up, down, up; variables renamed): one W from 5 to 13 April; the
    # search resumed at its last row finds no second W (the last fall has no rise after it).
    Case("oracle_w_shape_all_rows", stream(ACME),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c, STRT.ts AS s, "
             "FINAL LAST(U2.ts) AS e ALL ROWS PER MATCH AFTER MATCH SKIP TO LAST U2 "
             f"PATTERN (STRT D1+ U1+ D2+ U2+) {W_SHAPE}"),
         [("ACME", 5, 1, "STRT", 5, 13, "a", 25), ("ACME", 6, 1, "D1", 5, 13, "a", 12),
          ("ACME", 7, 1, "U1", 5, 13, "a", 15), ("ACME", 8, 1, "U1", 5, 13, "a", 20),
          ("ACME", 9, 1, "U1", 5, 13, "a", 24), ("ACME", 10, 1, "U1", 5, 13, "a", 25),
          ("ACME", 11, 1, "D2", 5, 13, "a", 19), ("ACME", 12, 1, "D2", 5, 13, "a", 15),
          ("ACME", 13, 1, "U2", 5, 13, "a", 25)]),
    # Trino docs: with SKIP TO NEXT ROW "further overlapping matches are found, starting from
    # consecutive rows on the descending slope of the V" (Oracle's V on ACME: 10 and 11 April).
    Case("oracle_v_shape_skip_to_next_row", stream(ACME),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, STRT.ts AS s, LAST(DOWN.ts) AS bottom, "
             "LAST(UP.ts) AS e AFTER MATCH SKIP TO NEXT ROW PATTERN (STRT DOWN+ UP+) "
             f"{V_SHAPE}"),
         [("ACME", 1, 5, 6, 10), ("ACME", 2, 10, 12, 13), ("ACME", 3, 11, 12, 13),
          ("ACME", 4, 14, 16, 18), ("ACME", 5, 15, 16, 18)]),
    # Trino docs: SKIP PAST LAST ROW is the default: Oracle's V without its AFTER MATCH clause
    # misses the V that shares 10 April and finds the one from 11 April instead.
    Case("oracle_v_shape_default_skip", stream(ACME),
         _mr(f"{PO} MEASURES STRT.ts AS s, LAST(DOWN.ts) AS bottom, LAST(UP.ts) AS e "
             f"PATTERN (STRT DOWN+ UP+) {V_SHAPE}"),
         [("ACME", 5, 6, 10), ("ACME", 11, 12, 13), ("ACME", 14, 16, 18)]),
    # Oracle's V with bounded quantifiers ({n,m}, {n,}): two to three falls, then at least
    # two rises; only the V of 14-18 April has both.
    Case("oracle_v_shape_bounded_quantifiers", stream(ACME),
         _mr(f"{PO} MEASURES STRT.ts AS s, COUNT(DOWN.*) AS n_down, COUNT(UP.*) AS n_up "
             f"PATTERN (STRT DOWN{{2,3}} UP{{2,}}) {V_SHAPE}"),
         [("ACME", 14, 2, 2)]),
    # Oracle's V and W shapes over the same ticker in one statement (two clauses in a CTE,
    # joined): the V's of 5-10 and 10-13 April lie inside the W of 5-13 April.
    Case("oracle_v_inside_w_cte_join", stream(ACME),
         "WITH v AS (" +
         _mr(f"{PO} MEASURES STRT.ts AS s, LAST(UP.ts) AS e AFTER MATCH SKIP TO LAST UP "
             f"PATTERN (STRT DOWN+ UP+) {V_SHAPE}") +
         "), w AS (" +
         _mr(f"{PO} MEASURES STRT.ts AS s, LAST(U2.ts) AS e AFTER MATCH SKIP TO LAST U2 "
             f"PATTERN (STRT D1+ U1+ D2+ U2+) {W_SHAPE}") +
         ") SELECT v.s AS vs, v.e AS ve, w.s AS ws, w.e AS we FROM v JOIN w "
         "ON v.p = w.p AND v.s >= w.s AND v.e <= w.e",
         [(5, 10, 5, 13), (10, 13, 5, 13)]),
    # Oracle's sessionization example (LiveSQL clickdata of Mary and Sam, the click time in x):
    # a click at most 10 after the previous one continues the session.
    Case("oracle_sessionization",
         stream("Mary: c1 c11 c23 c34 c44 c53 c63 | "
                "Sam: c2 c12 c22 c32 c43 c47 c48 c59 c60 c68"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS session, COUNT(*) AS events, "
             "FIRST(x) AS start_x, LAST(x) - FIRST(x) AS duration "
             "PATTERN (B S*) DEFINE S AS x - PREV(x) <= 10"),
         [("Mary", 1, 2, 1, 10), ("Mary", 2, 1, 23, 0), ("Mary", 3, 4, 34, 29),
          ("Sam", 1, 4, 2, 30), ("Sam", 2, 3, 43, 5), ("Sam", 3, 3, 59, 9)]),
    # --- Snowflake: the V shapes of two companies -------------------------------------------
    # Snowflake's V-shape example (LAG written as PREV): one summary row per V, resumed at the
    # last increase, numbered per company.
    Case("snowflake_v_shapes_per_company", stream(STOCKS),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, FIRST(ts) AS s, LAST(ts) AS e, "
             "COUNT(*) AS n, COUNT(DECREASE.*) AS n_dec, COUNT(INCREASE.*) AS n_inc "
             f"ONE ROW PER MATCH AFTER MATCH SKIP TO LAST INCREASE {SNOWFLAKE_V}"),
         [("ABCD", 1, 1, 4, 4, 1, 2), ("ABCD", 2, 4, 8, 5, 1, 3), ("XYZ", 1, 1, 5, 5, 1, 3),
          ("XYZ", 2, 5, 8, 4, 2, 1), ("XYZ", 3, 8, 10, 3, 1, 1)]),
    # Snowflake's "all rows for all matches for one company" (input filtered in a subquery):
    # 4 October is output twice, as the last INCREASE of match 1 and the ROW_BEFORE of match 2.
    Case("snowflake_all_rows_one_company", stream(STOCKS),
         "SELECT * FROM (SELECT * FROM input WHERE p = 'ABCD') MATCH_RECOGNIZE ("
         f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c ALL ROWS PER MATCH "
         f"AFTER MATCH SKIP TO LAST INCREASE {SNOWFLAKE_V})",
         [("ABCD", 1, 1, "ROW_BEFORE", "a", 50), ("ABCD", 2, 1, "DECREASE", "a", 36),
          ("ABCD", 3, 1, "INCREASE", "a", 39), ("ABCD", 4, 1, "INCREASE", "a", 42),
          ("ABCD", 4, 2, "ROW_BEFORE", "a", 42), ("ABCD", 5, 2, "DECREASE", "a", 30),
          ("ABCD", 6, 2, "INCREASE", "a", 47), ("ABCD", 7, 2, "INCREASE", "a", 71),
          ("ABCD", 8, 2, "INCREASE", "a", 80)]),
    # Snowflake's V-shape output is a table: grouped per company (2 and 3 V's, 5 rows longest).
    Case("snowflake_v_shapes_grouped", stream(STOCKS),
         "SELECT p, count(*) AS n_matches, max(n) AS longest FROM (" +
         _mr(f"{PO} MEASURES COUNT(*) AS n AFTER MATCH SKIP TO LAST INCREASE {SNOWFLAKE_V}") +
         ") GROUP BY p", [("ABCD", 2, 5), ("XYZ", 3, 5)]),
    # --- Flink: the documented examples ---------------------------------------------------------
    # Flink's "After Match Strategy" with SKIP PAST LAST ROW: A+ while the sum of A stays
    # below 30, then any row.
    Case("flink_sum_skip_past_last_row", stream(FLINK_SUM),
         _mr(FLINK_SUM_QUERY.format(skip="SKIP PAST LAST ROW")),
         [("XYZ", 26, 1, 4), ("XYZ", 17, 5, 7)]),
    # Flink's "After Match Strategy" with SKIP TO NEXT ROW: a match from every row but the
    # last; the one from row 6 (A = 7, C = 14) is the standard's too, though Flink's page
    # lists five.
    Case("flink_sum_skip_to_next_row", stream(FLINK_SUM),
         _mr(FLINK_SUM_QUERY.format(skip="SKIP TO NEXT ROW")),
         [("XYZ", 26, 1, 4), ("XYZ", 24, 2, 5), ("XYZ", 25, 3, 6), ("XYZ", 22, 4, 7),
          ("XYZ", 17, 5, 7), ("XYZ", 7, 6, 7)]),
    # Flink's SKIP TO LAST A on the same rows: the fourth match (rows 6-7) has its only A on
    # its first row, and skipping there is an error (Trino's and Oracle's rule).
    Case("flink_sum_skip_to_last_a_loops", stream(FLINK_SUM),
         _mr(FLINK_SUM_QUERY.format(skip="SKIP TO LAST A")), error="CEP-MR-203"),
    # Flink's "Greedy & Reluctant Quantifiers", greedy: B* takes 12, 13 and 14, C is 16.
    Case("flink_greedy_b_star", stream("XYZ: a10 a11 a12 a13 a14 a16"),
         _mr(f"{PO} MEASURES C.x AS last_x ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
             "PATTERN (A B* C) DEFINE A AS A.x > 10, B AS B.x < 15, C AS C.x > 12"),
         [("XYZ", 16)]),
    # Flink's "Greedy & Reluctant Quantifiers", reluctant: B*? takes only 12, so two matches.
    Case("flink_reluctant_b_star", stream("XYZ: a10 a11 a12 a13 a14 a16"),
         _mr(f"{PO} MEASURES C.x AS last_x ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
             "PATTERN (A B*? C) DEFINE A AS A.x > 10, B AS B.x < 15, C AS C.x > 12"),
         [("XYZ", 13), ("XYZ", 16)]),
    # Flink's "Output Mode": a rising run A+ read with LAST(A.x, 1), then a lower B; no AFTER
    # MATCH clause, so the standard's default SKIP PAST LAST ROW gives one row.
    Case("flink_rising_run_output_mode", stream("XYZ: a10 a12 a13 a11"),
         _mr(f"{PO} MEASURES FIRST(A.x) AS start_x, LAST(A.x) AS top_x, B.x AS last_x "
             "ONE ROW PER MATCH PATTERN (A+ B) DEFINE A AS LAST(A.x, 1) IS NULL OR "
             "A.x > LAST(A.x, 1), B AS B.x < LAST(A.x)"),
         [("XYZ", 10, 13, 11)]),
    # Flink's "Time constraint": a drop of more than 10 within an hour, ticks of 20 minutes as
    # ts; Flink's page keeps the drop from 12:00 to 13:00 (3 ticks), our WITHIN keeps spans
    # below its value, so the hour is WITHIN 4 UNITS here.
    Case("flink_within_price_drop", stream("ACME: a20 a17 a18 a11 a14 a9 a15 a14 a24 a1 a19"),
         _mr(f"{PO} MEASURES C.ts AS drop_ts, A.x - C.x AS drop_diff ONE ROW PER MATCH "
             "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B* C) WITHIN 4 UNITS "
             "DEFINE B AS B.x > A.x - 10, C AS C.x < A.x - 10"),
         [("ACME", 10, 14)]),
    # Flink's "Pattern Variable Referencing" table: SUM(x) over the whole match and SUM(B.x)
    # over B, the tested row included; 35 would bring them to 111 and 101.
    Case("flink_define_sums_over_match_and_variable", stream("XYZ: a10 a15 a20 a31 a35"),
         _mr(f"{PO} MEASURES LAST(B.x) AS last_b, SUM(x) AS total, SUM(B.x) AS total_b "
             "PATTERN (A B+) DEFINE A AS A.x >= 10, "
             "B AS B.x > A.x AND SUM(x) < 100 AND SUM(B.x) < 80"),
         [("XYZ", 31, 76, 66)]),
    # Flink's "Logical Offsets" table: each B above the last B and above twice the one before
    # it; 35 is not above 2 * 20.
    Case("flink_logical_offsets_two_back", stream("XYZ: a10 a15 a20 a31 a35"),
         _mr(f"{PO} MEASURES LAST(B.x) AS last_b, LAST(B.x, 2) AS third_last "
             "PATTERN (A B+) DEFINE A AS A.x >= 10, "
             "B AS (LAST(B.x, 1) IS NULL OR B.x > LAST(B.x, 1)) AND "
             "(LAST(B.x, 2) IS NULL OR B.x > 2 * LAST(B.x, 2))"),
         [("XYZ", 31, 15)]),
    # Flink's logical offset over the default (universal) variable: LAST(x, 1) in C's DEFINE
    # is the B row when B matched (k1) and the A row when it did not (k2).
    Case("flink_last_offset_of_all_rows", stream("k1: a10 a15 a20 | k2: a10 a20"),
         _mr(f"{PO} MEASURES C.x AS c, COUNT(*) AS n AFTER MATCH SKIP PAST LAST ROW "
             "PATTERN (A B? C) DEFINE B AS B.x < 20, C AS LAST(x, 1) < C.x"),
         [("k1", 20, 3), ("k2", 20, 2)]),
    # --- Trino: documented rules on their own data --------------------------------------------
    # Trino docs: with ALL ROWS PER MATCH, PATTERN (A {- B+ C+ -} D+) outputs the first row
    # and the trailing D rows; the running measures still see the excluded B and C rows.
    Case("trino_exclusion_inside_the_v", stream("a10 a8 a6 a7 a9 a12 a15 a11"),
         _mr(f"{PO} MEASURES CLASSIFIER() AS c, A.x AS starting, LAST(B.x) AS bottom, "
             "LAST(U.x) AS top ALL ROWS PER MATCH PATTERN (A {- B+ C+ -} D+) "
             "SUBSET U = (C, D) DEFINE B AS x < PREV(x), C AS x > PREV(x) AND x <= A.x, "
             "D AS x > PREV(x)"),
         [("p", 1, "A", 10, None, None, "a", 10), ("p", 6, "D", 10, 6, 12, "a", 12),
          ("p", 7, "D", 10, 6, 15, "a", 15)]),
    # Trino docs' union variable over (A | B){n} C+ ({3} here): LAST(U.x) is the last A or B
    # row, and SKIP TO LAST U resumes there (row 3, then a match from row 4).
    Case("trino_union_variable_skip_to_last", stream("a1 b2 a13 b14 b15 a3 c20 c30 b4"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, LAST(U.x) AS lu, COUNT(*) AS n "
             "AFTER MATCH SKIP TO LAST U PATTERN ((A | B){3} C+) SUBSET U = (A, B) "
             "DEFINE A AS v = 'a', B AS v = 'b', C AS x > 10"),
         [("p", 1, 13, 5), ("p", 4, 3, 5)]),
    # Trino docs: only SKIP PAST LAST ROW with WITH UNMATCHED ROWS gives exactly one output
    # row per input row; with SKIP TO NEXT ROW rows 2 and 3 come twice, row 4 once unmatched.
    Case("trino_unmatched_rows_with_overlaps", stream("a1 b2 b3 c4"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c ALL ROWS PER MATCH "
             "WITH UNMATCHED ROWS AFTER MATCH SKIP TO NEXT ROW PATTERN (X B+) "
             "DEFINE B AS v = 'b'"),
         [("p", 1, 1, "X", "a", 1), ("p", 2, 1, "B", "b", 2), ("p", 3, 1, "B", "b", 3),
          ("p", 2, 2, "X", "b", 2), ("p", 3, 2, "B", "b", 3), ("p", 4, None, None, "c", 4)]),
    # Trino docs, measures of an empty match: column references and navigation are NULL (PREV
    # too, though row 3 precedes row 4), aggregates run over no rows, MATCH_NUMBER counts it.
    Case("trino_empty_match_measures", stream("b1 a2 a3 b4"),
         _mr(f"{PO} MEASURES x AS lx, SUM(x) AS s, COUNT(x) AS cx, PREV(x) AS px, "
             "MATCH_NUMBER() AS m PATTERN (A*) DEFINE A AS v = 'a'"),
         [("p", None, None, 0, None, 1), ("p", 3, 5, 2, 2, 2), ("p", None, None, 0, None, 3)]),
    # Trino docs: a constant measure tells an empty match ('matched') from an unmatched row
    # (NULL); ^ A* can match empty only at the partition's first row.
    Case("trino_constant_measure_empty_or_unmatched", stream("k1: b1 b2 | k2: a1 a2 b3"),
         _mr(f"{PO} MEASURES 'matched' AS matched, MATCH_NUMBER() AS m ALL ROWS PER MATCH "
             "WITH UNMATCHED ROWS PATTERN (^ A*) DEFINE A AS v = 'a'"),
         [("k1", 1, "matched", 1, "b", 1), ("k1", 2, None, None, "b", 2),
          ("k2", 1, "matched", 1, "a", 1), ("k2", 2, "matched", 1, "a", 2),
          ("k2", 3, None, None, "b", 3)]),
    # Trino's window example (A B+ C+, measures LAST(x) and CLASSIFIER() at the final row) gives
    # one row per input row: here a LEFT JOIN of each row to the match starting on it.
    Case("trino_window_measures_per_input_row", stream("k1: a10 a8 a6 a7 a9 a5 | k2: a3 a4"),
         "SELECT i.p, i.ts, m.val, m.label FROM input i LEFT JOIN (" +
         _mr(f"{PO} MEASURES FIRST(ts) AS s, LAST(x) AS val, CLASSIFIER() AS label "
             "PATTERN (A B+ C+) DEFINE B AS x < PREV(x), C AS x > PREV(x)") +
         ") m ON i.p = m.p AND i.ts = m.s",
         [("k1", 1, 9, "C"), ("k1", 2, None, None), ("k1", 3, None, None),
          ("k1", 4, None, None), ("k1", 5, None, None), ("k1", 6, None, None),
          ("k2", 1, None, None), ("k2", 2, None, None)]),
    # Trino docs: the quantifier {,} is *, so A{,} gives the empty matches that A* gives.
    Case("trino_empty_bounds_are_star", stream("b1 a2 a3 b4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, MATCH_NUMBER() AS m PATTERN (A{{,}}) "
             "DEFINE A AS v = 'a'"), [("p", 0, 1), ("p", 2, 2), ("p", 0, 3)]),
    # Trino docs, nested navigation: FIRST/LAST with an offset picks a row of the match, then
    # PREV/NEXT steps physically, outside the match or the partition (NULL) as it goes.
    Case("trino_nested_navigation_offsets", stream("z1 z2 a3 a4 a5 a6 a7 b8"),
         _mr(f"{PO} MEASURES PREV(FIRST(A.x, 3), 2) AS p32, PREV(FIRST(A.x), 2) AS before, "
             "NEXT(LAST(A.x, 1), 2) AS n2, NEXT(LAST(A.x, 1), 3) AS n3, "
             "PREV(FIRST(A.x, 5), 1) AS too_far PATTERN (A+ B) "
             "DEFINE A AS v = 'a', B AS v = 'b'"),
         [("p", 4, 1, 8, None, None)]),
    # --- ties in ORDER BY (docs/match-recognize.md) -------------------------------------------
    # Equal ts are ordered by a hash of the row; PERMUTE(A, B) matches either order, so the
    # answer does not depend on which tied row comes first.
    Case("ties_any_order_permute", [("p", 1, "a", 1), ("p", 1, "b", 2), ("p", 2, "c", 3)],
         _mr(f"{PO} MEASURES COUNT(*) AS n, SUM(x) AS s, LAST(C.ts) AS c "
             f"PATTERN (PERMUTE(A, B) C) {ABC}"), [("p", 3, 6, 2)]),
    # A second ORDER BY item chooses the order of tied rows itself: x DESC puts b2 before a1.
    Case("ties_second_key_descending", [("p", 1, "a", 1), ("p", 1, "b", 2), ("p", 2, "c", 3)],
         _mr(f"PARTITION BY p ORDER BY ts, x DESC MEASURES FIRST(x) AS first_x, "
             f"LAST(x) AS last_x, COUNT(*) AS n PATTERN (B A C) {ABC}"), [("p", 2, 3, 3)]),
]


# Issue 49: the row pattern constructs of SQL:2016 (ISO/IEC 19075-5) that Trino documents and
# that were refused or wrong before: CLASSIFIER(U), navigation around CLASSIFIER, MATCH_NUMBER
# in DEFINE, every Spark aggregate in MEASURES, CASE/LIKE/IN and scalar functions around the
# match in DEFINE. Expected rows follow Trino's "Row pattern recognition expressions".
ABCU = "DEFINE A AS v = 'a', B AS v = 'b', C AS v = 'c'"
STANDARD_CASES: list[Case] = [
    # Trino: CLASSIFIER(U) "limits the rows of interest": the label of the last row mapped to
    # U; in ALL ROWS PER MATCH, RUNNING (up to the current row) unless FINAL.
    Case("classifier_of_a_subset_one_row", stream("a1 b2 c3"),
         f"SELECT * FROM input MATCH_RECOGNIZE ({PO} MEASURES CLASSIFIER(U) AS cu, "
         "CLASSIFIER(C) AS cc, CLASSIFIER() AS c PATTERN (A B C) SUBSET U = (A, B) "
         f"{ABCU})", [("p", "B", "C", "C")]),
    Case("classifier_of_a_subset_all_rows", stream("a1 b2 b3 c4"),
         f"SELECT * FROM input MATCH_RECOGNIZE ({PO} MEASURES CLASSIFIER(U) AS cu, "
         "FINAL CLASSIFIER(U) AS fcu, CLASSIFIER(B) AS cb ALL ROWS PER MATCH PATTERN (A B+ C) "
         f"SUBSET U = (A, C) {ABCU})",
         [("p", 1, "A", "C", None, "a", 1), ("p", 2, "A", "C", "B", "b", 2),
          ("p", 3, "A", "C", "B", "b", 3), ("p", 4, "C", "C", "B", "c", 4)]),
    # Trino: "Pattern navigation functions require at least one column reference or
    # classifier function inside of their first argument"; PREV/NEXT move physically from
    # the logical position, and a row outside the match has no label (NULL).
    Case("navigation_around_classifier_one_row", stream("a1 b2 b3 c4"),
         _mr(f"{PO} MEASURES FIRST(CLASSIFIER()) AS f, LAST(CLASSIFIER(), 1) AS l1, "
             "PREV(CLASSIFIER()) AS pv, NEXT(FIRST(CLASSIFIER())) AS n, "
             "PREV(FIRST(CLASSIFIER())) AS pf, LAST(CLASSIFIER(B), 1) AS lb1 "
             f"PATTERN (A B+ C) {ABC}"), [("p", "A", "B", "B", "B", None, "B")]),
    Case("navigation_around_classifier_all_rows", stream("a1 b2 c3"),
         _mr(f"{PO} MEASURES PREV(CLASSIFIER()) AS pv, NEXT(CLASSIFIER()) AS nx, "
             "FINAL NEXT(FIRST(CLASSIFIER())) AS fn, "
             "LAST(CLASSIFIER() || '-' || MATCH_NUMBER()) AS lm "
             f"ALL ROWS PER MATCH PATTERN (A B C) {ABC}"),
         [("p", 1, None, None, "B", "A-1", "a", 1), ("p", 2, "A", None, "B", "B-1", "b", 2),
          ("p", 3, "B", None, "B", "C-1", "c", 3)]),
    # The standard: a DEFINE reads CLASSIFIER(U) of the match so far (the row tested is the
    # variable being defined): C only after a B, not after an A.
    Case("classifier_of_a_subset_in_define", stream("a1 b2 c3 a4 c5"),
         "SELECT * FROM input MATCH_RECOGNIZE (" + PO + " MEASURES COUNT(*) AS n "
         "PATTERN ((A | B)+ C) SUBSET U = (A, B) DEFINE A AS v = 'a', B AS v = 'b', "
         "C AS v = 'c' AND CLASSIFIER(U) = 'B')", [("p", 3)]),
    # Trino: "a row can be mapped to different variables in different matches, depending on
    # ... the match number": match k may take k rows.
    Case("match_number_in_define", stream("a1 a2 a3 a4 a5 a6"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, COUNT(*) AS n PATTERN (A+) "
             "DEFINE A AS COUNT(*) <= MATCH_NUMBER()"),
         [("p", 1, 1), ("p", 2, 2), ("p", 3, 3)]),
    # Trino's "Aggregate functions": any aggregate, arguments read one variable (or the
    # match), CLASSIFIER() and MATCH_NUMBER() inside; array_agg in the match's order.
    Case("every_spark_aggregate_one_row", stream("a4 b2 b6 c3"),
         _mr(f"{PO} MEASURES collect_list(x) AS xs, array_agg(CLASSIFIER()) AS cls, "
             "max_by(B.ts, B.x) AS tmax, min_by(CLASSIFIER(), x) AS cmin, "
             "stddev_pop(B.x) AS sd, count_if(x > 3) AS big, any_value(C.v) AS cv, "
             "listagg(v, ',') AS vs, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS med, "
             "bool_and(x > 1) AS allpos, SUM(x * (SELECT 2)) AS s2 "
             f"PATTERN (A B+ C) {ABC}"),
         [("p", [4, 2, 6, 3], ["A", "B", "B", "C"], 3, "B", 2.0, 2, "c", "a,b,b,c", 3.5, True,
           30)]),
    Case("every_spark_aggregate_running_and_final", stream("a4 b2 b6 c3"),
         _mr(f"{PO} MEASURES collect_list(x) AS xs, FINAL collect_list(x) AS fxs, "
             "RUNNING max_by(CLASSIFIER(), x) AS top, stddev_pop(B.x) AS sd, "
             "FINAL percentile_cont(0.5) WITHIN GROUP (ORDER BY B.x DESC) AS mb "
             f"ALL ROWS PER MATCH PATTERN (A B+ C) {ABC}"),
         [("p", 1, [4], [4, 2, 6, 3], "A", None, 4.0, "a", 4),
          ("p", 2, [4, 2], [4, 2, 6, 3], "A", 0.0, 4.0, "b", 2),
          ("p", 3, [4, 2, 6], [4, 2, 6, 3], "B", 2.0, 4.0, "b", 6),
          ("p", 4, [4, 2, 6, 3], [4, 2, 6, 3], "B", 2.0, 4.0, "c", 3)]),
    # A fixed-length pattern whose measures need the matcher's plan (collect_list) and one
    # whose do not (min, count): the same answers either way.
    Case("aggregates_of_a_fixed_length_pattern", stream("a4 b2 c3"),
         _mr(f"{PO} MEASURES collect_list(x) AS xs, MIN(x) AS mn, count(x) AS c "
             f"PATTERN (A B C) {ABC}"), [("p", [4, 2, 3], 2, 3)]),
    # CASE, LIKE, IN, UPPER around references to the match in DEFINE (Trino: DEFINE allows
    # the same expressions as MEASURES).
    Case("case_like_in_around_the_match_in_define", stream("a3 b5 b1 a1 b0 b4"),
         "SELECT * FROM input MATCH_RECOGNIZE (" + PO + " MEASURES COUNT(*) AS n "
         "PATTERN (A B+) DEFINE A AS v = 'a', B AS v LIKE 'b%' AND CASE WHEN FIRST(A.x) > 2 "
         "THEN x > FIRST(A.x) ELSE x < 2 * FIRST(A.x) END AND upper(FIRST(v)) LIKE 'A%' "
         "AND FIRST(A.x) IN (3, 1))", [("p", 2), ("p", 2)]),
    Case("count_if_and_bool_or_in_define", stream("a1 a5 a2 a7 a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) "
             "DEFINE A AS count_if(A.x > 3) <= 1 AND bool_or(A.x < 3)"),
         [("p", 3), ("p", 1)]),
    # The expressions of Trino's "Pattern navigation" and "Aggregation arguments" sections,
    # as written there (totalprice and tax are x here).
    Case("trino_documented_classifier_and_aggregate_arguments", stream("a4 b2 b6 c3"),
         f"SELECT * FROM input MATCH_RECOGNIZE ({PO} MEASURES "
         "LAST(CLASSIFIER() = 'A' OR x > 5) AS l1, LAST(CLASSIFIER(U) = 'A' OR U.x > 5) AS l2, "
         "max_by(CLASSIFIER(A), A.x) AS mb, min_by(1, x) AS one, count(1) AS c1, "
         "count() AS c0, count(A.*) AS ca, array_agg(CLASSIFIER()) AS path "
         f"PATTERN (A B+ C) SUBSET U = (A, B) {ABCU})",
         [("p", False, True, "A", 1, 4, 4, 1, ["A", "B", "B", "C"])]),
    Case("stddev_and_max_by_in_define", stream("a1 a5 a2 a7 a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) "
             "DEFINE A AS stddev_pop(A.x) <= 2 AND max_by(A.ts, A.x) <= 3"), [("p", 3)]),
    # Spark's scalar functions around references to the match in DEFINE: each B stays within
    # twice its running count of A's price (sqrt of a square, power), the first label read
    # through upper and substring. Row 4 (x 19) is 9 from 10, more than 2 * 3.
    Case("scalar_functions_around_the_match_in_define", stream("a10 b12 b9 b19 a3 b4 b2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE A AS v = 'a', "
             "B AS v = 'b' AND sqrt(power(x - FIRST(A.x), 2)) <= 2 * count(B.*) "
             "AND substring(upper(FIRST(v)), 1, 1) = 'A' AND round(FIRST(A.x) / 3.0, 1) > 0"),
         [("p", 3), ("p", 3)]),
    # Time arithmetic in DEFINE: a B at most 2 seconds after its A (ts is the second).
    Case("interval_around_the_match_in_define", stream("a1 b2 b3 b4 a5 b9"),
         "SELECT * FROM (SELECT *, timestamp_seconds(ts) AS t FROM input) MATCH_RECOGNIZE ("
         f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE A AS v = 'a', "
         "B AS v = 'b' AND B.t <= A.t + INTERVAL '2' SECOND AND B.t - A.t < INTERVAL '3' "
         "SECOND)", [("p", 3), ("p", 2)]),
    # Regression: sqlglot wrote log10(x) back as LOG(10, x), which Spark computes as
    # ln(x) / ln(10) = 2.9999999999999996 for 1000, so log10(x) >= 3 missed the first row.
    Case("log10_keeps_its_spark_meaning", stream("a1000 a1 a999 a5"),
         _mr(f"{PO} MEASURES log10(A.x) AS l PATTERN (A B) DEFINE A AS log10(A.x) >= 3, "
             "B AS log10(A.x) >= 3"), [("p", 3.0)]),
    # Aggregates that need every value so far, in DEFINE: no 3 among them, their median at
    # most 5, no value twice (collect_set against count).
    Case("collecting_aggregates_in_define", stream("a1 a2 a3 a9 a4 a4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS "
             "NOT array_contains(collect_list(A.x), 3) AND median(A.x) <= 5 "
             "AND size(collect_set(A.x)) = count(A.*)"),
         [("p", 2), ("p", 1), ("p", 1)]),
    # --- refused, each with our code and a position --------------------------------------
    Case("error_running_before_a_scalar_function", stream("a1"),
         _mr(f"{PO} MEASURES RUNNING upper(v) AS u PATTERN (A) {ABC}"), error="CEP-MR-207"),
    Case("error_navigation_inside_an_aggregate", stream("a1"),
         _mr(f"{PO} MEASURES SUM(PREV(x)) AS s PATTERN (A) {ABC}"), error="CEP-MR-207"),
    Case("error_aggregate_arguments_of_two_variables", stream("a1"),
         _mr(f"{PO} MEASURES max_by(A.x, B.x) AS m PATTERN (A B) {ABC}"), error="CEP-MR-207"),
    Case("error_aggregate_inside_navigation", stream("a1"),
         _mr(f"{PO} MEASURES LAST(SUM(x)) AS m PATTERN (A B) {ABC}"), error="CEP-MR-207"),
    Case("error_grouping_in_measures", stream("a1"),
         _mr(f"{PO} MEASURES grouping(x) AS g PATTERN (A) {ABC}"), error="CEP-MR-207"),
    Case("error_approximate_aggregate_in_define", stream("a1"),
         _mr(f"{PO} PATTERN (A B) DEFINE A AS v = 'a', B AS approx_count_distinct(A.x) > 1"),
         error="CEP-MR-205"),
    Case("error_classifier_of_an_unknown_variable", stream("a1"),
         _mr(f"{PO} MEASURES CLASSIFIER(Z) AS z PATTERN (A) {ABC}"), error="CEP-MR-201"),
    Case("error_prev_mixing_classifier_and_columns", stream("a1"),
         _mr(f"{PO} MEASURES PREV(CLASSIFIER() || v) AS z PATTERN (A) {ABC}"),
         error="CEP-MR-205"),
    Case("error_ignore_nulls", stream("a1"),
         _mr(f"{PO} MEASURES first_value(x) IGNORE NULLS AS z PATTERN (A) {ABC}"),
         error="CEP-MR-205"),
]


CASES: list[Case] = [
    # --- ONE ROW PER MATCH, numbering, partitions -------------------------------------------
    Case("one_row_per_match", stream("a1 b2 b3 c4 a5 b6 c7"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, LAST(C.ts) AS e, COUNT(*) AS n, "
             f"MATCH_NUMBER() AS m PATTERN (A B+ C) {ABC}"),
         [("p", 1, 4, 4, 1), ("p", 5, 7, 3, 2)]),
    Case("numbering_per_partition", stream("k1: a1 b2 c3 a4 b5 c6 | k2: a1 b2 c3"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, FIRST(A.ts) AS s PATTERN (A B C) {ABC}"),
         [("k1", 1, 1), ("k1", 2, 4), ("k2", 1, 1)]),
    Case("no_partition_by", [("k1", 1, "a", 1), ("k1", 2, "b", 2), ("k2", 3, "a", 3),
                             ("k2", 4, "b", 4)],
         _mr(f"ORDER BY ts MEASURES MATCH_NUMBER() AS m, LAST(B.ts) AS e PATTERN (A B) {ABC}"),
         [(1, 2), (2, 4)]),
    Case("one_row_is_default", stream("a1 b2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B) {ABC}"), [("p", 2)]),
    Case("no_match_across_a_row_no_variable_accepts", stream("a1 z2 b3 a4 b5"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, FIRST(A.ts) AS s PATTERN (A B) {ABC}"),
         [("p", 1, 4)]),
    Case("no_match_across_partitions_after_dropped_rows", stream("k1: z1 a2 | k2: z1 z2 b3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s PATTERN (A B) {ABC}"), []),
    Case("numbering_across_dropped_rows", stream("k1: a1 b2 z3 z4 a5 b6 | k2: z1 a2 b3"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m, FIRST(A.ts) AS s PATTERN (A B) {ABC}"),
         [("k1", 1, 1), ("k1", 2, 5), ("k2", 1, 2)]),
    # --- quantifiers: greedy, reluctant, bounds ---------------------------------------------
    Case("greedy_star", stream("a1 b2 b3 b4"),
         _mr(f"{PO} MEASURES COUNT(B.*) AS nb PATTERN (A B*) {ABC}"), [("p", 3)]),
    Case("reluctant_star", stream("a1 b2 b3 b4"),
         _mr(f"{PO} MEASURES COUNT(B.*) AS nb PATTERN (A B*?) {ABC}"), [("p", 0)]),
    Case("reluctant_star_needs_more", stream("a1 b2 b3 c4"),
         _mr(f"{PO} MEASURES COUNT(B.*) AS nb PATTERN (A B*? C) {ABC}"), [("p", 2)]),
    Case("greedy_plus_leaves_one", stream("a1 a2 a3 a4"),
         _mr(f"{PO} MEASURES COUNT(A.*) AS na, COUNT(B.*) AS nb PATTERN (A+ B) "
             "DEFINE A AS x > 0, B AS x > 0"), [("p", 3, 1)]),
    Case("reluctant_plus", stream("a1 a2 a3 a4"),
         _mr(f"{PO} MEASURES COUNT(A.*) AS na PATTERN (A+? B) DEFINE A AS x > 0, B AS x > 0"),
         [("p", 1), ("p", 1)]),
    Case("exactly_two", stream("a1 a2 a3 a4 a5"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n PATTERN (A{{2}}) {ABC}"),
         [("p", 1, 2), ("p", 3, 2)]),
    Case("two_or_more", stream("a1 a2 a3 a4 a5"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n PATTERN (A{{2,}}) {ABC}"),
         [("p", 1, 5)]),
    Case("at_most_two", stream("a1 a2 a3 a4 a5"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n PATTERN (A{{,2}}) {ABC}"),
         [("p", 1, 2), ("p", 3, 2), ("p", 5, 1)]),
    Case("two_to_three", stream("a1 a2 a3 a4 a5"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n PATTERN (A{{2,3}}) {ABC}"),
         [("p", 1, 3), ("p", 4, 2)]),
    Case("two_to_three_reluctant", stream("a1 a2 a3 a4"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n PATTERN (A{{2,3}}?) {ABC}"),
         [("p", 1, 2), ("p", 3, 2)]),
    Case("optional_greedy", stream("a1 b2"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, CLASSIFIER() AS c PATTERN (A? B) "
             "DEFINE A AS v = 'a', B AS x > 0"), [("p", 1, "B")]),
    Case("optional_reluctant", stream("a1 b2"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s, CLASSIFIER() AS c PATTERN (A?? B) "
             "DEFINE A AS v = 'a', B AS x > 0"), [("p", 1, "B"), ("p", 2, "B")]),
    Case("undefined_variable_is_true", stream("a1 z2 z3 b4"),
         _mr(f"{PO} MEASURES COUNT(X.*) AS nx PATTERN (A X* B) DEFINE A AS v = 'a', "
             "B AS v = 'b'"), [("p", 2)]),
    # --- alternation, PERMUTE, grouping -----------------------------------------------------
    Case("alternation_prefers_left", stream("b1 c2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (B | B C) {ABC}"), [("p", 1)]),
    Case("alternation_left_is_longer", stream("b1 c2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (B C | B) {ABC}"), [("p", 2)]),
    Case("permute_listed_order_first", stream("a1 a2"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS a PATTERN (PERMUTE(A, B)) "
             "DEFINE A AS x > 0, B AS x > 0"), [("p", 1)]),
    Case("permute_other_order", stream("a1 a2"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS a PATTERN (PERMUTE(B, A)) "
             "DEFINE A AS x > 0, B AS x > 0"), [("p", 2)]),
    Case("permute_finds_any_order", stream("b1 a2 c3"),
         _mr(f"{PO} MEASURES CLASSIFIER() AS c, FIRST(B.ts) AS b PATTERN (PERMUTE(A, B) C) "
             f"{ABC}"), [("p", "C", 1)]),
    Case("grouped_repetition", stream("a1 b2 a3 b4 c5"),
         _mr(f"{PO} MEASURES COUNT(A.*) AS na, LAST(C.ts) AS e PATTERN ((A B)+ C) {ABC}"),
         [("p", 2, 5)]),
    Case("permute_three_lexicographic", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS a, FIRST(B.ts) AS b, FIRST(C.ts) AS c "
             "PATTERN (PERMUTE(A, B, C)) DEFINE A AS x > 0, B AS x > 0, C AS x > 0"),
         [("p", 1, 2, 3)]),
    Case("permute_of_a_group", stream("b1 c2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS a PATTERN (PERMUTE(A, (B C))) {ABC}"), [("p", 3)]),
    Case("alternation_under_kleene", stream("a1 b2 a3 c4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN ((A | B)+ C) {ABC}"), [("p", 4)]),
    Case("empty_alternative_preferred", stream("a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (() | A) {ABC}"), [("p", 0)]),
    Case("reluctant_group_takes_what_it_needs", stream("a1 b2 a3 b4 c5"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN ((A B)+? C) {ABC}"), [("p", 5)]),
    Case("classifier_in_an_expression", stream("a1 b2"),
         _mr(f"{PO} MEASURES lower(CLASSIFIER()) AS c PATTERN (A B) {ABC}"), [("p", "b")]),
    Case("overlapping_matches_all_rows", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW "
             f"PATTERN (A A) {ABC}"),
         [("p", 1, 1, "a", 1), ("p", 2, 1, "a", 2), ("p", 2, 2, "a", 2), ("p", 3, 2, "a", 3)]),
    # --- anchors ------------------------------------------------------------------------------
    Case("anchor_inside_alternation", stream("b1 a2 b3"),
         _mr(f"{PO} MEASURES FIRST(ts) AS s PATTERN (^ A | B) {ABC}"), [("p", 1), ("p", 3)]),
    Case("anchor_start", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s PATTERN (^ A) {ABC}"), [("p", 1)]),
    Case("anchor_end", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s PATTERN (A $) {ABC}"), [("p", 3)]),
    Case("anchors_both", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s PATTERN (^ A $) {ABC}"), []),
    Case("anchor_per_partition", stream("k1: a1 a2 | k2: a1"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s PATTERN (^ A) {ABC}"), [("k1", 1), ("k2", 1)]),
    # --- empty matches, output modes --------------------------------------------------------
    Case("empty_matches_one_row", stream("b1 a2 a3 b4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, CLASSIFIER() AS c, MATCH_NUMBER() AS m "
             f"PATTERN (A*) {ABC}"),
         [("p", 0, None, 1), ("p", 2, "A", 2), ("p", 0, None, 3)]),
    Case("empty_pattern", stream("a1 a2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, MATCH_NUMBER() AS m PATTERN (()) {ABC}"),
         [("p", 0, 1), ("p", 0, 2)]),
    Case("all_rows_show_empty", stream("b1 a2 a3 b4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, MATCH_NUMBER() AS m, CLASSIFIER() AS c "
             f"ALL ROWS PER MATCH PATTERN (A*) {ABC}"),
         [("p", 1, 0, 1, None, "b", 1), ("p", 2, 1, 2, "A", "a", 2),
          ("p", 3, 2, 2, "A", "a", 3), ("p", 4, 0, 3, None, "b", 4)]),
    Case("all_rows_show_empty_explicit", stream("b1 a2"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH SHOW EMPTY MATCHES "
             f"PATTERN (A*) {ABC}"), [("p", 1, 1, "b", 1), ("p", 2, 2, "a", 2)]),
    Case("all_rows_omit_empty", stream("b1 a2 a3 b4"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH OMIT EMPTY MATCHES "
             f"PATTERN (A*) {ABC}"), [("p", 2, 2, "a", 2), ("p", 3, 2, "a", 3)]),
    Case("all_rows_with_unmatched", stream("c1 a2 b3 c4"),
         _mr(f"{PO} MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH WITH UNMATCHED ROWS "
             f"PATTERN (A B) {ABC}"),
         [("p", 1, None, "c", 1), ("p", 2, 1, "a", 2), ("p", 3, 1, "b", 3),
          ("p", 4, None, "c", 4)]),
    Case("exclusion_hides_rows", stream("a1 b2 c3"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, CLASSIFIER() AS c ALL ROWS PER MATCH "
             f"PATTERN (A {{- B -}} C) {ABC}"),
         [("p", 1, 1, "A", "a", 1), ("p", 3, 3, "C", "c", 3)]),
    Case("exclusion_counts_in_one_row", stream("a1 b2 c3"),
         _mr(f"{PO} MEASURES COUNT(*) AS n, COUNT(B.*) AS nb PATTERN (A {{- B -}} C) {ABC}"),
         [("p", 3, 1)]),
    Case("all_rows_classifier", stream("a1 b2 c3"),
         _mr(f"{PO} MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A B C) {ABC}"),
         [("p", 1, "A", "a", 1), ("p", 2, "B", "b", 2), ("p", 3, "C", "c", 3)]),
    # --- AFTER MATCH SKIP ------------------------------------------------------------------
    Case("skip_past_last_row", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s AFTER MATCH SKIP PAST LAST ROW "
             f"PATTERN (A A) {ABC}"), [("p", 1)]),
    Case("skip_to_next_row", stream("a1 a2 a3"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s AFTER MATCH SKIP TO NEXT ROW "
             f"PATTERN (A A) {ABC}"), [("p", 1), ("p", 2)]),
    Case("skip_to_first", stream("a1 b2 b3 a4 b5"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n AFTER MATCH SKIP TO FIRST B "
             "PATTERN (A B+) DEFINE A AS x > 0, B AS v = 'b'"),
         [("p", 1, 3), ("p", 2, 2), ("p", 4, 2)]),
    Case("skip_to_last", stream("a1 b2 b3 a4 b5"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n AFTER MATCH SKIP TO LAST B "
             "PATTERN (A B+) DEFINE A AS x > 0, B AS v = 'b'"), [("p", 1, 3), ("p", 4, 2)]),
    Case("skip_to_variable_is_last", stream("a1 b2 b3 a4 b5"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s, COUNT(*) AS n AFTER MATCH SKIP TO B "
             "PATTERN (A B+) DEFINE A AS x > 0, B AS v = 'b'"), [("p", 1, 3), ("p", 4, 2)]),
    Case("skip_to_subset", stream("a1 b2 c3 a4 b5 c6"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS s AFTER MATCH SKIP TO FIRST U "
             "PATTERN (A B C) SUBSET U = (B, C) DEFINE A AS x > 0, B AS x > 0, C AS x > 0"),
         [("p", 1), ("p", 2), ("p", 3), ("p", 4)]),
    Case("skip_to_first_row_loops", stream("a1 b2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n AFTER MATCH SKIP TO A PATTERN (A B) {ABC}"),
         error="CEP-MR-203"),
    Case("skip_to_unmatched_variable", stream("a1 c2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n AFTER MATCH SKIP TO B PATTERN (A B? C) {ABC}"),
         error="CEP-MR-204"),
    # --- navigation and aggregates ----------------------------------------------------------
    Case("running_and_final", stream("a1 b5 b7"),
         _mr(f"{PO} MEASURES LAST(B.x) AS run_b, FINAL LAST(B.x) AS fin_b, "
             "RUNNING COUNT(*) AS rn, FINAL COUNT(*) AS fn ALL ROWS PER MATCH "
             f"PATTERN (A B+) {ABC}"),
         [("p", 1, None, 7, 1, 3, "a", 1), ("p", 2, 5, 7, 2, 3, "b", 5),
          ("p", 3, 7, 7, 3, 3, "b", 7)]),
    Case("logical_offsets", stream("a1 b5 b7 b9 b11"),
         _mr(f"{PO} MEASURES FIRST(B.x, 1) AS fb1, LAST(B.x, 1) AS lb1, LAST(B.x, 5) AS nope, "
             f"FIRST(x) AS f PATTERN (A B+) {ABC}"), [("p", 7, 9, None, 1)]),
    Case("column_means_last_row", stream("a1 b5 b7"),
         _mr(f"{PO} MEASURES B.x AS bx, x AS lx, A.x AS ax PATTERN (A B+) {ABC}"),
         [("p", 7, 7, 1)]),
    Case("prev_with_offset_in_define", stream("a1 a3 a2 a5 a4 a9"),
         _mr(f"{PO} MEASURES FIRST(B.ts) AS t PATTERN (B) DEFINE B AS x > PREV(x, 2)"),
         [("p", 3), ("p", 4), ("p", 5), ("p", 6)]),
    Case("next_in_define", stream("a1 a3 a2 a5 a4 a9"),
         _mr(f"{PO} MEASURES FIRST(A.ts) AS t, COUNT(*) AS n PATTERN (A+) "
             "DEFINE A AS x < NEXT(x)"), [("p", 1, 1), ("p", 3, 1), ("p", 5, 1)]),
    Case("prev_next_reach_outside_match", stream("a1 b3 a2 b5"),
         _mr(f"{PO} MEASURES PREV(FIRST(A.x)) AS before, NEXT(LAST(B.x)) AS after "
             f"PATTERN (A B) {ABC}"), [("p", None, 2), ("p", 3, None)]),
    Case("prev_of_qualified_column", stream("a1 b3 b2 c7"),
         _mr(f"{PO} MEASURES PREV(B.x, 1) AS pb PATTERN (A B+ C) {ABC}"), [("p", 3)]),
    Case("aggregates", stream("a2 b3 b5 c4"),
         _mr(f"{PO} MEASURES SUM(B.x) AS sb, AVG(B.x) AS ab, MIN(x) AS mn, MAX(x) AS mx, "
             "COUNT(B.x) AS cb, SUM(U.x) AS su PATTERN (A B+ C) SUBSET U = (A, C) "
             f"{ABC}"), [("p", 8, 4.0, 2, 5, 2, 6)]),
    Case("subset_navigation", stream("a1 b2 c3"),
         _mr(f"{PO} MEASURES LAST(U.ts) AS lu, FIRST(U.ts) AS fu PATTERN (A B C) "
             f"SUBSET U = (A, B) {ABC}"), [("p", 2, 1)]),
    Case("measure_arithmetic", stream("a10 b7 b4 c8"),
         _mr(f"{PO} MEASURES FIRST(A.x) - LAST(B.x) AS fall, LAST(C.x) - LAST(B.x) AS rise "
             f"PATTERN (A B+ C) {ABC}"), [("p", 6, 4)]),
    Case("v_shape", stream("a10 a8 a6 a7 a9 a5"),
         _mr(f"{PO} MEASURES FIRST(A.x) AS start_x, LAST(B.x) AS bottom, LAST(C.x) AS top "
             "PATTERN (A B+ C+) DEFINE B AS x < PREV(x), C AS x > PREV(x)"),
         [("p", 10, 6, 9)]),
    # --- our WITHIN extension: last row less than the span after the first -----------------
    Case("within_units", stream("a1 b2 b3 b4 c5"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+ C) WITHIN 5 UNITS {ABC}"), [("p", 5)]),
    Case("within_units_too_short", stream("a1 b2 b3 b4 c5"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+ C) WITHIN 4 UNITS {ABC}"), []),
    Case("within_stops_greedy", stream("a1 b2 b3 b4"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B+) WITHIN 3 UNITS {ABC}"), [("p", 3)]),
    Case("within_minutes", stream("a1 b2 b3 c4 a5 b9 c10"),
         "SELECT * FROM (SELECT p, timestamp_seconds(x * 60) AS t, v, x FROM input) "
         "MATCH_RECOGNIZE (PARTITION BY p ORDER BY t MEASURES FIRST(A.x) AS ax PATTERN (A B+ C) "
         "WITHIN INTERVAL '4' MINUTES DEFINE A AS v = 'a', B AS v = 'b', C AS v = 'c')",
         [("p", 1)]),
    Case("within_needs_a_time_column", stream("a1 b2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B) WITHIN 3 MINUTES {ABC}"),
         error="CEP-MR-205"),
    Case("error_within_descending", stream("a1"),
         _mr(f"PARTITION BY p ORDER BY ts DESC PATTERN (A) WITHIN 3 UNITS {ABC}"),
         error="CEP-MR-205"),
    # --- NULLs and order --------------------------------------------------------------------
    Case("null_in_define_is_false", stream("a1 a? a3"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS x > 0"),
         [("p", 1), ("p", 1)]),
    Case("null_order_first_by_default", [("p", None, "a", 1), ("p", 1, "b", 2)],
         _mr(f"{PO} MEASURES FIRST(A.x) AS ax PATTERN (A B) {ABC}"), [("p", 1)]),
    Case("nulls_last", [("p", None, "a", 1), ("p", 1, "b", 2)],
         _mr(f"PARTITION BY p ORDER BY ts NULLS LAST MEASURES FIRST(A.x) AS ax "
             f"PATTERN (A B) {ABC}"), []),
    Case("descending_order", stream("a1 b2"),
         _mr(f"PARTITION BY p ORDER BY ts DESC MEASURES FIRST(B.ts) AS b PATTERN (B A) {ABC}"),
         [("p", 2)]),
    # --- the result is a table --------------------------------------------------------------
    Case("aggregate_over_matches", stream("a1 b2 a3 b4 a5"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B) {ABC}", "count(*) AS n_matches"),
         [(2,)]),
    Case("join_and_cte", stream("a1 b2 a3 b4"),
         "WITH m AS (" + _mr(f"{PO} MEASURES FIRST(A.ts) AS s PATTERN (A B) {ABC}") +
         " AS r) SELECT m.s, i.v FROM m JOIN input i ON i.p = m.p AND i.ts = m.s + 1",
         [(1, "b"), (3, "b")]),
    Case("two_clauses_in_one_statement", stream("a1 b2"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A B) {ABC}") + " UNION ALL " +
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A) {ABC}"), [("p", 2), ("p", 1)]),
    Case("clause_over_a_clause", stream("a1 b2 a3 b4 a5 c6"),
         "SELECT * FROM (" + _mr(f"{PO} MEASURES FIRST(A.ts) AS ts, 'a' AS v "
                                 f"PATTERN (A B) {ABC}") +
         ") MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts MEASURES COUNT(*) AS n "
         "PATTERN (A+) DEFINE A AS v = 'a')", [("p", 2)]),
    # --- errors with a position, before anything runs -----------------------------------------
    Case("error_double_quantifier", stream("a1"),
         _mr(f"{PO} PATTERN (A{{2}}{{3}}) {ABC}"), error="CEP-MR-106"),
    Case("error_unknown_define", stream("a1"),
         _mr(f"{PO} PATTERN (A) DEFINE Z AS x > 0"), error="CEP-MR-201"),
    Case("error_unknown_variable_in_measure", stream("a1"),
         _mr(f"{PO} MEASURES LAST(Z.x) AS z PATTERN (A) {ABC}"), error="CEP-MR-201"),
    Case("error_exclusion_with_unmatched", stream("a1"),
         _mr(f"{PO} ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A {{- B -}}) {ABC}"),
         error="CEP-MR-206"),
    Case("error_huge_automaton", stream("a1"),
         _mr(f"{PO} PATTERN ((A{{1000}}){{1000}}) {ABC}"), error="CEP-MR-003"),
    Case("error_missing_pattern", stream("a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n {ABC}"), error="CEP-MR-107"),
    Case("error_measure_without_name", stream("a1"),
         _mr(f"{PO} MEASURES COUNT(*) PATTERN (A) {ABC}"), error="CEP-MR-107"),
    Case("error_subset_clash", stream("a1"),
         _mr(f"{PO} PATTERN (A B) SUBSET A = (B) {ABC}"), error="CEP-MR-202"),
    Case("error_final_in_define", stream("a1"),
         _mr(f"{PO} PATTERN (A B) DEFINE A AS x > 0, B AS x > FINAL LAST(A.x)"),
         error="CEP-MR-207"),
    Case("error_unsupported_function_around_navigation", stream("a1"),
         _mr(f"{PO} PATTERN (A B) DEFINE B AS cbrt(A.x) > 1"), error="CEP-MR-205"),
    Case("error_zero_repetitions", stream("a1 b2"),
         _mr(f"{PO} PATTERN (A{{0}} B) {ABC}"), error="CEP-MR-105"),
    Case("error_distinct_in_measures", stream("a1"),
         _mr(f"{PO} MEASURES COUNT(DISTINCT x) AS d PATTERN (A) {ABC}"), error="CEP-MR-205"),
    Case("error_distinct_in_define", stream("a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS COUNT(DISTINCT A.x) <= 1"),
         error="CEP-MR-205"),
    *DEFINE_READS_MATCH,
    *MORE_CASES,
    *DOCUMENTED_CASES,
    *STANDARD_CASES,
]
