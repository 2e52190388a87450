"""Crash safety and consistency of the three state jobs, through the job framework (issue 8).

One registered job per kind (``cs_sketch``, ``cs_predict``, ``cs_graph``, in a test-local conf
folder with its own run manifest ``crash_runs``) runs over a small source that grows by one
commit per scenario, through :func:`jobs.framework.runner.run_job` in this process or the command line
``python -m jobs <kind> --name NAME`` in a child process. Its state is compared, every row of
every state table, with a **from-scratch build**: a fresh job with the same registration run
once over the source as of the same version. What must hold:

- **Killed between data files and commit** (``jobs/crash.py``: SIGKILL to the child's JVM and
  to the child when the first data file of the chosen table's write appears), or **stopped
  there in this process** (``crash_after="<table>-files"``, :mod:`jobs.framework.faults`: the
  write's data files are written into the table's folder, then the run raises before the
  commit): the child dies with -9 (or the run raises InjectedCrash), the table's version does
  not move and an orphan data file is left; readers going
  through the manifest still see the previous run, whatever the crashed run committed; the
  rerun writes each missing table once and leaves the tables the crashed run committed alone;
  the state then equals the from-scratch build: no duplicate leaf, vertex, edge or count. When
  the source grows before the rerun, the crashed run and the new one both get a manifest row.
- **Two overlapping runs** (a child frozen inside its first write while this process does the
  whole run, then resumed): the frozen one meets a Delta conflict, is retried, finds nothing
  new; every table got one write, the manifest one row; the state equals one run.
- **The same run twice, and nothing new**: no table, no meta table, no manifest row is written.
- **Any split** of the source into runs gives the state of one run over all of it.
- **Time travel**: for every run in the manifest, the state read as of it
  (:func:`delta_tables.manifest.find_run` / :func:`~delta_tables.manifest.read_state`) equals
  the from-scratch build as of its source version.

Crashed commits: each distinct commit path of each job once. A path is the code that commits
a table: ``Run.merge`` (the sketch's nodes and open, the prediction set's instances and models,
the graph's four vertex and edge tables), ``Run.append`` (every job's late rows), the meta write
of ``IncrementalJob``, and the runner's manifest row. Per kind: the first merge of a run (the
sketch's nodes, killed; the prediction set's and the graph's first merges are exercised as the
resumed runs' first commits), a merge after merges the same run committed (sketch open,
prediction models, graph from edges), the late append and the meta write; and the manifest row
(after the prediction set's meta table). The prediction set's subscriptions (first run only)
and states (new machine states only) are crashed in process by its job's own tests
(``crash_after``). Until 2026-11-23 every table was stopped in turn; the tables cut since then
(graph event and attribute vertices and to edges, prediction instances) commit through the
same ``Run.merge`` call, in the same loop or the next line, as a table still stopped.

Which crashes kill a real process: one per writer of a commit, each a ``python -m jobs`` child
SIGKILLed by the hook: the state job's own writes (its first MERGE, sketch nodes) and the
runner's manifest row (prediction set, with the source grown before the rerun). Every other
path is stopped in this process at the same place, one kind at a time and one table after
another (each rerun resumes the stopped run and stops at the next table, the last rerun
finishes it): its write goes through the same ``Run.merge`` / ``Run.append`` (or the meta
write of ``IncrementalJob``) as the killed one, so what differs from a kill is only how the
process ends, which the two kills cover. A child costs a JVM start and a run (35-100 s on this
machine); a stop costs one run (docs/testing.md, "The crash suite").

Each child costs a JVM start, so this process works while children start: it builds the
from-scratch state of the child's commit and makes the jobs later tests need, and the test
before the overlapping-runs test starts that test's frozen child (of another kind) before its
own stops and checks (a manifest kill never starts early: the manifest is every job's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from delta_tables.catalog import read_table
from delta_tables.manifest import ManifestRun, find_run, read_runs, read_state
from delta_tables.settings import Settings, TableConf, load_settings
from jobs.crash import KILL_ENV, MARKER_ENV, PAUSE_ENV, TAG, committed_files, orphan_files
from jobs.framework.errors import InjectedCrash
from jobs.framework.registry import StateJob, job_from_mapping, load_job
from jobs.framework.run_conf import RunConf, load_run_conf
from jobs.framework.runner import run_job
from tests import jvm

ROOT = Path(__file__).resolve().parents[2]
TS = pa.timestamp("us", tz="UTC")
EPOCH = 1_704_067_200_000_000  # 2024-01-01 in microseconds
MINUTE = 60_000_000
CHILD_TIMEOUT = 900  # seconds; a JVM start takes 10-25 s here, more when the machine is busy
RACE_ATTEMPTS = 3

# ---- the three jobs: registration, source rows ---------------------------------------------

SCHEMAS = {
    "sketch": pa.schema([("id", pa.int64()), ("case_id", pa.string()), ("type", pa.string()),
                         ("ts", TS)]),
    "predict": pa.schema([("id", pa.int64()), ("user", pa.string()), ("ts", TS),
                          ("temp", pa.float64())]),
    "graph": pa.schema([("id", pa.int64()), ("bank", pa.string()), ("ts", TS),
                        ("src", pa.string()), ("dest", pa.string()), ("amount", pa.float64())]),
}
REGISTRATIONS: dict[str, dict[str, Any]] = {
    "sketch": {"source": "cs_sketch_src", "stream_col": "case_id", "type_col": "type",
               "ts_col": "ts", "id_col": "id", "m": 64, "k": 2, "C": 3, "fanout": 2,
               "seeds": [5, 9]},
    "predict": {"source": "cs_predict_src", "key_col": "user", "ts_col": "ts", "id_col": "id",
                "subscriptions": {"hot3": "PATTERN H, H, H DEFINE H AS temp > 30",
                                  "warm_cold": "PATTERN W, C DEFINE W AS temp > 29, "
                                               "C AS temp < 28"}},
    # A lateness of 30 minutes: a check two hours back is late (below its commit's watermark).
    "graph": {"source": "cs_graph_src", "key_col": "bank", "lateness": "30 MINUTES",
              "pattern": "PATTERN check+ c[] WHERE c[i].src = c[i-1].dest AND "
                         "c[i].amount > c[i-1].amount WITHIN 2 HOURS SLIDE 1 HOUR"},
}
CONF_FILES = {"sketch": ("sketches.toml", "sketches"), "graph": ("graphs.toml", "graphs"),
              "predict": ("predictions.toml", "predictions")}
WRITE_ORDER = {
    "sketch": ("nodes", "open", "late", "meta"),
    "predict": ("subscriptions", "instances", "models", "states", "late", "meta"),
    "graph": ("event_vertices", "attribute_vertices", "from_edges", "to_edges", "late", "meta"),
}
"""The order in which a run writes its tables; the runner's manifest row comes after all."""
CRASH_CODES = {"sketch": "CEP-SKETCH-045", "predict": "CEP-PRED-045", "graph": "CEP-TREND-040"}
"""The code each job's :class:`InjectedCrash` carries (docs/jobs.md)."""
KEYS = {
    "sketch": {"nodes": ("stream", "node_id"), "open": ("stream",)},
    "predict": {"subscriptions": ("sub",), "states": ("sub", "leaf", "mask"), "models": ("sub",),
                "instances": ("sub", "key", "instance")},
    "graph": {"event_vertices": ("key", "window_start"),
              "attribute_vertices": ("key", "window_start", "predicate"),
              "from_edges": ("key", "window_start", "predicate"),
              "to_edges": ("key", "window_start", "predicate")},
}
"""The columns that identify a row of each merged table: a key twice is a duplicate leaf,
vertex, edge or count."""


