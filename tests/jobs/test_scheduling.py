"""The scheduling examples (docs/scheduling.md) run as a scheduler would run them.

- ``deploy/crontab.example``: every schedule field is valid cron and says what the docs say;
  the run-all line, with the project and log paths replaced, runs through the shell in cron's
  bare environment against the test warehouse (limited to the heat prediction set), logs its
  header, progress and summary lines, and a second invocation while the first holds the lock
  exits at once without running; the maintenance line waits for the lock instead.
- ``deploy/luigi_pipeline.py``: Luigi's local scheduler runs one task per job in the list's
  order, a failing job does not stop the later ones, a job is "complete" exactly when the run
  manifest covers its source's current version (so a second build runs nothing and a new source
  commit runs that job alone), and the command line of the docs runs it in a fresh process.

The Luigi tests use a copy of ``conf/`` with two small prediction sets of their own (one over a
source that does not exist) and their own manifest table, so the shared ``cep_runs`` and the
shared state of the other tests are left alone; ``predict/heat`` is only recorded there.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pytest

from delta_tables.catalog import current_version
from delta_tables.manifest import read_runs
from delta_tables.settings import Settings, TableConf, load_settings

ROOT = Path(__file__).resolve().parents[2]
# The in-process Luigi runs read the example's settings, as the documented command does.
os.environ.setdefault("LUIGI_CONFIG_PATH", str(ROOT / "deploy" / "luigi.cfg"))
import luigi  # noqa: E402 - reads LUIGI_CONFIG_PATH when imported

CRONTAB = ROOT / "deploy" / "crontab.example"
DOC = ROOT / "docs" / "scheduling.md"
PROJECT, LOGS, LOCK = "/opt/spark-cep", "/var/log/spark-cep", "/opt/spark-cep/data/jobs.lock"

# ---------------------------------------------------------------------------------------------
# A crontab reader: the five schedule fields of Vixie cron / cronie (man 5 crontab)
# ---------------------------------------------------------------------------------------------

MONTHS = {m: i for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
FIELDS = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}),
          ("month", 1, 12, MONTHS), ("day of week", 0, 7, DAYS))
NICKNAMES = ("@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
             "@hourly")
ENV_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*=")


@dataclass(frozen=True)
class CronEntry:
    """One job line of a crontab: the values each schedule field allows, and the command."""

    schedule: tuple[frozenset[int], ...] | str
    command: str

    def shell_command(self) -> str:
        """The command as cron hands it to the shell: ``\\%`` becomes ``%``."""
        return self.command.replace("\\%", "%")


def cron_field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    """The values a schedule field allows; ValueError naming the field if it is not valid."""

    def value(token: str) -> int:
        if token.lower() in names:
            return names[token.lower()]
        if not token.isdigit():
            raise ValueError(f"{name}: {token!r} is not a number"
                             f"{' or a name' if names else ''}")
        number = int(token)
        if not low <= number <= high:
            raise ValueError(f"{name}: {number} is outside {low}-{high}")
        return number

    allowed: set[int] = set()
    for part in text.split(","):
        span, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ValueError(f"{name}: step {step_text!r} must be a positive number")
            step = int(step_text)
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first, last = (value(t) for t in span.split("-", 1))
            if first > last:
                raise ValueError(f"{name}: range {span!r} runs backwards")
        else:
            first = value(span)
            last = high if slash else first  # "5/15" is "5-max/15" in cronie
        allowed.update(range(first, last + 1, step))
    return frozenset(allowed)


def parse_crontab(text: str) -> tuple[dict[str, str], list[CronEntry]]:
    """Environment settings and job lines of a user crontab; ValueError for an invalid line."""
    env: dict[str, str] = {}
    entries: list[CronEntry] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if ENV_LINE.match(line):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip().strip("'\"")
            continue
        try:
            if line.startswith("@"):
                nickname, _, command = line.partition(" ")
                if nickname not in NICKNAMES:
                    raise ValueError(f"unknown nickname {nickname!r}")
                schedule: tuple[frozenset[int], ...] | str = nickname
            else:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    raise ValueError("expected five schedule fields and a command")
                schedule = tuple(cron_field(t, *spec) for t, spec in zip(parts[:5], FIELDS))
                command = parts[5]
            # cron ends the command at the first unescaped % and feeds the rest to its stdin.
            if re.search(r"(?<!\\)%", command):
                raise ValueError("unescaped % (cron turns it into a newline): write \\%")
            if not command.strip():
                raise ValueError("no command")
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}: {raw!r}") from None
        entries.append(CronEntry(schedule, command.strip()))
    return env, entries


@pytest.mark.parametrize("line, error", [
    ("60 * * * * true", "minute: 60 is outside 0-59"),
    ("*/0 * * * * true", "step '0'"),
    ("0 5-1 * * * true", "runs backwards"),
    ("0 0 0 * * true", "day of month: 0 is outside"),
    ("0 0 * foo * true", "month: 'foo' is not a number or a name"),
    ("0 0 * * * date +%F", "unescaped %"),
    ("0 0 * *", "five schedule fields"),
    ("@sometimes true", "unknown nickname"),
])
def test_the_crontab_reader_refuses_invalid_lines(line: str, error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        parse_crontab(line)


def test_the_crontab_reader_expands_fields() -> None:
    _, (entry,) = parse_crontab("*/15 9-17 1,15 jan-mar mon-fri echo \\%d")
    assert entry.schedule == (frozenset({0, 15, 30, 45}), frozenset(range(9, 18)),
                              frozenset({1, 15}), frozenset({1, 2, 3}), frozenset(range(1, 6)))
    assert entry.shell_command() == "echo %d"


def crontab_example() -> tuple[dict[str, str], CronEntry, CronEntry]:
    """The example's environment, run-all line and maintenance line."""
    env, entries = parse_crontab(CRONTAB.read_text(encoding="utf-8"))
    (run_all,) = [e for e in entries if "-m jobs run-all" in e.command]
    (maintain,) = [e for e in entries if "-m jobs maintain" in e.command]
    assert len(entries) == 2, entries
    return env, run_all, maintain


