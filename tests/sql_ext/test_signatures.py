"""Each SQL function's arguments are declared once (``cep/signature.py``); the registry's
signature text and docs/sql.md's argument tables must name exactly those."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cep.signature import SIGNATURES, write_tables
from sql_ext.registry import FUNCTIONS

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED = sorted(name for name in SIGNATURES if name != "cep_match_recognize")


def _argument_table(function: str) -> list[str]:
    """The argument names of ``function``'s table in docs/sql.md, in order (a cell may name
    several: `` `ts_col`, `type_col` ``)."""
    text = (ROOT / "docs" / "sql.md").read_text()
    section = re.search(rf"^## `{function}`.*?$(.*?)(?=^## )", text, re.M | re.S)
    assert section, f"docs/sql.md has no section ## `{function}`"
    lines = section.group(1).splitlines()
    start = next((k for k, line in enumerate(lines) if line.startswith("| argument |")), None)
    assert start is not None, f"docs/sql.md's {function} section has no argument table"
    names = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names += re.findall(r"`([a-z_]+)`", line.split("|")[1])
    return names


@pytest.mark.parametrize("function", DOCUMENTED)
def test_docs_argument_table_names_the_declared_arguments(function: str) -> None:
    declared = list(SIGNATURES[function].names())
    documented = _argument_table(function)
    assert documented == declared, (f"{function}: docs/sql.md lists {documented}, "
                                    f"cep/signature.py declares {declared}")


@pytest.mark.parametrize("function", DOCUMENTED)
def test_docs_signature_block_is_the_declared_one(function: str) -> None:
    text = (ROOT / "docs" / "sql.md").read_text()
    block = re.search(rf"^```\n({function}\(.*?)^```", text, re.M | re.S)
    assert block, f"docs/sql.md has no signature block for {function}"
    assert " ".join(block.group(1).split()) == SIGNATURES[function].usage()


def test_docs_argument_tables_are_written_from_the_declarations() -> None:
    text = (ROOT / "docs" / "sql.md").read_text()
    assert write_tables(text) == text, ("docs/sql.md's argument tables differ from the rows "
                                        "declared in cep/argument_docs.py: run make docs-tables")


def test_registry_signatures_are_written_from_the_declarations() -> None:
    found = {f.name: f.signature for f in FUNCTIONS if f.name in SIGNATURES}
    assert found == {name: sig.text() for name, sig in SIGNATURES.items()}


class _Refused(Exception):
    pass


@pytest.mark.parametrize("function", sorted(SIGNATURES))
def test_every_declared_argument_binds_by_name_and_no_other(function: str) -> None:
    sig = SIGNATURES[function]
    bound = sig.bind((), {name.upper(): name for name in sig.names()}, _Refused)
    assert bound == {name: name for name in sig.names()}
    with pytest.raises(_Refused, match=f"{function} has no argument 'nope'"):
        sig.bind((), {"nope": 1}, _Refused)