def volatile(suffix: str, column: str) -> bool:
    """Whether ``column`` of a ``<name>_<suffix>`` table may differ from a from-scratch build.

    - ``run_id`` (meta and late rows): names the run that wrote the row,
      ``<name>:<first>-<last source version>``; a from-scratch build is one run over all
      versions, an incremental job many.
    - ``<table>_version`` of the meta row (all but ``source_version``): the Delta versions of
      the job's own state tables; a from-scratch build's tables have their own, shorter
      histories.
    - ``source_from`` (graph meta): the first source version the last run read.
    - ``updated_at`` (graph meta): the wall clock of the run.
    - ``sketch`` / ``prediction`` / ``graph`` (meta): the job's name; a from-scratch build is
      another job over the same source.
    """
    if column in ("run_id", "updated_at"):
        return True
    if suffix == "meta" and column in ("sketch", "prediction", "graph"):
        return True
    return suffix == "meta" and (column == "source_from" or (
        column.endswith("_version") and column != "source_version"))


def sketch_rows(step: int, set_aside: bool) -> pa.Table:
    """~60 events of 5 streams, all later than every earlier step's (sketches reject an event
    older than what earlier runs accepted, docs/sketch.md, so only in-order commits give the
    same tree in any split); ``set_aside`` adds three exact duplicates of this commit's events
    and one without a type: late and incomplete in any split."""
    rng = np.random.default_rng(1000 + step)
    n = 60
    table = pa.table({
        "id": step * 10_000 + np.arange(n, dtype=np.int64),
        "case_id": [f"s{k}" for k in rng.integers(0, 5, n)],
        "type": [f"T{t}" for t in np.minimum(rng.zipf(1.6, n), 9)],
        "ts": pa.array(EPOCH + (step * 1000 + np.sort(rng.integers(0, 900, n))) * 1_000_000,
                       pa.int64()).cast(TS)}, schema=SCHEMAS["sketch"])
    if not set_aside:
        return table
    untyped = pa.table({"id": [step * 10_000 + 9_999], "case_id": ["s1"], "type": [None],
                        "ts": pa.array([EPOCH + (step * 1000 + 950) * 1_000_000],
                                       pa.int64()).cast(TS)}, schema=SCHEMAS["sketch"])
    return pa.concat_tables([table, table.take([3, 17, 41]), untyped])


def predict_rows(step: int, set_aside: bool) -> pa.Table:
    """~50 readings of 4 users over 40 hours after the previous step's; ``set_aside`` adds two
    readings back in the previous step's hours (late: before their user's newest reading of an
    earlier commit) and one without a user (incomplete)."""
    rng = np.random.default_rng(2000 + step)
    n = 50
    hours = step * 40 + np.sort(rng.integers(0, 40, n))
    ids = step * 10_000 + np.arange(n, dtype=np.int64)
    users = [f"u{k}" for k in rng.integers(0, 4, n)]
    temps = np.round(rng.normal(29, 3, n), 1)
    if set_aside and step > 0:
        hours = np.append(hours, [step * 40 - 39, step * 40 - 38, step * 40 + 5])
        ids = np.append(ids, step * 10_000 + np.arange(9_997, 10_000))
        users = users + ["u0", "u1", None]
        temps = np.append(temps, [35.0, 35.0, 35.0])
    return pa.table({"id": ids, "user": users,
                     "ts": pa.array(EPOCH + hours * 3_600 * 1_000_000, pa.int64()).cast(TS),
                     "temp": temps}, schema=SCHEMAS["predict"])


