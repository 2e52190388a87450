"""``explain``: how the matcher will evaluate a compiled query, in readable text.

Shows, per alternative: the components, which conditions became buffer filters (pushed down
to Spark when masks are given), which are checked on partial matches and where. For
skip-till-any-match and strict contiguity it shows each shape's grouping of its Kleene
closures (``left``: grown forwards from the event before, ``right``: grown backwards from the
event after, ``late``: combined late between the two, ``late.py``) with the estimated sizes
behind it, its units, the plan the cost model chooses and the estimated cost of every tree
kind; for skip-till-next-match the run procedure. Given a stream, buffer sizes and the sampled
statistics behind the estimates are included. Given a forced ``plan`` (as ``find_matches``
takes it) it shows that plan instead, and says which closures could not be grouped as forced
and why (they fall back to ``left``).

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(8), ts=range(8), types=list("ABCABCAB"),
    ...                              attrs={"v": list(range(8))})
    >>> cq = compile_query("PATTERN A; B; C WHERE C.v > A.v", policy="skip-till-any-match")
    >>> text = explain(cq, s)
    >>> "chosen plan:" in text and "buffer A: 3 events" in text
    True
    >>> cq = compile_query("PATTERN B+; C", policy="skip-till-any-match")
    >>> [line.strip() for line in explain(cq, s).splitlines() if "grouping" in line][0]
    'grouping B{1,}: right (starts the shape: anchored on the event after it; estimated first-round partial matches: left -, right 3)'
    >>> cq = compile_query("PATTERN A; B+; C", policy="skip-till-any-match")
    >>> forced = explain(cq, s, plan="bushy:late").splitlines()
    >>> [line.strip() for line in forced if "grouping" in line][0]
    'grouping B{1,}: left (forced bushy:late; fell back from late to left: its size has no upper bound)'
"""

from __future__ import annotations

from typing import Any

from cep.lang.policy import NEXT_MATCH
from cep.match.columnar.buffers import alias_buffer
from cep.match.columnar.data import StreamData
from cep.match.plan.plans import (TREE_KINDS, Join, Node, Unit, build_plan, choose_plan, plan_cost,
                             split_kind)
from cep.match.columnar.spans import SWITCH_EVENTS, spans
from cep.match.columnar.stream import EventStream
from cep.match.compile.program import CompiledAlternative, CompiledQuery
from cep.match.compile.shapes import Shape
from cep.match.plan.shape_planner import ShapePlanner
from cep.match.plan.units import anchor_of, resolve_grouping, units_of


def explain(compiled: CompiledQuery, stream: EventStream | None = None, *,
            plan: str | None = None, switch_every: int | None = SWITCH_EVENTS) -> str:
    """The evaluation plan of ``compiled`` (on ``stream`` when given: sizes and costs).

    Args:
        compiled: from :func:`cep.match.compile_query`.
        stream: a partition to estimate on (optional).
        plan: a forced plan kind, as :func:`cep.match.find_matches` takes it (optional):
            shows that plan and the closures that fell back from the forced grouping.
        switch_every: as :func:`cep.match.find_matches` takes it: with a stream and a window,
            the plan chosen for each span of that many start positions is listed.

    Returns:
        Multi-line text.

    Raises:
        ValueError: ``plan`` is not a plan kind.
    """
    if plan is not None:
        split_kind(plan)
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
        if compiled.grouping:
            lines.append("  " + _grouping(compiled.grouping[number - 1], alt))
        lines.extend("  " + line for line in _alternative(compiled, alt, data, plan,
                                                          switch_every))
    return "\n".join(lines)


def _grouping(expansion: Any, alt: CompiledAlternative) -> str:
    """How FAEM's grouped policy reads this alternative's any-match rows."""
    closures = ", ".join(
        f"{'|'.join(alt.bound[slot].aliases)} "
        f"({f'exactly {low}' if high == low else f'at least {max(low, 1)}'})"
        for slot, _, low, high in expansion.closures)
    text = f"grouped (FAEM): every qualifying event of {closures} per set of single events" \
        if closures else "grouped (FAEM): no closure here"
    if expansion.dropped:
        text += "; kept only where the empty-able closures left out have no such event"
    return text


def _alternative(cq: CompiledQuery, alt: CompiledAlternative, data: StreamData | None,
                 plan: str | None, switch_every: int | None) -> list[str]:
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
        out.extend("  " + line for line in _shape(cq, shape, data, plan))
        if data is not None and plan is None:
            out.extend("  " + line for line in _switching(cq, shape, data, switch_every))
    return out


def _switching(cq: CompiledQuery, shape: Shape, data: StreamData,
               switch_every: int | None) -> list[str]:
    """The plan of each span of start positions, when the partition is cut (spans.py)."""
    parts = spans(data, cq.window, switch_every, before=bool(cq.grouping))
    if len(parts) == 1:
        return []
    kinds = [ShapePlanner(cq, shape, p.data).choose_kind() for p in parts]
    runs: list[tuple[str, int, int]] = []
    for p, kind in zip(parts, kinds):
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1], p.b)
        else:
            runs.append((kind, p.a, p.b))
    listed = "; ".join(f"{kind} for starts {a}..{b - 1}" for kind, a, b in runs)
    return [f"plan switching: {len(parts)} spans of {switch_every} start positions, each "
            f"planned on its own sample: {listed}"]


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


