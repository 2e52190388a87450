"""Runs one Flink SQL query over the benchmark CSV in PyFlink batch mode; prints "count seconds".

Executed by ``benchmarks/bench_match_sql.py`` with the interpreter of ``.venv-flink`` (PyFlink
pins numpy/pyarrow versions that clash with the project's), so it imports nothing from the
project. Arguments: the CSV folder and the SQL query (which must return one count).

Example:
    .venv-flink/bin/python benchmarks/flink_runner.py data/tmp/bench_csv_10000 "SELECT count(*) FROM ev"
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    """Register the CSV as table ``ev`` (rowtime ``ts``) and print the query's count and time."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    csv_dir, query = sys.argv[1], sys.argv[2]
    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    env.get_config().set("parallelism.default", "2")
    # The path is ours (a folder the benchmark wrote); quotes are doubled all the same.
    path = csv_dir.replace("'", "''")
    env.execute_sql(
        "CREATE TABLE ev (id BIGINT, k STRING, type STRING, ts TIMESTAMP(3), v0 DOUBLE, "
        "WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '" + path + "', "
        "'format' = 'csv')")
    start = time.perf_counter()
    with env.execute_sql(query).collect() as rows:
        count = sum(int(row[0]) for row in rows)
    print(count, time.perf_counter() - start)


if __name__ == "__main__":
    main()
