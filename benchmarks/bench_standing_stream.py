"""Benchmark of a standing pattern as a stream: latency from an append to the run that holds it.

A source table (change data feed on) receives a steady rate of events, one append a second
(the events of that second: 1,000 keys, 50 Zipf types, event time = the wall clock), while
``python -m jobs match --stream``'s query (:func:`jobs.framework.stream.stream_job`, trigger
every second) runs in the same process on the same two cores. For each source version ``v``:

- **appended** = the commit timestamp of ``v`` in the source's Delta log;
- **visible** = the commit timestamp of the first ``<name>_meta`` commit whose run reads ``v``
  (its record names the source version it is complete up to): from then on the matches and
  timeouts ``v`` resolved are in their tables and a reader of the meta row sees them.

Latency = visible - appended, p50 and p95 over the versions of the measured span (the first
10 s are warm-up). A match's own wait for its window (``WITHIN 60 SECONDS`` here: a start is
resolved once the watermark passes it by a window) is the pattern's meaning, not processing,
and is not counted.

Run from the project root::

    python -m benchmarks.bench_standing_stream [--rates 1000 10000] [--seconds 60]

Example:
    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

PATTERN = "PATTERN T01 a; T02 b WITHIN 60 SECONDS"
KEYS, TYPES, WARMUP_S = 1_000, 50, 10.0


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation)."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _commits(location: Path) -> dict[int, tuple[float, dict[str, Any]]]:
    """``version -> (commit timestamp in seconds, userMetadata record)`` of a Delta log."""
    found = {}
    for path in sorted((location / "_delta_log").glob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            info = action.get("commitInfo")
            if info is not None:
                record = info.get("userMetadata")
                found[int(path.stem)] = (info["timestamp"] / 1000.0,
                                         json.loads(record) if record else {})
    return found


def _events(rng: np.random.Generator, n: int, first_id: int, now_us: int) -> Any:
    """``n`` events of the second before ``now_us``."""
    import pyarrow as pa

    weights = 1.0 / np.arange(1, TYPES + 1) ** 1.1
    types = rng.choice(TYPES, size=n, p=weights / weights.sum())
    ts = np.sort(now_us - rng.integers(0, 1_000_000, n))
    return pa.table({"id": np.arange(first_id, first_id + n, dtype=np.int64),
                     "key": rng.integers(0, KEYS, n).astype(np.int64),
                     "type": [f"T{t + 1:02d}" for t in types],
                     "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("us", tz="UTC"))})


def measure(spark: Any, settings: Any, rate: int, seconds: float) -> dict[str, Any]:
    """One steady rate: append for ``seconds`` while the stream runs; the latencies."""
    from delta.tables import DeltaTable

    from jobs.framework.registry import job_from_mapping
    from jobs.framework.run_conf import RunConf
    from jobs.framework.stream import stream_job
    from delta_tables.settings import TableConf

    name = f"stream_bench_{rate}"
    location = settings.location_under_warehouse(name)
    rng = np.random.default_rng(rate)
    first = _events(rng, rate, 0, int(time.time() * 1e6))
    (DeltaTable.createOrReplace(spark).location(str(location))
     .addColumns(spark.createDataFrame(first.to_pandas()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    spark.createDataFrame(first.to_pandas()).write.format("delta").mode("append") \
        .save(str(location))
    job = job_from_mapping(settings, "match", f"sb_{rate}",
                           {"source": name, "pattern": PATTERN, "key_col": "key"})
    rules = RunConf((), 3, 0.5, TableConf("sb_runs", settings.location_under_warehouse("sb_runs")),
                    168, True)
    query = stream_job(spark, settings, job, trigger="1s", quiet=True, run_conf=rules,
                       checkpoint=Path(tempfile.mkdtemp(prefix="sb_ck_")))
    started, sent, next_id = time.monotonic(), 0, rate
    try:
        while time.monotonic() - started < seconds and query.exception() is None:
            due = int((time.monotonic() - started + 1) * rate) - sent
            if due > 0:
                part = _events(rng, due, next_id, int(time.time() * 1e6))
                spark.createDataFrame(part.to_pandas()).write.format("delta") \
                    .mode("append").save(str(location))
                sent, next_id = sent + due, next_id + due
            else:
                time.sleep(0.05)
        last = max(_commits(location))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and query.exception() is None:
            meta = _commits(job.tables["meta"].location)
            if any(r.get("source_version", -1) >= last for _, r in meta.values()):
                break
            time.sleep(0.5)
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"the stream failed: {query.exception()}")
    source = _commits(location)
    meta = sorted((t, int(r["source_version"])) for t, r in
                  _commits(job.tables["meta"].location).values() if "source_version" in r)
    t0 = source[min(source)][0]
    latencies = []
    for version, (appended, _) in sorted(source.items()):
        if version < 2 or appended - t0 < WARMUP_S:
            continue
        visible = next((t for t, v in meta if v >= version), None)
        if visible is not None:
            latencies.append(visible - appended)
    runs = len({v for _, v in meta})
    return {"rate_events_s": rate, "seconds": seconds, "events": sent + rate,
            "achieved_events_s": round(sent / seconds), "commits": len(source) - 1,
            "runs": runs, "measured_versions": len(latencies),
            "p50_s": round(percentile(latencies, 50), 2),
            "p95_s": round(percentile(latencies, 95), 2),
            "max_s": round(max(latencies), 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", default=None, help="write the rows here too")
    args = parser.parse_args(argv)
    from delta_tables.settings import load_settings
    from jobs.session import build_session

    settings = load_settings(overrides={"warehouse": tempfile.mkdtemp(prefix="bench_stream_"),
                                        "show_progress": False})
    spark = build_session(settings)
    rows = []
    for rate in args.rates:
        row = measure(spark, settings, rate, args.seconds)
        print(json.dumps(row), flush=True)
        rows.append(row)
    spark.stop()
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "machine": platform.platform(),
                                               "python": sys.version.split()[0]}, indent=2))


if __name__ == "__main__":
    main()