def test_the_crontab_example_is_valid_and_says_what_the_docs_say() -> None:
    env, run_all, maintain = crontab_example()
    minutes, hours, days, months, weekdays = run_all.schedule
    assert minutes == {0, 15, 30, 45} and hours == set(range(24)) and days == set(range(1, 32))
    assert months == set(range(1, 13)) and weekdays == set(range(8))
    assert [len(field) for field in maintain.schedule[:2]] == [1, 1]  # once a night
    assert maintain.schedule[2:] == run_all.schedule[2:]  # every day
    assert env["SHELL"] == "/bin/bash" and "/usr/bin" in env["PATH"].split(":")
    for entry, flock in ((run_all, "flock -n"), (maintain, "flock -w")):
        command = entry.command
        # One lock for the warehouse, taken before the job starts; every run logged.
        assert command.startswith(f"cd {PROJECT} && {flock} ") and f" {LOCK} " in command
        assert re.search(rf">> {LOGS}/\w+\.log 2>&1$", command)
    # The docs show the same lines.
    doc = DOC.read_text(encoding="utf-8")
    assert run_all.command in doc and maintain.command in doc


def on_this_machine(command: str, tmp_path: Path) -> str:
    """``command`` with the example's placeholders replaced by this checkout and ``tmp_path``."""
    return (command.replace(LOCK, str(tmp_path / "jobs.lock"))
            .replace(LOGS, str(tmp_path / "logs")).replace(PROJECT, str(ROOT)))


