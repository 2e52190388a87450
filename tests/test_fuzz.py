"""Fuzz of every surface a user's input reaches (issue 21): only typed errors may come out.

Three surfaces, each driven by hypothesis:

- **pattern text**: random text, token soup and mutations of valid patterns through the
  parser, validation, printing and re-parsing (``tests/cep/lang/test_lang_properties.check_text``);
- **arguments**: every SQL function's ``analyze`` (the code Spark runs on a call's arguments
  before any task) with random argument lists: strings, numbers, NULLs, booleans and TABLE
  arguments of random columns, positional and named (real and misspelled names); the only
  exception allowed is :class:`udfs.shell.CallFailed` whose message starts with a CEP code;
- **state blobs**: sketch filters (``decode_bits`` and the column decoder
  ``decode_bits_matrix``) and predict_match's model and instance-state blobs, from random
  bytes, from valid blobs with bytes flipped, cut or appended, and (for the JSON-bodied predict
  blobs) from random payloads re-signed with a correct checksum, so the checks behind the
  checksum are reached too.

The suite runs ``CEP_FUZZ_EXAMPLES`` examples per test (default 300: the suite's time budget);
``make fuzz`` runs 10,000 per surface (docs/testing.md has the last run's numbers). No Spark:
``analyze`` needs only pyspark's type classes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DoubleType,
                               IntegerType, LongType, MapType, StringType, StructField,
                               StructType, TimestampType)
from pyspark.sql.udtf import AnalyzeArgument

from cep.errors import CepError
from cep.predict.model import InstanceState, Model
from cep.sketch import encode_bits
from cep.sketch.codec import decode_bits
from cep.sketch.stored import decode_bits_matrix
from delta_tables.sketch_state import NODES_COLUMNS
from tests.cep.lang.test_lang_properties import SEEDS, check_text, mutated
from udfs.approx_match_seq import ApproxMatchSeq
from udfs.cet_trends import CetTrends
from udfs.match_prob import MatchProb
from udfs.match_seq import MatchSeq
from udfs.predict_match import PredictMatch
from udfs.shell import CallFailed
from udfs.sketch_stats import SketchStats

EXAMPLES = int(os.environ.get("CEP_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CODE = re.compile(r"^CEP-[A-Z]+-\d{3}: ")

# ---- pattern text ----------------------------------------------------------------------------


@FUZZ
@given(st.one_of(st.text(max_size=200), mutated(),
                 st.text(max_size=200).map(lambda t: "PATTERN " + t)))
def test_pattern_text(text: str) -> None:
    check_text(text)


# ---- arguments -------------------------------------------------------------------------------

HANDLERS = {"match_seq": MatchSeq, "approx_match_seq": ApproxMatchSeq, "cet_trends": CetTrends,
            "match_prob": MatchProb, "predict_match": PredictMatch, "sketch_stats": SketchStats}
NAMES = ["pattern", "key_col", "stream_col", "events", "sketch", "pstream", "model", "policy",
         "ts_col", "type_col", "id_col", "max_matches", "max_trends", "window", "threshold",
         "overlap", "output", "lookahead", "theta", "value_col", "t_col", "prob_col", "probs",
         "patern", "keycol", "x", "PATTERN", "Events"]
COLUMNS = ["id", "ts", "type", "key", "case_id", "x", "price", "stream", "t", "probs", "value",
           "p", "node_id", "level", "idx", "bits", "m", "k", "seeds", "is_open", "is_top",
           "n_events", "pos_start", "pos_end", "ts_start", "ts_end", "config_version", "weird`c",
           "model", "subscription", ""]
TYPES: list[DataType] = [StringType(), LongType(), IntegerType(), DoubleType(), BooleanType(),
                         TimestampType(), ArrayType(LongType()),
                         MapType(StringType(), DoubleType())]
PATTERNS = st.one_of(st.sampled_from(SEEDS), mutated(), st.text(max_size=60),
                     st.sampled_from(["PATTERN a; b", "PATTERN a, b+, c", "PATTERN a+ w[]",
                                      "PATTERN A+; B WITHIN 3 EVENTS", "PATTERN SEQ(a, b)"]))


@st.composite
def table_argument(draw: st.DrawFn) -> AnalyzeArgument:
    names = draw(st.lists(st.sampled_from(COLUMNS), max_size=8))
    fields = [StructField(name, draw(st.sampled_from(TYPES))) for name in names]
    return AnalyzeArgument(dataType=StructType(fields), value=None, isTable=True,
                           isConstantExpression=False)


@st.composite
def scalar_argument(draw: st.DrawFn) -> AnalyzeArgument:
    kind = draw(st.sampled_from(["pattern", "text", "int", "float", "bool", "null", "column"]))
    if kind == "pattern":
        value, data_type = draw(PATTERNS), StringType()
    elif kind == "text":
        value, data_type = draw(st.text(max_size=30)), StringType()
    elif kind == "column":
        value, data_type = draw(st.sampled_from(COLUMNS)), StringType()
    elif kind == "int":
        value, data_type = draw(st.integers(-2**63, 2**63 - 1)), LongType()
    elif kind == "float":
        value, data_type = draw(st.floats(allow_nan=True, allow_infinity=True)), DoubleType()
    elif kind == "bool":
        value, data_type = draw(st.booleans()), BooleanType()
    else:
        value, data_type = None, draw(st.sampled_from(TYPES))
    constant = draw(st.booleans()) if kind != "null" else True
    return AnalyzeArgument(dataType=data_type, value=value if constant else None, isTable=False,
                           isConstantExpression=constant)


ARGUMENT = st.one_of(scalar_argument(), table_argument())


DDL = {"STRING": StringType(), "BIGINT": LongType(), "INT": IntegerType(),
       "TIMESTAMP": TimestampType(), "BOOLEAN": BooleanType(), "BINARY": BinaryType(),
       "ARRAY<INT>": ArrayType(IntegerType()), "DOUBLE": DoubleType()}


def _table(columns: list[tuple[str, str]]) -> AnalyzeArgument:
    fields = [StructField(name, DDL[kind]) for name, kind in columns]
    return AnalyzeArgument(dataType=StructType(fields), value=None, isTable=True,
                           isConstantExpression=False)


def _string(value: str) -> AnalyzeArgument:
    return AnalyzeArgument(dataType=StringType(), value=value, isTable=False,
                           isConstantExpression=True)


EVENTS = [("id", "BIGINT"), ("key", "STRING"), ("ts", "TIMESTAMP"), ("type", "STRING"),
          ("x", "DOUBLE"), ("price", "BIGINT")]
PSTREAM = [("stream", "STRING"), ("t", "BIGINT"), ("a", "DOUBLE"), ("b", "DOUBLE"),
           ("c", "DOUBLE")]
# A call of each function that binds (the shape of docs/sql.md's examples), and the options
# it may also get; the fuzz varies the pattern, drops, adds and retypes arguments.
WELL_FORMED: dict[str, tuple[dict[str, AnalyzeArgument], tuple[str, ...]]] = {
    "match_seq": ({"key_col": _string("key"), "events": _table(EVENTS)},
                  ("policy", "max_matches", "ts_col", "type_col", "id_col")),
    "cet_trends": ({"key_col": _string("key"), "events": _table(EVENTS)},
                   ("output", "max_trends", "ts_col", "id_col", "type_col", "window_col")),
    "predict_match": ({"key_col": _string("key"), "events": _table(EVENTS)},
                      ("lookahead", "threshold", "output", "combine", "smoothing")),
    "match_prob": ({"pstream": _table(PSTREAM)},
                   ("overlap", "threshold", "window", "output", "t_col", "tolerance")),
    "approx_match_seq": ({"sketch": _table(list(NODES_COLUMNS))}, ()),
}
LEADING = {"predict_match": "subscription"}
VALUES = st.one_of(
    st.sampled_from(["skip-till-next-match", "skip-till-any-match", "strict", "count",
                     "matches", "groups", "single", "complete", "and", "or", "key", "ts", "x",
                     "type", "t", ""]).map(_string),
    st.integers(-3, 10**7).map(lambda v: AnalyzeArgument(LongType(), v, False, True)),
    st.floats(-1, 2).map(lambda v: AnalyzeArgument(DoubleType(), v, False, True)),
    scalar_argument())


@st.composite
def well_formed_call(draw: st.DrawFn) -> tuple[str, list[AnalyzeArgument],
                                                dict[str, AnalyzeArgument]]:
    function = draw(st.sampled_from(sorted(WELL_FORMED)))
    base, options = WELL_FORMED[function]
    kwargs = dict(base)
    kwargs[LEADING.get(function, "pattern")] = _string(draw(PATTERNS))
    for name in draw(st.lists(st.sampled_from(options), max_size=3, unique=True)) if options \
            else []:
        kwargs[name] = draw(VALUES)
    if draw(st.integers(0, 4)) == 0:  # now and then one argument wrong or missing
        victim = draw(st.sampled_from(sorted(kwargs)))
        if draw(st.booleans()):
            del kwargs[victim]
        else:
            kwargs[victim] = draw(ARGUMENT)
    return function, [], kwargs


@FUZZ
@given(st.one_of(
    well_formed_call(),
    st.tuples(st.sampled_from(sorted(HANDLERS)), st.lists(ARGUMENT, max_size=4),
              st.dictionaries(st.sampled_from(NAMES), ARGUMENT, max_size=5))))
def test_arguments(call: tuple[str, list[AnalyzeArgument], dict[str, AnalyzeArgument]]) -> None:
    function, args, kwargs = call
    try:
        HANDLERS[function].analyze(*args, **kwargs)
    except CallFailed as failed:
        assert CODE.match(str(failed)), (function, str(failed))


# ---- state blobs -----------------------------------------------------------------------------

def _mutate(blob: bytes, data: st.DataObject) -> bytes:
    """``blob`` with bytes flipped, cut or appended."""
    raw = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "append", "set"]))
        if op == "flip" and raw:
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] ^= data.draw(st.integers(1, 255))
        elif op == "cut" and raw:
            raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
        elif op == "append":
            raw += data.draw(st.binary(max_size=16))
        elif op == "set" and len(raw) > 14:
            # header fields: magic, version, m, length
            i = data.draw(st.integers(0, 13))
            raw[i] = data.draw(st.integers(0, 255))
    return bytes(raw)


@FUZZ
@given(st.data())
def test_sketch_blobs(data: st.DataObject) -> None:
    m = data.draw(st.sampled_from([8, 64, 1024]))
    # Three rows' bindings (issue 21): blobs bound to them, or unbound as older tables hold.
    fields = np.array(data.draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=21,
                                         max_size=21)), dtype=np.int64).reshape(3, 7)
    key = data.draw(st.sampled_from([b"s", b"", "\u00e9".encode()]))
    bound = data.draw(st.booleans())
    payload = data.draw(st.binary(min_size=m // 8, max_size=m // 8))
    good = [encode_bits(payload, m, binding=fields[r].tobytes() + key if bound else None)
            for r in range(3)]
    blob = data.draw(st.one_of(st.binary(max_size=200), st.sampled_from(good)))
    blob = _mutate(blob, data) if data.draw(st.booleans()) else blob
    expected = data.draw(st.sampled_from([None, m, 16]))
    try:
        bits = decode_bits(blob, expected, binding=data.draw(st.sampled_from(
            [None, fields[1].tobytes() + key])))
    except CepError as err:
        assert CODE.match(str(err)), str(err)
    else:
        assert bits.dtype == np.uint8
    # The same blob among valid ones, through the column decoder the SQL functions use.
    blobs = [good[0], blob, good[2]]
    column = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(b) for b in blobs])
    try:
        decode_bits_matrix(column, offsets, m, stream="s", node_ids=np.arange(3),
                           fields=fields, streams=key)
    except CepError as err:
        assert CODE.match(str(err)) and "node_id 1" in str(err), str(err)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
KEYS = {"model": ["subscription", "leaves", "from", "sig", "to", "count", "freq_sig",
                  "freq_count"],
        "state": ["masks", "configs", "flags", "matches", "events", "last_ts"]}


def _signed(magic: bytes, body: bytes) -> bytes:
    """A blob with a correct header and checksum around any ``body``."""
    return struct.pack(">6sH32s", magic, 1, hashlib.sha256(body).digest()) + body


@FUZZ
@given(st.sampled_from(["model", "state"]), st.data())
def test_predict_blobs(kind: str, data: st.DataObject) -> None:
    magic = b"CEPPRM" if kind == "model" else b"CEPPRS"
    payload = data.draw(st.dictionaries(st.sampled_from(KEYS[kind]), JSON, max_size=6)
                        | JSON.map(lambda v: {"leaves": [v]} if kind == "model" else {"masks": v}))
    source = data.draw(st.sampled_from(["signed", "nested", "raw", "mutated"]))
    if source == "nested":  # deep nesting that still has a correct checksum
        depth = data.draw(st.integers(1, 200_000))
        body = (b"[" * depth + b"]" * depth) if data.draw(st.booleans()) else \
            json.dumps(payload).encode()
        blob = _signed(magic, body)
    elif source == "raw":
        blob = data.draw(st.binary(max_size=120))
    else:
        blob = _signed(magic, json.dumps(payload).encode())
        if source == "mutated":
            blob = _mutate(blob, data)
    try:
        (Model if kind == "model" else InstanceState).from_bytes(blob)
    except CepError as err:
        assert CODE.match(str(err)), str(err)


def test_the_fuzz_reaches_past_the_checks() -> None:
    # A fuzz that only ever hit the first check would prove little: the strategies above make
    # valid inputs too (the oracle here is that they load).
    state = InstanceState((1, 2), (None, ((0, (5,)),)), (0,), 3, 9, 17)
    assert InstanceState.from_bytes(_signed(b"CEPPRS", json.dumps(json.loads(
        state.to_bytes()[40:])).encode())) == state
    with pytest.raises(CepError):
        InstanceState.from_bytes(_signed(b"CEPPRS", b"[" * 100_000 + b"]" * 100_000))
