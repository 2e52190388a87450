"""``match_prob`` through ``spark.sql`` against the possible-worlds oracle, on random batches
(issue 47).

Each batch holds a few cases, each a small table of probabilistic streams (one per key: one key
and many, a NULL key as one stream, as ``GROUP BY`` has it, empty cases, streams of one time
point, rows shuffled, explicit zero probabilities, values no pattern names) in the long
(``stream, t, value, p``: the rows that tie on ``t`` are that time point's distribution, in no
order) or the wide (``stream, t, probs``) layout, with the key given positionally, by name (in
another case than the column's) or not at all (the default column ``stream``), default,
explicit or custom column names, and extra columns the call must ignore.
Every call draws its pattern (those the oracle and the core's property tests use), window (the
argument, ``WITHIN n EVENTS`` or both), overlap, output, threshold (0 too, and values a match
can hit exactly), transducer mode and tolerance, each in several SQL spellings; each batch its
key type (every scalar kind, DOUBLE and FLOAT with -0.0 and NaN), time point type (every
integer type and DECIMAL(p, 0), near the type's ends too), probability type (DOUBLE, FLOAT,
DECIMAL) and Arrow batch and shuffle sizes. A batch is one ``UNION ALL`` statement; every
case's groups (span, core, member count, probability) or matches (id, span, values,
probability) must be those of :mod:`cep.oracles.prob_oracle`, which enumerates every possible
world. Probabilities are sixteenths (every product and sum exact, so a match can lie exactly on
the threshold) or tenths (thresholds no product of tenths can equal); compared to 1e-9
relative (1e-6 for tenths in a FLOAT column). The harness is :mod:`tests.sql_fuzz`; the
streams, views and rows of this function are built here (its batches are event tables).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cep.lang import parse_pattern
from cep.lang.validate import checked_classes
from cep.oracles.prob_oracle import oracle_group_probability, oracle_groups, oracle_matches
from cep.prob import compile_prob
from cep.prob.stream import ProbStream
from sql_ext.quoting import sql_string
from tests.sql_fuzz import SQL_FUZZ, case_table, rows_by_case, session_conf, union_sql

PATTERNS = [  # tests/cep/prob (property tests, the paper's sections) and tests/udfs/test_match_prob
    "PATTERN a, b+, c", "PATTERN a, b*, c", "PATTERN a+", "PATTERN a, b?, c{1,2}",
    "PATTERN b{2}, c", "PATTERN a, b+, c DEFINE b AS value IN ('b', 'd')", "PATTERN a, a+",
    "PATTERN x, b+ DEFINE x AS value IN ('a', 'b')", "PATTERN b, c{2,}, b", "PATTERN a, b, c",
    "PATTERN a, a, b", "PATTERN a+, b", "PATTERN a, b?, c{2}", "PATTERN a*, b+",
    "PATTERN x, c+ DEFINE x AS value IN ('a', 'b')",
    "PATTERN q, b* DEFINE q AS value = 'd''x'",  # a quote in the pattern and in the data
]
VALUES = ("a", "b", "c", "d", "d'x")  # "d" and "d'x" only where a DEFINE names them
COMMON = ("a", "b", "c", "a", "b", "c", "d", "a", "b", "c", "d'x")  # what patterns name: often
MAX_WORLDS = 512  # per stream: the oracle enumerates them (for each group again, over its span)

KEY_TYPES: dict[str, tuple[Any, ...]] = {
    # the values of keys 0, 1, 2 per type; a tuple of values is one key written several ways,
    # which SQL takes as equal (GROUP BY gives one group): -0.0 and 0.0, NaN with either sign
    "STRING": ("", "it's", "\u00e9 2"),  # the empty string is a key, not NULL
    "BINARY": (b"k0", b"", b"\x00\xff"),
    "INT": (0, -7, 2_147_483_647),
    "BIGINT": (-9_223_372_036_854_775_808, 1, 42),
    "SMALLINT": (3, -32_768, 0),
    "BOOLEAN": (True, False, None),  # two keys only (and NULL)
    "DECIMAL(6,2)": (Decimal("0.00"), Decimal("-1.50"), Decimal("9999.99")),
    "DATE": (date(2024, 1, 1), date(1969, 12, 31), date(9999, 12, 31)),
    "TIMESTAMP_NTZ": (datetime(2024, 1, 1), datetime(2024, 1, 1, 0, 0, 0, 1), datetime(1900, 1, 1)),
    "TIMESTAMP": tuple(datetime(*ymdh, tzinfo=timezone.utc)
                       for ymdh in ((2024, 1, 1, 0), (1970, 1, 1, 0), (2024, 3, 31, 1))),
    "DOUBLE": ((0.0, -0.0), (math.nan, -math.nan), 1.5),
    "FLOAT": ((0.0, -0.0), (math.nan, -math.nan), -2.25),
}
T_TYPES: dict[str, tuple[int, int]] = {  # the documented integer types, and DECIMAL(p, 0)
    "TINYINT": (-128, 127), "SMALLINT": (-32_768, 32_767), "INT": (-2**31, 2**31 - 1),
    "BIGINT": (-2**63, 2**63 - 1), "DECIMAL(12,0)": (-10**12 + 1, 10**12 - 1),
}
P_TYPES = ("DOUBLE", "FLOAT", "DECIMAL(5,4)")
CUSTOM = {"t_col": "Time", "value_col": "val", "p_col": "prob", "probs_col": "dist"}
DEFAULT = {"t_col": "t", "value_col": "value", "p_col": "p", "probs_col": "probs"}
ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"
SHUFFLE = "spark.sql.shuffle.partitions"


def _compiles(text: str) -> bool:
    compile_prob(text)  # a pattern the core refuses is a mistake in this list: fail loudly
    return True


assert all(_compiles(p) and _compiles(f"{p} WITHIN 3 EVENTS") for p in PATTERNS)


@dataclass(frozen=True)
class Stream:
    """One key's stream: the key (an index into the key type's values, None: NULL), its first
    time point and one distribution per time point (value, probability; zeros too)."""

    key: int | None
    t0: int
    dists: tuple[tuple[tuple[str, Fraction], ...], ...]


@dataclass(frozen=True)
class Case:
    """One call: its streams and every argument as the SQL text writes it."""

    streams: tuple[Stream, ...]
    layout: str  # "long" or "wide"
    key_form: str  # "default" (no key_col: the column stream), "positional" or "named"
    key_column: str  # the key column's name in the case's table
    key_arg: str  # what key_col says (another case of the column's name at times)
    names: str  # "default", "explicit" (the defaults, given) or "custom"
    extra: bool  # extra columns the call must not read (the case id; a STRING "probs")
    named_style: bool  # every argument by name, in a drawn order, some names upper case
    pattern: str
    window: int
    window_form: str  # "arg", "within" or "both"
    window_sql: str
    overlap: str | None  # as written; None: omitted
    output: str | None
    threshold: float
    threshold_sql: str | None
    mode: str | None
    tolerance_sql: str | None
    order: tuple[int, ...]  # the order of the named arguments

    @property
    def text(self) -> str:
        """The pattern as the call passes it."""
        return self.pattern + (f" WITHIN {self.window} EVENTS" if self.window_form != "arg" else "")

    @property
    def matches(self) -> bool:
        return (self.output or "groups").lower() == "matches"


@dataclass(frozen=True)
class Batch:
    cases: tuple[Case, ...]
    key_type: str
    t_type: str
    p_type: str
    grid: int  # 16 (exact binary fractions) or 10
    arrow_batch: str | None
    shuffle: str | None


def stored(p: Fraction, p_type: str) -> float:
    """The probability Spark hands the function: a FLOAT column rounds it to single precision,
    a DECIMAL one is exact and read as the nearest double."""
    return float(np.float32(float(p))) if p_type == "FLOAT" else float(p)


def key_value(batch: Batch, key: int | None, which: int = 0) -> Any:
    """The key as a row of the table holds it (``which`` picks one of its spellings)."""
    if key is None:
        return None
    value = KEY_TYPES[batch.key_type][key]
    return value[which % len(value)] if isinstance(value, tuple) else value


def same_key(value: Any, key_type: str) -> Any:
    """A key as GROUP BY compares it (NaN equals NaN, -0.0 equals 0.0 already); a TIMESTAMP
    as an instant in UTC (PySpark collects it as a naive local time)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, bytearray):  # BINARY comes back as bytearray, which has no hash
        return bytes(value)
    if key_type == "TIMESTAMP" and value is not None:
        return value.astimezone(timezone.utc)  # a naive time is taken as local
    return value


