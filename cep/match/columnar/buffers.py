"""Buffers: for each alias, the sorted positions of the events that can fill it.

An event can fill alias ``a`` of class ``K`` when it is of class ``K`` (its ``DEFINE``
condition is TRUE, or its type column equals ``K``) and every single-event condition on ``a``
is TRUE. When the stream carries a precomputed mask for the alias (``masks["a"]``, Spark's
evaluation of exactly that) it is used instead; a class mask (``masks["class:K"]``) replaces
only the class test. Only positions inside ``WINDOW [a, b]`` are kept. These are the
per-component buffers of ZStream's leaf operators.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.columnar.stream import EventStream
    >>> cq = compile_query("PATTERN A a; B b WHERE b.v > 1")
    >>> s = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABBA"),
    ...                              attrs={"v": [0, 1, 2, 3]})
    >>> d = StreamData(s, None)
    >>> alias_buffer(cq, "b", d).tolist(), alias_buffer(cq, "a", d).tolist()
    ([2], [0, 3])
"""

from __future__ import annotations

import numpy as np

from cep.lang.ast import AttrRef, TsRef
from cep.match.columnar.data import StreamData
from cep.match.compile.expr import Value
from cep.match.compile.predicates import Predicate
from cep.match.compile.program import CompiledQuery


def alias_buffer(cq: CompiledQuery, alias: str, data: StreamData) -> np.ndarray:
    """Sorted positions that can fill ``alias`` (cached in ``data`` for the call)."""
    return data.buffer(alias, lambda: _build(cq, alias, data))


def _build(cq: CompiledQuery, alias: str, data: StreamData) -> np.ndarray:
    masks = data.stream.masks
    if alias in masks:
        return data.mask_positions(masks[alias])
    cls = cq.alias_classes[alias]
    if "class:" + cls in masks:
        positions = data.mask_positions(masks["class:" + cls])
    elif cls in cq.defines:
        positions = np.arange(data.lo, data.hi, dtype=np.int64)
        positions = positions[one_event_truth(cq.defines[cls], data, positions)]
    else:
        positions = data.class_positions(cls)
    for pred in cq.filters_of(alias):
        if len(positions) == 0:
            break
        positions = positions[one_event_truth(pred, data, positions)]
    return positions


def one_event_truth(pred: Predicate, data: StreamData, positions: np.ndarray) -> np.ndarray:
    """Where a condition reading one event (a filter or a DEFINE) is TRUE at ``positions``."""
    env: dict[str, Value] = {}
    for name, ref in pred.refs.items():
        if isinstance(ref, TsRef):
            env[name] = data.at("ts", positions)
        elif isinstance(ref, AttrRef):
            env[name] = data.at(ref.attr, positions)
        else:  # pragma: no cover -- analyse() only makes filters of AttrRef/TsRef conditions
            raise AssertionError(f"not a one-event reference: {name}")
    return pred.expr.truth(env, len(positions))
