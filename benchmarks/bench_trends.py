"""Benchmark of the ``cet_trends`` core (``cep.trends``): the ABI graph against the CET graph.

Pure numpy and Python, no Spark. In one process, on the same seeded data, it measures:

1. **construction**: :func:`cep.trends.build_graph` (Mei et al., ICPP 2021, Algorithm 1, the
   parallel, vectorised construction) on one window of N = 10^4, 10^5, 10^6 and 10^7 events,
   events per second of wall time and of process CPU time (the build is single-threaded numpy,
   so CPU events/s are events/s per core; the target is 10^6 per core). Every size is also
   built at N/2 on its own data: ``t(N) / t(N/2)`` against what ``O(N log m)`` predicts, ``m``
   being the number of attribute vertices. Then the path-counting DP
   (:func:`cep.trends.count_trends`) on the same graph, up to ``COUNT_MAX`` events;
2. **size**: the rows the ABI graph stores (attribute vertices, from-edges, to-edges in range
   form, from ``TrendGraph.to_arrays()``) against ``N * m``, against the vertex edges the
   to-edges would be without the range form (``sum(hi - lo)``), and against the edges ``E`` of
   the event DAG: :func:`cep.trends.enumerate_edges` for ``=`` at every size; for ``>`` E is
   quadratic, so it is counted exactly (blocked numpy, :func:`count_less_pairs`) up to 10^6
   without being materialised, the count checked against the enumeration at the baseline sizes;
3. **baseline**: the O(N^2) construction of the CET graph (Poppe et al., VLDB 2017): every pair
   ``(j, k)`` with ``ts_j < ts_k`` tested against the predicate, the edges stored as an explicit
   adjacency (CSR: offsets and int32 targets), numpy broadcasting over blocks of rows
   (:func:`cet_graph`), at 10^4, 2*10^4 and 3*10^4 events. Ratios: CET time / ABI build time,
   and CET time / (ABI build + ``enumerate_edges``), the ABI route to the same explicit edges;
   both edge lists must be equal (above ``ENUMERATE_MAX_EDGES`` = 3*10^7 edges the ABI edges
   are not enumerated, minutes and ~8 GB; the ``>`` edge count is checked instead);
4. **extraction**: :func:`cep.trends.extract_trends` on 20,000 events cut into tumbling windows
   of ``w`` consecutive events (``window = position // w``, passed to ``build_graph``) chosen so
   that the windows hold 10^4 to 10^6 trends; trends per second, and the time of the DP count
   against the count by enumeration (``len(extract_trends(g))``), which must agree;
5. **dynamic**: :func:`cep.trends.build_graph_dynamic` (one Python step per arriving event)
   against ``build_graph`` at 10^4 and 10^5 events; the graphs must be equal (``==``).

Data (``numpy.random.default_rng((SEED, N))`` for a stream of N events, so every size has its
own reproducible stream): timestamps strictly increasing int64 microseconds (gaps uniform in
1 .. 2*10^6, so positions are ts order and there are no ties). ``=``: a check-like stream,
``src`` and ``dest`` accounts drawn uniformly from a pool of ``max(N // 4, 2)`` accounts (each
account is the ``dest`` of about 4 checks), query ``PATTERN check+ c[] WHERE c[i].src =
c[i-1].dest``; the extraction runs use a pool of 5 accounts so that windows hold many trends.
``>``: a price random walk, ``price = 100 * exp(cumsum(normal(0, 0.01)))``, query ``PATTERN
stock+ s[] WHERE s[i].price > 1.05 * s[i-1].price``. No WITHIN: one window (sections 1-3, 5).

The run ends with exit code 1 when any two answers disagree (edges, edge counts, trend counts,
the two constructions).

Run from the project root::

    python -m benchmarks.bench_trends [--json PATH] [--max-n N]

Example:
    >>> test = pair_test(">", {"price": np.array([1.0, 2.0, 1.0])})
    >>> offsets, dst = cet_graph(np.array([1, 2, 3]), test)
    >>> offsets.tolist(), dst.tolist()
    ([0, 1, 1, 1], [1])
    >>> row = measure_build(">", 2_000, repeats=1)
    >>> row["events"], row["stored_rows"] == row["vertices"] + row["from_edges"] + row["to_edges"]
    (2000, True)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cep.trends import (build_graph, build_graph_dynamic, compile_trend, count_trends,
                        enumerate_edges, extract_trends)
from cep.trends.graph import TrendGraph

SEED = 20261121
SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
QUERIES = {"=": "PATTERN check+ c[] WHERE c[i].src = c[i-1].dest",
           ">": "PATTERN stock+ s[] WHERE s[i].price > 1.05 * s[i-1].price"}
PREDICATES = {"=": "c[i].src = c[i-1].dest", ">": "s[i].price > 1.05 * s[i-1].price"}
COUNT_MAX = {"=": 10_000_000, ">": 1_000_000}
EDGE_COUNT_MAX = 1_000_000
BASELINE_SIZES = (10_000, 20_000, 30_000)
ENUMERATE_MAX_EDGES = 30_000_000
DYNAMIC_SIZES = (10_000, 100_000)
EXTRACT_EVENTS = 20_000
EXTRACT_POOL = 5
EXTRACT_CASES = (("=", 10), ("=", 20), ("=", 40), (">", 25), (">", 50), (">", 100))
MAX_TRENDS = 2_000_000
TARGET = 1_000_000
BLOCK_CELLS = 1 << 24

PairTest = Callable[[int, int, int], np.ndarray]


def stream(kind: str, n_events: int,
           pool: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(ts, columns)`` of the seeded stream for predicate ``kind`` (module docstring)."""
    rng = np.random.default_rng((SEED, n_events))
    ts = np.cumsum(rng.integers(1, 2_000_001, n_events, dtype=np.int64))
    if kind == "=":
        accounts = max(n_events // 4, 2) if pool is None else pool
        return ts, {"src": rng.integers(0, accounts, n_events),
                    "dest": rng.integers(0, accounts, n_events)}
    return ts, {"price": 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, n_events)))}