@st.composite
def distributions(draw: st.DrawFn, grid: int, worlds: int) -> tuple[tuple[str, Fraction], ...]:
    """One time point: 1 to 3 values with positive probabilities summing to exactly 1 (fewer when
    the stream already has ``worlds`` possible worlds) and, at times, a value of probability 0."""
    size = draw(st.sampled_from([3, 2, 1, 2, 3]))
    while size > 1 and worlds * size > MAX_WORLDS:
        size -= 1
    # the first values of a shuffle of COMMON (a list drawn value by value leans to its first)
    values = list(dict.fromkeys(draw(st.permutations(COMMON))))[:size]
    cuts = sorted(draw(st.lists(st.integers(1, grid - 1), min_size=size - 1, max_size=size - 1,
                                unique=True)))
    edges = [0, *cuts, grid]
    dist = [(v, Fraction(edges[i + 1] - edges[i], grid)) for i, v in enumerate(values)]
    if draw(st.sampled_from([False, False, False, True])):  # a row (map entry): "impossible"
        dist.append((draw(st.sampled_from([v for v in VALUES if v not in values])), Fraction(0)))
    return tuple(draw(st.permutations(dist)))


@st.composite
def streams(draw: st.DrawFn, key: int | None, t_type: str, grid: int) -> Stream:
    n = draw(st.sampled_from([5, 7, 3, 4, 6, 2, 1]))
    lo, hi = T_TYPES[t_type]
    # near both ends of the type, around 0, anywhere
    t0 = draw(st.sampled_from([-3, draw(st.integers(lo, hi - n + 1)), 0, lo, hi - n + 1]))
    dists: list[tuple[tuple[str, Fraction], ...]] = []
    worlds = 1
    for _ in range(n):
        dists.append(draw(distributions(grid, worlds)))
        worlds *= sum(p > 0 for _, p in dists[-1])
    return Stream(key, t0, tuple(dists))