def cron_environment(crontab_env: dict[str, str], **extra: str) -> dict[str, str]:
    """The bare environment cron gives a command (HOME, LOGNAME, the crontab's settings)."""
    env = {"HOME": os.environ.get("HOME", "/root"), "LOGNAME": os.environ.get("USER", "root"),
           "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}
    env.update(crontab_env)
    env.update(extra)
    return env


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_the_run_all_line_runs_as_cron_runs_it_and_never_overlaps(
        settings: Settings, predicted_heat: Any, tmp_path: Path) -> None:
    assert shutil.which("flock"), "the crontab example needs flock (util-linux)"
    crontab_env, run_all, _ = crontab_example()
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "jobs.log"
    command = on_this_machine(run_all.shell_command(), tmp_path)
    # The same line, limited to the cheapest job of conf/jobs.toml.
    assert command.count("-m jobs run-all") == 1
    command = command.replace("-m jobs run-all", "-m jobs run-all --job predict/heat")
    env = cron_environment(crontab_env, CEP_WAREHOUSE=str(settings.warehouse_dir))
    shell = [crontab_env["SHELL"], "-c", command]
    first = subprocess.Popen(shell, cwd="/", env=env, stdin=subprocess.DEVNULL)
    try:
        # The header is written under the lock, so once it is there the lock is held.
        wait_for(lambda: log.exists() and "== run-all" in log.read_text(), 60, "the first run")
        started = time.monotonic()
        second = subprocess.run(shell, cwd="/", env=env, stdin=subprocess.DEVNULL, timeout=60)
        assert second.returncode == 1 and time.monotonic() - started < 10
        assert first.poll() is None, "the first run ended before the second was refused"
        assert first.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        if first.poll() is None:
            first.kill()
    text = log.read_text()
    assert len(re.findall(r"^== run-all \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", text, re.M)) == 1, text
    # Progress (stderr) and the summary line (stdout) of the one job, once from each stream.
    assert "[1/1] predict/heat" in text and "run-all: 1 job(s) ran, 0 failed" in text, text
    summary = re.findall(r"^predict/heat: (?:nothing new|source \d).*\(\d+\.\d+s\)$", text, re.M)
    assert len(summary) == 2 and summary[0] == summary[1], text


def test_the_maintenance_line_waits_for_the_lock(tmp_path: Path) -> None:
    crontab_env, _, maintain = crontab_example()
    (tmp_path / "logs").mkdir()
    # The shell plumbing only (lock, header, log): --help answers before any Spark starts, and
    # maintenance itself is tested in tests/jobs/test_maintenance.py.
    command = on_this_machine(maintain.shell_command(), tmp_path)
    assert command.count("-m jobs maintain") == 1
    command = command.replace("-m jobs maintain", "-m jobs maintain --help")
    lock = tmp_path / "jobs.lock"
    held = 3.0
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # what flock(1) takes: a run-all still running
        started = time.monotonic()
        proc = subprocess.Popen([crontab_env["SHELL"], "-c", command], cwd="/",
                                env=cron_environment(crontab_env), stdin=subprocess.DEVNULL)
        time.sleep(held)
        assert proc.poll() is None, "maintain did not wait for the lock"
    assert proc.wait(timeout=60) == 0 and time.monotonic() - started >= held
    text = next((tmp_path / "logs").glob("*.log")).read_text()
    assert re.search(r"^== maintain \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", text, re.M), text
    assert "usage: python -m jobs maintain" in text


# ---------------------------------------------------------------------------------------------
# Luigi
# ---------------------------------------------------------------------------------------------

TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("id", pa.int64()), ("user", pa.string()), ("ts", TS), ("temp", pa.float64())])
PREDICTIONS = """
[predictions.sched_heat]
source = "sched_src"
key_col = "user"
ts_col = "ts"
id_col = "id"

[predictions.sched_heat.subscriptions]
hot3 = "PATTERN H, H, H DEFINE H AS temp > 30"

[predictions.sched_broken]
source = "sched_missing"
key_col = "user"
ts_col = "ts"

[predictions.sched_broken.subscriptions]
hot = "PATTERN H DEFINE H AS temp > 30"
"""
JOBS = ["predict/sched_broken", "predict/sched_heat", "predict/heat"]


