"""A state job as a Spark Structured Streaming query: its runs triggered by the source's commits.

``python -m jobs match --name NAME --stream [--trigger 10s]`` (docs/standing.md, "Schedule or
stream") keeps a standing pattern current within seconds of each append, with the very run a
schedule makes:

1. **Catch up.** One run brings the state to the source's current version first (a first run
   may read a snapshot, which a change-data-feed stream cannot).
2. **Stream.** ``readStream`` over the source's change data feed from the state's version,
   only ``_commit_version`` selected, with a checkpoint under the data folder
   (``<data>/checkpoints/<kind>/<name>``). Each micro-batch names the newest source version
   it holds, and ``foreachBatch`` runs the job up to that version
   (:func:`jobs.framework.runner.run_job`): it reads the commits after the state's own
   version through the change data feed, whole, whatever part of them the batch held.
3. **Exactly once.** Every write of a run is Delta's idempotent write, ``txnAppId`` from the
   job and table and ``txnVersion`` the source version the run reads up to, as in a scheduled
   run. A batch Spark replays after a stop or a kill (its offsets are in the checkpoint, its
   completion not yet) runs up to the same version: the run finishes what a crash left
   (:meth:`jobs.framework.incremental.IncrementalJob.run`) and Delta skips what had landed; a
   batch whose versions the state already holds writes nothing. Streamed and scheduled runs
   of one job may alternate.

``--available-now`` processes what the source holds and stops (a scheduler's form of the
same query).

Example:
    >>> query = stream_job(spark, settings, "match/unanswered_offers")         # doctest: +SKIP
    >>> query.awaitTermination()                                                # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from cep.errors import ConfigError
from delta_tables.catalog import table_properties
from delta_tables.delta_log import latest_metadata
from delta_tables.settings import Settings
from jobs.framework.registry import StateJob
from jobs.framework.run_conf import RunConf, load_run_conf
from jobs.framework.runner import resolve_job, run_job
from jobs.framework.txn import say

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["stream_job", "checkpoint_dir", "parse_trigger"]

_TRIGGER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?|m|min|minutes?)?\s*$", re.I)


def checkpoint_dir(settings: Settings, job: StateJob) -> Path:
    """Where the stream of ``job`` keeps its checkpoint: under the data folder, per job."""
    return settings.data_dir / "checkpoints" / job.kind / job.name


def parse_trigger(text: str) -> str:
    """``"10s"``, ``"500ms"``, ``"2 minutes"`` -> Spark's processing-time interval text.

    Example:
        >>> parse_trigger("10s"), parse_trigger("1.5 min"), parse_trigger("250ms")
        ('10 seconds', '90 seconds', '250 milliseconds')

    Raises:
        ConfigError: not a positive number with a unit of milliseconds, seconds or minutes.
    """
    found = _TRIGGER.match(text or "")
    if not found or float(found.group(1)) <= 0:
        raise ConfigError(f"--trigger {text!r}: expected a positive interval such as 10s, "
                          "500ms or 2min")
    value, unit = float(found.group(1)), (found.group(2) or "s").lower()
    if unit == "ms":
        return f"{int(value)} milliseconds"
    seconds = value * 60 if unit.startswith("m") else value
    return f"{int(seconds) if seconds == int(seconds) else seconds} seconds"


def stream_job(spark: "SparkSession", settings: Settings, job: StateJob | str, *,
               trigger: str = "10s", available_now: bool = False, quiet: bool = False,
               run_conf: RunConf | None = None, checkpoint: Path | None = None
               ) -> "StreamingQuery":
    """Start ``job`` as a streaming query over its source (after one catch-up run).

    Args:
        spark: A classic session (``foreachBatch`` calls back into this process).
        settings: Resolved settings.
        job: The job, or its ``kind/name``.
        trigger: How often a micro-batch starts (:func:`parse_trigger`).
        available_now: Process what the source holds, then stop.
        quiet: No progress output.
        run_conf: Rules of ``conf/jobs.toml`` (default: read them).
        checkpoint: The checkpoint folder (default :func:`checkpoint_dir`).

    Returns:
        The running query (``awaitTermination`` to wait, ``stop`` to stop).

    Raises:
        JobError: the source has no change data feed (the job's code).
        ConfigError: a bad trigger, an unknown job.
    """
    run_conf = run_conf or load_run_conf(settings)
    if isinstance(job, str):
        job = resolve_job(spark, settings, job)
    interval = parse_trigger(trigger)
    props = table_properties(spark, job.source)
    if props.get("delta.enableChangeDataFeed", "false").lower() != "true":
        raise job.error(f"source {job.source.name} has no change data feed "
                                 "(delta.enableChangeDataFeed); a stream reads the commits "
                                 "through it")
    run_job(spark, settings, job, quiet=quiet, run_conf=run_conf)
    meta = job.read_meta(spark)
    start = 0 if meta is None else int(meta["source_version"])
    folder = checkpoint or checkpoint_dir(settings, job)
    start = _first_start(folder, start, _source_id(job), quiet)

    def each_batch(frame: "DataFrame", batch_id: int) -> None:
        from pyspark.sql import functions as F

        newest = frame.agg(F.max("_commit_version")).first()[0]
        if newest is None:
            return
        say(quiet, f"{job.key}: micro-batch {batch_id}: source up to version {newest}")
        run_job(spark, settings, job, until_version=int(newest), quiet=quiet,
                run_conf=run_conf)

    feed = (spark.readStream.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", start).load(str(job.source.location))
            .select("_commit_version"))
    writer = (feed.writeStream.foreachBatch(each_batch)
              .option("checkpointLocation", str(folder))
              .queryName(f"cep-{job.kind}-{job.name}"))
    writer = writer.trigger(availableNow=True) if available_now \
        else writer.trigger(processingTime=interval)
    query = writer.start()
    say(quiet, f"{job.key}: streaming from source version {start} "
               f"({'available now' if available_now else 'every ' + interval}); checkpoint "
               f"{folder}")
    return query


def _first_start(folder: Path, start: int, source_id: str | None, quiet: bool) -> int:
    """The version the checkpoint's stream first started from (``start`` for a new one).

    Spark reads ``startingVersion`` again at every restart until a first batch is committed:
    a stream killed inside its first batch and restarted with a later version (the catch-up
    run moved it) would ask Delta for the batch it planned, from the new start to its old end,
    an empty and invalid range (``DELTA_INVALID_CDC_RANGE``). So the first start is kept
    beside the checkpoint and used at every start; the versions it replays are ones the state
    holds, and their runs write nothing.

    A checkpoint of another source table (one removed and created again under the same name)
    is removed: its offsets number another table's versions. Nothing is lost with it, since
    what the state holds is the job's meta row, not the checkpoint.
    """
    kept = folder / "cep-stream.json"
    if kept.exists():
        found = json.loads(kept.read_text(encoding="utf-8"))
        if found.get("source_id") == source_id:
            return int(found["starting_version"])
        say(quiet, f"checkpoint {folder} belongs to another table than the source (Delta table "
                   f"id {found.get('source_id')}, now {source_id}); starting a new one")
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps({"starting_version": start, "source_id": source_id}) + "\n",
                    encoding="utf-8")
    return start


def _source_id(job: StateJob) -> str | None:
    """The source's Delta table id, from its log (None when the log no longer says)."""
    found = latest_metadata(job.source)
    return None if found is None else found.get("id")