def literal(draw: st.DrawFn, value: Fraction) -> str:
    """A threshold in one of the SQL spellings the adapter reads (INT, DECIMAL, DOUBLE, FLOAT)."""
    if value.denominator == 1:
        return draw(st.sampled_from([str(value.numerator), f"{value.numerator}.0",
                                     f"{value.numerator}D"]))
    decimal = str(Decimal(value.numerator) / Decimal(value.denominator))
    spellings = [decimal, f"{decimal}D"]
    if value.denominator & (value.denominator - 1) == 0:  # a power of 2: exact as FLOAT too
        spellings.append(f"CAST({decimal} AS FLOAT)")
    return draw(st.sampled_from(spellings))


@st.composite
def cases(draw: st.DrawFn, batch_key_type: str, t_type: str, grid: int) -> Case:
    n_keys = 2 if batch_key_type == "BOOLEAN" else 3
    # an empty case, one key, several (NULL among them at times)
    size = draw(st.sampled_from([2, 1, 3, 2, 1, 0]))
    keys = draw(st.lists(st.sampled_from([*range(n_keys), None]), min_size=size, max_size=size,
                         unique=True))
    chosen = tuple(draw(streams(k, t_type, grid)) for k in keys)
    layout = draw(st.sampled_from(["long", "wide"]))
    key_form = draw(st.sampled_from(["default", "positional", "named"]))
    key_column = "stream" if key_form == "default" else draw(st.sampled_from(["key", "Sensor"]))
    key_arg = draw(st.sampled_from([key_column, key_column.upper()]))
    window = draw(st.sampled_from([4, 6, 3, 5, 2, 4, 6, 1]))
    window_form = draw(st.sampled_from(["arg", "within", "both"]))
    # thresholds: none, 0 in every spelling, 1, small ones that prune some matches: for
    # sixteenths products of sixteenths (a match can lie exactly on them), for tenths values no
    # product of tenths equals (11 and 13 are no product of 1..10)
    positive = ([Fraction(1, 64), Fraction(9, 256), Fraction(1, 16), Fraction(1, 8),
                 Fraction(1, 4), Fraction(1)] if grid == 16 else
                [Fraction(13, 1000), Fraction(11, 1000), Fraction(123, 10000), Fraction(11, 100),
                 Fraction(1)])
    threshold = draw(st.sampled_from([Fraction(0), None, Fraction(0), *positive]))
    # tolerance 0 holds only where each time point sums to exactly 1 in binary: sixteenths
    tolerance = draw(st.sampled_from([None, "1e-3", "0.001", "1e-9"] + (["0"] if grid == 16
                                                                          else [])))
    if tolerance == "1e-9" and grid == 10:
        tolerance = None  # FLOAT tenths sum to 1 within 1e-8 only
    return Case(
        streams=chosen, layout=layout, key_form=key_form, key_column=key_column, key_arg=key_arg,
        names=draw(st.sampled_from(["default", "explicit", "custom"])), extra=draw(st.booleans()),
        named_style=draw(st.booleans()), pattern=draw(st.sampled_from(PATTERNS)), window=window,
        window_form=window_form, window_sql=draw(st.sampled_from(
            [str(window), f"{window}L", f"CAST({window} AS SMALLINT)"])),
        overlap=draw(st.sampled_from([None, "single", "complete", "COMPLETE"])),
        output=draw(st.sampled_from([None, "groups", "matches", "Matches"])),
        threshold=0.0 if threshold is None else float(threshold),
        threshold_sql=None if threshold is None else literal(draw, threshold),
        mode=draw(st.sampled_from([None, "window", "paper", "PAPER"])),
        tolerance_sql=tolerance, order=tuple(draw(st.permutations(range(16)))))