def graph_rows(step: int, set_aside: bool) -> pa.Table:
    """~40 checks of 2 banks over 3 hours after the previous step's; ``set_aside`` adds one two
    hours back (below the watermark: late) and one without a bank (incomplete)."""
    rng = np.random.default_rng(3000 + step)
    n = 40
    minutes = step * 180 + np.sort(rng.integers(0, 180, n))
    banks: list[str | None] = [f"b{k}" for k in rng.integers(0, 2, n)]
    ids = step * 10_000 + np.arange(n, dtype=np.int64)
    if set_aside and step > 0:
        minutes = np.append(minutes, [step * 180 - 120, step * 180 + 30])
        banks = banks + ["b0", None]
        ids = np.append(ids, step * 10_000 + np.arange(9_998, 10_000))
    m = len(ids)
    return pa.table({"id": ids, "bank": banks,
                     "ts": pa.array(EPOCH + minutes * MINUTE, pa.int64()).cast(TS),
                     "src": [str(x) for x in rng.choice(list("xyz"), m)],
                     "dest": [str(x) for x in rng.choice(list("xyz"), m)],
                     "amount": rng.integers(1, 6, m).astype(np.float64)},
                    schema=SCHEMAS["graph"])


ROWS: dict[str, Callable[[int, bool], pa.Table]] = {
    "sketch": sketch_rows, "predict": predict_rows, "graph": graph_rows}


# ---- the lab: a conf folder of its own, jobs built from registrations ---------------------------

def toml_value(value: Any) -> str:
    """A TOML literal for the simple values of a registration."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string of printable ASCII is a TOML basic string
    return "[" + ", ".join(toml_value(v) for v in value) + "]"


def toml_entries(section: str, entries: dict[str, dict[str, Any]]) -> str:
    """``[section.name]`` tables (a dict value becomes a ``[section.name.key]`` sub-table)."""
    lines = []
    for name, entry in entries.items():
        lines.append(f"[{section}.{name}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in entry.items() if not isinstance(v, dict)]
        for key, sub in entry.items():
            if isinstance(sub, dict):
                lines.append(f"[{section}.{name}.{key}]")
                lines += [f"{k} = {toml_value(v)}" for k, v in sub.items()]
    return "\n".join(lines) + "\n"


def make_job(settings: Settings, kind: str, name: str, entry: dict[str, Any]) -> StateJob:
    """The job ``kind/name`` registered with ``entry`` (what jobs.framework.registry.load_job builds from
    a conf file), for from-scratch builds that need no conf entry."""
    return job_from_mapping(settings, kind, name, entry)


@dataclass
class Lab:
    """Settings over a test-local conf folder and warehouse, its run rules and the environment
    of a child ``python -m jobs``."""

    settings: Settings
    rules: RunConf
    env: dict[str, str]
    tmp: Path


@pytest.fixture(scope="module")
def lab(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Lab:
    tmp = tmp_path_factory.mktemp("crash")
    conf = tmp / "conf"
    conf.mkdir()
    for name in ("spark.toml", "datasets.toml", "tables.toml"):
        shutil.copy(settings.conf_dir / name, conf / name)
    with (conf / "tables.toml").open("a", encoding="utf-8") as handle:
        handle.write('\n[tables.crash_runs]\nlocation = "crash_runs"\n')
    (conf / "jobs.toml").write_text(
        '[run_all]\njobs = []\n[retries]\nmax_attempts = 3\nbackoff_seconds = 0.5\n'
        '[manifest]\ntable = "crash_runs"\n', encoding="utf-8")
    for kind, (filename, section) in CONF_FILES.items():
        (conf / filename).write_text(toml_entries(section, {f"cs_{kind}": REGISTRATIONS[kind]}),
                                     encoding="utf-8")
    # A warehouse of its own: the ~170 tables of the from-scratch builds would otherwise make
    # every later session start (demo, notebooks, servers) register them too.
    warehouse = tmp / "warehouse"
    warehouse.mkdir()
    lab_settings = load_settings(conf, overrides={
        "warehouse": str(warehouse), "show_progress": False,
        "app_name": settings.app_name, "driver_memory": settings.driver_memory})
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CEP_", "PYSPARK_SUBMIT"))}
    env.update(CEP_WAREHOUSE=str(warehouse), CEP_CONF_DIR=str(conf),
               CEP_DATA_DIR=str(settings.data_dir), PYTHONUNBUFFERED="1",
               JAVA_TOOL_OPTIONS=jvm.FAST_START)
    return Lab(lab_settings, load_run_conf(lab_settings), env, tmp)


# ---- one job and its source ---------------------------------------------------------------------

State = dict[str, list[tuple]]


@dataclass
class World:
    """The registered job ``cs_<kind>`` over its source, and from-scratch builds to compare it
    with (cached per source version)."""

    kind: str
    spark: Any
    lab: Lab
    job: StateJob
    step: int = 0
    scratch_states: dict[int, State] = field(default_factory=dict)
    verified: dict[str, ManifestRun] = field(default_factory=dict)  # by run id: see check_run

    @property
    def manifest(self) -> TableConf:
        return self.lab.rules.manifest

    def append(self, set_aside: bool) -> int:
        """Append the next commit to the source; returns its version."""
        self.step += 1
        rows = ROWS[self.kind](self.step, set_aside)
        (self.spark.createDataFrame(rows).write.format("delta").mode("append")
         .save(str(self.job.source.location)))
        return table_version(self.job.source)

    def run(self, **kwargs: Any) -> Any:
        """One run of the job through the framework, in this process."""
        return run_job(self.spark, self.lab.settings, self.job, quiet=True,
                       run_conf=self.lab.rules, **kwargs)

    def versions(self) -> dict[str, int | None]:
        """The latest version of each state table, and under ``manifest`` the number of the
        manifest's commits that record a run of this job (the other jobs share the table)."""
        out = {suffix: table_version(t) for suffix, t in self.job.tables.items()}
        out["manifest"] = manifest_writes(self.manifest, self.job.key)
        return out

    def runs(self) -> list[ManifestRun]:
        return read_runs(self.spark, self.manifest, self.job.key)

    def ensure_runs(self, n: int) -> list[ManifestRun]:
        """The job's runs, after adding commits and runs until there are ``n`` (when a test
        runs without the kill tests before it)."""
        runs = self.runs()
        while len(runs) < n:
            # The sketch's commits carry no set-aside rows: see sketch_rows.
            version = self.append(set_aside=self.kind != "sketch")
            assert self.run().run.source_version == version
            runs = self.runs()
        return runs

    def state(self, run: ManifestRun | None = None,
              seen: dict[tuple[str, int], list[tuple]] | None = None) -> State:
        """Every row of every state table (latest, or as of ``run`` through the manifest).

        ``seen`` keeps the rows read per ``(table, version)``: the rows of a version never
        change, so a table several runs name at the same version is read once.
        """
        if run is None:
            frames = {s: read_table(self.spark, t) for s, t in self.job.tables.items()}
            return tables_rows(self.kind, frames)
        frames = read_state(self.spark, self.job.tables, run)
        assert sorted(frames) == sorted(self.job.tables), run
        seen = {} if seen is None else seen
        keys = {suffix: (suffix, int(run.version_of(self.job.tables[suffix].name)))
                for suffix in frames}
        fresh = tables_rows(self.kind, {s: f for s, f in frames.items() if keys[s] not in seen})
        seen.update({keys[s]: rows for s, rows in fresh.items()})
        return {suffix: seen[keys[suffix]] for suffix in frames}

    def scratch_job(self, version: int) -> StateJob:
        """The job of :meth:`scratch` ``(version)``: a name of its own, the same registration."""
        return make_job(self.lab.settings, self.kind, f"cs_{self.kind}_at{version}",
                        REGISTRATIONS[self.kind])

    def scratch(self, version: int) -> State:
        """The state of a fresh job with the same registration run once up to ``version``."""
        if version not in self.scratch_states:
            fresh = self.scratch_job(version)
            for table in fresh.tables.values():
                assert not table.location.exists(), f"{table.location}: not a fresh build"
            result = fresh.run(self.spark, self.lab.settings, until_version=version, quiet=True)
            assert result.written and result.source_version == version
            self.scratch_states[version] = tables_rows(
                self.kind, {s: read_table(self.spark, t) for s, t in fresh.tables.items()})
        return self.scratch_states[version]

    def check_run(self, run: ManifestRun, what: str,
                  seen: dict[tuple[str, int], list[tuple]] | None = None) -> None:
        """The state read through the manifest as of ``run`` equals the from-scratch build as
        of its source version (remembered: the versions a row names never change)."""
        self.assert_state(self.state(run, seen), run.source_version, what)
        self.verified[run.run_id] = run

    def assert_state(self, got: State, version: int, what: str) -> None:
        """``got`` holds no duplicate and equals the from-scratch build as of ``version``."""
        assert_no_duplicates(self.kind, got, what)
        want = self.scratch(version)
        for suffix in self.job.tables:
            assert got[suffix] == want[suffix], (
                f"{what}: {self.job.tables[suffix].name} differs from a from-scratch build as "
                f"of source version {version}: {len(got[suffix])} rows vs {len(want[suffix])}")


