"""The transaction log of a Delta table in the local warehouse, read from its files.

A state job asks a table's latest version, its id, its properties and the commit timestamps
time travel will use several times per run; through Spark each answer loads the table's
snapshot or history in the JVM (0.1-0.7 s each, measured in docs/decisions.md). The warehouse
is a local folder, so these answers come from the ``_delta_log`` folder directly:

- the latest version is the highest ``NNNNNNNNNNNNNNNNNNNN.json`` commit file;
- the table's id and properties are those of the newest ``metaData`` action;
- a commit's timestamp is the commit's ``inCommitTimestamp`` when the table records one,
  else the commit file's modification time in milliseconds, raised where needed so the
  timestamps grow with the versions (Delta's ``DeltaHistoryManager`` does the same before
  resolving ``TIMESTAMP AS OF``: a commit whose file time is not above the previous commit's
  counts as one millisecond after it).

When the commit files no longer reach back far enough (log cleanup after a checkpoint), the
functions say so with None and the caller asks Spark. A commit file that is not JSON (a disk
or a hand edit damaged it) is :class:`DeltaLogError` naming the table, the version and the
line; :func:`check_log` looks at every commit a reader of the latest version would read, so a
job can refuse a damaged table before Spark meets it.

Example:
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from delta_tables.settings import TableConf
    >>> folder = Path(tempfile.mkdtemp())
    >>> log = folder / "_delta_log"
    >>> log.mkdir()
    >>> _ = (log / "00000000000000000000.json").write_text(
    ...     json.dumps({"commitInfo": {"userMetadata": '{"run": 1}'}}) + "\\n"
    ...     + json.dumps({"metaData": {"id": "abc", "configuration": {"k": "v"}}}) + "\\n")
    >>> table = TableConf("t", folder)
    >>> log_version(table), commit_records(table, None), latest_metadata(table)["id"]
    (0, [{'run': 1}], 'abc')
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from cep.errors import CepError
from delta_tables.settings import TableConf

__all__ = ["DeltaLogError", "log_version", "commit_records", "latest_metadata",
           "commit_timestamp", "check_log"]


class DeltaLogError(CepError):
    """A table's Delta log is damaged: a commit file that is not JSON, or a bad checkpoint
    pointer."""

    code = "CEP-DELTA-001"

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _commit_files(table: TableConf) -> list[tuple[int, Path]]:
    """``(version, path)`` of every commit file of ``table``'s log, oldest first."""
    log = table.location / "_delta_log"
    if not log.is_dir():
        return []
    return sorted((int(p.stem), p) for p in log.glob("*.json") if p.stem.isdigit())


def _actions(table: TableConf, version: int, path: Path) -> list[dict[str, Any]]:
    """The actions of commit ``version`` (its file ``path``); DeltaLogError when damaged."""
    actions = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                action = json.loads(raw.decode("utf-8"))
            except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
                raise _damaged(table, version, path, f"line {number} is not JSON ({exc})") \
                    from None
            if not isinstance(action, dict):
                raise _damaged(table, version, path, f"line {number} is not a JSON object")
            actions.append(action)
    return actions


def _damaged(table: TableConf, version: int, path: Path, why: str) -> DeltaLogError:
    return DeltaLogError(
        f"table {table.name}: commit {version} of its Delta log ({path}) is damaged: {why}; "
        f"nothing was read or written. Restore the file from a backup, or rebuild the table")


def log_version(table: TableConf) -> int | None:
    """The latest committed version of ``table`` (None: no table).

    What :func:`delta_tables.catalog.current_version` answers, without a Spark job.
    """
    files = _commit_files(table)
    return files[-1][0] if files else None


def commit_records(table: TableConf, after: int | None) -> list[dict[str, Any]]:
    """The ``userMetadata`` records (JSON objects) of ``table``'s commits after version
    ``after`` (all commits when None), oldest first; commits without one are skipped."""
    found = []
    for version, path in _commit_files(table):
        if after is not None and version <= int(after):
            continue
        for action in _actions(table, version, path):
            if "commitInfo" in action:
                try:
                    record = json.loads(action["commitInfo"].get("userMetadata") or "null")
                except ValueError:
                    record = None
                if isinstance(record, dict):
                    found.append(record)
                break
    return found


def latest_metadata(table: TableConf) -> dict[str, Any] | None:
    """The newest ``metaData`` action of ``table`` (``id``, ``configuration``, schema, ...).

    None when no commit file left holds one (the table does not exist, or the commits that
    set it were cleaned up after a checkpoint): ask Spark then.
    """
    for version, path in reversed(_commit_files(table)):
        for action in _actions(table, version, path):
            if "metaData" in action:
                return dict(action["metaData"])
    return None


def commit_timestamp(table: TableConf, version: int) -> _dt.datetime | None:
    """The timestamp ``TIMESTAMP AS OF`` resolves to ``version`` of ``table``, in UTC.

    None when the version has no commit file (not committed yet, or cleaned up).
    """
    files = _commit_files(table)
    if not files or files[0][0] > version or files[-1][0] < version:
        return None
    millis = None
    for number, path in files:
        if number > version:
            break
        stamp = path.stat().st_mtime_ns // 1_000_000
        millis = stamp if millis is None or stamp > millis else millis + 1
    if millis is None:
        return None
    for action in _actions(table, version, dict(files)[version]):
        stamp = action.get("commitInfo", {}).get("inCommitTimestamp")
        if stamp is not None:
            millis = int(stamp)
        break
    return _EPOCH + _dt.timedelta(milliseconds=millis)


def check_log(table: TableConf) -> None:
    """Raise DeltaLogError when a commit a reader of ``table``'s latest version reads is
    damaged: every commit file after the last checkpoint (all of them without one).

    A missing table passes: whether it must exist is the caller's question.
    """
    log = table.location / "_delta_log"
    pointer = log / "_last_checkpoint"
    since = -1
    if pointer.is_file():
        try:
            since = int(json.loads(pointer.read_text(encoding="utf-8"))["version"])
        except (ValueError, KeyError, TypeError) as exc:
            raise DeltaLogError(f"table {table.name}: its Delta log's checkpoint pointer "
                                f"({pointer}) is damaged ({exc!r}); restore it or delete it "
                                f"(Delta then reads the commit files)") from None
    for version, path in _commit_files(table):
        if version > since:
            _actions(table, version, path)