@st.composite
def batches(draw: st.DrawFn) -> Batch:
    key_type = draw(st.sampled_from(list(KEY_TYPES)))
    t_type = draw(st.sampled_from(list(T_TYPES)))
    grid = draw(st.sampled_from([16, 10]))
    # three calls a batch: each is an exchange and Python tasks of its own (~0.5 s)
    return Batch(tuple(draw(cases(key_type, t_type, grid)) for _ in range(3)), key_type, t_type,
                 draw(st.sampled_from(P_TYPES)), grid,
                 draw(st.sampled_from([None, None, "1", "2", "3"])),
                 draw(st.sampled_from([None, "1", "1", "3"])))


def create_views(spark: Any, batch: Batch, data: st.DataObject) -> None:
    """``fuzz_mp_long`` (c, key, t, value, p) and ``fuzz_mp_wide`` (c, key, t, probs): each case's
    rows in its layout's view, shuffled, every key spelling drawn per row."""
    long_rows: list[tuple] = []
    wide_rows: list[tuple] = []

    def p_value(p: Fraction) -> Any:
        if batch.p_type.startswith("DECIMAL"):
            return (Decimal(p.numerator) / Decimal(p.denominator)).quantize(Decimal("0.0001"))
        return float(p)  # Spark rounds a FLOAT column as :func:`stored` does

    def t_value(t: int) -> Any:
        return Decimal(t) if batch.t_type.startswith("DECIMAL") else t

    for case_id, case in enumerate(batch.cases):
        for s in case.streams:
            for i, dist in enumerate(s.dists):
                t = t_value(s.t0 + i)
                if case.layout == "wide":
                    key = key_value(batch, s.key, data.draw(st.integers(0, 1)))
                    wide_rows.append((case_id, key, t, {v: p_value(p) for v, p in dist}))
                    continue
                for v, p in dist:
                    key = key_value(batch, s.key, data.draw(st.integers(0, 1)))
                    long_rows.append((case_id, key, t, v, p_value(p)))
    for rows, columns, view in ((long_rows, "value STRING, p {p}", "fuzz_mp_long"),
                                (wide_rows, "probs MAP<STRING, {p}>", "fuzz_mp_wide")):
        order = data.draw(st.permutations(range(len(rows))))
        spark.createDataFrame([rows[i] for i in order],
                              f"c INT, key {batch.key_type}, t {batch.t_type}, "
                              + columns.format(p=batch.p_type)).createOrReplaceTempView(view)