def table_version(table: TableConf) -> int | None:
    """The latest committed version of ``table`` (None: no table), from its log folder."""
    log = table.location / "_delta_log"
    found = [int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()] if log.is_dir() else []
    return max(found) if found else None


def manifest_writes(manifest: TableConf, job: str) -> int:
    """How many commits of the manifest record a run of ``job`` (their ``userMetadata``)."""
    count = 0
    for path in (manifest.location / "_delta_log").glob("*.json"):
        for line in path.read_text(encoding="utf-8").splitlines():
            info = json.loads(line).get("commitInfo") if line.strip() else None
            if info is not None:
                record = json.loads(info.get("userMetadata") or "{}")
                count += record.get("cep-manifest") == job
    return count


def rows_of(kind: str, suffix: str, frame: Any) -> list[tuple]:
    """The table's rows as sorted ``((column, value), ...)`` tuples, volatile columns out."""
    rows = []
    for row in frame.toArrow().to_pylist():
        rows.append(tuple((k, _hashable(v)) for k, v in row.items() if not volatile(suffix, k)))
    return sorted(rows, key=repr)


def tables_rows(kind: str, frames: dict[str, Any]) -> State:
    """:func:`rows_of` of every frame, read on threads: each is a small Spark job that mostly
    waits (a state's four to six reads took ~0.5 s each one after another)."""
    with ThreadPoolExecutor(4, thread_name_prefix="read-state") as pool:
        rows = pool.map(lambda item: rows_of(kind, *item), frames.items())
        return dict(zip(frames, rows))


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def assert_no_duplicates(kind: str, state: State, what: str) -> None:
    """One row per key in every merged table, one meta row, no late row twice."""
    for suffix, keys in KEYS[kind].items():
        seen = Counter(tuple(dict(row)[k] for k in keys) for row in state[suffix])
        twice = sorted((k for k, n in seen.items() if n > 1), key=repr)
        assert not twice, f"{what}: {kind} {suffix} holds keys {keys} twice: {twice[:3]}"
    assert len(state["meta"]) == 1, f"{what}: {len(state['meta'])} meta rows"
    late = state["late"]
    assert len(set(late)) == len(late), f"{what}: a late row twice"


