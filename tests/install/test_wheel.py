"""The wheel is the product (issue 48): installed outside the checkout, it answers as the checkout.

``make test`` builds ``dist/spark_cep-*.whl`` from the checkout (``make wheel``: an isolated
build, setup.py packs the default conf and compiles the shim's jar). Here a new virtual
environment in a temporary folder installs only that wheel, offline: its dependencies are the
third-party packages the checkout's ``.venv`` already has, reached through a ``.pth`` path
entry (which does not run the ``.venv``'s editable-install hook, so the checkout's own
packages stay out). From an empty folder, a user's script (``user_script.py``) builds its own
``SparkSession.builder``, calls ``sql_ext.configure`` and ``sql_ext.enable``, writes a Delta
table and runs ``match_seq``, MATCH_RECOGNIZE and a ``VERSION AS OF`` read, once with
``python`` and once with ``spark-submit $(spark-cep submit-args)``; then ``spark-cep sketch`` runs a state job over that
table. Every answer must equal the checkout's session's.

The user's data folder gets one file from the checkout: the list of Delta jars that
``make jars`` resolved (a cache, so the test does not download them from Maven Central again).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from sql_ext.registry import FUNCTIONS
from tests.install.user_script import answers

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("user_script.py")


@pytest.fixture(scope="module")
def wheel() -> Path:
    """The wheel of ``make wheel``, checked to hold the checkout's current Python sources."""
    found = sorted((ROOT / "dist").glob("spark_cep-*.whl"))
    if not found:
        pytest.fail("dist/spark_cep-*.whl is missing: `make wheel` builds it (make test does)")
    with zipfile.ZipFile(found[-1]) as archive:
        names = set(archive.namelist())
        stale = [name for name in names if name.endswith(".py") and (ROOT / name).is_file()
                 and archive.read(name) != (ROOT / name).read_bytes()]
        assert not stale, f"the wheel is older than the sources ({stale[:3]}): run `make wheel`"
        assert "sql_ext/jvm/cep-sql.jar" in names and "delta_tables/defaults/spark.toml" in names
        assert not any(name.startswith("tests/") for name in names)
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    requires = [line for line in metadata.decode().splitlines() if line.startswith("Requires-Dist")]
    pinned = [line for line in requires if "==" in line and "extra ==" not in line]
    assert not pinned, f"the wheel's metadata pins exact versions: {pinned}"
    return found[-1]


@pytest.fixture(scope="module")
def user_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A virtual environment with only the wheel installed, and an empty folder of the user."""
    base = tmp_path_factory.mktemp("installed")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True
                               ).stdout.strip())
    (site / "third_party.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index",
                              str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    where = subprocess.run([str(python), "-c", "import sql_ext, jobs; print(sql_ext.__file__)"],
                           capture_output=True, text=True, cwd=base, env=_env(venv))
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    user = base / "user"
    (user / "data" / "ivy").mkdir(parents=True)
    for manifest in (ROOT / "data" / "ivy").glob("*.jars"):
        shutil.copyfile(manifest, user / "data" / "ivy" / manifest.name)
    return {"venv": venv, "user": user, "base": base}


def _env(venv: Path) -> dict[str, str]:
    """A user's shell with the environment activated: nothing of the checkout or of the tests."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CEP_", "PYSPARK_", "PYTHON", "SPARK_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["CEP_TEST_IVY"] = str(ROOT / "data" / "ivy")
    return env


def _run(cmd: list[str], user_env: dict[str, Path], timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=user_env["user"],
                          env=_env(user_env["venv"]), timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def test_a_users_script_and_spark_cep_answer_as_the_checkout(spark, settings, user_env):
    venv, user = user_env["venv"], user_env["user"]
    help_text = _run([str(venv / "bin" / "spark-cep"), "--help"], user_env).stdout
    assert help_text.startswith("usage: spark-cep") and "sketch" in help_text

    _run([str(venv / "bin" / "python"), str(SCRIPT), str(user_env["base"] / "python.json")],
         user_env)
    found = json.loads((user_env["base"] / "python.json").read_text())
    table = user / "data" / "warehouse" / "synthetic_events"
    expected = answers(spark, str(table))
    assert found["answers"] == expected
    assert found["match_recognize"] is True
    assert found["functions"] == [f.name for f in FUNCTIONS if f.status == "available" and f.adapter]
    assert expected["match_seq"] and expected["match_recognize"]  # the queries find something

    # The same script through spark-submit (the venv's pyspark), into a fresh folder, with the
    # options `spark-cep submit-args` prints (spark-submit starts the JVM before the script).
    shutil.rmtree(user / "data" / "warehouse")
    submit = venv / "bin" / "spark-submit"
    if not submit.exists():  # pyspark's scripts live in the .venv the .pth reaches
        submit = Path(sys.executable).parent / "spark-submit"
    options = shlex.split(_run([str(venv / "bin" / "spark-cep"), "submit-args"], user_env).stdout)
    assert options[:2] == ["--packages", "io.delta:delta-spark_4.2_2.13:4.4.0"]
    assert str(options[options.index("--jars") + 1]).startswith(str(venv))  # the packaged jar
    _run([str(submit), "--master", "local[2]", *options, "--conf",
          f"spark.jars.ivy={ROOT / 'data' / 'ivy'}", str(SCRIPT),
          str(user_env["base"] / "submit.json")], user_env)
    assert json.loads((user_env["base"] / "submit.json").read_text()) == found

    # A state job through the console script, in the user's folder (./data, packaged conf).
    _run([str(venv / "bin" / "spark-cep"), "sketch", "--name", "word_sketch"], user_env)
    mine = settings.warehouse_dir.parent / "wheel_mine"
    shutil.copytree(table, mine / "synthetic_events")
    from dataclasses import replace

    from delta_tables.settings import load_settings
    from jobs.state.sketch import run_sketch

    checkout = load_settings(overrides={"warehouse": str(mine)})
    run_sketch(spark, replace(checkout, data_dir=settings.data_dir), "word_sketch", quiet=True)
    theirs = spark.read.format("delta").load(str(user / "data" / "warehouse" / "word_sketch_nodes"))
    ours = spark.read.format("delta").load(str(mine / "word_sketch_nodes"))
    assert theirs.count() == ours.count() > 0
    assert theirs.exceptAll(ours).count() == 0 and ours.exceptAll(theirs).count() == 0
