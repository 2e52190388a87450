"""Orchestration: the session builder and the ``python -m jobs`` CLI, over four sub-packages.

- :mod:`jobs.framework`: the incremental-job protocol, idempotent writes, runner, registry.
- :mod:`jobs.state`: the state jobs (sketch, trend graph, prediction set).
- :mod:`jobs.loaders`: the data loaders.
- :mod:`jobs.servers`: the SQL servers for BI tools and Spark Connect.

On top: :mod:`jobs.cli`, :mod:`jobs.demo`, :mod:`jobs.session`, :mod:`jobs.maintenance` and
:mod:`jobs.crash` (the crash suite's kill-before-commit hook).
"""

from __future__ import annotations

__all__ = ["build_session"]


def build_session(*args, **kwargs):  # type: ignore[no-untyped-def]
    """Start the Spark + Delta session (see :func:`jobs.session.build_session`)."""
    from jobs.session import build_session as _build

    return _build(*args, **kwargs)