class Worlds(dict):
    """The three jobs by kind, each made on first use (or while a child runs, see
    :meth:`errands`): a source of one commit, one complete run. A kind whose job fails to
    start fails its own tests only."""

    def __init__(self, spark: Any, lab: Lab) -> None:
        super().__init__()
        self.spark, self.lab = spark, lab
        self.failed: dict[str, BaseException] = {}
        self.launched: dict[str, Launch] = {}  # children started ahead, by test node id

    def __missing__(self, kind: str) -> World:
        if kind in self.failed:
            raise RuntimeError(f"the job cs_{kind} failed to start: {self.failed[kind]!r}")
        try:
            world = self._make(kind)
        except BaseException as exc:
            self.failed[kind] = exc
            raise
        self[kind] = world
        return world

    def _make(self, kind: str) -> World:
        from delta.tables import DeltaTable

        job = load_job(self.lab.settings, kind, f"cs_{kind}")
        (DeltaTable.createIfNotExists(self.spark).location(str(job.source.location))
         .addColumns(self.spark.createDataFrame(SCHEMAS[kind].empty_table()).schema)
         .property("delta.enableChangeDataFeed", "true").execute())
        world = World(kind, self.spark, self.lab, job)
        version = world.append(set_aside=False)
        done = world.run()
        assert done.written and done.run is not None and done.run.source_version == version
        return world

    def errands(self) -> list[Callable[[], None]]:
        """Work later tests need that this process can do while a child starts its JVM: make
        the jobs not made yet (a failure is kept for the kind's own tests)."""
        def make(kind: str) -> None:
            try:
                self[kind]
            except Exception:  # noqa: BLE001 - re-raised by the kind's own tests
                pass

        return [lambda kind=kind: make(kind) for kind in ("sketch", "predict", "graph")
                if kind not in self and kind not in self.failed]


@pytest.fixture(scope="module")
def worlds(spark, lab: Lab) -> Iterator[Worlds]:
    found = Worlds(spark, lab)
    yield found
    for started in found.launched.values():  # started ahead for a test that did not run
        kill_group(started.proc)


# ---- a child process killed, or frozen, before a commit ------------------------------------------

@dataclass
class Child:
    """A finished ``python -m jobs`` child: exit code, output, the data file the hook fired on."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def fired(self) -> str | None:
        found = re.search(rf"{TAG}: data file (\S+) of \S+ written, no commit", self.stderr)
        return None if found is None else found.group(1)

    @property
    def lost_race(self) -> bool:
        return f"{TAG}: lost the race" in self.stderr

    def tail(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n" \
               f"{self.stderr[-6000:]}"


def start_child(world: World, env: dict[str, str], tag: str) -> tuple[subprocess.Popen, Path]:
    """Start ``python -m jobs <kind> --name cs_<kind>`` in a session (process group) of its
    own, its output in files (a pipe the JVM also holds could block)."""
    out = world.lab.tmp / f"{tag}-{time.monotonic_ns()}"
    handles = [open(f"{out}.out", "w"), open(f"{out}.err", "w")]  # noqa: SIM115 - closed below
    try:
        argv = [sys.executable, "-m", "jobs", world.kind, "--name", world.job.name]
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=handles[0], stderr=handles[1],
                                start_new_session=True)
    finally:
        for handle in handles:
            handle.close()
    return proc, out


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to what is left of a child's process group (the child is its leader)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def finish_child(proc: subprocess.Popen, out: Path) -> Child:
    """Wait for the child, then kill whatever is left of its process group (its JVM and Python
    workers, if the hook did not take them down)."""
    try:
        proc.wait(timeout=CHILD_TIMEOUT)
    finally:
        kill_group(proc)
        proc.wait(timeout=60)
    return Child(proc.returncode, Path(f"{out}.out").read_text(), Path(f"{out}.err").read_text())


@dataclass
class Launch:
    """A child started on a fresh commit of its job's source."""

    world: World
    target: int                   # the source version the child's run goes to
    previous: ManifestRun         # the manifest's newest run of the job before the child
    before: dict[str, int | None]  # World.versions() before the child
    proc: subprocess.Popen
    out: Path
    marker: Path | None = None    # where a paused child writes its JVM's pid


def launch(world: World, hook: dict[str, str], tag: str, *, set_aside: bool,
           marker: Path | None = None) -> Launch:
    """Append a commit, then start a child running the job with the ``hook`` variables."""
    target = world.append(set_aside=set_aside)
    previous = find_run(world.spark, world.manifest, world.job.key)
    before = world.versions()
    proc, out = start_child(world, {**world.lab.env, **hook}, tag)
    return Launch(world, target, previous, before, proc, out, marker)


def killed_table(world: World, suffix: str) -> TableConf:
    return world.manifest if suffix == "manifest" else world.job.tables[suffix]


def launch_kill(world: World, suffix: str) -> Launch:
    """A child killed before the commit of its write to ``suffix`` (``manifest``: the
    runner's row)."""
    # Only the sketch's late kill gets set-aside rows in the sketch's commits: see sketch_rows
    # and test_from_scratch_late_rows_keep_their_commit.
    return launch(world, {KILL_ENV: str(killed_table(world, suffix).location)},
                  f"kill-{world.kind}-{suffix}",
                  set_aside=world.kind != "sketch" or suffix == "late")


def launch_pause(world: World) -> Launch:
    """A child frozen inside its write to the instances table (the prediction set's first)."""
    marker = world.lab.tmp / f"paused-{time.monotonic_ns()}"
    return launch(world, {PAUSE_ENV: str(world.job.tables["instances"].location),
                          MARKER_ENV: str(marker)}, "pause-predict", set_aside=True,
                  marker=marker)


@dataclass
class Kill:
    """What a run stopped before the commit of a table left (a killed child, or a run of
    this process stopped by ``crash_after``)."""

    target: int
    before: dict[str, int | None]
    after: dict[str, int | None]
    previous: ManifestRun
    previous_state: State | None  # read through the manifest as of ``previous`` (None: that
                                  # run was checked already)


