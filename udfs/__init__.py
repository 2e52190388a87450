"""Spark adapters: UDTF/UDF classes that convert rows or Arrow batches to ``cep`` inputs."""

from __future__ import annotations

__all__: list[str] = []
