"""Every walkthrough notebook of notebooks/ runs headless (nbclient) in a kernel of this venv's
python, on the test warehouse, and fails on any cell error (docs/notebooks.md).

The expensive parts are shared: the session fixtures load the data into the test warehouse
once (``settings.warehouse_dir``), and the kernel gets that warehouse through
``CEP_WAREHOUSE``, so the notebooks' own load cells find their tables up to date. The notebooks
run one after another in ONE kernel (its JVM and Spark session started by the first notebook
and found again by the others' ``build_session``: a kernel and a JVM per notebook cost ~40 s
each); before each notebook the kernel's namespace is emptied (``%reset -f``), so a notebook
that used a name it does not define itself still fails. Two of them write the same demo
tables (the offer feed) when missing.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
SUMMARY = re.compile(r"Spark: \d+ job\(s\), \d+ stage\(s\), (\d+)/(\d+) tasks done")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_notebooks", NOTEBOOK_DIR / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_notebooks_are_the_generators_without_outputs() -> None:
    import nbformat

    generator = _generator()
    assert [p.stem for p in NOTEBOOKS] == sorted(generator.NOTEBOOKS)
    for path in NOTEBOOKS:
        assert path.read_text() == generator.render(path.stem), \
            f"{path.name} differs from notebooks/make_notebooks.py: rerun it"
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.fixture(scope="module")
def notebook_warehouse(spark, settings, generated_checks, loaded_sensors, predicted_heat) -> Path:
    """The test warehouse with what the notebooks read, loaded once in this process."""
    from jobs.loaders.load_logs import load_log

    load_log(spark, settings, "bpi2017_offers", quiet=True)
    return settings.warehouse_dir


def _ends_with_a_picture(source: str) -> bool:
    """Whether a cell's last statement is a call of a ``plot_*`` function (its value is shown)."""
    code = "\n".join(line for line in source.splitlines() if not line.startswith("%"))
    body = ast.parse(code).body
    return bool(body) and isinstance(body[-1], ast.Expr) and isinstance(body[-1].value, ast.Call) \
        and getattr(body[-1].value.func, "id", "").startswith("plot_")


def _kernel_manager():
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    # No kernel folders at all: "python3" resolves to ipykernel's own spec, which runs
    # sys.executable, the venv's python, whatever kernels a user or system folder holds.
    return KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))


@pytest.fixture(scope="module")
def kernel(notebook_warehouse: Path) -> Iterator[object]:
    """One running kernel for every notebook of the module, on the test warehouse."""
    km = _kernel_manager()
    assert km.kernel_spec.argv[0] == sys.executable
    km.start_kernel(env=dict(os.environ, CEP_WAREHOUSE=str(notebook_warehouse),
                             PYTHONUNBUFFERED="1"), cwd=str(NOTEBOOK_DIR))
    yield km
    km.shutdown_kernel()


@pytest.mark.spark
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel: object) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # What an earlier notebook defined is gone: each notebook stands on its own cells.
    nb.cells.insert(0, nbformat.v4.new_code_cell("%reset -f"))
    client = NotebookClient(nb, km=kernel, timeout=900, allow_errors=False,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    # Raises CellExecutionError, naming the cell and the traceback, on any error. The kernel
    # is the module's: the client neither starts nor stops it.
    client.execute()
    assert kernel.is_alive()
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        kinds = [o.output_type for o in cell.outputs]
        assert "error" not in kinds, cell.source
        data = [o.data for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
        if _ends_with_a_picture(cell.source):
            # A cell that ends with a picture shows it as a PNG.
            assert any("image/png" in d for d in data), cell.source
        if "with spark_progress(spark)" in cell.source:
            # The display handle ends on the summary of the block's jobs, every task done.
            texts = [d.get("text/plain", "") for d in data]
            found = [SUMMARY.search(t) for t in texts if SUMMARY.search(t)]
            assert found and all(m.group(1) == m.group(2) for m in found), texts