def kill_before_commit(world: World, suffix: str, errands: Sequence[Callable[[], None]] = (),
                       started: Launch | None = None) -> Kill:
    """Run the job in a child killed between the data files and the commit of its write to
    ``suffix`` (``started``, or one started now on a fresh commit), and check that this is
    what happened. A race lost against the commit is retried with a fresh commit, a bounded
    number of times. While the child runs, this process builds the from-scratch state of the
    new commit, reads the previous run through the manifest, then does ``errands``."""
    table = killed_table(world, suffix)
    for _attempt in range(RACE_ATTEMPTS):
        started = started or launch_kill(world, suffix)
        world.scratch(started.target)
        # The versions a manifest row names never change, so their rows read now are the rows
        # a reader gets after the kill if the manifest still names the same run (checked then).
        previous_state = (None if world.verified.get(started.previous.run_id) == started.previous
                          else world.state(started.previous))
        for errand in errands if suffix != "manifest" else ():  # errands write the manifest
            if started.proc.poll() is not None:
                break
            errand()
        child = finish_child(started.proc, started.out)
        after = world.versions()
        kill = Kill(started.target, started.before, after, started.previous, previous_state)
        started = None
        if child.returncode == 0 and child.lost_race:
            continue  # the commit won: the run completed; try again with a fresh commit
        assert child.returncode == -signal.SIGKILL and child.fired, child.tail()
        if child.fired in committed_files(table.location):
            world.run()  # killed just after the commit: heal, then try again
            continue
        assert child.fired in orphan_files(table.location), child.tail()
        assert after[suffix] == kill.before[suffix], (suffix, kill.before, after)
        return kill
    pytest.fail(f"the commit of {table.name} beat the kill {RACE_ATTEMPTS} times")


def stop_in_process(world: World, suffix: str) -> dict[str, int | None]:
    """Run the job in this process, stopped inside its write to ``suffix`` after the data
    files (``crash_after="<suffix>-files"``), and check what it left: an InjectedCrash, a new
    orphan data file, the table's version unchanged. Returns :meth:`World.versions` after."""
    table = killed_table(world, suffix)
    before = world.versions()
    orphans = set(orphan_files(table.location))
    with pytest.raises(InjectedCrash, match=f"{CRASH_CODES[world.kind]}.*{suffix}-files"):
        world.job.run(world.spark, world.lab.settings, quiet=True, crash_after=f"{suffix}-files")
    after = world.versions()
    assert set(orphan_files(table.location)) - orphans, f"no orphan data file in {table.name}"
    assert after[suffix] == before[suffix], (suffix, before, after)
    return after


def start_next_child(request: pytest.FixtureRequest, worlds: Worlds, kind: str) -> None:
    """Start the child of the next test now when that test runs another kind's job (the kinds'
    jobs share nothing): its JVM starts while this test reruns and checks."""
    items = request.session.items
    index = items.index(request.node)
    if index + 1 >= len(items):
        return
    item = items[index + 1]
    if item.originalname == KILL_TEST:
        next_kind, suffix = item.callspec.params["kind"], item.callspec.params["suffix"]
    elif item.originalname == PAUSE_TEST:
        next_kind, suffix = "predict", None
    else:
        return
    # The manifest is every job's: a write of this process to it would trigger a child that
    # waits for a write to it, so a manifest kill starts only when nothing else runs.
    if next_kind == kind or next_kind in worlds.failed or suffix == "manifest":
        return
    world = worlds[next_kind]
    worlds.launched[item.nodeid] = (launch_pause(world) if suffix is None
                                    else launch_kill(world, suffix))


# ---- killed before a commit, then rerun ---------------------------------------------------------

KILL_TEST = "test_killed_before_a_commit_then_rerun_equals_a_from_scratch_build"
PAUSE_TEST = "test_two_overlapping_runs_apply_once"
KILLS = [  # (kind, table, tables the crashed run must have committed, grow the source first)
    # One child per writer of a commit: the state job's own writes (its first Run.merge) and
    # the runner's manifest row. Every other commit path is stopped in this process (STOPS).
    ("sketch", "nodes", set(), False),                                  # Run.merge, first
    ("predict", "manifest", {"instances", "models", "late", "meta"}, True),  # the runner's row
]
STOPS = [  # (kind, ((table, tables a run must have committed before it), ...), grow first)
    # Each kind's other commit paths, once each and in turn (each rerun resumes the run before
    # it): a Run.merge after merges the same run committed, its Run.append of late rows, and
    # the protocol's meta write. Tables merged through the same Run.merge call share a path
    # (the graph's four vertex and edge tables in one loop, the prediction set's instances and
    # models one line apart). The prediction set's subscriptions (first run only) and states
    # (new machine states only) are crashed by the job's own tests. The sketch's chain is the
    # last of its commits with set-aside rows (see sketch_rows); the graph's source grows
    # after its meta stop.
    ("sketch", (("open", {"nodes"}), ("late", {"nodes", "open"}),
                ("meta", {"nodes", "open", "late"})), False),
    ("predict", (("models", {"instances"}), ("late", {"instances", "models"}),
                 ("meta", {"instances", "models", "late"})), False),
    ("graph", (("from_edges", {"event_vertices", "attribute_vertices"}),
               ("late", {"event_vertices", "attribute_vertices", "from_edges", "to_edges"}),
               ("meta", {"event_vertices", "attribute_vertices", "from_edges", "to_edges",
                         "late"})), True),
]


@pytest.mark.parametrize("kind, suffix, committed, grow", KILLS,
                         ids=[f"{k}-{s}{'-then-grow' if g else ''}" for k, s, _, g in KILLS])
def test_killed_before_a_commit_then_rerun_equals_a_from_scratch_build(
        request: pytest.FixtureRequest, worlds: Worlds, kind: str, suffix: str,
        committed: set[str], grow: bool) -> None:
    world = worlds[kind]
    kill = kill_before_commit(world, suffix, worlds.errands(),
                              worlds.launched.pop(request.node.nodeid, None))
    start_next_child(request, worlds, kind)
    order = (*WRITE_ORDER[kind], "manifest")
    moved = {t for t in order if kill.after[t] != kill.before[t]}
    # The crash fell between two tables: those before the killed one that had rows were
    # committed once, the killed one and those after it not at all.
    assert committed <= moved <= set(order[:order.index(suffix)]), (suffix, kill.before,
                                                                      kill.after)
    assert all(kill.after[t] == kill.before[t] + 1 for t in moved), (kill.before, kill.after)
    rerun_after_crashes(world, kill, (suffix,), grow)