def pair_test(kind: str, columns: dict[str, np.ndarray]) -> PairTest:
    """The predicate on the pairs of one block: ``test(lo, hi, first)[a, b]`` for ``j = lo + a``
    and ``k = first + b`` (written as ``k op f(j)``, the way the query reads)."""
    if kind == "=":
        src, dest = columns["src"], columns["dest"]
        return lambda lo, hi, first: src[None, first:] == dest[lo:hi, None]
    price = columns["price"]
    return lambda lo, hi, first: price[None, first:] > price[lo:hi, None] * 1.05


def cet_graph(ts: np.ndarray, test: PairTest) -> tuple[np.ndarray, np.ndarray]:
    """The CET graph's explicit adjacency (Poppe et al., VLDB 2017): every pair checked.

    Events must be sorted by ``ts``. For each block of source rows ``j`` the block is compared
    with every later column ``k`` (broadcasting), ``ts_j < ts_k`` and the predicate, so the
    work is ``O(N^2)`` comparisons whatever the number of edges.

    Returns:
        ``(offsets, dst)``: CSR adjacency, the successors of ``j`` are
        ``dst[offsets[j]:offsets[j + 1]]`` (int32, ascending).
    """
    n = len(ts)
    rows = max(1, BLOCK_CELLS // max(n, 1))
    degrees, targets = [], []
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        linked = (ts[None, lo:] > ts[lo:hi, None]) & test(lo, hi, lo)
        degrees.append(np.count_nonzero(linked, axis=1))
        targets.append((np.nonzero(linked)[1] + lo).astype(np.int32))
    offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.concatenate(degrees), out=offsets[1:])
    return offsets, np.concatenate(targets) if targets else np.empty(0, dtype=np.int32)


