# The two README commands are `make demo` and `make test`; both create .venv when it is missing.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-long unit fuzz install jars data bench bench-summary docs-tables clean flink-venv exec-venv wheel

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

jars: install
	$(PY) -m jobs fetch-jars

data: jars
	$(PY) -m jobs fetch-data

demo: jars
	$(PY) -m jobs demo

# The four set-ups are independent (PyFlink's venv needs nothing of ours): built side by side.
# Then the suite in two passes (docs/testing.md, "Two passes"): the tests without a JVM on both
# cores (pytest-xdist), then the Spark tests in one process, whose one session already keeps
# both cores busy. Both passes always run; either failing fails `make test`. The few tests of
# the long tier (tests/conftest.py LONG_TESTS: each repeats a path the others cover, at a minute
# or more each) run with `make test-long`, not in CI.
test:
	$(MAKE) -j3 jars flink-venv exec-venv wheel
	status=0; \
	$(PY) -m pytest -m "not spark and not long" -n 2 || status=$$?; \
	$(PY) -m pytest -m "spark and not long" || status=$$?; \
	exit $$status

test-long:
	$(MAKE) -j3 jars flink-venv exec-venv wheel
	$(PY) -m pytest -m long

# The product: dist/spark_cep-*.whl with the default conf and the compiled shim inside
# (setup.py), rebuilt when a tracked source changes; tests/install runs it outside the checkout.
WHEEL_SOURCES := $(shell git ls-files cep sql_ext udfs delta_tables jobs viz conf 2>/dev/null) \
	setup.py pyproject.toml
wheel: dist/.built

dist/.built: $(WHEEL_SOURCES) | $(STAMP)
	rm -rf build dist
	$(PY) -m pip wheel --quiet --no-deps . -w dist
	touch dist/.built

unit: install
	$(PY) -m pytest tests/cep

# The surfaces' fuzz (no Spark), then every SQL function through spark.sql against its oracle
# (tests/sql_fuzz.py; 10,000 random batches of four cases per function: about 11 hours in all,
# measured at 400 batches per function in 28 min; CEP_SQL_FUZZ_EXAMPLES=400 for a shorter run).
fuzz: jars
	CEP_FUZZ_EXAMPLES=10000 $(PY) -m pytest tests/test_fuzz.py -p no:cacheprovider --durations=0
	CEP_SQL_FUZZ_EXAMPLES=$${CEP_SQL_FUZZ_EXAMPLES:-10000} $(PY) -m pytest -p no:cacheprovider \
		--durations=0 tests/udfs/test_fuzz_*.py tests/sql_ext/test_fuzz_*.py

bench: jars
	$(PY) -m benchmarks.run

# docs/sql.md's argument tables, written from the declarations (cep/signature.py)
docs-tables:
	$(PY) -m cep.signature docs/sql.md

# The headline table of BENCHMARKS.md from the runs recorded in benchmarks/results (a benchmark
# records its run with --record; e.g. python -m benchmarks.bench_match_sql --record).
bench-summary:
	$(PY) -m benchmarks.summary

clean:
	rm -rf $(VENV) data/warehouse data/tmp build dist

# PyFlink (the MATCH_RECOGNIZE baseline of the benchmarks and of tests/flink's conformance run)
# in its own venv: it pins numpy/pyarrow versions that clash with ours.
# The executors' Python of the standalone-cluster tests (docs/cluster.md): only the
# third-party packages, never the project (the session ships its code).
exec-venv: .venv-exec/.installed

.venv-exec/.installed: pyproject.toml constraints.txt | $(STAMP)
	$(PYTHON) -m venv .venv-exec
	$(PY) -m jobs.session.code_bundle > .venv-exec/requirements.txt
	.venv-exec/bin/python -m pip install --quiet -c constraints.txt -r .venv-exec/requirements.txt
	touch .venv-exec/.installed

flink-venv: .venv-flink/bin/python

.venv-flink/bin/python:
	$(PYTHON) -m venv .venv-flink
	.venv-flink/bin/python -m pip install --quiet apache-flink==2.3.0