@pytest.mark.parametrize("kind, stops, grow", STOPS,
                         ids=[f"{k}-{'-'.join(s for s, _ in stops)}{'-then-grow' if g else ''}"
                              for k, stops, g in STOPS])
def test_stopped_before_each_commit_in_turn_then_rerun_equals_a_from_scratch_build(
        request: pytest.FixtureRequest, worlds: Worlds, kind: str,
        stops: tuple[tuple[str, set[str]], ...], grow: bool) -> None:
    """The run on a fresh commit stops before the commit of the first table; its rerun
    resumes it and stops before the next one, and so on; a last rerun finishes it."""
    world = worlds[kind]
    target = world.append(set_aside=kind != "sketch" or any(s == "late" for s, _ in stops))
    previous = find_run(world.spark, world.manifest, world.job.key)
    first = before = world.versions()
    world.scratch(target)
    previous_state = (None if world.verified.get(previous.run_id) == previous
                      else world.state(previous))
    start_next_child(request, worlds, kind)
    order = (*WRITE_ORDER[kind], "manifest")
    moved_so_far: set[str] = set()
    for suffix, committed in stops:
        after = stop_in_process(world, suffix)
        moved = {t for t in order if after[t] != before[t]}
        # This run committed, once each, what the runs before it had not and that comes
        # before the stopped table; the stopped table and those after it not at all.
        allowed = set(order[:order.index(suffix)]) - moved_so_far
        assert committed - moved_so_far <= moved <= allowed, (suffix, before, after)
        assert all(after[t] == before[t] + 1 for t in moved), (suffix, before, after)
        assert find_run(world.spark, world.manifest, world.job.key) == previous, suffix
        moved_so_far |= moved
        before = after
    kill = Kill(target, first, before, previous, previous_state)
    rerun_after_crashes(world, kill, tuple(s for s, _ in stops), grow)


def rerun_after_crashes(world: World, kill: Kill, stopped: tuple[str, ...], grow: bool) -> None:
    """After runs that stopped before the commits of ``stopped`` (what :class:`Kill` holds):
    readers still see the previous run; a rerun (after one more commit when ``grow``) writes
    each missing table once; every run then equals the from-scratch build."""
    kind = world.kind
    order = (*WRITE_ORDER[kind], "manifest")
    moved = {t for t in order if kill.after[t] != kill.before[t]}
    # Readers going through the manifest still see the previous run, exactly (the same row,
    # so the same versions and rows), although the newest versions of the tables committed
    # before the crash belong to the crashed run.
    previous = kill.previous
    assert find_run(world.spark, world.manifest, world.job.key) == previous
    for t in moved - {"manifest"}:
        assert kill.after[t] > previous.state_versions[world.job.tables[t].name]
    if kill.previous_state is not None:  # else compared with a from-scratch build already
        world.assert_state(kill.previous_state, previous.source_version,
                           f"{kind} read through the manifest after crashes before {stopped}")

    final = kill.target
    if grow:
        final = world.append(set_aside=kind != "sketch")
    rerun = world.run()
    done = world.versions()
    assert rerun.written == (grow or stopped != ("manifest",)), rerun
    if not grow:
        # The rerun wrote each missing table once and left the crashed runs' commits alone.
        for t in order:
            if t in moved:
                assert done[t] == kill.after[t], (t, kill.after, done)
            else:
                assert done[t] - kill.before[t] in (0, 1), (t, kill.before, done)
        for suffix in stopped:
            assert done[suffix] == kill.before[suffix] + 1, (suffix, kill.before, done)
        if stopped != ("manifest",):
            assert rerun.result.resumed == bool(moved - {"manifest"}), rerun.result
    runs = world.runs()
    last = find_run(world.spark, world.manifest, world.job.key)
    assert runs[-1] == last and last.source_version == final
    # The newest run names the newest version of every table: its state is the latest state.
    assert last.state_versions == {t.name: done[s] for s, t in world.job.tables.items()}
    # Every run that completed has its row: the crashed one (finished by the rerun) too, also
    # when the source grew in between.
    recorded = {r.source_version: r for r in runs}
    assert kill.target in recorded, (kill.target, sorted(recorded))
    for version in sorted({kill.target, final}):
        world.check_run(recorded[version], f"{kind} at source version {version} after crashes "
                                           f"before {stopped} and a rerun, through the manifest")


# ---- two runs at once ---------------------------------------------------------------------------

def test_two_overlapping_runs_apply_once(request: pytest.FixtureRequest, worlds: Worlds) -> None:
    """A child is frozen inside its first write (instances: data files written, no commit);
    meanwhile this process runs the same job to the end; then the child goes on."""
    world = worlds["predict"]
    started = worlds.launched.pop(request.node.nodeid, None) or launch_pause(world)
    target, before, proc, out = started.target, started.before, started.proc, started.out
    marker = started.marker
    assert marker is not None
    rows_before = len(world.runs())
    jvm = None
    try:
        world.scratch(target)  # built while the child starts its JVM
        deadline = time.monotonic() + CHILD_TIMEOUT
        while not marker.exists():
            assert proc.poll() is None, finish_child(proc, out).tail()
            assert time.monotonic() < deadline, "the child never reached its first write"
            time.sleep(0.1)
        jvm = int(marker.read_text().split()[0])
        assert jvm > 0
        assert table_version(world.job.tables["instances"]) == before["instances"]
        second = world.run()
        assert second.written and second.run is not None and second.run.source_version == target
    except BaseException:
        kill_group(proc)
        raise
    finally:
        if jvm is not None and jvm > 0 and proc.poll() is None:
            os.kill(jvm, signal.SIGCONT)
    child = finish_child(proc, out)
    assert child.returncode == 0, child.tail()
    # The child's write met the second run's commit: a Delta conflict, retried; the retry
    # found nothing new and no manifest row to add.
    assert "concurrency conflict" in child.stderr, child.tail()
    assert "nothing new" in child.stdout, child.tail()
    assert "recorded run" not in child.stdout, child.tail()
    done = world.versions()
    for suffix, version in done.items():
        assert version - before[suffix] in (0, 1), (suffix, before, done)
    for suffix in ("instances", "models", "late", "meta", "manifest"):
        assert done[suffix] == before[suffix] + 1, (suffix, before, done)
    runs = world.runs()
    assert len(runs) == rows_before + 1 and runs[-1] == second.run
    world.assert_state(world.state(), target, "predict after two overlapping runs")


