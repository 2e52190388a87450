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
    Case("error_match_number_in_define", stream("a1"),
         _mr(f"{PO} PATTERN (A B) DEFINE A AS x > 0, B AS MATCH_NUMBER() = 1"),
         error="CEP-MR-205"),
    Case("error_final_in_define", stream("a1"),
         _mr(f"{PO} PATTERN (A B) DEFINE A AS x > 0, B AS x > FINAL LAST(A.x)"),
         error="CEP-MR-207"),
    Case("error_unsupported_function_around_navigation", stream("a1"),
         _mr(f"{PO} PATTERN (A B) DEFINE B AS sqrt(A.x) > 1"), error="CEP-MR-205"),
    Case("error_zero_repetitions", stream("a1 b2"),
         _mr(f"{PO} PATTERN (A{{0}} B) {ABC}"), error="CEP-MR-105"),
    Case("error_distinct_in_measures", stream("a1"),
         _mr(f"{PO} MEASURES COUNT(DISTINCT x) AS d PATTERN (A) {ABC}"), error="CEP-MR-205"),
    Case("error_distinct_in_define", stream("a1"),
         _mr(f"{PO} MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS COUNT(DISTINCT A.x) <= 1"),
         error="CEP-MR-205"),
    *DEFINE_READS_MATCH,
    *MORE_CASES,
]