def sql_call(case_id: int, case: Case) -> tuple[str, str]:
    """The call of one case and the columns its SELECT takes (one shape for every output)."""
    names = CUSTOM if case.names == "custom" else DEFAULT
    key = "`" + case.key_column + "`"
    if case.layout == "long":
        columns = (f"key AS {key}, t AS `{names['t_col']}`, value AS `{names['value_col']}`, "
                   f"p AS `{names['p_col']}`"
                   # a STRING "probs" is no map: the long layout still (default names only)
                   + (", c, 'decoy' AS probs" if case.extra and case.names != "custom" else "")
                   + (", c" if case.extra and case.names == "custom" else ""))
        table = case_table("fuzz_mp_long", case_id, columns)
    else:
        columns = (f"key AS {key}, t AS `{names['t_col']}`, probs AS `{names['probs_col']}`"
                   + (", c, 0.5D AS p" if case.extra else ""))
        table = case_table("fuzz_mp_wide", case_id, columns)
    options: list[tuple[str, str]] = []
    if case.window_form != "within":
        options.append(("window", case.window_sql))
    for name, value in (("overlap", case.overlap), ("output", case.output),
                        ("transducer_mode", case.mode)):
        if value is not None:
            options.append((name, sql_string(value)))
    if case.threshold_sql is not None:
        options.append(("threshold", case.threshold_sql))
    if case.tolerance_sql is not None:
        options.append(("tolerance", case.tolerance_sql))
    if case.names != "default":
        wanted = ("t_col", "probs_col") if case.layout == "wide" else ("t_col", "value_col",
                                                                      "p_col")
        options += [(n, sql_string(names[n])) for n in wanted]
    pattern = sql_string(case.text)
    # A class no value of the case carries is an error (tests/udfs/test_facts_of_other_functions.py);
    # such a case asks for the answer.
    present = {v for st_ in case.streams for dist in st_.dists for v, _ in dist}
    if not set(checked_classes(parse_pattern(case.text))) <= present:
        options.append(("allow_absent", "true"))
    if case.named_style:
        options += [("pattern", pattern), ("pstream", table)]
        if case.key_form != "default":
            options.append(("key_col", sql_string(case.key_arg)))
        ordered = [options[i] for i in case.order if i < len(options)]
        args = [f"{n.upper() if i % 3 == 0 else n} => {v}" for i, (n, v) in enumerate(ordered)]
    else:
        args = [pattern] + ([sql_string(case.key_arg)] if case.key_form == "positional" else [])
        args.append(table)
        if case.key_form == "named":
            options.append(("key_col", sql_string(case.key_arg)))
        args += [f"{n} => {v}" for n, v in options]
    if case.matches:
        shape = (f"{key} AS k, t_start, t_end, probability, CAST(NULL AS BIGINT) AS n_matches, "
                 "CAST(NULL AS BIGINT) AS core_start, CAST(NULL AS BIGINT) AS core_end, "
                 "match_id, `values` AS vals")
    else:
        shape = (f"{key} AS k, t_start, t_end, probability, n_matches, core_start, core_end, "
                 "CAST(NULL AS BIGINT) AS match_id, CAST(NULL AS ARRAY<STRING>) AS vals")
    return f"match_prob({', '.join(args)})", shape


def prob_stream(s: Stream, p_type: str) -> ProbStream:
    """The oracle's stream, built here (not by the core's builders) from what Spark reads."""
    values = tuple(sorted({v for dist in s.dists for v, _ in dist}))
    probs = np.zeros((len(s.dists), len(values)))
    for i, dist in enumerate(s.dists):
        for v, p in dist:
            probs[i, values.index(v)] = stored(p, p_type)
    return ProbStream(np.arange(s.t0, s.t0 + len(s.dists), dtype=np.int64), values, probs)


