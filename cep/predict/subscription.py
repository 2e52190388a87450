"""Subscriptions of P-ToPSS in the common pattern language, compiled into an immutable tree.

Muthusamy, Liu and Jacobsen (DEBS 2010), section 3: a *primitive subscription* is a conjunction
of attribute predicates; a *composite subscription* links primitives with ``,`` (the very next
event), ``;`` (some later event), explicit time conditions ``@(...)`` and the Boolean ``&`` /
``|``. In the common language (DESIGN.md section 3) a primitive is a class, defined with
``DEFINE`` (or, without one, the events whose type column equals the class name)::

    PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S
      DEFINE F AS status = 'denied' AND ip = $x, S AS status = 'success' AND ip = $x
    PATTERN (A, B ; C) & (D ; E) | G
    PATTERN s1 ; ((s2, s3) & (s4, s5)) ; s6 ; (s7 | s8)

The compiled :class:`Subscription` is a tree whose leaves are :class:`Sequence` values (the
state machines of :mod:`cep.predict.machine`) and whose inner nodes are :class:`Boolean`
``&`` / ``|`` (the Boolean machines). A *composite* subscription (section 4.2, Fig. 5) is a
master :class:`Sequence` some of whose steps are child :class:`Boolean` nodes over sequences
(``Sequence.children``; the step's primitive index is -1), recursively; time conditions between
different machines (section 5.1.2, Table 3 cases 2-5) are :class:`CrossTime` values. The compiler
describes the tree only: :mod:`cep.predict.nested` runs it. Join variables (``ip = $x`` in a DEFINE, or ``[ip]`` in
WHERE) name the attributes whose value selects the *instance* an event belongs to (the paper's
one instance per variable binding, table 2): the matcher keys its state by them.

Rules (checked here, each error with a code, line, column and caret):

* a sequence holds classes linked by ``,`` / ``;`` (``SEQ(a, b)`` is ``a ; b``); ``&`` / ``|``
  (``AND(..)`` / ``OR(..)``) combine whole sequences, or, parenthesised, are a step of a sequence
  (a child machine of a master sequence, recursively); a sequence with such a step must be the
  whole subscription, not a part of an ``&`` / ``|`` (``CEP-PRED-001``: that needs a Boolean
  master);
* no Kleene quantifiers, ``NOT``, iteration aliases (``CEP-PRED-001``: write ``F, F, F``);
* WHERE holds only time conditions, ``[attr]`` and no policy; no WITHIN, SLIDE, WINDOW
  (``CEP-PRED-002``);
* a time condition is ``t(X) - t(Y) <op> span`` (``<``, ``<=``, ``>``, ``>=``) where ``Y`` comes
  before ``X`` in the same sequence; the span is an ``INTERVAL`` or a number of raw units
  (``CEP-PRED-003``). In a composite subscription ``X`` and ``Y`` may sit in different machines:
  ``Y`` must come before ``X`` in every match (Table 3 cases 2, 3, 5), or the two sit in
  different parts of one ``&`` (case 4, no order; ``abs(t(X) - t(Y)) <op> span`` is accepted
  there and wherever the aliases are in different machines); never two alternatives of one
  ``|``, which no match binds together (``CEP-PRED-003``);
* a join variable appears as ``attr = $x`` and binds the same attribute in every class
  (``CEP-PRED-003``).

Example:
    >>> s = compile_subscription("PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S "
    ...                          "DEFINE F AS status = 'denied' AND ip = $x, S AS status = 'success' AND ip = $x")
    >>> leaf = s.leaves[0]
    >>> leaf.aliases, leaf.links, [p.text for p in s.primitives], s.instance_attrs
    (('F1', 'F2', 'F3', 'S'), ('next', 'next', 'followed'), ["status = 'denied'", "status = 'success'"], ('ip',))
    >>> leaf.times[0].later, leaf.times[0].earlier, leaf.times[0].op, leaf.times[0].bound
    (2, 0, '<', 300000000)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from sqlglot import exp

from cep.lang import parse_pattern
from cep.lang.ast import (FOLLOWED, NEXT, AttrRef, And, Condition, Event, Kleene, Not, Or, Seq, Timed, TsRef,
                          VarRef)
from cep.lang.query import Query
from cep.lang.rewrite import conjuncts, split_define
from cep.predict.errors import E_CLAUSE, E_SHAPE, E_TIME, UnsupportedSubscriptionError

MAX_STEPS = 62  # positions of a sequence are bits of an int64 state mask
_OPS = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


@dataclass(frozen=True)
class Primitive:
    """A primitive subscription: the single-event test of one class.

    Attributes:
        cls: the class name.
        condition: the DEFINE condition without its join-variable conjuncts, or None when the
            class has no DEFINE (then the event's type column must equal ``cls``).
        text: readable form (``type = 'F'`` for a class without DEFINE).
    """

    cls: str
    condition: Condition | None
    text: str


@dataclass(frozen=True)
class TimeCondition:
    """``t(later) - t(earlier) <op> bound`` over steps of one sequence (0-based step indices).

    ``bound`` is in microseconds for a time span, in raw units of the timestamp otherwise.
    """

    later: int
    earlier: int
    op: str
    bound: int | float
    text: str

    def holds(self, later_ts: int, earlier_ts: int) -> bool:
        """Whether the condition holds for the two timestamps."""
        return _compare(later_ts - earlier_ts, self.op, self.bound)


def _compare(d: int | float, op: str, bound: int | float) -> bool:
    if op == "<":
        return d < bound
    if op == "<=":
        return d <= bound
    if op == ">":
        return d > bound
    return d >= bound


@dataclass(frozen=True)
class CrossTime:
    """A time condition between steps of different machines (section 5.1.2, Table 3 cases 2-5).

    It names aliases, not step indices, because its two steps sit in different sequences of the
    tree. It constrains a match in which both aliases are bound; the matcher evaluates it as soon
    as both times are known (for ``|t(X) - t(Y)|``, case 4, that is at the ``&`` node joining
    them, the paper's "first common descendant").

    Attributes:
        later: the alias ``X`` of ``t(X) - t(Y)``.
        earlier: the alias ``Y``.
        op: ``<``, ``<=``, ``>`` or ``>=``.
        bound: microseconds for a time span, raw timestamp units otherwise.
        text: the condition as written.
        absolute: the condition reads ``|t(X) - t(Y)|`` (``abs(t(X) - t(Y)) < span``).
        ordered: ``Y`` comes before ``X`` in every match (so a pending ``<`` bound can expire);
            False for steps in different parts of one ``&``.
    """

    later: str
    earlier: str
    op: str
    bound: int | float
    text: str
    absolute: bool = False
    ordered: bool = True

    def holds(self, later_ts: int | float, earlier_ts: int | float) -> bool:
        """Whether the condition holds for the two timestamps."""
        d = later_ts - earlier_ts
        return _compare(abs(d) if self.absolute else d, self.op, self.bound)


@dataclass(frozen=True)
class Sequence:
    """A sequence subscription: one state machine (:mod:`cep.predict.machine`).

    Attributes:
        steps: the primitive index of each step (-1 for a child step).
        aliases: the alias of each step (``F1, F2, ...`` when a class repeats; a child step's
            text in parentheses).
        links: ``'next'`` (``,``) or ``'followed'`` (``;``) between consecutive steps.
        times: the time conditions on its primitive steps.
        text: a readable rendering.
        children: empty for a plain sequence; otherwise, per step, None for a primitive or the
            child Boolean node (section 4.2: the master machine's in/out-triggered children).
    """

    steps: tuple[int, ...]
    aliases: tuple[str, ...]
    links: tuple[str, ...]
    times: tuple[TimeCondition, ...]
    text: str
    children: tuple["Node | None", ...] = ()


@dataclass(frozen=True)
class Boolean:
    """``&`` (all parts match) or ``|`` (some part matches) over sub-subscriptions."""

    op: str
    parts: tuple["Node", ...]


Node = Union[Sequence, Boolean]


@dataclass(frozen=True)
class Subscription:
    """A compiled subscription: immutable, shareable, the same for every partition.

    Attributes:
        text: the pattern text.
        root: the tree of sequences and Boolean nodes.
        primitives: the distinct primitive subscriptions, indexed by ``Sequence.steps``.
        leaves: the sequences in left-to-right order (leaf ``i`` is machine ``i``); in a
            composite subscription a sequence comes after the children of its steps, and the
            machines are per segment instead (:mod:`cep.predict.composite`).
        instance_attrs: attributes whose values select an event's instance (join variables and
            ``[attr]``), lower-cased, in order of first mention.
        cross_times: time conditions between different machines of a composite subscription.
    """

    text: str
    root: Node
    primitives: tuple[Primitive, ...]
    leaves: tuple[Sequence, ...]
    instance_attrs: tuple[str, ...]
    cross_times: tuple[CrossTime, ...] = ()

    @property
    def composite(self) -> bool:
        """Whether the root is a master sequence with Boolean child steps (section 4.2)."""
        return isinstance(self.root, Sequence) and bool(self.root.children)


def compile_subscription(text: str | Query) -> Subscription:
    """Compile a subscription (module docstring).

    Raises:
        PatternError: a syntax error (``CEP-PAT-...``).
        UnsupportedSubscriptionError: ``CEP-PRED-001`` .. ``003`` (module docstring).
    """
    query = parse_pattern(text) if isinstance(text, str) else text
    builder = _Builder(query)
    return builder.build()


class _Builder:
    def __init__(self, query: Query) -> None:
        self.q = query
        self.primitives: list[Primitive] = []
        self.by_class: dict[str, int] = {}
        self.leaves: list[Sequence] = []
        self.instance: dict[str, None] = {}
        self.var_attr: dict[str, str] = {}
        self.defines = {d.cls: d for d in query.defines}
        self.composite = False
        self.paths: dict[str, tuple] = {}          # alias -> its place in the tree (cross_time)
        self.pending: list[Condition] = []         # @(...) across machines, resolved at the end

    def fail(self, code: str, message: str, span: tuple[int, int] | None) -> UnsupportedSubscriptionError:
        start, end = span if span is not None else (0, 0)
        return UnsupportedSubscriptionError(code, message, self.q.text, start, end if end > start else None)

    def build(self) -> Subscription:
        q = self.q
        if q.policy is not None:
            raise self.fail(E_CLAUSE, f"a subscription takes no policy ({q.policy}): ',' is the next "
                            "event and ';' any later event", q.span)
        for clause, value in (("WITHIN", q.within), ("SLIDE", q.slide), ("WINDOW", q.window)):
            if value is not None:
                raise self.fail(E_CLAUSE, f"{clause} is not supported in a subscription; put time "
                                "bounds in @(t(X) - t(Y) < span) conditions", value.span)
        for eq in q.equivalences:
            self.instance.setdefault(eq.attr.lower())
        # A master machine (section 4.2) exists only when the whole pattern is a sequence with a
        # Boolean step; a Boolean of such sequences would need a master above Boolean machines.
        self.composite = _has_boolean_step(q.pattern)
        if not self.composite:
            inner = _first_boolean_step(q.pattern)
            if inner is not None:
                raise self.fail(E_SHAPE, "a sequence with an '&' / '|' step must be the whole "
                                "subscription (the master machine), not a part of '&' / '|'", inner.span)
        where_times = list(q.conditions)
        root = self.node(q.pattern, where_times, ())
        cross: list[CrossTime] = []
        if self.composite:
            for c in self.pending + [c for c in where_times if _is_timing(c)]:
                cross.append(self.cross_time(c))
            where_times = [c for c in where_times if not _is_timing(c)]
        if where_times:
            c = where_times[0]
            raise self.fail(E_CLAUSE, "WHERE may only hold time conditions t(X) - t(Y) < span on "
                            f"aliases of one sequence, found {c.text!r}", c.span)
        return Subscription(q.text, root, tuple(self.primitives), tuple(self.leaves),
                            tuple(self.instance), tuple(cross))

    # -- tree --------------------------------------------------------------------------------
    def node(self, node: object, where: list[Condition], path: tuple) -> Node:
        if isinstance(node, (Or, And)):
            op = "|" if isinstance(node, Or) else "&"
            key = object()   # identifies this node in the aliases' tree paths
            return Boolean(op, tuple(self.node(p, where, path + (("bool", key, i, op),))
                                     for i, p in enumerate(node.parts)))
        return self.sequence(node, where, path)

    def sequence(self, node: object, where: list[Condition], path: tuple = ()) -> Sequence:
        items: list[tuple[object, tuple[Condition, ...]]] = []
        links: list[str] = []
        self.flatten(node, items, links)
        if len(items) > MAX_STEPS:
            raise self.fail(E_SHAPE, f"a sequence has at most {MAX_STEPS} steps, found {len(items)}",
                            getattr(node, "span", None))
        seq_key = object()
        children: list[Node | None] = []
        steps: list[int] = []
        aliases: list[str] = []
        for i, (item, _) in enumerate(items):
            if isinstance(item, Event):
                children.append(None)
                steps.append(self.primitive(item))
                aliases.append(item.alias)
                self.paths[item.alias] = path + (("seq", seq_key, i),)
            else:
                child = self.node(item, where, path + (("seq", seq_key, i),))
                children.append(child)
                steps.append(-1)
                aliases.append(_render(child))
        index = {a: i for i, a in enumerate(aliases) if children[i] is None}
        times: list[TimeCondition] = []
        for _, conds in items:
            for c in conds:
                names = {r.alias for r in c.refs if not isinstance(r, VarRef)}
                if self.composite and not names <= set(index):
                    self.pending.append(c)     # across machines: resolved once the tree is built
                else:
                    times.append(self.time_condition(c, index))
        for c in list(where):
            names = {r.alias for r in c.refs if not isinstance(r, VarRef)}
            if _is_timing(c) and names and names <= set(index):
                times.append(self.time_condition(c, index))
                where.remove(c)
        text = " ".join(a if i == 0 else ("," if links[i - 1] == NEXT else ";") + " " + a
                        for i, a in enumerate(aliases))
        nested = tuple(children) if any(ch is not None for ch in children) else ()
        seq = Sequence(tuple(steps), tuple(aliases), tuple(links), tuple(times),
                       text.replace(" ,", ","), nested)
        self.leaves.append(seq)
        return seq

    def flatten(self, node: object, items: list, links: list[str]) -> None:
        if isinstance(node, Event):
            if node.iter_alias:
                raise self.fail(E_SHAPE, "iteration aliases (x[]) have no meaning in a subscription",
                                node.span)
            items.append((node, ()))
            return
        if isinstance(node, Timed):
            if not isinstance(node.part, Event):
                raise self.fail(E_SHAPE, "@(...) applies to one class in a subscription", node.span)
            self.flatten(node.part, items, links)
            items[-1] = (items[-1][0], items[-1][1] + node.conditions)
            return
        if isinstance(node, Seq):
            for i, part in enumerate(node.parts):
                if i:
                    links.append(node.links[i - 1])
                self.flatten(part, items, links)
            return
        if isinstance(node, Kleene):
            raise self.fail(E_SHAPE, "quantifiers are not supported in a subscription; write the "
                            "repetition out (F, F, F)", node.span)
        if isinstance(node, Not):
            raise self.fail(E_SHAPE, "NOT is not supported in a subscription", node.span)
        if isinstance(node, (And, Or)):
            # A child machine of the master (section 4.2); _Builder.build decided it may be one.
            items.append((node, ()))
            return
        raise self.fail(E_SHAPE, f"unsupported element {type(node).__name__}",  # pragma: no cover
                        getattr(node, "span", None))

    # -- primitives --------------------------------------------------------------------------
    def primitive(self, ev: Event) -> int:
        known = self.by_class.get(ev.cls)
        if known is not None:
            return known
        define = self.defines.get(ev.cls)
        if define is None:
            prim = Primitive(ev.cls, None, "type = " + exp.Literal.string(ev.cls).sql(dialect="spark"))
        else:
            static, variable = split_define(define.condition)
            for part in variable:
                self.join_variable(part)
            for part in conjuncts(static):
                if any(isinstance(r, TsRef) for r in part.refs):
                    raise self.fail(E_TIME, "a DEFINE reads one event; put time conditions in "
                                    "@(...)", part.span)
            prim = Primitive(ev.cls, static, static.text)
        self.primitives.append(prim)
        self.by_class[ev.cls] = len(self.primitives) - 1
        return self.by_class[ev.cls]

    def join_variable(self, part: Condition) -> None:
        tree = part.expr
        while isinstance(tree, exp.Paren):
            tree = tree.this
        refs = {r.name: r for r in part.refs}
        if isinstance(tree, exp.EQ):
            sides = [refs.get(s.name) if isinstance(s, exp.Column) else None
                     for s in (tree.this, tree.expression)]
            attr = [s for s in sides if isinstance(s, AttrRef) and s.alias is None]
            var = [s for s in sides if isinstance(s, VarRef)]
            if len(attr) == 1 and len(var) == 1:
                name, column = var[0].var, attr[0].attr.lower()
                bound = self.var_attr.setdefault(name, column)
                if bound != column:
                    raise self.fail(E_TIME, f"join variable ${name} binds {bound!r} and {column!r}; a "
                                    "subscription instance is keyed by one attribute per variable",
                                    part.span)
                self.instance.setdefault(column)
                return
        raise self.fail(E_TIME, "a join variable must appear as attr = $x in a DEFINE, found "
                        f"{part.text!r}", part.span)

    # -- time conditions ---------------------------------------------------------------------
    def time_parts(self, c: Condition, absolute_ok: bool) -> tuple[str, str, str, int | float, bool]:
        """``(later, earlier, op, bound, absolute)`` of ``t(X) - t(Y) <op> span``."""
        tree = c.expr
        while isinstance(tree, exp.Paren):
            tree = tree.this
        op = _OPS.get(type(tree))
        refs = {r.name: r for r in c.refs}
        diff = tree.this if op else None
        while isinstance(diff, exp.Paren):
            diff = diff.this
        absolute = absolute_ok and isinstance(diff, exp.Abs)
        if absolute:
            diff = diff.this
            while isinstance(diff, exp.Paren):
                diff = diff.this
        if op is None or not isinstance(diff, exp.Sub):
            shape = "t(X) - t(Y) <op> span or abs(t(X) - t(Y)) <op> span" if absolute_ok else \
                "t(X) - t(Y) <op> span"
            raise self.fail(E_TIME, f"expected {shape}, found {c.text!r}", c.span)
        later = _ts_alias(diff.this, refs)
        earlier = _ts_alias(diff.expression, refs)
        bound = _bound(tree.expression)
        if later is None or earlier is None or bound is None:
            raise self.fail(E_TIME, f"expected t(X) - t(Y) <op> span, found {c.text!r}", c.span)
        return later, earlier, op, bound, absolute

    def time_condition(self, c: Condition, index: dict[str, int]) -> TimeCondition:
        later, earlier, op, bound, _ = self.time_parts(c, False)
        if later not in index or earlier not in index:
            missing = later if later not in index else earlier
            raise self.fail(E_TIME, f"alias {missing!r} of {c.text!r} is not in the same sequence",
                            c.span)
        if index[earlier] >= index[later]:
            raise self.fail(E_TIME, f"in {c.text!r} {earlier!r} must come before {later!r}", c.span)
        return TimeCondition(index[later], index[earlier], op, bound, c.text)

    def cross_time(self, c: Condition) -> CrossTime:
        """A condition across machines: where its steps sit in the tree decides how it is read."""
        later, earlier, op, bound, absolute = self.time_parts(c, True)
        for alias in (later, earlier):
            if alias not in self.paths:
                raise self.fail(E_TIME, f"alias {alias!r} of {c.text!r} is not a step of the "
                                "subscription", c.span)
        a, b = self.paths[later], self.paths[earlier]
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        if i == min(len(a), len(b)):
            raise self.fail(E_TIME, f"{c.text!r} compares a step with itself", c.span)
        kind_a, kind_b = a[i], b[i]
        if kind_a[0] == "bool":
            if kind_a[3] == "|":
                raise self.fail(E_TIME, f"in {c.text!r} {later!r} and {earlier!r} are alternatives "
                                "of one '|' and never occur in the same match", c.span)
            # Table 3 case 4: two parts of one '&' have no order; compared once both are known.
            return CrossTime(later, earlier, op, bound, c.text, absolute, ordered=False)
        if kind_a[2] < kind_b[2] and not absolute:
            raise self.fail(E_TIME, f"in {c.text!r} {earlier!r} must come before {later!r}", c.span)
        if absolute and kind_a[2] < kind_b[2]:
            later, earlier = earlier, later
        return CrossTime(later, earlier, op, bound, c.text, absolute, ordered=True)


def _is_timing(c: Condition) -> bool:
    return all(isinstance(r, TsRef) or (isinstance(r, AttrRef) and r.attr.lower() == "ts")
               for r in c.refs)


def _seq_parts(node: object) -> tuple:
    while isinstance(node, Timed):
        node = node.part
    return node.parts if isinstance(node, Seq) else ()


def _has_boolean_step(node: object) -> bool:
    """Whether ``node`` is a sequence with an ``&`` / ``|`` step (a master machine)."""
    return any(isinstance(p, (And, Or)) for p in _seq_parts(node))


def _first_boolean_step(node: object) -> object | None:
    """The first ``&`` / ``|`` step of a sequence nested in a Boolean root (refused)."""
    if isinstance(node, (And, Or)):
        for part in node.parts:
            if _has_boolean_step(part):
                return next(p for p in _seq_parts(part) if isinstance(p, (And, Or)))
            found = _first_boolean_step(part)
            if found is not None:
                return found
    return None


def _render(node: Node) -> str:
    """A child node's text, parenthesised, for the master's step alias."""
    if isinstance(node, Sequence):
        return node.text if len(node.steps) == 1 else f"({node.text})"
    return "(" + f" {node.op} ".join(_render(p) for p in node.parts) + ")"


def _is_true(node: object) -> bool:
    return isinstance(node, exp.Boolean) and bool(node.this)


def _ts_alias(node: exp.Expression, refs: dict[str, object]) -> str | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Column):
        return None
    ref = refs.get(node.name)
    if isinstance(ref, TsRef) and ref.index is None and ref.alias is not None:
        return ref.alias
    if isinstance(ref, AttrRef) and ref.alias is not None and ref.attr.lower() == "ts":
        return ref.alias
    return None


def _bound(node: exp.Expression) -> int | float | None:
    from cep.match.compile.expr import compile_expr

    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Interval):
        value, nulls = compile_expr(node).evaluate({}, 1)
        return int(value[0])
    if isinstance(node, exp.Literal) and node.is_number:
        text = node.this
        return float(text) if any(ch in text for ch in ".eE") else int(text)
    if isinstance(node, exp.Neg):
        inner = _bound(node.this)
        return None if inner is None else -inner
    return None