# ---- the same run twice, nothing new, any split, time travel -------------------------------

@pytest.mark.parametrize("kind", ["sketch", "predict", "graph"])
def test_the_same_run_twice_and_nothing_new_write_nothing(worlds: Worlds,
                                                          kind: str) -> None:
    world = worlds[kind]
    runs = world.runs()
    before = world.versions()
    last = runs[-1].source_version
    again = world.run()  # the run the last one did, again: the source has not moved
    assert not again.written and again.run is None, again
    earlier = world.run(until_version=runs[0].source_version)  # an older target: nothing to do
    assert not earlier.written and earlier.run is None, earlier
    assert world.versions() == before
    assert world.runs() == runs
    world.assert_state(world.state(), last, f"{kind} after reruns with nothing new")


@pytest.mark.parametrize("kind", ["sketch", "predict", "graph"])
def test_any_split_equals_one_batch(worlds: Worlds, kind: str) -> None:
    """The job ran once per commit (with crashes in between, and over two commits after a
    crash); here the from-scratch build up to an earlier commit runs on over all later commits
    in one run. Both equal one run over everything (the kill tests compare the first)."""
    world = worlds[kind]
    versions = [r.source_version for r in world.runs()]
    middle = versions[len(versions) // 2 - 1] if len(versions) > 2 else versions[0]
    last = table_version(world.job.source)
    if last - middle < 2:
        # A commit only this test's job reads (the sketch's without set-aside rows: see
        # sketch_rows), so that the batch spans several commits.
        last = world.append(set_aside=kind != "sketch")
    world.scratch(middle)
    batches = world.scratch_job(middle)
    done = run_job(world.spark, world.lab.settings, batches, quiet=True,
                   run_conf=world.lab.rules)
    assert done.written and done.result.source_from == middle + 1
    assert done.run is not None and done.run.source_version == last
    world.assert_state({s: rows_of(kind, s, read_table(world.spark, t))
                        for s, t in batches.tables.items()},
                       last, f"{kind} in two batches split at source version {middle}")


@pytest.mark.parametrize("kind", ["sketch", "predict", "graph"])
def test_time_travel_through_the_manifest(worlds: Worlds, kind: str) -> None:
    """Every run of the job, read back through the manifest after all later runs, is the
    from-scratch build as of its source version, and ``find_run`` by source version finds it."""
    world = worlds[kind]
    runs = world.ensure_runs(2)
    assert len({r.source_version for r in runs}) == len(runs)
    seen: dict[tuple[str, int], list[tuple]] = {}
    for run in runs:
        world.check_run(run, f"{kind} as of run {run.run_id}", seen)
    for run in (runs[0], runs[len(runs) // 2]):
        assert find_run(world.spark, world.manifest, world.job.key,
                        source_version=run.source_version) == run
    # The plain-SQL recipe of docs/jobs.md: TIMESTAMP AS OF the manifest's commit timestamp.
    first = runs[0]
    meta = world.job.tables["meta"]
    via_sql = world.spark.sql(
        f"SELECT source_version FROM {meta.name} TIMESTAMP AS OF ("
        f"  SELECT state_timestamps['{meta.name}'] FROM {world.manifest.name}"
        f"  WHERE run_id = '{first.run_id}')").collect()
    assert [int(r[0]) for r in via_sql] == [first.source_version]


# ---- a from-scratch build and the commit a set-aside row arrived in ------------------------------

def test_from_scratch_late_rows_keep_their_commit(worlds: Worlds) -> None:
    """Sketch rows set aside in an earlier commit (exact duplicates, an event without a type)
    are recorded with the ``source_version`` of that commit by the job that ran commit by
    commit. A job built from scratch after one more commit must record the same: the column is
    "the commit the event arrived in" (docs/sketch.md, ``<name>_late``), and the whole state
    must equal the incremental one. (The prediction and graph jobs read a first run commit by
    commit; their late rows are compared with from-scratch builds in the tests above.) Last in
    this file: it leaves the sketch job's late rows in a commit before the newest."""
    world = worlds["sketch"]
    late = [dict(r) for r in world.state(find_run(world.spark, world.manifest,
                                                  world.job.key))["late"]]
    if not late:  # run alone: give the job a commit with set-aside rows first
        world.append(set_aside=True)
        assert world.run().written
    version = world.append(set_aside=False)
    assert world.run().run.source_version == version
    got = world.state(find_run(world.spark, world.manifest, world.job.key))
    want = world.scratch(version)
    commits = [sorted((dict(r)["source_version"], dict(r)["id"]) for r in state["late"])
               for state in (got, want)]
    assert commits[0] and all(v < version for v, _ in commits[0]), commits[0]
    assert commits[1] == commits[0], f"from scratch: {commits[1]}; commit by commit: {commits[0]}"
    world.assert_state(got, version, "sketch one commit after its late rows")