def oracle(batch: Batch, case: Case) -> dict[tuple, float]:
    """The case's rows by the definitions, as ``row without probability -> probability``: groups
    ``(key, t_start, t_end, n_matches, core_start, core_end)`` (no core for single overlap),
    matches ``(key, match_id, t_start, t_end, values)``."""
    overlap = (case.overlap or "single").lower()
    paper = (case.mode or "window").lower() == "paper"
    out: dict[tuple, float] = {}
    for s in case.streams:
        stream = prob_stream(s, batch.p_type)
        key = same_key(key_value(batch, s.key), batch.key_type)
        found = oracle_matches(case.pattern, stream, window=case.window,
                               threshold=case.threshold)
        if case.matches:
            for match_id, (start, end, values) in enumerate(sorted(found), 1):
                out[(key, match_id, s.t0 + start, s.t0 + end, values)] = found[(start, end, values)]
            continue
        for start, end, core_start, core_end, members in oracle_groups(found, overlap):
            # a group's probability depends on its span only (docs/prob.md): the oracle reads
            # the span alone, which also keeps it small
            span = stream.slice(start, end + 1)
            if paper:
                # the paper's transducer has no window: every match inside the span counts, or
                # for complete overlap every one containing t_f, the earliest member end
                lo, hi = (end, start) if overlap == "single" else (core_end, core_end)
                p = oracle_group_probability(case.pattern, span, window=end - start + 1,
                                             start=0, end=end - start, core_start=lo - start,
                                             core_end=hi - start)
            else:
                p = oracle_group_probability(case.pattern, span, window=case.window, start=0,
                                             end=end - start, core_start=core_start - start,
                                             core_end=core_end - start)
            core = ((s.t0 + core_start, s.t0 + core_end) if overlap == "complete"
                    else (None, None))
            out[(key, s.t0 + start, s.t0 + end, len(members), *core)] = p
    return out


def found_rows(case: Case, rows: list[Any], key_type: str, where: str) -> dict[tuple, float]:
    """The rows of one call as :func:`oracle` gives them (each once)."""
    out: dict[tuple, float] = {}
    for r in rows:
        key = same_key(r.k, key_type)
        row = ((key, r.match_id, r.t_start, r.t_end, tuple(r.vals)) if case.matches
               else (key, r.t_start, r.t_end, r.n_matches, r.core_start, r.core_end))
        assert row not in out, f"{where}: row {row} twice"
        out[row] = r.probability
    return out


def describe(batch: Batch, case: Case) -> str:
    """A case's streams, short enough for an assertion message: ``key@t0[a:1/2 b:1/2, ...]``
    (a key written several ways: its spellings, ``0.0|-0.0``)."""
    def key(k: int | None) -> str:
        value = None if k is None else KEY_TYPES[batch.key_type][k]
        return "|".join(map(repr, value)) if isinstance(value, tuple) else repr(value)

    return "; ".join(f"{key(s.key)}@{s.t0}["
                     + ", ".join(" ".join(f"{v}:{p}" for v, p in d) for d in s.dists) + "]"
                     for s in case.streams) or "(no rows)"


@SQL_FUZZ
@given(batch=batches(), data=st.data())
def test_match_prob_through_sql_equals_the_oracle(spark, batch: Batch,
                                                  data: st.DataObject) -> None:
    create_views(spark, batch, data)
    calls = [sql_call(case_id, case) for case_id, case in enumerate(batch.cases)]
    statement = union_sql(calls)
    with session_conf(spark, {ARROW_BATCH: batch.arrow_batch, SHUFFLE: batch.shuffle}):
        frame = spark.sql(statement)
        rows = frame.collect()
    assert frame.schema["k"].dataType.simpleString() == \
        spark.table("fuzz_mp_long").schema["key"].dataType.simpleString()
    got = rows_by_case(rows, len(batch.cases), lambda r: r)
    # FLOAT tenths sum to 1 within ~1e-7 only, and the oracle's worlds carry that mass: a match's
    # probability there is its product times the other time points' sums
    tolerance = 1e-6 if batch.p_type == "FLOAT" and batch.grid == 10 else 1e-9
    for case_id, case in enumerate(batch.cases):
        where = (f"case {case_id} (key {batch.key_type}, t {batch.t_type}, p {batch.p_type}, "
                 f"arrow batch {batch.arrow_batch}, shuffle {batch.shuffle}) "
                 f"{calls[case_id][0]} [{describe(batch, case)}]")
        want = oracle(batch, case)
        found = found_rows(case, got[case_id], batch.key_type, where)
        assert found.keys() == want.keys(), (
            f"{where}: missing {sorted(want.keys() - found.keys(), key=str)}, "
            f"extra {sorted(found.keys() - want.keys(), key=str)}")
        for row, p in want.items():
            assert math.isclose(found[row], p, rel_tol=tolerance, abs_tol=1e-15), \
                f"{where}: {row} probability {found[row]!r}, expected {p!r}"
