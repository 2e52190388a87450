"""The WHERE clause: its conjuncts, each a condition, a selection policy or an equivalence.

Top-level ``AND`` splits the clause into conjuncts (the ``AND`` of ``BETWEEN x AND y`` is
respected; a top-level ``OR`` keeps the whole clause one condition, as SQL precedence requires).
A conjunct may also be a selection policy (``strict-contiguity``, ``skip-till-next-match``,
``skip-till-any-match``) or an equivalence ``[attr]`` / ``[attr1, attr2]``; every other
conjunct is compiled by :func:`cep.lang.conditions.compile_condition`. The ``@(...)``
conditions of a pattern element are read the same way, and the parser then refuses policies
and equivalences there.

Example:
    >>> from cep.lang.tokens import tokenize
    >>> text = "a.x BETWEEN 1 AND 5 AND skip-till-any-match AND [id]"
    >>> clause = compile_where(text, tokenize(text)[:-1], Limits(), at=0)
    >>> [c.sql for c in clause.conditions], clause.policies, clause.equivalences
    (['`a.x` BETWEEN 1 AND 5'], (('skip-till-any-match', (24, 43)),), (Equivalence(attr='id', span=(49, 51)),))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cep.lang.ast import POLICIES, Condition, Equivalence
from cep.lang.conditions import compile_condition
from cep.lang.errors import E_BAD_POLICY_OR_EQUIVALENCE, E_EMPTY_CONDITION, PatternSyntaxError
from cep.lang.limits import Limits
from cep.lang.tokens import IDENT, QIDENT, Token
from cep.lang.words import WHERE, policy_words


@dataclass(frozen=True)
class WhereClause:
    """The parts of a WHERE clause: conditions, the policy keyword (if any), equivalences."""

    conditions: tuple[Condition, ...]
    policies: tuple[tuple[str, tuple[int, int]], ...]
    equivalences: tuple[Equivalence, ...]
    equivalence_spans: tuple[tuple[int, int], ...] = ()  # whole "[...]" conjuncts



def compile_where(text: str, tokens: Sequence[Token], limits: Limits, at: int) -> WhereClause:
    """Split a WHERE clause into conjuncts and compile each one.

    Args:
        text: the whole query text.
        tokens: the tokens after ``WHERE`` up to the next clause (no EOF token).
        limits: size and nesting limits.
        at: offset to report when the clause is empty.
    """
    conditions: list[Condition] = []
    policies: list[tuple[str, tuple[int, int]]] = []
    equivalences: list[Equivalence] = []
    bracket_spans: list[tuple[int, int]] = []
    for part in split_conjuncts(text, tokens, at):
        policy = _policy_of(text, part)
        if policy is not None:
            policies.append((policy, (part[0].start, part[-1].end)))
            continue
        if part[0].is_op("["):
            equivalences.extend(_equivalences(text, part))
            bracket_spans.append((part[0].start, part[-1].end))
            continue
        conditions.append(compile_condition(text, part, kind=WHERE, limits=limits))
    return WhereClause(tuple(conditions), tuple(policies), tuple(equivalences), tuple(bracket_spans))


def split_conjuncts(text: str, tokens: Sequence[Token], at: int) -> list[list[Token]]:
    """Split tokens at top-level ``AND`` (not the one of ``BETWEEN x AND y``).

    A top-level ``OR`` binds looser than ``AND`` in SQL, so then the tokens stay one conjunct.

    Raises:
        PatternSyntaxError: an empty conjunct (``WHERE AND ...``, ``x AND``, nothing at all).
    """
    if not tokens:
        raise PatternSyntaxError(E_EMPTY_CONDITION, "expected a condition", text, at, at)
    depth = 0
    top_or = False
    for k, tok in enumerate(tokens):
        if tok.is_op("(", "["):
            depth += 1
        elif tok.is_op(")", "]"):
            depth -= 1
        elif depth == 0 and tok.is_kw("OR") and not (k and tokens[k - 1].is_op(".")):
            top_or = True
    if top_or:
        return [list(tokens)]
    parts: list[list[Token]] = []
    current: list[Token] = []
    depth = 0
    pending_between = 0
    for k, tok in enumerate(tokens):
        after_dot = k > 0 and tokens[k - 1].is_op(".")
        if tok.is_op("(", "["):
            depth += 1
        elif tok.is_op(")", "]"):
            depth -= 1
        elif depth == 0 and not after_dot and tok.is_kw("BETWEEN"):
            pending_between += 1
        elif depth == 0 and not after_dot and tok.is_kw("AND"):
            if pending_between:
                pending_between -= 1
            else:
                if not current:
                    raise PatternSyntaxError(
                        E_EMPTY_CONDITION,
                        "expected a condition before AND",
                        text,
                        tok.start,
                        tok.end,
                    )
                parts.append(current)
                current = []
                continue
        current.append(tok)
    if not current:
        last = tokens[-1]
        raise PatternSyntaxError(E_EMPTY_CONDITION, "expected a condition after AND", text, last.start, last.end)
    parts.append(current)
    return parts



def _policy_of(text: str, part: Sequence[Token]) -> str | None:
    """The policy a whole conjunct names, None if it is not a policy; raise on a near-miss."""
    read = policy_words(part, 0)
    if read is None or read[0] != len(part):
        return None
    name = read[1]
    if name in POLICIES:
        return name
    if name.split("-")[0] in ("skip", "strict"):
        raise PatternSyntaxError(
            E_BAD_POLICY_OR_EQUIVALENCE,
            f"unknown selection policy '{name}'; expected one of {', '.join(POLICIES)}",
            text,
            part[0].start,
            part[-1].end,
        )
    return None


def _equivalences(text: str, part: Sequence[Token]) -> list[Equivalence]:
    """Read ``[attr]`` or ``[attr1, attr2]`` covering the whole conjunct."""
    bad = PatternSyntaxError(
        E_BAD_POLICY_OR_EQUIVALENCE,
        "an equivalence is written [attr] or [attr1, attr2], as a conjunct of its own",
        text,
        part[0].start,
        part[-1].end,
    )
    if len(part) < 3 or not part[-1].is_op("]"):
        raise bad
    out: list[Equivalence] = []
    inner = part[1:-1]
    for k, tok in enumerate(inner):
        if k % 2 == 0:
            if tok.kind not in (IDENT, QIDENT):
                raise bad
            out.append(Equivalence(tok.value, span=(tok.start, tok.end)))
        elif not tok.is_op(","):
            raise bad
    if len(inner) % 2 == 0:
        raise bad
    return out