def csr_edges(offsets: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR adjacency as ``(src, dst)`` int64 arrays sorted by ``(src, dst)``."""
    src = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    return src, dst.astype(np.int64)


def count_less_pairs(lval: np.ndarray, rval: np.ndarray, block: int = 2048) -> int:
    """The number of pairs ``j < k`` with ``rval[j] < lval[k]``, without listing them.

    With strictly increasing timestamps this is the edge count of the ``>`` event DAG
    (``lval = price``, ``rval = 1.05 * price``). Blocks of ``block`` events: the pairs across
    blocks by ``searchsorted`` into the sorted ``rval`` of all earlier blocks, the pairs inside
    a block by broadcasting; ``O(N^2 / block + N * block)`` numpy work.

    Example:
        >>> count_less_pairs(np.array([1.0, 3.0, 2.0]), np.array([1.0, 3.0, 2.0]), block=2)
        2
    """
    total = 0
    seen = np.empty(0, dtype=np.float64)
    for lo in range(0, len(lval), block):
        a, b = lval[lo:lo + block], rval[lo:lo + block]
        total += int(np.searchsorted(seen, a, side="left").sum())
        total += int(np.count_nonzero(np.triu(b[:, None] < a[None, :], 1)))
        new = np.sort(b)
        seen = np.insert(seen, np.searchsorted(seen, new), new)
    return total


def _best(fn: Callable[[], Any], repeats: int) -> tuple[Any, float, float]:
    """``fn()`` and its best wall and CPU seconds over ``repeats`` runs."""
    wall = cpu = float("inf")
    value = None
    for _ in range(repeats):
        value = None
        w0, c0 = time.perf_counter(), time.process_time()
        value = fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return value, wall, cpu


def _repeats(n_events: int) -> int:
    return 5 if n_events <= 100_000 else 3 if n_events <= 1_000_000 else 2


def graph_size(graph: TrendGraph) -> dict[str, int]:
    """What the ABI graph stores (``to_arrays()``): vertices, from- and to-edges, bytes."""
    arrays = graph.to_arrays()
    vertices = len(arrays["attribute_vertices.0.lo"])
    from_edges = len(arrays["from_edges.0.event"])
    to_edges = len(arrays["to_edges.0.event"])
    spans = int((arrays["to_edges.0.hi"] - arrays["to_edges.0.lo"]).sum())
    stored = sum(a.nbytes for a in arrays.values() if a.dtype != object)
    return {"vertices": vertices, "from_edges": from_edges, "to_edges": to_edges,
            "stored_rows": vertices + from_edges + to_edges, "stored_bytes": stored,
            "explicit_to_edges": spans}


def measure_build(kind: str, n_events: int, repeats: int = 1) -> dict[str, Any]:
    """One construction row: build at N and N/2, sizes, DAG edges, and the DP count."""
    query = compile_trend(QUERIES[kind])
    ts, cols = stream(kind, n_events)
    graph, wall, cpu = _best(lambda: build_graph(query, ts, cols), repeats)
    size = graph_size(graph)
    m = size["vertices"]
    row: dict[str, Any] = {"predicate": kind, "events": n_events, **size, "n_times_m": n_events * m,
                           "seconds": wall, "cpu_seconds": cpu, "events_per_s": n_events / wall,
                           "events_per_cpu_s": n_events / cpu,
                           "target_met": n_events / cpu >= TARGET}
    if kind == "=":
        (src, _), e_wall, _ = _best(lambda: enumerate_edges(graph), 1)
        row.update(dag_edges=len(src), dag_edges_how="enumerated", enumerate_seconds=e_wall)
        del src
    elif n_events <= EDGE_COUNT_MAX:
        price = cols["price"]
        row.update(dag_edges=count_less_pairs(price, price * 1.05), dag_edges_how="counted")
    if n_events <= COUNT_MAX[kind]:
        count, c_wall, c_cpu = _best(lambda: count_trends(graph), 1)
        row.update(count_seconds=c_wall, count_cpu_seconds=c_cpu, count_bits=count.bit_length(),
                   build_count_events_per_s=n_events / (wall + c_wall),
                   build_count_events_per_cpu_s=n_events / (cpu + c_cpu))
    m_values = len(graph.indexes[0].bounds)
    del graph
    half = n_events // 2
    h_ts, h_cols = stream(kind, half)
    h_graph, h_wall, h_cpu = _best(lambda: build_graph(query, h_ts, h_cols), repeats)
    h_m = len(h_graph.indexes[0].bounds)
    predicted = (n_events * math.log2(max(m_values, 2))) / (half * math.log2(max(h_m, 2)))
    row.update(values=m_values, half_events=half, half_values=h_m, half_seconds=h_wall,
               half_cpu_seconds=h_cpu, growth=cpu / h_cpu, growth_wall=wall / h_wall,
               growth_n_log_m=predicted)
    return row


def measure_baseline(kind: str, n_events: int) -> dict[str, Any]:
    """One baseline row: the O(N^2) CET graph against the ABI build (and build + edges).

    The ABI graph's edges are enumerated (and compared with the CET adjacency) only when the
    CET graph has at most ``ENUMERATE_MAX_EDGES`` edges; above, the ``>`` edge count is checked
    with :func:`count_less_pairs` instead (enumerating 10^8 edges takes minutes and ~8 GB).
    """
    query = compile_trend(QUERIES[kind])
    ts, cols = stream(kind, n_events)
    test = pair_test(kind, cols)
    (offsets, targets), cet_wall, _ = _best(lambda: cet_graph(ts, test), 1)
    graph, abi_wall, _ = _best(lambda: build_graph(query, ts, cols), 5)
    n_edges = int(offsets[-1])
    row: dict[str, Any] = {"predicate": kind, "events": n_events, "dag_edges": n_edges,
                           "cet_seconds": cet_wall, "abi_seconds": abi_wall,
                           "ratio_build": cet_wall / abi_wall}
    checks = []
    if n_edges <= ENUMERATE_MAX_EDGES:
        (src, dst), enum_wall, _ = _best(lambda: enumerate_edges(graph), 1)
        checks.append(bool(np.array_equal(np.searchsorted(src, np.arange(n_events + 1)), offsets)
                           and np.array_equal(dst, targets)))
        row.update(abi_enumerate_seconds=abi_wall + enum_wall,
                   ratio_edges=cet_wall / (abi_wall + enum_wall))
        del src, dst
    if kind == ">":
        price = cols["price"]
        checks.append(count_less_pairs(price, price * 1.05) == n_edges)
    row["edges_equal"] = all(checks) and bool(checks)
    return row


def measure_extract(kind: str, width: int) -> dict[str, Any]:
    """One extraction row: tumbling windows of ``width`` consecutive events."""
    query = compile_trend(QUERIES[kind])
    ts, cols = stream(kind, EXTRACT_EVENTS, pool=EXTRACT_POOL)
    window = np.arange(EXTRACT_EVENTS, dtype=np.int64) // width
    graph = build_graph(query, ts, cols, window=window)
    count, c_wall, _ = _best(lambda: count_trends(graph), 3)
    trends, x_wall, _ = _best(lambda: extract_trends(graph, max_trends=MAX_TRENDS), 1)
    length = sum(len(t) for t in trends)
    return {"predicate": kind, "window_events": width, "windows": graph.n_windows, "trends": count,
            "extracted": len(trends), "trend_events": length, "count_seconds": c_wall,
            "extract_seconds": x_wall, "trends_per_s": len(trends) / x_wall,
            "trend_events_per_s": length / x_wall, "ratio": x_wall / c_wall,
            "counts_equal": len(trends) == count}


def measure_dynamic(kind: str, n_events: int) -> dict[str, Any]:
    """One row: the streaming construction against the parallel one on the same events."""
    query = compile_trend(QUERIES[kind])
    ts, cols = stream(kind, n_events)
    parallel, p_wall, _ = _best(lambda: build_graph(query, ts, cols), 3)
    dynamic, d_wall, _ = _best(lambda: build_graph_dynamic(query, ts, cols), 1)
    return {"predicate": kind, "events": n_events, "parallel_seconds": p_wall,
            "dynamic_seconds": d_wall, "ratio": d_wall / p_wall, "equal": dynamic == parallel,
            "dynamic_events_per_s": n_events / d_wall}


def run_benchmark(max_n: int) -> dict[str, Any]:
    """Every measurement up to ``max_n`` events (module docstring), printing as it goes."""
    load_start = os.getloadavg()
    started = time.perf_counter()
    build = []
    for kind in QUERIES:
        for n in (s for s in SIZES if s <= max_n):
            build.append(measure_build(kind, n, _repeats(n)))
            print(_build_line(build[-1]), flush=True)
    baseline = []
    for kind in QUERIES:
        for n in (s for s in BASELINE_SIZES if s <= max_n):
            baseline.append(measure_baseline(kind, n))
            print(_baseline_line(baseline[-1]), flush=True)
    extract = [measure_extract(kind, width) for kind, width in EXTRACT_CASES]
    for row in extract:
        print(_extract_line(row), flush=True)
    dynamic = [measure_dynamic(kind, n) for kind in QUERIES for n in DYNAMIC_SIZES if n <= max_n]
    for row in dynamic:
        print(_dynamic_line(row), flush=True)
    return {"machine": platform.platform(), "python": sys.version.split()[0],
            "numpy": np.__version__, "cpus": os.cpu_count(), "seed": SEED, "max_n": max_n,
            "skipped_sizes": [s for s in SIZES if s > max_n],
            "load_average_start": load_start, "load_average_end": os.getloadavg(),
            "seconds": time.perf_counter() - started,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "queries": QUERIES, "build": build, "baseline": baseline, "extract": extract,
            "dynamic": dynamic}


def _n(value: int) -> str:
    """``10^k`` for powers of ten, ``a*10^k`` for their small multiples, else with commas."""
    k = len(str(value)) - 1
    lead, rest = divmod(value, 10**k)
    if value >= 10_000 and rest == 0:
        return f"10^{k}" if lead == 1 else f"{lead}*10^{k}"
    return f"{value:,}"


def _rate(value: float) -> str:
    return f"{value / 1e6:.2f} M"


def _opt(row: dict[str, Any], key: str, fmt: str, suffix: str = "") -> str:
    return format(row[key], fmt) + suffix if key in row else "-"


def _build_line(row: dict[str, Any]) -> str:
    count = (f"{row['count_seconds']:.2f} | {_rate(row['build_count_events_per_cpu_s'])} | "
             f"{row['count_bits']:,}" if "count_seconds" in row else "- | - | -")
    return (f"| `{PREDICATES[row['predicate']]}` | {_n(row['events'])} | {row['vertices']:,} | "
            f"{row['seconds']:.3f} | {_rate(row['events_per_s'])} | "
            f"{_rate(row['events_per_cpu_s'])} | {'yes' if row['target_met'] else 'no'} | "
            f"{row['half_cpu_seconds']:.3f} | {row['growth']:.2f} | {row['growth_n_log_m']:.2f} | "
            f"{count} |")


def _size_line(row: dict[str, Any]) -> str:
    edges = (f"{row['dag_edges']:,} ({row['dag_edges_how']}) | "
             f"{row['dag_edges'] / row['stored_rows']:,.1f}" if "dag_edges" in row else "- | -")
    return (f"| `{PREDICATES[row['predicate']]}` | {_n(row['events'])} | {row['vertices']:,} | "
            f"{row['from_edges']:,} | {row['to_edges']:,} | {row['stored_rows']:,} | "
            f"{row['stored_bytes'] / 2**20:,.1f} | {row['explicit_to_edges']:,} | "
            f"{row['n_times_m']:.2e} | {edges} |")


def _baseline_line(row: dict[str, Any]) -> str:
    return (f"| `{PREDICATES[row['predicate']]}` | {_n(row['events'])} | {row['dag_edges']:,} | "
            f"{row['cet_seconds']:.3f} | {row['abi_seconds']:.4f} | {row['ratio_build']:,.0f}x | "
            f"{_opt(row, 'abi_enumerate_seconds', '.3f')} | "
            f"{_opt(row, 'ratio_edges', ',.2f', 'x')} | "
            f"{row['edges_equal']} |")


def _extract_line(row: dict[str, Any]) -> str:
    return (f"| `{PREDICATES[row['predicate']]}` | {row['window_events']} | {row['windows']:,} | "
            f"{row['trends']:,} | {row['trend_events']:,} | {row['count_seconds']:.4f} | "
            f"{row['extract_seconds']:.3f} | {_rate(row['trends_per_s'])} | "
            f"{_rate(row['trend_events_per_s'])} | {row['ratio']:,.0f}x | {row['counts_equal']} |")


def _dynamic_line(row: dict[str, Any]) -> str:
    return (f"| `{PREDICATES[row['predicate']]}` | {_n(row['events'])} | "
            f"{row['parallel_seconds']:.4f} | {row['dynamic_seconds']:.3f} | "
            f"{_rate(row['dynamic_events_per_s'])} | {row['ratio']:,.0f}x | {row['equal']} |")


def markdown_tables(result: dict[str, Any]) -> str:
    """The results as five Markdown tables (construction, size, baseline, extraction, dynamic)."""
    parts = [
        "Construction (`build_graph`, one window) and the DP count (`count_trends`); CPU s are "
        "per core; growth = CPU t(N) / t(N/2), against N log m:\n",
        "| predicate | N | vertices m | build s | build events/s | build events/CPU-s | "
        ">= 1 M/core | N/2 CPU s | growth | N log m predicts | count s | build+count "
        "events/CPU-s | count bits |\n"
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
        "\n".join(_build_line(r) for r in result["build"]),
        "\nWhat the ABI graph stores (`to_arrays()`) against N*m and the event DAG's edges E:\n",
        "| predicate | N | vertices | from-edges | to-edges (ranges) | stored rows | stored MiB | "
        "to-edges as vertex edges | N*m | DAG edges E | E / stored rows |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "\n".join(_size_line(r) for r in result["build"]),
        "\nBaseline: the O(N^2) CET graph (every pair tested, CSR adjacency) on the same data:\n",
        "| predicate | N | DAG edges E | CET s | ABI build s | CET / ABI build | "
        "ABI build + enumerate_edges s | CET / (ABI + edges) | same edges |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        "\n".join(_baseline_line(r) for r in result["baseline"]),
        f"\nExtraction (`extract_trends`, {EXTRACT_EVENTS:,} events in tumbling windows of w "
        "events) against the DP count:\n",
        "| predicate | w | windows | trends | events in trends | count s | extract s | "
        "trends/s | trend events/s | extract / count | len(extract) == count |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        "\n".join(_extract_line(r) for r in result["extract"]),
        "\nDynamic (`build_graph_dynamic`, streaming) against parallel (`build_graph`):\n",
        "| predicate | N | parallel s | dynamic s | dynamic events/s | dynamic / parallel | "
        "graphs equal |\n|---|---:|---:|---:|---:|---:|---|",
        "\n".join(_dynamic_line(r) for r in result["dynamic"]),
    ]
    return "\n".join(parts)


def disagreements(result: dict[str, Any]) -> list[str]:
    """Every row where two answers that must agree do not."""
    bad = [f"baseline {r['predicate']} {r['events']}" for r in result["baseline"]
           if not r["edges_equal"]]
    bad += [f"extract {r['predicate']} w={r['window_events']}" for r in result["extract"]
            if not r["counts_equal"]]
    bad += [f"dynamic {r['predicate']} {r['events']}" for r in result["dynamic"] if not r["equal"]]
    return bad


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers for ``json.dumps``."""
    return value.item() if hasattr(value, "item") else str(value)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, optionally write JSON; exit 1 on a disagreement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--max-n", type=int, default=10_000_000, help="largest stream size")
    args = parser.parse_args(argv)
    result = run_benchmark(args.max_n)
    print()
    print(f"{result['machine']}, Python {result['python']}, numpy {result['numpy']}, "
          f"{result['cpus']} CPUs; load average {result['load_average_start'][0]:.2f} at the "
          f"start, {result['load_average_end'][0]:.2f} at the end; {result['seconds']:.0f} s; "
          f"peak RSS {result['peak_rss_mib']:,.0f} MiB")
    if result["skipped_sizes"]:
        print(f"skipped sizes (--max-n {args.max_n:,}): "
              + ", ".join(_n(s) for s in result["skipped_sizes"]))
    print()
    print(markdown_tables(result))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=_plain) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    bad = disagreements(result)
    if bad:
        print("DISAGREEMENT: " + "; ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
