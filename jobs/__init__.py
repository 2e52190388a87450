"""Orchestration: the session builder, one module per job, and the ``python -m jobs`` CLI."""

from __future__ import annotations

__all__ = ["build_session"]


def build_session(*args, **kwargs):  # type: ignore[no-untyped-def]
    """Start the Spark + Delta session (see :func:`jobs.session.build_session`)."""
    from jobs.session import build_session as _build

    return _build(*args, **kwargs)
