"""LIKE in a pattern means what Spark's LIKE means (issue 21): strings and LIKE patterns are
decoded and matched as Spark decodes and matches them, and what Spark rejects is rejected.

Random literal texts over an alphabet rich in backslashes, ``%``, ``_`` and hex digits are
written into ``s LIKE '<text>'``: once as a pattern condition (parsed, compiled by
:mod:`cep.match.compile.expr`, evaluated on random values) and once as Spark SQL over the same values.
The two must give the same booleans, or both refuse the text.
"""

from __future__ import annotations

import numpy as np
import pytest

from cep.errors import CepError
from cep.lang import parse_condition
from cep.lang.tokens import STRING, tokenize
from cep.match.compile.expr import column_value, compile_expr

PATTERN_ALPHABET = ["a", "b", "%", "_", "\\", "\\", "n", "u", "0", "1", "'"]
VALUE_ALPHABET = ["a", "b", "%", "_", "\\", "\n", "n", "\x1a"]


def texts(rng: np.random.Generator, alphabet: list[str], count: int, longest: int) -> list[str]:
    return ["".join(rng.choice(alphabet, rng.integers(0, longest + 1))) for _ in range(count)]


def ours(body: str, values: list[str]) -> list[bool] | str:
    """The truth of ``s LIKE '<body>'`` on each value, or the error code."""
    try:
        cond = parse_condition(f"a.s LIKE '{body}'")
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return compile_expr(cond.expr).truth({"a.s": column_value(column)}, len(values)).tolist()
    except CepError as exc:
        return exc.code


def spark_answer(spark, body: str, view: str) -> list[bool] | None:
    """Spark's truth of ``s LIKE '<body>'`` on each value of ``view``, or None when it refuses."""
    try:
        rows = spark.sql(f"SELECT s LIKE '{body}' AS m FROM {view} ORDER BY i").collect()
    except Exception:  # noqa: BLE001 - any refusal: a parse error, an invalid pattern
        return None
    return [bool(r.m) for r in rows]


def test_like_agrees_with_spark_on_random_texts(spark) -> None:
    rng = np.random.default_rng(21)
    values = texts(rng, VALUE_ALPHABET, 40, 5)
    spark.createDataFrame(list(enumerate(values)), "i INT, s STRING").createOrReplaceTempView(
        "like_values")
    bodies = sorted(set(texts(rng, PATTERN_ALPHABET, 400, 6)))
    answers = {body: ours(body, values) for body in bodies}
    accepted = [b for b in bodies if isinstance(answers[b], list)]
    refused = [b for b in bodies if not isinstance(answers[b], list)]
    assert len(accepted) > 100 and len(refused) > 20, (len(accepted), len(refused))
    # Every accepted text in one Spark query: a pattern column, Spark's own decoding.
    pats = ", ".join(f"({k}, '{b}')" for k, b in enumerate(accepted))
    rows = spark.sql(
        f"SELECT p.k, v.i, v.s LIKE p.p AS m FROM like_values v "
        f"CROSS JOIN (VALUES {pats}) AS p(k, p)").collect()
    got = {(r.k, r.i): bool(r.m) for r in rows}
    for k, body in enumerate(accepted):
        want = [got[(k, i)] for i in range(len(values))]
        assert answers[body] == want, f"LIKE '{body}': Spark {want}, ours {answers[body]}"
    # What this project refuses, Spark refuses too (a sample: each is a query of its own).
    for body in refused[:25]:
        assert spark_answer(spark, body, "like_values") is None, \
            f"LIKE '{body}': ours refuses it ({answers[body]}), Spark answers"


def test_string_values_agree_with_spark(spark) -> None:
    rng = np.random.default_rng(7)
    values = {b: v for b in sorted(set(texts(rng, PATTERN_ALPHABET + ["t", "Z", "7"], 300, 7)))
              if (v := literal_value(b)) is not None}
    assert len(values) > 100
    bodies = list(values)
    literals = ", ".join(f"({k}, '{b}')" for k, b in enumerate(bodies))
    rows = spark.sql(f"SELECT k, v FROM (VALUES {literals}) AS t(k, v)").collect()
    spark_values = {r.k: r.v for r in rows}
    for k, body in enumerate(bodies):
        assert values[body] == spark_values[k], f"'{body}': Spark {spark_values[k]!r}, " \
                                                f"ours {values[body]!r}"


def literal_value(body: str) -> str | None:
    """The value of the literal ``'<body>'``, or None when it is not one whole literal or has
    an escape that gives no character."""
    try:
        found = tokenize(f"'{body}'")
    except CepError:
        return None
    return found[0].value if len(found) == 2 and found[0].kind == STRING else None


@pytest.mark.parametrize("body, code", [
    ("a\\bc", None),          # \b is a backspace: a plain character for LIKE
    ("a\\\\b", "CEP-PAT-127"),  # the value a\b: an escape before 'b'
    ("a\\\\\\\\", None),      # the value a\\: an escaped backslash
    ("a\\\\", "CEP-PAT-127"),  # the value a\: an escape at the end
    ("\\uD800", "CEP-PAT-126"),
])
def test_like_texts_spark_reads_one_way(body: str, code: str | None) -> None:
    answer = ours(body, ["a"])
    assert (None if isinstance(answer, list) else answer) == code, answer
