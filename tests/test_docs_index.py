"""The docs hold together (no JVM): docs/architecture.md indexes every page of docs/, every
relative link of README.md and docs/*.md reaches a file (and a heading, when it names one), and
every Mermaid diagram is a well-formed one.

The checkers are plain functions over text, so the tests at the end also run them on planted
broken pages: a checker that silently finds nothing cannot pass.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INDEX_PAGE = DOCS / "architecture.md"
INDEX_HEADING = re.compile(r"^## .*\bIndex of `?docs/`?", re.M)

FENCED = re.compile(r"^(```+|~~~+)([^\n]*)\n.*?^\1[ \t]*$", re.S | re.M)
MERMAID = re.compile(r"^```mermaid[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
INLINE_CODE = re.compile(r"(`+).+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)

DIAGRAM_KINDS = ("flowchart", "graph", "sequenceDiagram")
FLOW_STATEMENTS = {"subgraph", "end", "classDef", "class", "style", "linkStyle", "click",
                   "direction"}
FLOW_ARROW = re.compile(r"\s*(?:[<ox]?(?:-{2,}|={2,}|-\.+-)[>ox]?|~~~)\s*")
FLOW_NODE = re.compile(r"(?P<id>[A-Za-z_]\w*)(?P<shape>\s*[\[\(\{>].*)?(?::::\w+)?")
SEQUENCE_KEYWORDS = {"note", "loop", "alt", "else", "end", "opt", "par", "and", "rect",
                     "activate", "deactivate", "autonumber", "critical", "break", "box", "title",
                     "option", "create", "destroy", "link", "links"}
SEQUENCE_ARROW = re.compile(r"^(?P<a>[^-<>:]*?)\s*(?:<<)?(?:-{1,2}(?:>>|>|x|\)))\s*[+-]?"
                            r"(?P<b>[^:]*?)\s*:")
SEQUENCE_ACTOR = re.compile(r"^(?:participant|actor)\b\s*(?P<id>[^\s]*)")


def doc_pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *doc_pages()]


def prose(text: str) -> str:
    """``text`` without fenced blocks and inline code: what a reader sees as links."""
    return INLINE_CODE.sub("", FENCED.sub("", text))


def link_targets(text: str) -> list[str]:
    """Every link target of a Markdown text (inline, image and reference definitions)."""
    visible = prose(text)
    return LINK.findall(visible) + REFERENCE.findall(visible)


def relative_targets(text: str) -> list[str]:
    return [t for t in link_targets(text) if not SCHEME.match(t) and not t.startswith("//")]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: formatting removed, lower case, punctuation dropped."""
    words = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", words.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(FENCED.sub("", text)):
        base, n = slug(heading), 0
        while (name := base if n == 0 else f"{base}-{n}") in found:
            n += 1
        found.add(name)
    return found


def broken_links(path: Path, text: str) -> list[str]:
    """The relative links of ``text`` (the page at ``path``) that reach no file or no heading."""
    problems = []
    for target in relative_targets(text):
        file_part, _, anchor = target.partition("#")
        file_part = unquote(file_part.split("?")[0])
        if not file_part:  # a heading of this page
            if unquote(anchor) not in anchors(text):
                problems.append(f"{path.name}: {target} (no heading #{anchor} on this page)")
            continue
        dest = (path.parent / file_part).resolve()
        if not dest.exists():
            problems.append(f"{path.name}: {target} (no file {dest})")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest.read_text()):
            problems.append(f"{path.name}: {target} (no heading #{anchor} in {dest.name})")
    return problems


def index_section(text: str) -> str:
    """The index section of docs/architecture.md (up to the next ``## `` heading)."""
    found = INDEX_HEADING.search(text)
    assert found, f"{INDEX_PAGE.name} has no '## ... Index of docs/' section"
    rest = text[found.end():]
    following = re.search(r"^## ", rest, re.M)
    return rest[:following.start()] if following else rest


def indexed_pages(text: str) -> set[str]:
    """Names of the docs/ pages the index links to (anchors dropped)."""
    return {t.partition("#")[0] for t in relative_targets(index_section(text))
            if t.partition("#")[0].endswith(".md") and "/" not in t.partition("#")[0]}


def mermaid_problems(body: str) -> list[str]:
    """What is wrong with one Mermaid diagram: empty, an unknown kind, a node without an id."""
    lines = [line.strip() for line in body.splitlines()]
    lines = [line for line in lines if line and not line.startswith("%%")]
    if not lines:
        return ["the diagram is empty"]
    kind = lines[0].split()[0]
    if kind not in DIAGRAM_KINDS:
        return [f"the diagram starts with {kind!r}, not one of {', '.join(DIAGRAM_KINDS)}"]
    if len(lines) == 1:
        return ["the diagram has a header and nothing else"]
    check = flow_line_problems if kind in ("flowchart", "graph") else sequence_line_problems
    return [problem for line in lines[1:] for problem in check(line)]


def flow_line_problems(line: str) -> list[str]:
    if line.split()[0] in FLOW_STATEMENTS:
        return []
    bare = re.sub(r'"[^"]*"', '""', line)           # labels may hold arrows and brackets
    bare = re.sub(r"\|[^|]*\|", "", bare)           # edge labels: -->|text|
    problems = []
    for endpoint in FLOW_ARROW.split(bare.rstrip(";")):
        for node in endpoint.split("&"):
            if not FLOW_NODE.fullmatch(node.strip()):
                problems.append(f"a node without an id ({node.strip()!r}) in: {line}")
    return problems