def _grouping_lines(shape: Shape, planner: ShapePlanner | None, plan: str | None) -> list[str]:
    if not shape.kleene:
        return []
    forced = split_kind(plan)[1] if plan is not None else None
    if forced is not None:
        grouping, notes = resolve_grouping(shape, forced)
        return [f"grouping {_slot_text(shape, k)}: {grouping[k]} (forced {plan}"
                + (f"; {notes[k]})" if k in notes else ")") for k in sorted(shape.kleene)]
    if planner is None:
        return ["grouping: every Kleene closure left (no stream to estimate on)"]
    out = []
    for c in planner.choices:
        names = " ".join(_slot_text(shape, k) for k in c.slots)
        rows = f"left {_num(c.left_rows)}, right {_num(c.right_rows)}"
        late = ""
        if c.late_rows is not None and c.round_rows is not None:
            late = (f"; estimated rows built: late {_num(c.late_rows)}, round by round left "
                    f"{_num(c.round_rows[0])}, right {_num(c.round_rows[1])}")
        out.append(f"grouping {names}: {c.grouping} ({c.reason}; estimated first-round partial "
                   f"matches: {rows}{late})")
    return out


def _num(n: float | None) -> str:
    return "-" if n is None else f"{n:.3g}"


def _late_slot(units: list[tuple[int, int]], left: Node, right: Node) -> int | None:
    """The closure combined late between two sides of a join, if any (a slot in no unit)."""
    between = units[left.last][1] + 1
    return between if between < units[right.first][0] else None


def render(node: Node, shape: Shape, units: list[tuple[int, int]]) -> str:
    """A plan tree as text: ``SEQ(SEQ(A, B), C)`` with unit labels; a closure combined late
    between the two sides of a join in brackets: ``SEQ(A, [B{2,2}], C)``."""
    if isinstance(node, Unit):
        return _unit_label(shape, units, node.index)
    assert isinstance(node, Join)
    late = _late_slot(units, node.left, node.right)
    middle = f"[{_slot_text(shape, late)}], " if late is not None else ""
    return f"SEQ({render(node.left, shape, units)}, {middle}{render(node.right, shape, units)})"


def _units_line(shape: Shape, units: list[tuple[int, int]]) -> str:
    text = f"units: {' | '.join(_unit_label(shape, units, u) for u in range(len(units)))}"
    late = [f"{_slot_text(shape, units[u][1] + 1)} between {_unit_label(shape, units, u)} and "
            f"{_unit_label(shape, units, u + 1)}"
            for u in range(len(units) - 1) if units[u][1] + 1 < units[u + 1][0]]
    return text + ("; combined late: " + ", ".join(late) if late else "")


def _shape(cq: CompiledQuery, shape: Shape, data: StreamData | None, plan: str | None) -> list[str]:
    forced = split_kind(plan)[1] if plan is not None else None
    planner = ShapePlanner(cq, shape, data, grouping=forced) if data is not None else None
    units = planner.units if planner is not None else units_of(shape, forced)
    out = _grouping_lines(shape, planner, plan)
    out.append(_units_line(shape, units))
    for c in shape.constraints:
        when = "on whole matches (join variables)" if c.deferred else \
            f"once slots {sorted(c.scope)} are bound" if c.scope else "once (constant)"
        out.append(f"constraint {c.label()}: {when}")
    if plan is not None:
        tree = planner.plan(plan).tree if planner is not None else \
            build_plan(split_kind(plan)[0], len(units))
        out.append(f"forced plan: {plan} {render(tree, shape, units)}")
        return out
    if planner is None:
        tree = build_plan("left-deep", len(units))
        out.append(f"default plan (no stream to estimate on): left-deep {render(tree, shape, units)}")
        return out
    if len(units) <= 2:
        tree = build_plan("left-deep", len(units))
        out.append(f"chosen plan: left-deep {render(tree, shape, units)} (every kind is the same "
                   "for two units)")
        return out
    est = planner.estimates()
    best, tree, costs = choose_plan(est, len(units))
    out.append("sampled unit sizes: " + ", ".join(f"{s:.0f}" for s in est.unit_sizes))
    out.append("sampled pair fractions (order, link, window): "
               + ", ".join(f"{r:.3g}" for r in est.raw_pairs))
    out.append("sampled selectivities of neighbour conditions: "
               + ", ".join(f"{s:.3g}" for s in est.selectivity))
    if any(units[u][1] + 1 < units[u + 1][0] for u in range(len(units) - 1)):
        out.append("sampled rows per joined pair (combinations of a closure combined late): "
                   + ", ".join(f"{g:.3g}" for g in est.expansion))
    for kind in TREE_KINDS:
        t = build_plan(kind, len(units), est.pair_sizes(), est.unit_sizes)
        rows, work = plan_cost(t, est)
        out.append(f"plan {kind}: {render(t, shape, units)} estimated work {work:.3g}, "
                   f"rows {rows:.3g}")
    out.append(f"chosen plan: {best} {render(tree, shape, units)} (cost {costs[best]:.3g})")
    return out
