"""Rewrites of parsed conditions for the matchers: top-level conjuncts, and DEFINE on one alias.

A ``DEFINE`` condition that mentions a join variable ``$x`` is no longer a property of one
event: which events are of the class depends on the value the rest of the match gives ``$x``
(docs/semantics.md, "Join variables"). The matchers therefore split it with
:func:`split_define`:

- its top-level conjuncts without a variable stay the class test: a single-event condition,
  evaluated per event and the only part that may be pushed down to Spark;
- each conjunct with a variable becomes, through :func:`on_alias`, one condition per alias of
  the class (``ip = $x`` in ``DEFINE F`` becomes ``F1.ip = $x``, ``F2.ip = $x``, ...), which is
  evaluated exactly like a WHERE condition: on every event bound to the alias (every Kleene
  iteration), ignored where the alias binds nothing, and deciding violations for a negated alias.

A ``DEFINE`` without variables is left as it is (same object, same text).

Derived conditions have no text of their own in the query, so their ``text`` is rendered from
the expression (placeholders written as their canonical reference, time literals as SQL
``INTERVAL``); it is for messages and ``explain`` only.

Example:
    >>> from cep.lang import parse_pattern
    >>> q = parse_pattern("PATTERN F, F DEFINE F AS status = 'denied' AND ip = $x")
    >>> static, variable = split_define(q.defines[0].condition)
    >>> static.text, static.single_event, [c.text for c in variable]
    ("status = 'denied'", True, ['ip = $x'])
    >>> [on_alias(c, "F2").sql for c in variable]
    ['`F2.ip` = `$x`']
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from cep.lang.ast import AttrRef, Condition, Ref, TsRef, VarRef


def conjuncts(condition: Condition) -> tuple[Condition, ...]:
    """The top-level ``AND`` conjuncts of ``condition`` (itself when it has only one).

    Parentheses around a conjunction are looked through, since ``(p AND q) AND r`` is
    ``p AND q AND r``; an ``OR`` or ``NOT`` keeps its operands together.
    """
    parts = _conjunct_exprs(condition.expr)
    if len(parts) == 1:
        return (condition,)
    return tuple(_derived(condition, part, condition.refs) for part in parts)


def split_define(condition: Condition) -> tuple[Condition, tuple[Condition, ...]]:
    """Split a DEFINE condition into its class test and its join-variable conjuncts.

    Returns:
        ``(static, variable)``: ``static`` is the conjunction of the conjuncts without a
        variable (``TRUE`` when there are none: then every event is of the class as far as
        one event can tell); ``variable`` the conjuncts that mention a variable, in order.
        A condition without variables comes back unchanged as ``(condition, ())``.
    """
    if not condition.variables:
        return condition, ()
    static: list[Condition] = []
    variable: list[Condition] = []
    for part in conjuncts(condition):
        (variable if part.variables else static).append(part)
    if not static:
        return _derived(condition, exp.true(), ()), tuple(variable)
    if len(static) == 1:
        return static[0], tuple(variable)
    both = exp.and_(*(c.expr.copy() for c in static))
    return _derived(condition, both, condition.refs), tuple(variable)


def on_alias(condition: Condition, alias: str) -> Condition:
    """A DEFINE condition read as a condition on ``alias`` (one of the class's events).

    Every reference to the defined event (``x``, ``t(F)``) becomes the same reference on
    ``alias`` (``alias.x``, ``t(alias)``); join variables stay as they are. The result mentions
    ``alias`` only, like a WHERE condition written on that alias. It mentions ``alias`` even
    when the conjunct reads no attribute (``$x = 1``): its refs then end with a ``t(alias)``
    that the expression does not use, so that, like the DEFINE it comes from, it constrains a
    match only where ``alias`` binds an event.
    """
    renamed: dict[str, Ref] = {}
    refs: list[Ref] = []
    for ref in condition.refs:
        new: Ref = ref
        if isinstance(ref, AttrRef) and ref.alias is None:
            new = AttrRef(alias, ref.attr, span=ref.span)
        elif isinstance(ref, TsRef) and ref.alias is None:
            new = TsRef(alias, ref.index, span=ref.span)
        renamed[ref.name] = new
        refs.append(new)
    subject = TsRef(alias, None, span=condition.span)
    mentioned = any(r.alias == alias for r in refs if not isinstance(r, VarRef))
    tail: tuple[Ref, ...] = () if mentioned else (subject,)

    def rename(node: exp.Expression) -> exp.Expression:
        ref = renamed.get(node.name) if isinstance(node, exp.Column) else None
        return node if ref is None else _placeholder(ref.name)

    # transform (not replace in place) so a condition that is one bare column is renamed too.
    derived = _derived(condition, condition.expr.transform(rename), tuple(refs))
    return replace(derived, refs=derived.refs + tail) if tail else derived


def _conjunct_exprs(node: exp.Expression) -> list[exp.Expression]:
    """Flatten top-level ``AND`` nodes (through parentheses) into their operands, in order."""
    inner = node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.And):
        return _conjunct_exprs(inner.this) + _conjunct_exprs(inner.expression)
    return [node]


def _placeholder(name: str) -> exp.Column:
    # The parser's form of a reference: one backtick-quoted column named by its canonical text.
    return exp.column(exp.to_identifier(name, quoted=True))


def _derived(origin: Condition, tree: exp.Expression, refs: tuple[Ref, ...]) -> Condition:
    """A condition made from part of ``origin``: refs kept when ``tree`` still reads them."""
    tree = tree.copy()
    while isinstance(tree, exp.Paren):
        tree = tree.this
    names = {node.name for node in tree.find_all(exp.Column)}
    kept = tuple(r for r in refs if r.name in names)
    return Condition(_display(tree), tree.sql(dialect="spark"), kept, expr=tree, span=origin.span)


def _display(tree: exp.Expression) -> str:
    """Readable text for a derived condition: placeholders as their canonical references."""
    shown = tree.transform(lambda node: exp.var(node.name) if isinstance(node, exp.Column) else node)
    return shown.sql(dialect="spark")

