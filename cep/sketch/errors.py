"""Typed errors of the sketch core (configuration, persisted bits, input streams).

Codes of the core: ``CEP-SKETCH-001`` (:class:`SketchConfigError`), ``CEP-SKETCH-002``
(:class:`CorruptSketchError`), ``CEP-SKETCH-003`` (:class:`SketchInputError`), ``CEP-SKETCH-004``
(:class:`TwinUnavailableError`). The solver and
the query compiler number their own errors (``CEP-SKETCH-010`` and ``020`` on).

Example:
    >>> str(CorruptSketchError("bad magic b'XXXX', expected b'CSK1'"))
    "CEP-SKETCH-002: bad magic b'XXXX', expected b'CSK1'"
"""

from __future__ import annotations

from cep.errors import CepError


class SketchConfigError(CepError):
    """A sketch setting (``m``, ``k``, ``C``, ``fanout``, ``seeds``, ...) is invalid, or two
    sketches with different settings were combined. The message names the field and value."""

    code = "CEP-SKETCH-001"


class CorruptSketchError(CepError):
    """A persisted bit array is damaged or not ours: bad magic, unknown format version, length
    or checksum mismatch, or a different ``m`` than expected. The message says which."""

    code = "CEP-SKETCH-002"


class SketchInputError(CepError):
    """Events given to a sketch have the wrong shape: names that are not strings, columns of
    different lengths, timestamps that are not int64-like or go backwards."""

    code = "CEP-SKETCH-003"


class TwinUnavailableError(CepError):
    """The tree was restored from stored columns, which hold no exact-set twin (a sketch keeps
    no raw events): exact membership cannot be answered, or the open leaf's events (needed to
    append) were not given."""

    code = "CEP-SKETCH-004"
