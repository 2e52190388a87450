"""The configuration solver of the Bloom-filter tree (Baltus 2021, section 4.4), reconstructed.

Given the target false-positive rate ``fpq`` of a query of ``s`` names, a memory budget ``M``
in bytes, the expected stream size ``N`` and the leaf window ``C``, :func:`solve` chooses the
tree height ``h``, the filter size ``m`` (bits) and the number of hash functions ``k`` of the
sketch of ``docs/sketch.md``, and predicts the memory it needs.

**Provenance.** The thesis text (equations 4.13 to 4.18, figure 4.9) was not available to us.
The model below is our reconstruction from first principles, following the issue's summary
(Heaps' law with ``K = 60``, ``beta = 0.5``; choose height, ``m`` and ``k``; predict memory) and
the tree rule of ``docs/sketch.md`` section 3. ``docs/sketch.md`` section "Configuration solver"
states it in full. In short, with fanout ``f``:

* Heaps' law: a node covering ``w`` events holds ``D(w) = min(w, K * w**beta)`` distinct names;
  a node at level ``L`` covers ``C * f**L`` events, so ``D_L = D(C * f**L)``.
* A Bloom filter with ``D`` names has false-positive probability
  ``p(D) = (1 - exp(-k*D/m))**k`` and density ``1 - exp(-k*D/m)``.
* Query target: a query of ``s`` names is wrong at a leaf when one of its names is a false
  positive, ``fpq = 1 - (1 - p_leaf)**s``, so ``p(D_0) <= 1 - (1 - fpq)**(1/s)``.
* Height ``h``: the tree rule merges while the OR of the children has density ``<= 1/2``, so a
  tree of height ``h`` needs ``k*D_h/m <= ln 2`` and, for it to stop there (below the highest
  level ``N`` events can fill), ``k*D_{h+1}/m > ln 2``.
* Memory: ``(m/8 + overhead) * sum_{L=0..h} ceil(N / (C*f**L))`` bytes, with a fixed
  ``overhead`` of 64 bytes per node for its intervals, counts and ids.

For every candidate height the solver tries ``k = 1..32``, takes for each the smallest ``m``
(a multiple of 8) meeting the constraints, and keeps the ``(m, k)`` of least memory (ties: the
smaller ``k``). It returns the highest height whose memory fits ``M`` (a higher tree prunes more
per query) together with the whole table of heights, the reconstruction of figure 4.9. In the
figure's setting memory grows with height; it need not in general, as the stop rule can rule
out for height ``h`` a small ``k`` that builds a cheaper tree of height ``h + 1``.

Example:
    >>> result = solve(fpq=1e-4, memory_bytes=50_000_000, n_events=1_000_000, window=64)
    >>> result.height, result.m, result.k, result.predicted_bytes
    (5, 8864, 3, 36056580)
    >>> [row.height for row in result.table][:3], len(result.table)
    ([0, 1, 2], 14)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real

from cep.errors import CepError
from cep.sketch.config import SketchConfig

__all__ = [
    "MAX_HASHES",
    "NODE_OVERHEAD_BYTES",
    "BudgetTooSmallError",
    "HeightRow",
    "SolverError",
    "SolverInputs",
    "SolverResult",
    "bloom_density",
    "bloom_fp",
    "heaps_distinct",
    "leaf_fp_target",
    "memory_table",
    "natural_height",
    "nodes_at_level",
    "query_fp",
    "solve",
]

MAX_HASHES: int = 32
"""The largest number of hash functions ``k`` the solver considers."""

NODE_OVERHEAD_BYTES: int = 64
"""Assumed fixed bytes per node besides its filter: position and time intervals, counts, ids."""

_LN2 = math.log(2.0)


class SolverError(CepError):
    """The solver's inputs are invalid, or no configuration meets them.

    The message names the argument at fault, or the constraint that cannot be met.

    Example:
        >>> try:
        ...     solve(fpq=1.5, memory_bytes=10**6, n_events=10**6, window=64)
        ... except SolverError as error:
        ...     print(error)
        CEP-SKETCH-010: fpq: expected a number in (0, 1), found 1.5
    """

    code = "CEP-SKETCH-010"


class BudgetTooSmallError(SolverError):
    """Even the cheapest height needs more memory than the budget; ``needed_bytes`` says how much.

    Attributes:
        needed_bytes: The smallest predicted memory of any height, in bytes.
        budget_bytes: The budget that was given.
    """

    def __init__(self, needed_bytes: int, budget_bytes: int, height: int) -> None:
        self.needed_bytes = needed_bytes
        self.budget_bytes = budget_bytes
        super().__init__(
            f"memory_bytes: a budget of {budget_bytes} bytes is too small; the cheapest sketch "
            f"(height {height}) needs {needed_bytes} bytes"
        )


# ---------------------------------------------------------------------------------------------
# The model's formulas, each on its own so tests and benchmarks can recompute them.


def heaps_distinct(events: float, heaps_k: float = 60.0, heaps_beta: float = 0.5) -> float:
    """Heaps' law estimate of the distinct names among ``events`` events, capped by ``events``.

    Args:
        events: Number of events a node covers.
        heaps_k: Heaps' constant ``K``.
        heaps_beta: Heaps' exponent ``beta``.

    Returns:
        ``min(events, heaps_k * events ** heaps_beta)``.

    Example:
        >>> heaps_distinct(64), heaps_distinct(10_000)
        (64, 6000.0)
    """
    return min(events, heaps_k * events**heaps_beta)


def bloom_density(m: int, k: int, distinct: float) -> float:
    """Expected density (fraction of set bits) of ``m`` bits, ``k`` hashes, ``distinct`` names.

    Example:
        >>> round(bloom_density(1000, 7, 99), 3)
        0.5
    """
    return -math.expm1(-k * distinct / m)


def bloom_fp(m: int, k: int, distinct: float) -> float:
    """Expected false-positive probability ``(1 - exp(-k*distinct/m)) ** k`` of one name.

    Example:
        >>> round(bloom_fp(1000, 7, 99), 4)
        0.0078
    """
    return bloom_density(m, k, distinct) ** k


def leaf_fp_target(fpq: float, query_length: int) -> float:
    """The largest leaf false-positive probability that keeps ``query_length`` names at ``fpq``.

    Solves ``fpq = 1 - (1 - p_leaf) ** query_length`` for ``p_leaf``.

    Example:
        >>> round(leaf_fp_target(1e-4, 2), 10)
        5.00013e-05
    """
    return -math.expm1(math.log1p(-fpq) / query_length)


def query_fp(p_leaf: float, query_length: int) -> float:
    """The probability that some name of a query of ``query_length`` names is a leaf false positive.

    Example:
        >>> round(query_fp(leaf_fp_target(1e-4, 3), 3), 12)
        0.0001
    """
    return -math.expm1(query_length * math.log1p(-p_leaf))


def nodes_at_level(n_events: int, window: int, fanout: int, level: int) -> int:
    """Nodes at ``level`` of ``n_events`` events: ``ceil(n_events / (window * fanout**level))``.

    Counting the partial node at the end makes the memory prediction an upper bound.

    Example:
        >>> [nodes_at_level(1000, 64, 2, level) for level in range(5)]
        [16, 8, 4, 2, 1]
    """
    return -(-n_events // (window * fanout**level))


def natural_height(n_events: int, window: int, fanout: int) -> int:
    """The highest level ``n_events`` events fill: the largest ``h`` with ``C * f**h <= N``.

    Example:
        >>> natural_height(1_000_000, 64, 2), natural_height(10, 64, 2)
        (13, 0)
    """
    height = 0
    while window * fanout ** (height + 1) <= n_events:
        height += 1
    return height


# ---------------------------------------------------------------------------------------------
# Results.


@dataclass(frozen=True)
class SolverInputs:
    """The validated inputs of one :func:`solve` call, kept with its result.

    Attributes:
        fpq: Target false-positive rate of a query.
        memory_bytes: Memory budget ``M``.
        n_events: Expected stream size ``N``.
        window: Events per leaf ``C``.
        query_length: Names per query ``s``.
        fanout: Children per node ``f``.
        heaps_k: Heaps' constant ``K``.
        heaps_beta: Heaps' exponent ``beta``.
        max_height: Highest height considered (the stream's natural height unless lowered).
        node_overhead_bytes: Fixed bytes per node besides its filter.
    """

    fpq: float
    memory_bytes: int
    n_events: int
    window: int
    query_length: int
    fanout: int
    heaps_k: float
    heaps_beta: float
    max_height: int
    node_overhead_bytes: int


@dataclass(frozen=True)
class HeightRow:
    """The cheapest configuration of one tree height (one point of figure 4.9).

    When no ``k <= 32`` gives a tree that stops at this height (the filters a leaf needs are so
    sparse that the tree would merge further), the row is infeasible and ``k``, ``m``,
    ``predicted_bytes`` and the rates are ``None``.

    Attributes:
        height: Tree height ``h`` (levels ``0..h``).
        nodes: Predicted number of nodes, ``sum_{L<=h} ceil(N / (C f**L))``.
        distinct_leaf: Heaps' estimate of the names in a leaf, ``D_0``.
        distinct_top: Heaps' estimate of the names in a top-level node, ``D_h``.
        k: Hash functions.
        m: Filter bits (a multiple of 8).
        predicted_bytes: ``(m/8 + overhead) * nodes``.
        leaf_fp: Predicted false-positive probability of one name at a leaf.
        query_fp: Predicted false-positive probability of a query at a leaf.
        top_density: Predicted density of a top-level filter (``<= 1/2``).
        binding: The constraint that sets ``m``: ``"leaf-fp"`` or ``"density"``.
        fits: Whether ``predicted_bytes <= M``.
    """

    height: int
    nodes: int
    distinct_leaf: float
    distinct_top: float
    k: int | None
    m: int | None
    predicted_bytes: int | None
    leaf_fp: float | None
    query_fp: float | None
    top_density: float | None
    binding: str | None
    fits: bool

    @property
    def feasible(self) -> bool:
        """Whether some ``k <= 32`` gives a tree of exactly this height."""
        return self.m is not None


@dataclass(frozen=True)
class SolverResult:
    """The chosen configuration, its predictions and the table of every height.

    Attributes:
        height: Chosen tree height: the highest whose predicted memory fits the budget.
        m: Filter bits per node (a multiple of 8).
        k: Hash functions.
        predicted_bytes: Predicted memory of the tree, in bytes (``<= memory_bytes``).
        predicted_leaf_fp: Predicted false-positive probability of one name at a leaf.
        predicted_query_fp: Predicted false-positive probability of a query at a leaf (``<= fpq``).
        table: One row per height ``0..max_height``, the data of figure 4.9.
        inputs: The validated inputs.
    """

    height: int
    m: int
    k: int
    predicted_bytes: int
    predicted_leaf_fp: float
    predicted_query_fp: float
    table: tuple[HeightRow, ...]
    inputs: SolverInputs

    def to_config(
        self, seeds: Sequence[int] | None = None, config_version: int = 1
    ) -> SketchConfig:
        """The :class:`~cep.sketch.config.SketchConfig` of this result.

        Args:
            seeds: One murmur3 seed per hash function; ``0 .. k-1`` when not given.
            config_version: Version of the settings in the meta table.

        Returns:
            ``SketchConfig(m, k, C=window, fanout, seeds, config_version, target_fpq=fpq)``.

        Raises:
            SketchConfigError: ``seeds`` is not ``k`` distinct integers in ``[0, 2**32)``, or
                ``m`` exceeds what the persisted format holds (``CEP-SKETCH-001``).

        Example:
            >>> config = solve(fpq=1e-4, memory_bytes=10**7, n_events=10**6, window=64).to_config()
            >>> config.m, config.k, config.C, config.fanout, config.seeds, config.target_fpq
            (2160, 5, 64, 2, (0, 1, 2, 3, 4), 0.0001)
        """
        return SketchConfig(
            m=self.m,
            k=self.k,
            C=self.inputs.window,
            fanout=self.inputs.fanout,
            seeds=None if seeds is None else tuple(seeds),
            config_version=config_version,
            target_fpq=self.inputs.fpq,
        )


# ---------------------------------------------------------------------------------------------
# Validation.


def _check_int(name: str, value: object, lo: int) -> int:
    """``value`` as an int ``>= lo``, or SolverError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SolverError(
            f"{name}: expected an integer >= {lo}, found {value!r} ({type(value).__name__})"
        )
    if value < lo:
        raise SolverError(f"{name}: expected an integer >= {lo}, found {value}")
    return int(value)


def _check_real(name: str, value: object, lo: float, hi: float, hi_inclusive: bool) -> float:
    """``value`` as a float in ``(lo, hi)`` (or ``(lo, hi]``), or SolverError naming ``name``."""
    if math.isfinite(hi):
        expected = f"a number in ({lo:g}, {hi:g}{']' if hi_inclusive else ')'}"
    else:
        expected = f"a finite number > {lo:g}"
    if isinstance(value, bool) or not isinstance(value, Real):
        raise SolverError(f"{name}: expected {expected}, found {value!r} ({type(value).__name__})")
    as_float = float(value)
    above = as_float > lo
    below = as_float <= hi if hi_inclusive else as_float < hi
    if not (math.isfinite(as_float) and above and below):
        raise SolverError(f"{name}: expected {expected}, found {value!r}")
    return as_float


# ---------------------------------------------------------------------------------------------
# The solver.


def _ceil8(bits: float) -> int:
    """The smallest positive multiple of 8 that is ``>= bits``."""
    return max(8, 8 * math.ceil(bits / 8))


def _smallest_m(holds: Callable[[int], bool], start: float) -> int:
    """The smallest multiple of 8 for which ``holds(m)`` is true, ``holds`` monotone in ``m``.

    ``start`` is the continuous solution; the search around it (galloping, then bisection, in
    steps of 8 bits) only absorbs floating-point rounding, in a few steps even for huge ``m``.
    """
    guess = _ceil8(start) // 8  # in units of 8 bits
    if holds(8 * guess):
        low, high, step = guess, guess, 1  # find a failing unit below, unless 1 holds
        while low > 1 and holds(8 * low):
            high = low
            low = max(1, guess - step)
            step *= 2
        if holds(8 * low):
            return 8 * low
    else:
        low, high, step = guess, guess, 1  # find a holding unit above
        while not holds(8 * high):
            low = high
            high = guess + step
            step *= 2
    # Now holds(8 * high) and not holds(8 * low), low < high.
    while high - low > 1:
        middle = (low + high) // 2
        if holds(8 * middle):
            high = middle
        else:
            low = middle
    return 8 * high


def _best_for_height(
    inputs: SolverInputs, height: int, natural: int
) -> tuple[int, int, str] | None:
    """The ``(m, k, binding)`` of least ``m`` (ties: least ``k``) for a tree of exactly ``height``.

    ``natural`` is the highest level the stream can fill; below it the tree must also stop at
    ``height``. None when no ``k <= 32`` does.
    """
    d_leaf = heaps_distinct(inputs.window, inputs.heaps_k, inputs.heaps_beta)
    d_top = heaps_distinct(inputs.window * inputs.fanout**height, inputs.heaps_k, inputs.heaps_beta)
    stops = height < natural
    d_next = heaps_distinct(
        inputs.window * inputs.fanout ** (height + 1), inputs.heaps_k, inputs.heaps_beta
    )
    target = leaf_fp_target(inputs.fpq, inputs.query_length)
    best: tuple[int, int, str] | None = None
    for k in range(1, MAX_HASHES + 1):
        # p(D_0) <= target  <=>  k*D_0/m <= -ln(1 - target**(1/k)).
        per_hash = -math.log1p(-math.exp(math.log(target) / k))
        m_leaf = _smallest_m(lambda m: bloom_fp(m, k, d_leaf) <= target, k * d_leaf / per_hash)
        # density(D_h) <= 1/2  <=>  k*D_h/m <= ln 2.
        m_density = _smallest_m(lambda m: bloom_density(m, k, d_top) <= 0.5, k * d_top / _LN2)
        m = max(m_leaf, m_density)
        if stops and bloom_density(m, k, d_next) <= 0.5:
            continue  # level height + 1 would merge too: this (m, k) builds a taller tree
        binding = "leaf-fp" if m_leaf >= m_density else "density"
        if best is None or m < best[0]:
            best = (m, k, binding)
    return best


def solve(
    fpq: float,
    memory_bytes: int,
    n_events: int,
    window: int,
    query_length: int = 2,
    fanout: int = 2,
    heaps_k: float = 60.0,
    heaps_beta: float = 0.5,
    max_height: int | None = None,
    node_overhead_bytes: int = NODE_OVERHEAD_BYTES,
) -> SolverResult:
    """Choose the tree height, ``m`` and ``k`` for a query false-positive target and a budget.

    The model (a reconstruction, see the module docstring and ``docs/sketch.md``) predicts for
    every height ``0..max_height`` the cheapest ``(m, k)`` meeting the leaf false-positive
    target and the density rule of the tree, and its memory; the highest height that fits
    ``memory_bytes`` is chosen.

    Args:
        fpq: Target false-positive rate of a query at a leaf, in ``(0, 1)``.
        memory_bytes: Memory budget ``M`` in bytes.
        n_events: Expected stream size ``N``.
        window: Events per leaf ``C``.
        query_length: Names per query ``s``.
        fanout: Children per node ``f`` (``>= 2``).
        heaps_k: Heaps' constant ``K`` (``> 0``).
        heaps_beta: Heaps' exponent ``beta``, in ``(0, 1]``.
        max_height: Highest height to consider; defaults to, and is capped at, the highest level
            ``n_events`` can fill (:func:`natural_height`).
        node_overhead_bytes: Fixed bytes per node besides its filter.

    Returns:
        The chosen configuration with its predictions and the table of every height.

    Raises:
        SolverError: An argument is out of range (the message names it), or no ``k <= 32`` gives
            a tree of height ``<= max_height`` (the leaf target makes filters so sparse that the
            tree merges further).
        BudgetTooSmallError: Even the cheapest height needs more than ``memory_bytes``; the
            message and ``needed_bytes`` give the smallest memory needed.

    Example:
        >>> result = solve(fpq=1e-4, memory_bytes=4_000_000, n_events=1_000_000, window=64)
        >>> result.height, result.m, result.k, result.predicted_bytes
        (0, 1320, 14, 3578125)
        >>> result.predicted_query_fp <= 1e-4
        True
        >>> try:
        ...     solve(fpq=1e-4, memory_bytes=1_000_000, n_events=1_000_000, window=64)
        ... except BudgetTooSmallError as error:
        ...     print(error.code, error.needed_bytes)
        CEP-SKETCH-010 3578125
    """
    inputs = _checked_inputs(
        fpq,
        memory_bytes,
        n_events,
        window,
        query_length,
        fanout,
        heaps_k,
        heaps_beta,
        max_height,
        node_overhead_bytes,
    )
    # Stopping below the natural height is judged against that height, not a lowered max_height:
    # the tree rule knows nothing of max_height and merges while the density allows.
    natural = natural_height(inputs.n_events, inputs.window, inputs.fanout)
    rows = tuple(_row(inputs, height, natural) for height in range(inputs.max_height + 1))
    return _chosen(rows, inputs)


def _checked_inputs(
    fpq: object,
    memory_bytes: object,
    n_events: object,
    window: object,
    query_length: object,
    fanout: object,
    heaps_k: object,
    heaps_beta: object,
    max_height: object,
    node_overhead_bytes: object,
) -> SolverInputs:
    """:func:`solve`'s arguments checked, in its order, with ``max_height`` capped.

    Raises:
        SolverError: The first argument out of range (the message names it).
    """
    fpq = _check_real("fpq", fpq, 0.0, 1.0, hi_inclusive=False)
    memory_bytes = _check_int("memory_bytes", memory_bytes, 1)
    n_events = _check_int("n_events", n_events, 1)
    window = _check_int("window", window, 1)
    query_length = _check_int("query_length", query_length, 1)
    fanout = _check_int("fanout", fanout, 2)
    heaps_k = _check_real("heaps_k", heaps_k, 0.0, math.inf, hi_inclusive=False)
    heaps_beta = _check_real("heaps_beta", heaps_beta, 0.0, 1.0, hi_inclusive=True)
    node_overhead_bytes = _check_int("node_overhead_bytes", node_overhead_bytes, 0)
    top = natural_height(n_events, window, fanout)
    if max_height is not None:
        top = min(top, _check_int("max_height", max_height, 0))
    return SolverInputs(
        fpq=fpq,
        memory_bytes=memory_bytes,
        n_events=n_events,
        window=window,
        query_length=query_length,
        fanout=fanout,
        heaps_k=heaps_k,
        heaps_beta=heaps_beta,
        max_height=top,
        node_overhead_bytes=node_overhead_bytes,
    )


def _chosen(rows: tuple[HeightRow, ...], inputs: SolverInputs) -> SolverResult:
    """The result of the highest feasible height whose memory fits (a higher tree prunes more).

    Args:
        rows: The table, one row per height ``0..inputs.max_height``.
        inputs: The validated inputs.

    Raises:
        SolverError: No height is feasible.
        BudgetTooSmallError: No feasible height fits; it names the cheapest.
    """
    feasible = [row for row in rows if row.feasible]
    if not feasible:
        raise SolverError(
            f"max_height: no k <= {MAX_HASHES} gives a tree of height <= {inputs.max_height} "
            f"with fpq={inputs.fpq:g}: filters sparse enough for the leaves keep merging; raise "
            f"max_height or fpq"
        )
    fitting = [row for row in feasible if row.fits]
    if not fitting:
        cheapest = min(feasible, key=lambda row: (row.predicted_bytes, row.height))
        assert cheapest.predicted_bytes is not None
        raise BudgetTooSmallError(cheapest.predicted_bytes, inputs.memory_bytes, cheapest.height)
    chosen = fitting[-1]
    assert chosen.m is not None and chosen.k is not None and chosen.predicted_bytes is not None
    assert chosen.leaf_fp is not None and chosen.query_fp is not None
    return SolverResult(
        height=chosen.height,
        m=chosen.m,
        k=chosen.k,
        predicted_bytes=chosen.predicted_bytes,
        predicted_leaf_fp=chosen.leaf_fp,
        predicted_query_fp=chosen.query_fp,
        table=rows,
        inputs=inputs,
    )


def _row(inputs: SolverInputs, height: int, natural: int) -> HeightRow:
    """The table row of ``height``; ``natural`` is the highest level the stream can fill."""
    nodes = sum(
        nodes_at_level(inputs.n_events, inputs.window, inputs.fanout, level)
        for level in range(height + 1)
    )
    d_leaf = heaps_distinct(inputs.window, inputs.heaps_k, inputs.heaps_beta)
    d_top = heaps_distinct(inputs.window * inputs.fanout**height, inputs.heaps_k, inputs.heaps_beta)
    best = _best_for_height(inputs, height, natural)
    if best is None:
        return HeightRow(
            height, nodes, d_leaf, d_top, None, None, None, None, None, None, None, fits=False
        )
    m, k, binding = best
    predicted = (m // 8 + inputs.node_overhead_bytes) * nodes
    leaf = bloom_fp(m, k, d_leaf)
    return HeightRow(
        height=height,
        nodes=nodes,
        distinct_leaf=d_leaf,
        distinct_top=d_top,
        k=k,
        m=m,
        predicted_bytes=predicted,
        leaf_fp=leaf,
        query_fp=query_fp(leaf, inputs.query_length),
        top_density=bloom_density(m, k, d_top),
        binding=binding,
        fits=predicted <= inputs.memory_bytes,
    )


# ---------------------------------------------------------------------------------------------
# Printing.


def _mib(value: int) -> str:
    """Bytes as MiB with two decimals."""
    return f"{value / 2**20:.2f}"


def memory_table(result: SolverResult) -> str:
    """The per-height table of ``result`` as Markdown: figure 4.9 (memory versus height).

    The chosen height is marked with ``<-``; infeasible heights show ``-``.

    Args:
        result: A :func:`solve` result.

    Returns:
        A Markdown table, one line per height, ending with a newline.

    Example:
        >>> result = solve(fpq=1e-4, memory_bytes=10**7, n_events=10_000, window=64)
        >>> print(memory_table(result).splitlines()[2].replace(" | ", "|"))
        | 0|157|64|64|14|1320|35953|0.03|4.98e-05|9.95e-05|0.493|leaf-fp|yes |
    """
    lines = [
        "| height | nodes | D_0 | D_h | k | m (bits) | memory (bytes) | memory (MiB) | leaf FP "
        "| query FP | top density | binding | fits M |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in result.table:
        mark = " <-" if row.height == result.height else ""
        if not row.feasible:
            lines.append(
                f"| {row.height} | {row.nodes} | {row.distinct_leaf:.0f} | {row.distinct_top:.0f} "
                "| - | - | - | - | - | - | - | - | no |"
            )
            continue
        assert row.predicted_bytes is not None
        lines.append(
            f"| {row.height}{mark} | {row.nodes} | {row.distinct_leaf:.0f} "
            f"| {row.distinct_top:.0f} "
            f"| {row.k} | {row.m} | {row.predicted_bytes} | {_mib(row.predicted_bytes)} "
            f"| {row.leaf_fp:.3g} | {row.query_fp:.3g} | {row.top_density:.3f} | {row.binding} "
            f"| {'yes' if row.fits else 'no'} |"
        )
    return "\n".join(lines) + "\n"
