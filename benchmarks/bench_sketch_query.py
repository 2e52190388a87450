"""Benchmark of ``approx_match_seq`` (issue 4): sketch queries against exact matching on raw events.

In ONE run, on the same data and machine, it prints five Markdown tables:

1. **Latency** of three synthetic shapes (``cep.datasets.synthetic``): ``cases`` (many short
   streams, ~9 events each, 24 Zipf types, ``s = 1.1``; 65,000 and 10^6 events, i.e. 7,222
   and 111,111 streams; trees as ``app_sketch`` builds them: leaves of ``C = 4`` events, the
   solver's config for 64 expected events and 8192 bytes per stream), ``keys`` (100 streams,
   50 Zipf types, ``s = 1.1``) and ``words`` (one stream, a Zipf word stream over 10^6 types,
   ``s = 1.2``), these two at 10^5, 10^6 and 10^7 events. Each stream of ``keys`` and
   ``words`` gets one tree, built in the pure core with the config of
   :func:`cep.sketch.solve` for ``fpq = 1e-4``, queries of 3 names, leaves of ``C = 64``
   events and a budget of 10 bytes per event of the stream (this chooses height 2,
   ``m = 2216``, ``k = 6`` at every size). Two questions per shape under
   skip-till-next-match, a frequent one (``T01; T02; T03``, type ranks 1, 2, 3) and a
   selective one (ranks 8, 10, 12 of ``cases``, 30, 35, 40 of ``keys``, 100, 200, 300 of
   ``words``):

   a. in one process: :func:`cep.sketch.evaluate_sketch` over every stream's tree (``exists``
      and ``intervals``, level 0) against the exact core matcher on the raw events
      (``cep.match.run.segments.iter_segment_matches`` over all streams laid end to end, as
      ``match_seq`` runs per Spark partition); best of 3, interleaved;
   b. end to end in Spark SQL: the node rows (``delta_tables.sketch_state.tree_to_arrow``) in a
      Delta table queried by ``approx_match_seq`` against ``match_seq`` over the raw
      events' Delta table (``id, key, type, ts``; ``key_col => 'key'``), results
      to the ``noop`` sink; one counting run first, then the best of 2 timed runs (1 at 10^7).

2. **False positives on the real logs** (``bpi2017_applications``, ``bpi2017_offers``,
   ``bpi2012``, read from their Delta tables with Spark) in two layouts: **per case** (one tree
   per case, leaves of ``C = 4`` events, solver config for 64 expected events and a budget of
   8192 bytes per case, as ``app_sketch`` in ``conf/sketches.toml``) and **one stream** (the
   whole log in ``(ts, id)`` order as one tree, ``C = 64``, the log's size, 10 bytes per
   event). Configs from :func:`cep.sketch.solve` for ``fpq = 1e-4`` (and ``1e-2`` for the
   trend) and queries of 4 names. Two definitions, each against the exact-set twin of the same
   tree:

   * **per leaf** (what ``fpq`` bounds in the solver: a query of ``s`` names is wrong at a leaf
     when one of its names, absent from the leaf, tests present): over every full leaf, the
     share of leaves where one of the 4 names of the longest query tests present while absent,
     among the leaves where one of them is absent; and ``p_leaf``, the share of (leaf, activity)
     pairs whose absent activity tests present, over all the log's activities. A log has a few
     dozen activities, so a false positive is decided per set of names, not per leaf: one seed
     set is one draw of the hash functions. The rates are therefore also averaged over 100
     other seed sets (:func:`seed_averaged_rates`), which estimates the probability ``fpq``
     is about;
   * **per record**: ``intervals`` of six queries of 2 to 4 names over frequent activities
     (SEQ of 2, 3, 4; ``SEQ(A,OR(B,C))``, ``SEQ(A,AND(B,C))``, ``SEQ(A,NOT(B),C)``;
     skip-till-next-match, level 0): sketch records that are not twin records, divided by
     sketch records; also twin records the sketch misses, and streams.

3. **Bytes**: the sketch's ``<name>_nodes`` Delta table on disk (Delta's ``sizeInBytes``:
   Parquet with every column, bits blobs included; the blobs' own bytes shown apart) against
   the raw events' Delta table (synthetic: the 4 columns written here; logs: the source table
   as loaded, every column, and its ``id, case_id, type, ts`` columns written apart).

4. **Query time versus query length** (shape of the thesis's tables 5.1, 5.2): SEQ of the ``s``
   most frequent activities of each log (ordered by their mean relative position in the cases),
   ``s = 2..8``, skip-till-next-match, ``intervals``, both layouts: the sketch at level 0 and
   level 2, the twin at level 0 and the exact core matcher (segmented by case, or the one
   stream).

5. **Query types** (shape of tables 5.5, 5.6): ``SEQ(A,B,C)``, ``SEQ(A,OR(B,C))``,
   ``SEQ(A,AND(B,C))``, ``SEQ(A,NOT(B),C)`` with ``A, B, C`` the three most frequent activities
   in position order, under strict contiguity and skip-till-next-match, both layouts: time and
   result counts of the sketch, the twin and the exact matcher. The exact matcher's semantics
   are event-level (strict contiguity: adjacent events), the sketch's leaf-level (adjacent
   leaves; a match inside one leaf is not found), so their counts answer related, not equal,
   questions.

Timings on a shared machine are noisy; parts 2, 4 and 5 run each sketch query once over all
streams when that takes a second or more (best of 3 otherwise) and the exact matcher best of 3.

Run from the project root::

    python -m benchmarks.bench_sketch_query [--json PATH] [--max-n N] [--logs LOG ...]
                                            [--skip-sql]

Example:
    >>> pattern_text(["A_Create Application", "W_Complete application"])
    'PATTERN "A_Create Application"; "W_Complete application"'
    >>> record_errors({(0, 1), (0, 2), (1, 5)}, {(0, 1), (1, 5), (1, 9)})
    {'sketch': 3, 'twin': 3, 'false_positive': 1, 'missed': 1, 'fp_rate': 0.3333333333333333}
    >>> s = split_streams(np.array(["b", "a", "b"], dtype=object), np.array([5, 9, 6]),
    ...                   np.arange(3), np.array(["X", "Y", "Z"], dtype=object))
    >>> s.keys, s.bounds.tolist(), s.names.tolist()
    (['a', 'b'], [0, 1, 3], ['Y', 'X', 'Z'])
    >>> frequent_chain(s, 2)
    ['X', 'Y']
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.common import best_of
from cep.match import EventStream, compile_query
from cep.match.errors import MatchLimitError
from cep.match.run.segments import iter_segment_matches
from cep.sketch import (SketchConfig, SketchTree, bit_positions, compile_sketch_query,
                        evaluate_sketch, solve)
from cep.datasets.synthetic import SyntheticSpec, generate_events
from cep.sketch.bloom import has_positions
from cep.sketch.query import SketchQuery

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

SEED = 20240101
SIZES = (100_000, 1_000_000, 10_000_000)
POLICY = "skip-till-next-match"
FPQ = 1e-4
FPQ_TREND = 1e-2
CORE_REPEATS = 3
EXACT_REPEATS = 3
SEED_SETS = 100

# Synthetic shapes: streams, types, Zipf exponent, and two questions as type ranks.
SYN_WINDOW = 64
SYN_QUERY_LENGTH = 3
SYN_BYTES_PER_EVENT = 10
SHAPES: dict[str, dict[str, Any]] = {
    # Many short streams (issue 20: a process-mining log of 65k events in 7.5k cases took
    # 14.6 s per approx_match_seq query against 8.3 s for match_seq): ~9 events per case,
    # 24 activity types, trees as app_sketch builds them (conf/sketches.toml: C = 4, 64
    # expected events and 8192 bytes per case).
    "cases": {"events_per_key": 9, "n_types": 24, "zipf_s": 1.1, "sizes": (65_000, 1_000_000),
              "tree": {"budget": 8192, "expected_events": 64, "window": 4},
              "questions": {"frequent": (1, 2, 3), "selective": (8, 10, 12)}},
    "keys": {"n_keys": 100, "n_types": 50, "zipf_s": 1.1,
             "questions": {"frequent": (1, 2, 3), "selective": (30, 35, 40)}},
    "words": {"n_keys": 1, "n_types": 1_000_000, "zipf_s": 1.2,
              "questions": {"frequent": (1, 2, 3), "selective": (100, 200, 300)}},
}

# Real logs, per-case layout (the one-stream layout uses SYN_WINDOW and SYN_BYTES_PER_EVENT).
LOGS = ("bpi2017_applications", "bpi2017_offers", "bpi2012")
BPI_WINDOW = 4
BPI_EXPECTED_EVENTS = 64
BPI_BUDGET = 8192
BPI_QUERY_LENGTH = 4
HIGH_LEVEL = 2
LENGTHS = tuple(range(2, 9))
QUERY_TYPES: dict[str, str] = {
    "SEQ(A,B,C)": "{a}; {b}; {c}",
    "SEQ(A,OR(B,C))": "{a}; OR({b}, {c})",
    "SEQ(A,AND(B,C))": "{a}; AND({b}, {c})",
    "SEQ(A,NOT(B),C)": "{a}; NOT({b}); {c}",
}
TYPE_POLICIES = ("strict-contiguity", "skip-till-next-match")


# ---------------------------------------------------------------------------------------------
# Streams, patterns, small helpers (no JVM).


@dataclass(frozen=True)
class Streams:
    """Events of many streams laid end to end, each stream sorted by ``(ts, id)``.

    Attributes:
        keys: The stream names, in order.
        bounds: ``len(keys) + 1`` offsets: stream ``i`` is ``bounds[i]:bounds[i + 1]``.
        ids: int64 event ids.
        ts: int64 timestamps (microseconds).
        names: Event names (numpy str or object array).
    """

    keys: list[str]
    bounds: np.ndarray
    ids: np.ndarray
    ts: np.ndarray
    names: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def slices(self) -> Iterator[tuple[int, int]]:
        """``(lo, hi)`` of every stream."""
        return zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist())

    def exact_stream(self) -> EventStream:
        """The segmented stream of the exact matcher (one segment per stream)."""
        return EventStream(self.ids, self.ts, np.asarray(self.names, dtype=object), {},
                           segment_starts=self.bounds[:-1].copy())


def split_streams(keys: np.ndarray, ts: np.ndarray, ids: np.ndarray, names: np.ndarray
                  ) -> Streams:
    """Sort events by ``(key, ts, id)`` and cut them into one stream per key.

    Args:
        keys: Stream key per event (any sortable dtype; streams come out in key order).
        ts: int64 timestamps.
        ids: int64 ids (tie-break of equal timestamps).
        names: Event names.
    """
    unique, codes = np.unique(keys, return_inverse=True)
    order = np.lexsort((ids, ts, codes))
    codes = codes[order]
    starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))) if len(codes) \
        else np.zeros(0, dtype=np.int64)
    return Streams([str(k) for k in unique.tolist()], np.append(starts, len(codes)),
                   np.asarray(ids)[order].astype(np.int64), np.asarray(ts)[order].astype(np.int64),
                   np.asarray(names)[order])


def quote(name: str) -> str:
    """``name`` as a double-quoted class name of the pattern language."""
    return '"' + name.replace('"', '""') + '"'


def pattern_text(names: Sequence[str]) -> str:
    """``PATTERN "n1"; "n2"; ...``: a SEQ of the names, each quoted."""
    return "PATTERN " + "; ".join(quote(n) for n in names)


def frequent_chain(streams: Streams, s: int) -> list[str]:
    """The ``s`` most frequent names, ordered by their mean relative position in the streams."""
    vocab, codes = np.unique(np.asarray(streams.names, dtype=object), return_inverse=True)
    lengths = np.diff(streams.bounds)
    pos = np.arange(len(codes)) - np.repeat(streams.bounds[:-1], lengths)
    rel = pos / np.maximum(np.repeat(lengths, lengths) - 1, 1)
    counts = np.bincount(codes, minlength=len(vocab))
    mean_rel = np.bincount(codes, weights=rel, minlength=len(vocab)) / np.maximum(counts, 1)
    top = np.argsort(-counts, kind="stable")[:s]
    return [str(vocab[i]) for i in top[np.argsort(mean_rel[top], kind="stable")]]


def record_errors(sketch: set[tuple[int, ...]], twin: set[tuple[int, ...]]) -> dict[str, Any]:
    """Counts of sketch records, twin records, false positives and misses, and the FP rate.

    ``fp_rate`` = (sketch records not in the twin's) / (sketch records), 0.0 without records.
    """
    fp = len(sketch - twin)
    return {"sketch": len(sketch), "twin": len(twin), "false_positive": fp,
            "missed": len(twin - sketch), "fp_rate": fp / len(sketch) if sketch else 0.0}


def build_trees(streams: Streams, config: SketchConfig) -> tuple[list[SketchTree], float]:
    """One tree per stream (one-pass build) and the total build time."""
    start = time.perf_counter()
    trees = [SketchTree.build(streams.names[lo:hi], streams.ts[lo:hi], config)
             for lo, hi in streams.slices()]
    return trees, time.perf_counter() - start


def run_exact(compiled: Any, stream: EventStream) -> tuple[int, int]:
    """Matches of the segmented exact matcher and the number of streams with a match."""
    n, segments = 0, []
    for chunk in iter_segment_matches(compiled, stream):
        n += len(chunk.matches)
        segments.append(np.unique(chunk.segments))
    return n, len(np.unique(np.concatenate(segments))) if segments else 0


@dataclass(frozen=True)
class SketchRun:
    """One sketch query over every stream's tree.

    Attributes:
        seconds: Wall time of the evaluations.
        records: Number of ``intervals`` records (or of streams saying true, for ``exists``).
        streams: Streams with at least one record (or saying true).
        record_set: ``(stream, pos_start, pos_end, *node_ids)`` of every record, when kept.
    """

    seconds: float
    records: int
    streams: int
    record_set: set[tuple[int, ...]] | None = None


def run_sketch(trees: Sequence[SketchTree], query: SketchQuery, *, mode: str = "intervals",
               level: int = 0, membership: str = "bloom", keep: bool = False) -> SketchRun:
    """Evaluate ``query`` on every tree, timed; counts (and the records when ``keep``)."""
    start = time.perf_counter()
    answers = [evaluate_sketch(query, tree, level=level, mode=mode, membership=membership)
               for tree in trees]
    seconds = time.perf_counter() - start
    if mode == "exists":
        n = sum(bool(a) for a in answers)
        return SketchRun(seconds, n, n)
    records = sum(len(a) for a in answers)
    streams = sum(1 for a in answers if len(a))
    kept = None
    if keep:
        kept = set()
        for i, a in enumerate(answers):
            if len(a):
                kept.update((i, ps, pe, *ids) for ps, pe, ids in
                            zip(a.pos_start.tolist(), a.pos_end.tolist(), a.node_ids.tolist()))
    return SketchRun(seconds, records, streams, kept)


def solver_config(fpq: float, budget: int, n_events: int, window: int, query_length: int
                  ) -> tuple[SketchConfig, dict[str, Any]]:
    """The solver's config and its predictions (height, m, k, leaf and query FP, bytes)."""
    result = solve(fpq=fpq, memory_bytes=budget, n_events=n_events, window=window,
                   query_length=query_length)
    info = {"fpq": fpq, "budget": budget, "expected_events": n_events, "C": window,
            "query_length": query_length, "height": result.height, "m": result.m, "k": result.k,
            "predicted_bytes": result.predicted_bytes,
            "predicted_leaf_fp": result.predicted_leaf_fp,
            "predicted_query_fp": result.predicted_query_fp}
    return result.to_config(), info


def leaf_matrices(trees: Sequence[SketchTree], activities: Sequence[str]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Bloom and exact membership of every activity at every full leaf of every tree.

    The open leaves are not counted. Trees must share one config and have their twins.

    Returns:
        ``(bloom, twin)``: bool arrays ``(leaves, activities)``.
    """
    names = list(activities)
    index = {n: i for i, n in enumerate(names)}
    bits, twin_rows, twin_cols = [], [], []
    offset = 0
    for tree in trees:
        leaves = np.flatnonzero(np.asarray(tree.level) == 0)
        if not len(leaves):
            continue
        bits.append(np.asarray(tree.bits)[leaves])
        local = np.full(tree.n_nodes, -1, dtype=np.int64)
        local[leaves] = np.arange(len(leaves))
        gmap = np.array([index.get(v, -1) for v in tree.vocabulary], dtype=np.int64)
        rows, codes = np.asarray(tree.twin_row), np.asarray(tree.twin_code)
        sel = (local[rows] >= 0) & (gmap[codes] >= 0)
        twin_rows.append(offset + local[rows[sel]])
        twin_cols.append(gmap[codes[sel]])
        offset += len(leaves)
    if not offset:
        empty = np.zeros((0, len(names)), dtype=np.bool_)
        return empty, empty
    all_bits = np.concatenate(bits)
    probe = trees[0]
    bloom = np.stack([has_positions(all_bits, probe.positions(n)) for n in names], axis=1)
    twin = np.zeros_like(bloom)
    twin[np.concatenate(twin_rows), np.concatenate(twin_cols)] = True
    return bloom, twin


def leaf_rates(bloom: np.ndarray, twin: np.ndarray, query_cols: Sequence[int]
               ) -> dict[str, Any]:
    """False-positive counts and rates per leaf, for single names and for one query.

    ``p_leaf``: false positives / (leaf, activity) pairs whose activity is absent. Query rate:
    leaves where one of the query's names is a false positive / leaves where one is absent.

    Example:
        >>> bloom = np.array([[True, True], [True, False]])
        >>> twin = np.array([[True, False], [True, False]])
        >>> r = leaf_rates(bloom, twin, [0, 1])
        >>> r["fp_pairs"], r["absent_pairs"], r["query_fp"], r["query_absent"]
        (1, 2, 1, 2)
    """
    absent = ~twin
    fp = bloom & absent
    cols = list(query_cols)
    q_absent = int(absent[:, cols].any(axis=1).sum())
    q_fp = int(fp[:, cols].any(axis=1).sum())
    return {"leaves": int(bloom.shape[0]), "absent_pairs": int(absent.sum()),
            "fp_pairs": int(fp.sum()), "p_leaf": float(fp.sum() / max(1, absent.sum())),
            "false_negatives": int((twin & ~bloom).sum()), "query_absent": q_absent,
            "query_fp": q_fp, "query_rate": q_fp / max(1, q_absent)}


def seed_averaged_rates(twin: np.ndarray, activities: Sequence[str], m: int, k: int,
                        query_cols: Sequence[int], n_seeds: int = SEED_SETS
                        ) -> dict[str, Any]:
    """:func:`leaf_rates` averaged over ``n_seeds`` other seed sets of the murmur3 hashes.

    With a few dozen activities a log has few distinct leaf sets, and whether an absent name's
    ``k`` bits are covered by the present names' bits is decided once per set of names, not
    per leaf: a measurement with one seed set is one draw of the hash functions, 0 or a lump.
    ``fpq`` is a probability over hash functions, so this draws ``n_seeds`` seed sets
    (``(j*k, ..., j*k + k - 1)`` for ``j = 1 .. n_seeds``), builds each leaf's filter as the OR
    of its names' bits (:func:`cep.sketch.bit_positions`), and averages the rates. Seed set
    ``j = 0`` is the default of the trees and is returned as ``check`` (it must equal the
    trees' own count).

    Returns:
        ``p_leaf``, ``query_rate`` (means), ``query_rate_max``, ``check_fp_pairs``.
    """
    sets, counts = np.unique(twin, axis=0, return_counts=True)
    absent = ~sets
    weight = counts.astype(np.float64)
    n_act = len(activities)
    cols = list(query_cols)
    q_absent = float((weight * absent[:, cols].any(axis=1)).sum())
    pairs = float((weight[:, None] * absent).sum())
    p_leaf, q_rate, check = [], [], 0
    for j in range(n_seeds + 1):
        pos = bit_positions(list(activities), m, tuple(range(j * k, (j + 1) * k)))
        onehot = np.zeros((n_act, m), dtype=np.float32)
        onehot[np.arange(n_act)[:, None], pos] = 1
        union = (sets.astype(np.float32) @ onehot) > 0
        fp = union[:, pos].all(axis=-1) & absent
        if j == 0:
            check = int((counts[:, None] * fp).sum())
            continue
        p_leaf.append(float((weight[:, None] * fp).sum()) / max(1.0, pairs))
        q_rate.append(float((weight * fp[:, cols].any(axis=1)).sum()) / max(1.0, q_absent))
    return {"seed_sets": n_seeds, "p_leaf": float(np.mean(p_leaf)),
            "query_rate": float(np.mean(q_rate)), "query_rate_max": float(np.max(q_rate)),
            "check_fp_pairs": check}


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}"


def _x(base: float | None, ours: float | None) -> str:
    """``base / ours`` as ``"12x"``, ``"1.5x"`` or ``"0.012x"`` (above 1: ours is faster)."""
    if base is None or not ours:
        return "-"
    value = base / ours
    return f"{value:.0f}x" if value >= 10 else f"{value:.1f}x" if value >= 1 else f"{value:.2g}x"


def _rate(value: float) -> str:
    return f"{value:.2e}" if value else "0"


# ---------------------------------------------------------------------------------------------
# Spark helpers.


def delta_bytes(spark: "SparkSession", location: Path) -> int:
    """``sizeInBytes`` of the Delta table at ``location`` (its current data files)."""
    return int(spark.sql(f"DESCRIBE DETAIL delta.`{location}`").first()["sizeInBytes"])


def write_delta(spark: "SparkSession", table: "pa.Table", root: Path, name: str,
                schema: Any = None) -> Path:
    """Write an Arrow table as a Delta table ``root/name`` (staged as Parquet), register it."""
    import pyarrow.parquet as pq

    staging = root / f"stage-{name}"
    staging.mkdir(parents=True)
    pq.write_table(table, staging / "part-0.parquet")
    reader = spark.read if schema is None else spark.read.schema(schema)
    location = root / name
    reader.parquet(str(staging)).write.format("delta").mode("overwrite").save(str(location))
    shutil.rmtree(staging, ignore_errors=True)
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.catalog.createTable(name, path=str(location), source="delta")
    return location


def drop_delta(spark: "SparkSession", name: str, location: Path) -> None:
    """Unregister and delete a table this benchmark wrote."""
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    shutil.rmtree(location, ignore_errors=True)


def nodes_arrow(streams: Streams, trees: Sequence[SketchTree]) -> "pa.Table":
    """Every stream's rows of the ``<name>_nodes`` table."""
    import pyarrow as pa

    from delta_tables.sketch_state import tree_to_arrow

    return pa.concat_tables([tree_to_arrow(k, t) for k, t in zip(streams.keys, trees)])


def write_nodes(spark: "SparkSession", root: Path, name: str, streams: Streams,
                trees: Sequence[SketchTree]) -> tuple[Path, dict[str, int]]:
    """Write the trees as a nodes Delta table; its location, rows, blob bytes and Delta bytes."""
    import pyarrow.compute as pc

    from delta_tables.sketch_state import NODES_COLUMNS, spark_schema

    table = nodes_arrow(streams, trees)
    sizes = {"node_rows": table.num_rows,
             "bits_bytes": int(pc.sum(pc.binary_length(table.column("bits"))).as_py() or 0)}
    location = write_delta(spark, table, root, name, spark_schema(NODES_COLUMNS))
    sizes["nodes_delta_bytes"] = delta_bytes(spark, location)
    return location, sizes


# ---------------------------------------------------------------------------------------------
# Part 1: latency on synthetic streams (core and Spark SQL); part 3 for those sizes.


def synthetic_streams(shape: str, n: int) -> tuple[Streams, tuple[str, ...]]:
    """The stream(s) of one shape and size, and its type names (for the questions)."""
    spec = SHAPES[shape]
    n_keys = spec.get("n_keys") or max(1, n // spec["events_per_key"])
    cols = generate_events(SyntheticSpec(n_events=n, n_keys=n_keys,
                                         n_types=spec["n_types"], zipf_s=spec["zipf_s"],
                                         n_attrs=0, seed=SEED))
    streams = split_streams(cols.key, cols.ts_us.astype(np.int64), cols.id.astype(np.int64),
                            cols.types())
    return streams, tuple(cols.type_names)


def questions(shape: str, type_names: Sequence[str],
              ranks: Sequence[tuple[int, ...]] | None = None) -> dict[str, str]:
    """Question label -> pattern (a SEQ of type names): the shape's two questions, or one
    per tuple of type ranks in ``ranks`` (``--ranks``: the crossover of docs/sketch.md)."""
    chosen = SHAPES[shape]["questions"] if ranks is None else {
        "ranks " + ",".join(map(str, r)): r for r in ranks}
    return {label: "PATTERN " + "; ".join(type_names[r] for r in chosen_ranks)
            for label, chosen_ranks in chosen.items()}


def event_share(streams: Streams, pattern: str) -> float:
    """The share of events whose type the pattern names: what ``match_seq``'s row filter
    keeps, while the sketch reads every node row whatever the question."""
    names = pattern.removeprefix("PATTERN ").split("; ")
    return float(np.isin(np.asarray(streams.names, dtype=str), names).mean())


def latency_core(streams: Streams, trees: Sequence[SketchTree], pattern: str
                 ) -> dict[str, Any]:
    """Exact core vs sketch core (exists, intervals) on one question, best of 3, interleaved."""
    compiled = compile_query(pattern, policy=POLICY)
    query = compile_sketch_query(pattern, POLICY)
    exact_stream = streams.exact_stream()
    best = {"exact": float("inf"), "exists": float("inf"), "intervals": float("inf")}
    row: dict[str, Any] = {}
    for _ in range(CORE_REPEATS):
        (matches, matched), seconds = best_of(lambda: run_exact(compiled, exact_stream), 1)
        best["exact"] = min(best["exact"], seconds)
        exists = run_sketch(trees, query, mode="exists")
        best["exists"] = min(best["exists"], exists.seconds)
        intervals = run_sketch(trees, query, mode="intervals")
        best["intervals"] = min(best["intervals"], intervals.seconds)
        row.update(exact_matches=matches, exact_streams=matched, exists_true=exists.records,
                   intervals_records=intervals.records, intervals_streams=intervals.streams)
    row.update(exact_s=best["exact"], exists_s=best["exists"], intervals_s=best["intervals"])
    return row


def latency_sql(spark: "SparkSession", events: str, nodes: str, pattern: str, repeats: int
                ) -> dict[str, Any]:
    """``match_seq`` vs ``approx_match_seq`` (exists, intervals) to the noop sink."""
    from sql_ext.quoting import sql_string

    p, pol = sql_string(pattern), sql_string(POLICY)
    exact = f"SELECT * FROM match_seq({p}, 'key', TABLE({events}), policy => {pol})"
    approx = {mode: (f"SELECT * FROM approx_match_seq(pattern => {p}, policy => {pol}, "
                     f"mode => '{mode}', sketch => TABLE({nodes}))")
              for mode in ("exists", "intervals")}
    queries = {"exact": exact, "exists": approx["exists"], "intervals": approx["intervals"]}
    row: dict[str, Any] = {}
    try:
        got = spark.sql(f"SELECT count(*), count(DISTINCT key) FROM ({exact})").first()
        row.update(sql_exact_matches=int(got[0]), sql_exact_streams=int(got[1]))
        got = spark.sql(f"SELECT count_if(matched), count(*) FROM ({approx['exists']})").first()
        row.update(sql_exists_true=int(got[0]), sql_exists_rows=int(got[1]))
        got = spark.sql(f"SELECT count(*) FROM ({approx['intervals']})").first()
        row.update(sql_intervals_records=int(got[0]))
        best = {label: float("inf") for label in queries}
        for _ in range(repeats):
            for label, sql in queries.items():
                _, seconds = best_of(lambda: spark.sql(sql).write.format("noop")
                                   .mode("overwrite").save(), 1)
                best[label] = min(best[label], seconds)
        row.update({f"sql_{label}_s": seconds for label, seconds in best.items()})
    except Exception as error:  # noqa: BLE001 - a failed query is reported, not fatal
        row["sql_error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    return row


def run_latency(spark: "SparkSession | None", root: Path | None, max_n: int, sql: bool,
                min_n: int = 0, shapes: Sequence[str] = tuple(SHAPES),
                ranks: Sequence[tuple[int, ...]] | None = None
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Part 1 (and part 3's synthetic rows): the shapes' sizes from ``min_n`` to ``max_n``."""
    import pyarrow as pa

    rows, byte_rows = [], []
    for shape, spec in ((s, SHAPES[s]) for s in shapes):
        for n in (s for s in spec.get("sizes", SIZES) if min_n <= s <= max_n):
            t0 = time.perf_counter()
            streams, type_names = synthetic_streams(shape, n)
            per_stream = n // len(streams.keys)
            tree = spec.get("tree", {"budget": SYN_BYTES_PER_EVENT * per_stream,
                                     "expected_events": per_stream, "window": SYN_WINDOW})
            config, info = solver_config(FPQ, tree["budget"], tree["expected_events"],
                                         tree["window"], SYN_QUERY_LENGTH)
            trees, build_s = build_trees(streams, config)
            nodes = sum(t.n_nodes for t in trees)
            print(f"<!-- {shape} {n:,}: generated in {time.perf_counter() - t0 - build_s:.1f} s, "
                  f"{len(trees)} trees built in {build_s:.1f} s ({nodes:,} nodes, up to "
                  f"{max(t.n_levels for t in trees)} levels; solver: h={info['height']}, "
                  f"m={info['m']}, k={info['k']}) -->", flush=True)
            qs = questions(shape, type_names, ranks)
            events_name, nodes_name = f"bsq_events_{shape}_{n}", f"bsq_nodes_{shape}_{n}"
            locations: dict[str, Path] = {}
            if spark is not None and root is not None:
                t0 = time.perf_counter()
                ev = pa.table({"id": pa.array(streams.ids, pa.int64()),
                               "key": pa.array(np.repeat(np.arange(len(streams.keys)),
                                                         np.diff(streams.bounds)), pa.int64()),
                               "type": pa.array(np.asarray(streams.names, dtype=str)),
                               "ts": pa.array(streams.ts, pa.int64()).cast(
                                   pa.timestamp("us", tz="UTC"))})
                locations[events_name] = write_delta(spark, ev, root, events_name)
                del ev
                locations[nodes_name], sizes = write_nodes(spark, root, nodes_name, streams, trees)
                byte_rows.append({"data": f"synthetic {shape}", "events": n,
                                  "streams": len(trees), "m": config.m, "k": config.k,
                                  "C": config.C, **sizes,
                                  "raw_delta_bytes": delta_bytes(spark, locations[events_name])})
                print(f"<!-- {shape} {n:,}: Delta tables written in "
                      f"{time.perf_counter() - t0:.1f} s -->", flush=True)
            for label, pattern in qs.items():
                share = event_share(streams, pattern)
                row: dict[str, Any] = {"shape": shape, "events": n, "streams": len(trees),
                                       "question": f"{label} ({100 * share:.1f} % of events)",
                                       "share": share, "pattern": pattern,
                                       "config": info, "build_s": build_s, "nodes": nodes}
                row.update(latency_core(streams, trees, pattern))
                if spark is not None and sql:
                    row.update(latency_sql(spark, events_name, nodes_name, pattern,
                                           1 if n >= 10_000_000 else 2))
                rows.append(row)
                print(_latency_line(row), flush=True)
            if spark is not None:
                for name, location in locations.items():
                    drop_delta(spark, name, location)
            del trees, streams
    return rows, byte_rows


def _latency_line(r: dict[str, Any]) -> str:
    core = (f"| {r['shape']} | {r['events']:,} | {r['streams']} | {r['question']} | "
            f"{_s(r['exact_s'])} ({r['exact_matches']:,}; {r['exact_streams']}) | "
            f"{_s(r['exists_s'])} ({r['exists_true']}) | "
            f"{_s(r['intervals_s'])} ({r['intervals_records']:,}) | "
            f"{_x(r['exact_s'], r['exists_s'])} | {_x(r['exact_s'], r['intervals_s'])} |")
    if "sql_exact_s" in r:
        core += (f" {_s(r['sql_exact_s'])} ({r['sql_exact_matches']:,}) | "
                 f"{_s(r['sql_exists_s'])} ({r['sql_exists_true']}) | "
                 f"{_s(r['sql_intervals_s'])} ({r['sql_intervals_records']:,}) | "
                 f"{_x(r['sql_exact_s'], r['sql_exists_s'])} | "
                 f"{_x(r['sql_exact_s'], r['sql_intervals_s'])} |")
    elif "sql_error" in r:
        core += f" {r['sql_error']} | - | - | - | - |"
    else:
        core += " - | - | - | - | - |"
    return core


LATENCY_HEAD = (
    "| shape | events | streams | question | exact core s (matches; streams) | "
    "sketch exists s (true) | sketch intervals s (records) | exact/exists | exact/intervals | "
    "match_seq s (matches) | approx exists s (true) | approx intervals s (records) | "
    "SQL exact/exists | SQL exact/intervals |\n"
    "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


# ---------------------------------------------------------------------------------------------
# Parts 2-5 on the real logs.


def read_log(spark: "SparkSession", log: str) -> tuple[Streams, Streams]:
    """The events of one log (``case_id``, ``type``, ``ts``, ``id``): per case, and as one
    stream (every event of the log in ``(ts, id)`` order, named after the log)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = spark.table(log).select("id", "case_id", "type", "ts").toArrow()
    ts = pc.cast(table.column("ts"), pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    ids = table.column("id").to_numpy()
    names = np.asarray(table.column("type").to_pylist(), dtype=object)
    cases = split_streams(np.asarray(table.column("case_id").to_pylist(), dtype=object), ts,
                          ids, names)
    whole = split_streams(np.zeros(len(ids), dtype=np.int64), ts, ids, names)
    return cases, Streams([log], whole.bounds, whole.ids, whole.ts, whole.names)


class LogBench:
    """Parts 2, 4 and 5 on one layout of one log; sketch and exact runs cached by their inputs.

    A sketch run over all streams that takes under a second is repeated (best of 3).
    """

    def __init__(self, log: str, layout: str, streams: Streams,
                 trees: dict[float, list[SketchTree]]) -> None:
        self.log, self.layout = log, layout
        self.streams = streams
        self.trees = trees
        self.exact_stream = streams.exact_stream()
        self._sketch: dict[tuple[Any, ...], SketchRun] = {}
        self._exact: dict[tuple[str, str], tuple[float | None, int | None, int | None, str]] = {}

    def sketch(self, pattern: str, policy: str, *, fpq: float = FPQ, level: int = 0,
               membership: str = "bloom") -> SketchRun:
        """One sketch run (records kept at level 0). The twin at level 0 does not depend on
        the config (the leaves are the same), so it is run once."""
        key = (pattern, policy, level, membership,
               None if membership == "twin" and level == 0 else fpq)
        if key not in self._sketch:
            query = compile_sketch_query(pattern, policy)
            run = run_sketch(self.trees[fpq], query, level=level, membership=membership,
                             keep=level == 0)
            if run.seconds < 1.0:
                for _ in range(2):
                    again = run_sketch(self.trees[fpq], query, level=level,
                                       membership=membership)
                    if again.seconds < run.seconds:
                        run = SketchRun(again.seconds, run.records, run.streams, run.record_set)
            self._sketch[key] = run
        return self._sketch[key]

    def exact(self, pattern: str, policy: str
              ) -> tuple[float | None, int | None, int | None, str]:
        """Best of 3 of the segmented exact matcher: seconds, matches, streams with a match,
        and the error when the matcher stops at a limit (``CEP-MATCH-001``; then ``None``s)."""
        key = (pattern, policy)
        if key not in self._exact:
            compiled = compile_query(pattern, policy=policy)
            try:
                (matches, streams), seconds = best_of(
                    lambda: run_exact(compiled, self.exact_stream), EXACT_REPEATS)
                self._exact[key] = (seconds, matches, streams, "")
            except MatchLimitError as error:
                self._exact[key] = (None, None, None, str(error).split(";")[0])
        return self._exact[key]

    def compare(self, pattern: str, policy: str) -> dict[str, Any]:
        """Sketch at level 0 and at HIGH_LEVEL, twin at level 0 and exact, on one query."""
        low = self.sketch(pattern, policy)
        high = self.sketch(pattern, policy, level=HIGH_LEVEL)
        twin = self.sketch(pattern, policy, membership="twin")
        exact_s, matches, matched, error = self.exact(pattern, policy)
        return {"log": self.log, "layout": self.layout, "pattern": pattern, "policy": policy,
                "sketch_s": low.seconds, "sketch_records": low.records,
                "sketch_streams": low.streams,
                "high_s": high.seconds, "high_records": high.records,
                "twin_s": twin.seconds, "twin_records": twin.records,
                "twin_streams": twin.streams,
                "exact_s": exact_s, "exact_matches": matches, "exact_streams": matched,
                "exact_error": error}


def type_patterns(chain: Sequence[str]) -> dict[str, str]:
    """The four query types over ``A, B, C`` = the first three names of ``chain``."""
    a, b, c = (quote(n) for n in chain[:3])
    return {label: "PATTERN " + form.format(a=a, b=b, c=c) for label, form in QUERY_TYPES.items()}


def layout_config(layout: str, fpq: float, streams: Streams
                  ) -> tuple[SketchConfig, dict[str, Any]]:
    """Per case: C = 4, 64 expected events, 8192 bytes; one stream: C = 64, the log's size,
    10 bytes per event. Both for queries of 4 names."""
    if layout == "per case":
        return solver_config(fpq, BPI_BUDGET, BPI_EXPECTED_EVENTS, BPI_WINDOW, BPI_QUERY_LENGTH)
    return solver_config(fpq, SYN_BYTES_PER_EVENT * len(streams), len(streams), SYN_WINDOW,
                         BPI_QUERY_LENGTH)


def run_logs(spark: "SparkSession", root: Path, logs: Sequence[str]
             ) -> dict[str, list[dict[str, Any]]]:
    """Parts 2-5 (and part 3's log rows) on every available log, in both layouts."""
    out: dict[str, list[dict[str, Any]]] = {"leaf_fp": [], "record_fp": [], "bytes": [],
                                            "lengths": [], "types": []}
    for log in logs:
        if not spark.catalog.tableExists(log):
            print(f"<!-- {log}: not loaded (python -m jobs load-logs); skipped -->", flush=True)
            continue
        t0 = time.perf_counter()
        cases, whole = read_log(spark, log)
        activities = sorted(set(np.asarray(cases.names, dtype=object).tolist()))
        chain = frequent_chain(cases, max(LENGTHS))
        types = type_patterns(frequent_chain(cases, 3))
        fp_queries = {f"SEQ s={s}": frequent_chain(cases, s) for s in (2, 3, 4)}
        fp_patterns = {label: pattern_text(names) for label, names in fp_queries.items()}
        fp_patterns.update({label: types[label] for label in list(QUERY_TYPES)[1:]})
        q4 = [activities.index(n) for n in fp_queries["SEQ s=4"]]
        raw = int(spark.sql(f"DESCRIBE DETAIL {log}").first()["sizeInBytes"])
        slim = root / f"bsq_raw_{log}"
        spark.table(log).select("id", "case_id", "type", "ts").write.format("delta") \
            .save(str(slim))
        raw4 = delta_bytes(spark, slim)
        shutil.rmtree(slim, ignore_errors=True)
        print(f"<!-- {log}: {len(cases):,} events, {len(cases.keys):,} cases, "
              f"{len(activities)} activities, read in {time.perf_counter() - t0:.1f} s; the "
              f"{max(LENGTHS)} most frequent in position order: {chain} -->", flush=True)
        for layout, streams in (("per case", cases), ("one stream", whole)):
            trees: dict[float, list[SketchTree]] = {}
            configs: dict[float, dict[str, Any]] = {}
            for fpq in (FPQ, FPQ_TREND):
                config, info = layout_config(layout, fpq, streams)
                trees[fpq], build_s = build_trees(streams, config)
                configs[fpq] = info
                name = f"bsq_nodes_{log}_{len(out['bytes'])}"
                location, sizes = write_nodes(spark, root, name, streams, trees[fpq])
                out["bytes"].append({"data": f"{log}, {layout}, fpq {fpq:g}",
                                     "events": len(streams), "streams": len(streams.keys),
                                     "m": config.m, "k": config.k, "C": config.C, **sizes,
                                     "raw_delta_bytes": raw, "raw4_delta_bytes": raw4})
                drop_delta(spark, name, location)
                bloom, twin = leaf_matrices(trees[fpq], activities)
                leaf = leaf_rates(bloom, twin, q4)
                leaf["seeds"] = seed_averaged_rates(twin, activities, config.m, config.k, q4)
                leaf.update(log=log, layout=layout, config=info, build_s=build_s,
                            levels=max(t.n_levels for t in trees[fpq]))
                out["leaf_fp"].append(leaf)
                print(_leaf_line(leaf), flush=True)
            bench = LogBench(log, layout, streams, trees)
            for s in LENGTHS:
                if s > len(activities):
                    continue
                row = bench.compare(pattern_text(frequent_chain(cases, s)), POLICY)
                row["s"] = s
                out["lengths"].append(row)
                print(_length_line(row), flush=True)
            for label, pattern in types.items():
                for policy in TYPE_POLICIES:
                    row = bench.compare(pattern, policy)
                    row["query"] = label
                    out["types"].append(row)
                    print(_type_line(row), flush=True)
            for fpq in (FPQ, FPQ_TREND):
                for label, pattern in fp_patterns.items():
                    sk = bench.sketch(pattern, POLICY, fpq=fpq)
                    tw = bench.sketch(pattern, POLICY, membership="twin")
                    assert sk.record_set is not None and tw.record_set is not None
                    sk_streams = {r[0] for r in sk.record_set}
                    tw_streams = {r[0] for r in tw.record_set}
                    row = {"log": log, "layout": layout, "fpq": fpq, "m": configs[fpq]["m"],
                           "k": configs[fpq]["k"], "query": label, "pattern": pattern,
                           **record_errors(sk.record_set, tw.record_set),
                           "sketch_streams": len(sk_streams), "twin_streams": len(tw_streams),
                           "fp_streams": len(sk_streams - tw_streams),
                           "missed_streams": len(tw_streams - sk_streams)}
                    out["record_fp"].append(row)
                    print(_record_line(row), flush=True)
            del bench, trees
    return out


def _leaf_line(r: dict[str, Any]) -> str:
    c, seeds = r["config"], r["seeds"]
    ok = "yes" if r["query_rate"] <= c["fpq"] and seeds["query_rate"] <= c["fpq"] else "**no**"
    check = "" if seeds["check_fp_pairs"] == r["fp_pairs"] else \
        f" (recomputed: {seeds['check_fp_pairs']})"
    return (f"| {r['log']} | {r['layout']} | {c['fpq']:g} | {c['height']}, {c['m']}, {c['k']} | "
            f"{r['levels']} | {r['leaves']:,} | {r['fp_pairs']:,} / {r['absent_pairs']:,} = "
            f"{_rate(r['p_leaf'])}{check} | {_rate(seeds['p_leaf'])} | "
            f"{_rate(c['predicted_leaf_fp'])} | {r['query_fp']:,} / {r['query_absent']:,} = "
            f"{_rate(r['query_rate'])} | {_rate(seeds['query_rate'])} "
            f"(max {_rate(seeds['query_rate_max'])}) | {_rate(c['predicted_query_fp'])} | "
            f"{ok} | {r['false_negatives']} |")


LEAF_HEAD = (
    "| log | layout | fpq | solver h, m, k | tree levels | full leaves | p_leaf: FP / absent "
    f"(leaf, activity) | p_leaf, mean of {SEED_SETS} seed sets | predicted p_leaf | query FP "
    "per leaf (s=4): FP / leaves with an absent name | same, mean of seed sets (max) | "
    "predicted query FP | measured <= fpq | false negatives |\n"
    "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")


def _record_line(r: dict[str, Any]) -> str:
    return (f"| {r['log']} | {r['layout']} | {r['fpq']:g} | {r['m']}, {r['k']} | {r['query']} | "
            f"{r['sketch']:,} | {r['twin']:,} | {r['false_positive']:,} | "
            f"{_rate(r['fp_rate'])} | {r['missed']:,} | {r['sketch_streams']:,} / "
            f"{r['twin_streams']:,} / {r['fp_streams']:,} / {r['missed_streams']:,} |")


RECORD_HEAD = (
    "| log | layout | fpq | m, k | query | sketch records | twin records | FP records | "
    "record FP rate | missed twin records | streams: sketch / twin / FP / missed |\n"
    "|---|---|---:|---|---|---:|---:|---:|---:|---:|---|")


def _bytes_line(r: dict[str, Any]) -> str:
    raw4 = r.get("raw4_delta_bytes")
    slim = "-" if raw4 is None else f"{raw4:,}"
    ratio4 = "-" if raw4 is None else f"{r['nodes_delta_bytes'] / raw4:.2f}"
    return (f"| {r['data']} | {r['events']:,} | {r['streams']:,} | {r['m']}, {r['k']}, {r['C']} | "
            f"{r['node_rows']:,} | {r['bits_bytes']:,} | {r['nodes_delta_bytes']:,} | "
            f"{r['raw_delta_bytes']:,} | {r['nodes_delta_bytes'] / r['raw_delta_bytes']:.2f} | "
            f"{slim} | {ratio4} |")


BYTES_HEAD = (
    "| data | events | streams | m, k, C | node rows | bits blobs (bytes) | nodes Delta (bytes) | "
    "raw events Delta (bytes) | sketch / raw | raw (id, case_id, type, ts) Delta (bytes) | "
    "sketch / those |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")


def _exact_cell(r: dict[str, Any], streams: bool) -> str:
    if r["exact_s"] is None:
        return r["exact_error"] or "-"
    more = f"; {r['exact_streams']:,}" if streams else ""
    return f"{_s(r['exact_s'])} ({r['exact_matches']:,}{more})"


def _length_line(r: dict[str, Any]) -> str:
    return (f"| {r['log']} | {r['layout']} | {r['s']} | {_s(r['sketch_s'])} "
            f"({r['sketch_records']:,}) | {_s(r['high_s'])} ({r['high_records']:,}) | "
            f"{_s(r['twin_s'])} ({r['twin_records']:,}) | "
            f"{_exact_cell(r, False)} | {_x(r['exact_s'], r['sketch_s'])} |")


LENGTH_HEAD = (
    f"| log | layout | s | sketch level 0 s (records) | sketch level {HIGH_LEVEL} s (records) | "
    "twin level 0 s (records) | exact core s (matches) | exact/sketch |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|")


def _type_line(r: dict[str, Any]) -> str:
    return (f"| {r['log']} | {r['layout']} | {r['query']} | {r['policy']} | "
            f"{_s(r['sketch_s'])} ({r['sketch_records']:,}; {r['sketch_streams']:,}) | "
            f"{_s(r['high_s'])} ({r['high_records']:,}) | "
            f"{_s(r['twin_s'])} ({r['twin_records']:,}; {r['twin_streams']:,}) | "
            f"{_exact_cell(r, True)} | {_x(r['exact_s'], r['sketch_s'])} |")


TYPE_HEAD = (
    f"| log | layout | query | policy | sketch level 0 s (records; streams) | sketch level "
    f"{HIGH_LEVEL} s (records) | twin level 0 s (records; streams) | exact core s (matches; "
    "streams) | exact/sketch |\n|---|---|---|---|---:|---:|---:|---:|---:|")


# ---------------------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    """Every part's Markdown table from the collected rows."""
    print("\n### 1. Latency, synthetic (core: best of 3; Spark SQL: noop sink)\n")
    print(LATENCY_HEAD)
    for r in result["latency"]:
        print(_latency_line(r))
    print("\n### 2a. False positives per leaf, real logs (against the twin)\n")
    print(LEAF_HEAD)
    for r in result["logs"]["leaf_fp"]:
        print(_leaf_line(r))
    print("\n### 2b. False positives per record, real logs (intervals, skip-till-next-match, "
          "level 0)\n")
    print(RECORD_HEAD)
    for r in result["logs"]["record_fp"]:
        print(_record_line(r))
    print("\n### 3. Bytes: nodes Delta table against the raw events' Delta table\n")
    print(BYTES_HEAD)
    for r in result["bytes"] + result["logs"]["bytes"]:
        print(_bytes_line(r))
    print("\n### 4. Query time versus query length (tables 5.1, 5.2 shape), skip-till-next-match\n")
    print(LENGTH_HEAD)
    for r in result["logs"]["lengths"]:
        print(_length_line(r))
    print("\n### 5. Query types (tables 5.5, 5.6 shape)\n")
    print(TYPE_HEAD)
    for r in result["logs"]["types"]:
        print(_type_line(r))


def main(argv: list[str] | None = None) -> int:
    """Run every part, print the tables, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--max-n", type=int, default=SIZES[-1],
                        help="largest synthetic size (default 10^7)")
    parser.add_argument("--min-n", type=int, default=0,
                        help="smallest synthetic size (default: all from 10^5)")
    parser.add_argument("--logs", nargs="*", default=list(LOGS),
                        help="real logs to use (--logs with no name: skip the real logs)")
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES),
                        help="synthetic shapes to run (default: all)")
    parser.add_argument("--ranks", nargs="+", metavar="R,R,R",
                        type=lambda t: tuple(int(r) for r in t.split(",")),
                        help="questions as type ranks (e.g. 1,2,3 30,35,40) instead of the "
                             "shapes' two: the crossover of docs/sketch.md")
    parser.add_argument("--skip-sql", action="store_true",
                        help="skip the Spark SQL timings of part 1 (Delta tables still written)")
    args = parser.parse_args(argv)

    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from sql_ext import register_all

    settings = load_settings(overrides={"show_progress": False})
    spark = build_session(settings)
    register_all(spark)
    settings.scratch_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-sketch-query-", dir=settings.scratch_dir))
    started = time.perf_counter()
    try:
        print(LATENCY_HEAD, flush=True)
        latency, byte_rows = run_latency(spark, root, args.max_n, not args.skip_sql, args.min_n,
                                         args.shapes, args.ranks)
        print(f"\n{LEAF_HEAD}", flush=True)
        logs = run_logs(spark, root, args.logs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {"machine": platform.platform(), "python": sys.version.split()[0],
              "seconds": time.perf_counter() - started, "latency": latency, "bytes": byte_rows,
              "logs": logs}
    print_tables(result)
    print(f"\n<!-- total {result['seconds']:.0f} s -->")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    raise SystemExit(main())
