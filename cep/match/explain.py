"""``explain``: how the matcher will evaluate a compiled query, in readable text.

Shows, per alternative: the components, which conditions became buffer filters (pushed down
to Spark when masks are given), which are checked on partial matches and where. For
skip-till-any-match and strict contiguity it shows each shape's grouping of its Kleene
closures (``left``: grown forwards from the event before, ``right``: grown backwards from the
event after) with the estimated first-round sizes behind it, its units, the plan the cost model
chooses and the estimated cost of every tree kind; for skip-till-next-match the run procedure.
Given a stream, buffer sizes and the sampled statistics behind the estimates are included.

Example:
    >>> from cep.match.compiler import compile_query
    >>> from cep.match.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(8), ts=range(8), types=list("ABCABCAB"),
    ...                              attrs={"v": list(range(8))})
    >>> cq = compile_query("PATTERN A; B; C WHERE C.v > A.v", policy="skip-till-any-match")
    >>> text = explain(cq, s)
    >>> "chosen plan:" in text and "buffer A: 3 events" in text
    True
    >>> cq = compile_query("PATTERN B+; C", policy="skip-till-any-match")
    >>> [line.strip() for line in explain(cq, s).splitlines() if "grouping" in line][0]
    'grouping B{1,}: right (starts the shape: anchored on the event after it; estimated first-round partial matches: left -, right 3)'
"""

from __future__ import annotations

from cep.match.any_match import AnyMatch, anchor_of, units_of
from cep.match.buffers import alias_buffer
from cep.match.compiler import CompiledAlternative, CompiledQuery
from cep.match.data import StreamData
from cep.match.normal import NEXT_MATCH
from cep.match.plans import TREE_KINDS, Join, Node, Unit, build_plan, choose_plan, plan_cost
from cep.match.shapes import Shape
from cep.match.stream import EventStream


def explain(compiled: CompiledQuery, stream: EventStream | None = None) -> str:
    """The evaluation plan of ``compiled`` (on ``stream`` when given: sizes and costs).

    Args:
        compiled: from :func:`cep.match.compile_query`.
        stream: a partition to estimate on (optional).

    Returns:
        Multi-line text.
    """
    data = StreamData(stream, compiled.normal.window) if stream is not None else None
    w = compiled.window
    lines = [f"policy: {compiled.policy}"]
    if w.width is not None:
        unit = "events" if w.by_events else "timestamp units (microseconds for time)"
        slide = f", slide {w.slide}" if w.slide is not None else ""
        lines.append(f"window: {w.width} {unit}{slide}")
    if compiled.normal.window is not None and data is not None:
        lines.append(f"WINDOW keeps positions {data.lo}..{data.hi - 1}")
    if compiled.normal.equivalences:
        lines.append("equivalences: " + ", ".join(f"[{a}]" for a in compiled.normal.equivalences))
    lines.append(f"limits: {compiled.limits}")
    for number, alt in enumerate(compiled.alternatives, 1):
        lines.append(f"alternative {number}: {alt.describe()}")
        lines.extend("  " + line for line in _alternative(compiled, alt, data))
    return "\n".join(lines)


def _alternative(cq: CompiledQuery, alt: CompiledAlternative, data: StreamData | None) -> list[str]:
    out = []
    aliases = list(alt.aliases) + [a for n in alt.negations for a in n.aliases]
    for alias in aliases:
        cls = cq.alias_classes[alias]
        how = "DEFINE " + cq.defines[cls].text if cls in cq.defines else f"type = '{cls}'"
        filters = [p.text for p in cq.filters_of(alias)]
        size = ""
        if data is not None:
            source = " (Spark mask)" if alias in data.stream.masks else ""
            size = f": {len(alias_buffer(cq, alias, data))} events{source}"
        extra = f"; filters: {'; '.join(filters)}" if filters else ""
        out.append(f"buffer {alias}{size} [{how}{extra}]")
    for pred in alt.cross:
        out.append(f"cross condition on {', '.join(sorted(pred.aliases)) or 'nothing'}: {pred.text}")
    for neg in alt.negations:
        conds = [p.text for ps in neg.conditions.values() for p in ps]
        what = f" violating when {'; '.join(conds)}" if conds else ""
        out.append(f"NOT({'|'.join(neg.aliases)}) after slot {neg.after}{what}")
    if cq.policy == NEXT_MATCH:
        out.append("evaluation: skip-till-next-match runs, one per start event, all advanced "
                   "together; each slot takes the first passing candidate found by searchsorted "
                   "and chunked vectorised checks (no join plan)")
        return out
    for k, shape in enumerate(alt.shapes, 1):
        out.append(f"shape {k}: " + " ".join(_slot_text(shape, s) for s in range(len(shape.slots))))
        out.extend("  " + line for line in _shape(cq, shape, data))
    return out


