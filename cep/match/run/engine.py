"""``find_matches``: the exact matcher's entry point for one partition.

Per alternative of the compiled query, skip-till-next-match runs ``next_match.py``; the other
two policies evaluate each shape with a plan of SEQ joins (``any_match.py``), the plan chosen
by the planner's cost model (``shape_planner.py``) unless one is forced. The union over alternatives is ordered and
deduplicated into :class:`~cep.match.columnar.arrays.MatchArrays`.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(6), ts=range(6), types=list("ABABCB"))
    >>> cq = compile_query("PATTERN SEQ(A, B)", policy="skip-till-any-match")
    >>> [m.positions for m in find_matches(cq, s).to_matches()]
    [(0, 1), (0, 3), (0, 5), (2, 3), (2, 5)]
    >>> [m.positions for m in find_matches(compile_query("PATTERN A; B"), s).to_matches()]
    [(0, 1), (2, 3)]
"""

from __future__ import annotations

import numpy as np

from cep.lang.policy import NEXT_MATCH
from cep.match.columnar.arrays import Block, MatchArrays, assemble
from cep.match.columnar.buffers import alias_buffer
from cep.match.columnar.data import StreamData
from cep.match.columnar.spans import SWITCH_EVENTS, owned, spans
from cep.match.columnar.stream import EventStream
from cep.match.compile.program import CompiledAlternative, CompiledQuery
from cep.match.errors import StreamError
from cep.match.limits import check_matches
from cep.match.plan.plans import PLAN_KINDS
from cep.match.run.any_match import AnyMatch
from cep.match.run.grouped import group_blocks
from cep.match.run.next_match import next_matches


def find_matches(compiled: CompiledQuery, stream: EventStream, *, plan: str | None = None,
                 event_ts: np.ndarray | None = None,
                 switch_every: int | None = SWITCH_EVENTS) -> MatchArrays:
    """Every match of the compiled query in one partition, in ``match_id`` order.

    Args:
        compiled: from :func:`cep.match.compile_query`.
        stream: the partition's events (sorted by ``(ts, id)``); ``masks`` per alias are used
            instead of evaluating the class and the alias's single-event conditions.
        plan: force a plan kind (``left-deep``, ``right-deep``, ``bushy``, ``inner``) for
            skip-till-any-match and strict contiguity, optionally with the grouping of every
            Kleene closure (``bushy:left``, ``bushy:right``, ``bushy:late``; a closure that
            cannot be grouped so falls back to ``left``, see ``plans.py``); None lets the cost
            model choose. Skip-till-next-match runs are not join plans and ignore it.
        event_ts: the timestamps conditions read when ``stream.ts`` is a segmented clock
            (``cep.match.run.segments``); None for an ordinary partition.
        switch_every: under a ``WITHIN`` window, re-choose the plan for every this many start
            positions (``cep.match.columnar.spans``); None: one plan for the partition.

    Raises:
        MatchLimitError: a limit of ``compiled.limits`` was exceeded.
        StreamError: a column the query reads is missing or malformed.
    """
    if stream.segmented:
        raise StreamError("the stream holds several segments; use "
                          "cep.match.run.segments.find_segment_matches")
    if plan is not None and plan not in PLAN_KINDS:
        raise ValueError(f"unknown plan {plan!r}; expected one of {', '.join(PLAN_KINDS)}")
    data = StreamData(stream, compiled.normal.window, event_ts)
    blocks: list[Block] = []
    per_alternative: list[list[Block]] = []
    # Under the grouped policy the any-match rows are grouped into composites first, unless
    # no alternative has a closure (then every row is a composite).
    grouped = any(e.closures or e.dropped for e in compiled.grouping)
    total = 0
    for index, alt in enumerate(compiled.alternatives):
        per_alternative.append([])
        if not _may_match(compiled, alt, data):
            continue
        if compiled.policy == NEXT_MATCH:
            found = next_matches(compiled, alt, data)
        else:
            found = []
            owner = _first_single(compiled, index)
            for shape in alt.shapes:
                # FAEM-style plan switching: with a window, each span of start positions is
                # planned on its own sample (spans.py); a forced plan is one plan throughout.
                for span in spans(data, compiled.window, None if plan else switch_every,
                                  before=bool(compiled.grouping)):
                    matcher = AnyMatch(compiled, shape, span.data)
                    node = matcher.plan(plan or matcher.planner.choose_kind())
                    for bound in matcher.run(node):
                        pos = owned(bound.pos, owner, span) if span.data is not data \
                            else bound.pos
                        found.append((pos, bound.variables(shape.kleene)))
        per_alternative[-1] = found
        if grouped:
            continue  # rows are not matches yet: group_blocks counts the composites
        for pos, _ in found:
            total += len(pos)
        check_matches(compiled.limits, total)
        blocks.extend(found)
    if grouped:
        blocks = group_blocks(compiled.grouping, per_alternative, compiled.limits)
    return assemble(blocks)


def _first_single(compiled: CompiledQuery, index: int) -> int:
    """The column of an alternative's matches that decides which span owns them: the first
    bound event, or under the grouped policy the first single event (closure events of one
    composite may start in different spans)."""
    if not compiled.grouping:
        return 0
    closures = {slot for slot, _, _, _ in compiled.grouping[index].closures}
    return min(j for j in range(len(compiled.alternatives[index].bound)) if j not in closures)


def _may_match(compiled: CompiledQuery, alt: CompiledAlternative, data: StreamData) -> bool:
    """False when a component every match must fill has an empty buffer (a cheap early exit:
    small partitions often lack one of the classes)."""
    for slot in alt.bound:
        if slot.min >= 1 and all(len(alias_buffer(compiled, a, data)) == 0 for a in slot.aliases):
            return False
    return True