@dataclass
class Sched:
    """The Luigi tests' own conf: settings, manifest, source, and a counter for commits."""

    settings: Settings
    manifest: TableConf
    source: TableConf
    commits: int = 0


@pytest.fixture(scope="module")
def sched(spark: Any, settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Sched:
    from delta.tables import DeltaTable

    conf = tmp_path_factory.mktemp("sched_conf")
    shutil.copytree(ROOT / "conf", conf, dirs_exist_ok=True)
    with (conf / "predictions.toml").open("a", encoding="utf-8") as out:
        out.write(PREDICTIONS)
    with (conf / "tables.toml").open("a", encoding="utf-8") as out:
        out.write('\n[tables.sched_runs]\nlocation = "sched_runs"\n')
    (conf / "jobs.toml").write_text(f"[run_all]\njobs = {json.dumps(JOBS)}\n\n"
                                    '[manifest]\ntable = "sched_runs"\n', encoding="utf-8")
    local = load_settings(conf_dir=conf, overrides={
        "warehouse": str(settings.warehouse_dir), "show_progress": False,
        "app_name": "spark-cep-tests", "driver_memory": "3g"})
    source = TableConf("sched_src", settings.location_under_warehouse("sched_src"))
    (DeltaTable.createIfNotExists(spark).location(str(source.location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    return Sched(local, local.table("sched_runs"), source)


def add_commit(spark: Any, sched: Sched, n: int = 40) -> int:
    """Append ``n`` seeded readings to the test source; returns its new Delta version."""
    rng = np.random.default_rng(sched.commits)
    first = sched.commits * 1000
    hours = sched.commits * 100 + np.sort(rng.integers(0, 60, n))
    part = pa.table({"id": np.arange(first, first + n, dtype=np.int64),
                     "user": [f"u{k}" for k in rng.integers(0, 3, n)],
                     "ts": pa.array(1_704_067_200_000_000 + hours * 3_600_000_000,
                                    pa.int64()).cast(TS),
                     "temp": np.round(rng.normal(30, 3, n), 1)}, schema=SCHEMA)
    spark.createDataFrame(part).write.format("delta").mode("append").save(str(sched.source.location))
    sched.commits += 1
    return int(current_version(spark, sched.source))


@pytest.fixture
def luigi_events() -> Iterator[list[tuple[str, str]]]:
    """``(event, job)`` for every task start, success and failure of the pipeline's tasks."""
    from luigi_pipeline import RunStateJob

    seen: list[tuple[str, str]] = []
    handlers = {event: (lambda task, *_, _e=event: seen.append((_e, str(task.job))))
                for event in (luigi.Event.START, luigi.Event.SUCCESS, luigi.Event.FAILURE)}
    for event, handler in handlers.items():
        RunStateJob.event_handler(event)(handler)
    yield seen
    for event, handler in handlers.items():
        RunStateJob.remove_event_handler(event, handler)


@pytest.fixture(scope="module", autouse=True)
def _pipeline_importable() -> Iterator[None]:
    import sys

    sys.path.insert(0, str(ROOT / "deploy"))
    yield
    sys.path.remove(str(ROOT / "deploy"))


def build(*tasks: Any) -> Any:
    """Luigi's local scheduler, in this process, as ``luigi --local-scheduler`` runs it."""
    return luigi.build(list(tasks), local_scheduler=True, detailed_summary=True,
                       log_level="WARNING")


def started(events: list[tuple[str, str]]) -> list[str]:
    return [job for event, job in events if event == luigi.Event.START]


def test_luigi_runs_the_jobs_in_order_and_only_what_the_manifest_lacks(
        spark: Any, sched: Sched, predicted_heat: Any, luigi_events: list) -> None:
    from luigi.execution_summary import LuigiStatusCode
    from luigi_pipeline import RunAll, job_is_current, use_session

    from jobs.framework.runner import run_job

    use_session(spark, sched.settings)
    version = add_commit(spark, sched)
    assert not any(job_is_current(spark, sched.settings, key) for key in JOBS)

    result = build(RunAll())
    # One task per job of jobs.toml, in its order; the broken one fails, the later ones run.
    assert started(luigi_events) == JOBS
    assert [j for e, j in luigi_events if e == luigi.Event.FAILURE] == ["predict/sched_broken"]
    assert result.status == LuigiStatusCode.FAILED
    (run,) = read_runs(spark, sched.manifest, "predict/sched_heat")
    assert (run.status, run.source_version, run.rows_read) == ("complete", version, 40)
    (heat,) = read_runs(spark, sched.manifest, "predict/heat")
    assert heat.status == "recorded"  # built by the fixture: the manifest row alone is written
    assert job_is_current(spark, sched.settings, "predict/sched_heat")
    assert job_is_current(spark, sched.settings, "predict/heat")

    # Complete in Luigi's eyes means nothing to do in ours: the job itself writes nothing.
    again = run_job(spark, sched.settings, "predict/sched_heat", quiet=True)
    assert not again.written and again.run is None

    luigi_events.clear()
    result = build(RunAll(jobs=JOBS[1:]))
    assert started(luigi_events) == [] and result.status == LuigiStatusCode.SUCCESS
    assert len(read_runs(spark, sched.manifest)) == 2

    # A new source commit makes that job, and only it, due again.
    version = add_commit(spark, sched)
    assert not job_is_current(spark, sched.settings, "predict/sched_heat")
    result = build(RunAll(jobs=JOBS[1:]))
    assert started(luigi_events) == ["predict/sched_heat"]
    assert result.status == LuigiStatusCode.SUCCESS
    runs = read_runs(spark, sched.manifest, "predict/sched_heat")
    assert [(r.source_version, r.rows_read) for r in runs][-1] == (version, 40)


def doc_luigi_command() -> str:
    """The Luigi command line of docs/scheduling.md (the line that names the module)."""
    lines = [line.strip().rstrip("\\").strip() for line in
             DOC.read_text(encoding="utf-8").splitlines() if "--module luigi_pipeline" in line]
    assert lines, "docs/scheduling.md shows no luigi command"
    return lines[0]


def test_the_luigi_command_line_of_the_docs(spark: Any, settings: Settings, sched: Sched) -> None:
    argv = shlex.split(doc_luigi_command())
    env_words = [w for w in argv if re.match(r"^[A-Z_]+=", w)]
    argv = argv[len(env_words):]
    assert argv[0] == ".venv/bin/luigi" and "--local-scheduler" in argv
    version = add_commit(spark, sched)
    env = dict(os.environ, **dict(w.split("=", 1) for w in env_words),
               CEP_CONF_DIR=str(sched.settings.conf_dir), CEP_WAREHOUSE=str(settings.warehouse_dir))
    jobs = json.dumps(JOBS[:2])
    proc = subprocess.run([*argv, "--jobs", jobs], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    # deploy/luigi.cfg: a failed task is exit status 1 (Luigi's own default is 0).
    assert proc.returncode == 1, proc.stderr[-4000:]
    assert re.search(r"^predict/sched_heat: source \d+(?:\.\.\d+)?; 40 events read; run "
                     r"predict/sched_heat/g1/v\d+ \(complete\)", proc.stdout, re.M), proc.stdout
    assert "Luigi Execution Summary" in proc.stderr and "failed" in proc.stderr
    assert "RunStateJob(job=predict/sched_broken" in proc.stderr
    assert read_runs(spark, sched.manifest, "predict/sched_heat")[-1].source_version == version
