"""spark_progress against real Spark: what it printed (content only, never timing)."""

from __future__ import annotations

import io
import re
import time

import pytest

from viz import StageProgress, VizArgumentError, spark_progress

BAR = re.compile(r"Stage \d+ \[[#.]+\] \d+/\d+ tasks(, \d+ running)?(, \d+ failed)?")
SUMMARY = re.compile(r"Spark: (\d+) job\(s\), (\d+) stage\(s\), (\d+)/(\d+) tasks done")


def test_bar_text() -> None:
    stage = StageProgress(stage_id=7, name="collect", tasks=4, done=1, running=2, failed=1)
    assert stage.bar(width=8) == "Stage 7 [##......] 1/4 tasks, 2 running, 1 failed"
    assert BAR.fullmatch(stage.bar())


def _slow_query(spark, tasks: int = 8) -> int:
    from pyspark.sql import functions as F

    # 0.3 s per row, one row per task: a few seconds in all, long enough for bars to be drawn.
    udf = F.udf(lambda x: (time.sleep(0.3), x)[1], "long")
    return spark.range(0, tasks, 1, numPartitions=tasks).select(udf("id").alias("id")) \
        .agg(F.sum("id")).first()[0]


@pytest.mark.spark
def test_text_progress_of_a_real_query(spark) -> None:
    out = io.StringIO()
    with spark_progress(spark, interval=0.1, out=out, display=False) as progress:
        assert _slow_query(spark) == sum(range(8))
    text = out.getvalue()
    *live, final = text.split("\r")[1:]
    # Every live update is one line of bars, redrawn in place.
    for line in live:
        assert "\n" not in line
        for bar in line.strip().split(" | "):
            assert BAR.fullmatch(bar), bar
    # The summary comes from Spark's status store: the 8 tasks of the UDF stage, all done.
    head, *stages = final.rstrip("\n").split("\n")
    jobs, n_stages, done, tasks = map(int, SUMMARY.match(head.strip()).groups())
    assert jobs == len(progress.jobs) >= 1 and done == tasks and n_stages == len(stages)
    assert any(re.match(r"\s+Stage \d+ \[#+\] 8/8 tasks\s+\S", s) for s in stages), stages
    assert any(s.tasks == 8 and s.done == 8 for s in progress.stages)
    assert progress.summary() == final.rstrip("\n")
    # The job group is the block's only: the caller's thread is as it was.
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


@pytest.mark.spark
def test_summary_after_an_error_and_no_jobs(spark) -> None:
    out = io.StringIO()
    spark.sparkContext.setJobGroup("caller-group", "kept")
    try:
        with pytest.raises(ZeroDivisionError):
            with spark_progress(spark, out=out, display=False):
                spark.range(3).count()
                1 / 0
        assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") == "caller-group"
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        spark.sparkContext.setLocalProperty("spark.job.description", None)
    assert SUMMARY.search(out.getvalue())
    quiet = io.StringIO()
    with spark_progress(spark, out=quiet, display=False) as nothing:
        pass
    assert nothing.jobs == () and quiet.getvalue().strip() == "Spark: no job ran"


@pytest.mark.spark
def test_bad_arguments(spark) -> None:
    with pytest.raises(VizArgumentError, match="CEP-VIZ-003: display=True needs a Jupyter kernel"):
        with spark_progress(spark, display=True):
            pass
    with pytest.raises(VizArgumentError, match="interval"):
        with spark_progress(spark, interval=0):
            pass
    with pytest.raises(VizArgumentError, match="SparkContext"):
        with spark_progress(object()):
            pass