def _slot_text(shape: Shape, k: int) -> str:
    slot = shape.slots[k]
    name = "|".join(slot.aliases)
    if slot.kind == "kleene":
        name += f"{{{slot.min},{'' if slot.max is None else slot.max}}}"
    return name


def _unit_label(shape: Shape, units: list[tuple[int, int]], index: int) -> str:
    first, last = units[index]
    anchor = anchor_of(shape, units[index])
    # "<" marks closures grown backwards from the anchor, ">" those grown forwards.
    return " ".join(_slot_text(shape, k) + ("<" if k < anchor else ">" if k > anchor else "")
                    for k in range(first, last + 1))


def _grouping_lines(shape: Shape, matcher: AnyMatch | None) -> list[str]:
    if not shape.kleene:
        return []
    if matcher is None:
        return ["grouping: every Kleene closure left (no stream to estimate on)"]
    out = []
    for c in matcher.choices:
        names = " ".join(_slot_text(shape, k) for k in c.slots)
        rows = ", ".join(f"{side} {'-' if n is None else f'{n:.3g}'}"
                         for side, n in (("left", c.left_rows), ("right", c.right_rows)))
        out.append(f"grouping {names}: {c.grouping} ({c.reason}; estimated first-round partial "
                   f"matches: {rows})")
    return out


def render(node: Node, shape: Shape, units: list[tuple[int, int]]) -> str:
    """A plan tree as text: ``Join(Join(A, B), C)`` with unit labels."""
    if isinstance(node, Unit):
        return _unit_label(shape, units, node.index)
    assert isinstance(node, Join)
    return f"SEQ({render(node.left, shape, units)}, {render(node.right, shape, units)})"


def _shape(cq: CompiledQuery, shape: Shape, data: StreamData | None) -> list[str]:
    matcher = AnyMatch(cq, shape, data) if data is not None else None
    units = matcher.units if matcher is not None else units_of(shape)
    out = _grouping_lines(shape, matcher)
    out.append(f"units: {' | '.join(_unit_label(shape, units, u) for u in range(len(units)))}")
    for c in shape.constraints:
        when = "on whole matches (join variables)" if c.deferred else \
            f"once slots {sorted(c.scope)} are bound" if c.scope else "once (constant)"
        out.append(f"constraint {c.label()}: {when}")
    if matcher is None:
        tree = build_plan("left-deep", len(units))
        out.append(f"default plan (no stream to estimate on): left-deep {render(tree, shape, units)}")
        return out
    if len(units) <= 2:
        tree = build_plan("left-deep", len(units))
        out.append(f"chosen plan: left-deep {render(tree, shape, units)} (every kind is the same "
                   "for two units)")
        return out
    est = matcher.estimates()
    best, tree, costs = choose_plan(est, len(units))
    out.append("sampled unit sizes: " + ", ".join(f"{s:.0f}" for s in est.unit_sizes))
    out.append("sampled pair fractions (order, link, window): "
               + ", ".join(f"{r:.3g}" for r in est.raw_pairs))
    out.append("sampled selectivities of neighbour conditions: "
               + ", ".join(f"{s:.3g}" for s in est.selectivity))
    for kind in TREE_KINDS:
        t = build_plan(kind, len(units), est.pair_sizes(), est.unit_sizes)
        rows, work = plan_cost(t, est)
        out.append(f"plan {kind}: {render(t, shape, units)} estimated work {work:.3g}, "
                   f"rows {rows:.3g}")
    out.append(f"chosen plan: {best} {render(tree, shape, units)} (cost {costs[best]:.3g})")
    return out
