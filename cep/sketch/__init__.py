"""Bloom-filter trees of event streams (``approx_match_seq``; contract: docs/sketch.md).

The core: :class:`SketchConfig` (settings), :func:`bit_positions` (murmur3 bit positions of
names), :class:`BloomFilter` (one filter as a value), :class:`SketchTree` (the tree of one
stream with its exact-set twin, built in one pass or incrementally), and the persisted bit
format (:func:`encode_bits` / :func:`decode_bits`).
"""

from __future__ import annotations

from cep.sketch.bloom import BloomFilter
from cep.sketch.codec import decode_bits, encode_bits
from cep.sketch.config import SketchConfig
from cep.sketch.errors import CorruptSketchError, SketchConfigError, SketchInputError
from cep.sketch.hashing import Hasher, bit_positions
from cep.sketch.names import factorize
from cep.sketch.tree import OpenLeaf, SketchTree, node_ids, split_node_ids
from cep.sketch.evaluate import (SketchLimits, SketchMatch, SketchMatches, StreamMatches,
                                  evaluate_sketch, evaluate_streams, evaluate_units)
from cep.sketch.forest import Forest, cut_forest, restore_forest
from cep.sketch.query import (
    SketchArgumentError,
    SketchComponent,
    SketchLimitError,
    SketchPolicyError,
    SketchQuery,
    UnsupportedSketchPatternError,
    compile_sketch_query,
)
from cep.sketch.units import Units, cut, leaf_units
from cep.sketch.solver import (
    BudgetTooSmallError,
    HeightRow,
    SolverError,
    SolverResult,
    memory_table,
    solve,
)

__all__ = [
    "BloomFilter",
    "CorruptSketchError",
    "Hasher",
    "SketchConfig",
    "SketchConfigError",
    "SketchInputError",
    "bit_positions",
    "decode_bits",
    "encode_bits",
    "factorize",
    "OpenLeaf",
    "SketchTree",
    "node_ids",
    "split_node_ids",
    "SketchArgumentError",
    "SketchComponent",
    "SketchLimitError",
    "SketchLimits",
    "SketchMatch",
    "SketchMatches",
    "SketchPolicyError",
    "SketchQuery",
    "Units",
    "UnsupportedSketchPatternError",
    "compile_sketch_query",
    "cut",
    "evaluate_sketch",
    "evaluate_units",
    "evaluate_streams",
    "StreamMatches",
    "Forest",
    "cut_forest",
    "restore_forest",
    "leaf_units",
    "BudgetTooSmallError",
    "HeightRow",
    "SolverError",
    "SolverResult",
    "memory_table",
    "solve",
]

# One vocabulary for every engine (docs/architecture.md, "One vocabulary"): ``compile`` turns
# pattern text into the engine's frozen program, ``run`` evaluates a program over its input.
# Not in __all__: a star import would shadow the builtin ``compile``.
compile = compile_sketch_query
run = evaluate_sketch