def sequence_line_problems(line: str) -> list[str]:
    word = line.split()[0]
    if word.lower() in SEQUENCE_KEYWORDS:
        return []
    actor = SEQUENCE_ACTOR.match(line)
    if actor:
        return [] if actor.group("id") else [f"a participant without an id in: {line}"]
    message = SEQUENCE_ARROW.match(line)
    if not message:
        return [f"neither a message nor a known statement: {line}"]
    if not message.group("a").strip() or not message.group("b").strip():
        return [f"a message without a sender or a receiver in: {line}"]
    return []


# ---------------------------------------------------------------------------------------------
# The docs of this repository
# ---------------------------------------------------------------------------------------------


def test_the_docs_folder_is_seen() -> None:
    # Guards every test below against a glob that silently finds nothing.
    names = {p.name for p in doc_pages()}
    assert len(names) >= 20 and {"architecture.md", "decisions.md", "sql.md"} <= names, names


def test_the_index_lists_every_page_of_docs() -> None:
    pages = {p.name for p in doc_pages()}
    listed = indexed_pages(INDEX_PAGE.read_text())
    missing = sorted(pages - listed)
    assert not missing, f"pages missing from the index of docs/architecture.md: {missing}"
    assert not listed - pages, f"the index names pages that do not exist: {sorted(listed - pages)}"


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_reach_a_file(path: Path) -> None:
    problems = broken_links(path, path.read_text())
    assert not problems, "\n".join(problems)


def test_the_link_checker_sees_the_links() -> None:
    # Guards the test above against a link pattern that silently matches nothing.
    total = sum(len(relative_targets(p.read_text())) for p in doc_files())
    assert total >= 40, total
    assert "docs/architecture.md" in relative_targets((ROOT / "README.md").read_text())


def test_architecture_draws_both_flows() -> None:
    bodies = MERMAID.findall(INDEX_PAGE.read_text())
    assert len(bodies) >= 2, "docs/architecture.md draws the query flow and the state flow"


@pytest.mark.parametrize("where, body", [
    (f"{path.relative_to(ROOT).as_posix()}#{i}", body)
    for path in doc_files() for i, body in enumerate(MERMAID.findall(path.read_text()))])
def test_mermaid_diagram_is_well_formed(where: str, body: str) -> None:
    problems = mermaid_problems(body)
    assert not problems, f"{where}: " + "; ".join(problems)


# ---------------------------------------------------------------------------------------------
# The checkers on planted pages
# ---------------------------------------------------------------------------------------------


def test_an_index_that_lost_a_page_fails() -> None:
    text = INDEX_PAGE.read_text()
    lost = re.sub(r"^- \[sql\.md\]\(sql\.md\).*\n", "", text, flags=re.M)
    assert lost != text
    assert "sql.md" in indexed_pages(text) and "sql.md" not in indexed_pages(lost)


def test_a_page_without_an_index_section_fails() -> None:
    with pytest.raises(AssertionError, match="Index of docs/"):
        index_section("# A page\n\n- [sql.md](sql.md)\n")


def test_broken_links_are_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# There\n\n## Kleene grouping\n\n## `match_prob`\n")
    page = tmp_path / "page.md"
    text = ("[ok](there.md) [ok](there.md#kleene-grouping) [ok](there.md#match_prob) "
            "[web](https://example.org/x.md) [self](#top)\n\n# Top\n\n"
            "[gone](missing.md) [no heading](there.md#nothing) [nor here](#nowhere)\n\n"
            "`[code](not-a-link.md)`\n\n```python\nx = '[code](neither.md)'\n```\n\n"
            "[ref]: also-missing.md\n")
    problems = broken_links(page, text)
    assert len(problems) == 4, problems
    assert {p.split(": ", 1)[1].split(" ")[0] for p in problems} == {
        "missing.md", "there.md#nothing", "#nowhere", "also-missing.md"}


def test_bad_mermaid_diagrams_are_found() -> None:
    assert mermaid_problems("\n  \n%% only a comment\n") == ["the diagram is empty"]
    assert "not one of" in mermaid_problems("pie\n  \"a\" : 1\n")[0]
    assert mermaid_problems("flowchart TD\n") == ["the diagram has a header and nothing else"]
    assert mermaid_problems('flowchart TD\n    ["no id"] --> b["b"]\n')
    assert mermaid_problems('flowchart TD\n    a["a"] -->\n')
    assert mermaid_problems('graph LR\n    a --> ("no id")\n')
    assert mermaid_problems("sequenceDiagram\n    ->>B: hello\n")
    assert mermaid_problems("sequenceDiagram\n    participant\n")


def test_good_mermaid_diagrams_pass() -> None:
    assert mermaid_problems(
        'flowchart TD\n    %% a comment\n    a[("Delta: x --> y")] -->|reads| b["b (c)"]\n'
        '    b -.->|planned| c{"c?"}\n    c ==> d & e\n    subgraph s["group"]\n    d\n    end\n'
    ) == []
    assert mermaid_problems("sequenceDiagram\n    participant A as Alice\n    A->>B: hi\n"
                            "    Note over A: n\n    B-->>A: back\n") == []
