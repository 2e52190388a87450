"""A Delta round trip through the project's helpers, with time travel by version and timestamp."""

from __future__ import annotations

import time

from delta_tables.catalog import current_version, read_table, register_table, table_properties
from delta_tables.settings import TableConf


def test_write_append_and_time_travel(spark, settings) -> None:
    table = TableConf("roundtrip_t", settings.location_under_warehouse("roundtrip_t"))
    assert current_version(spark, table) is None and table_properties(spark, table) == {}
    (spark.range(5).selectExpr("id", "'a' AS tag").writeTo(table.name).using("delta")
     .tableProperty("location", str(table.location))
     .tableProperty("delta.enableChangeDataFeed", "true").createOrReplace())
    v0 = current_version(spark, table)
    time.sleep(1.1)  # commit timestamps have millisecond resolution; keep them clearly apart
    first_commit = spark.sql("DESCRIBE HISTORY roundtrip_t").where("version = 0") \
        .select("timestamp").first()[0]
    spark.range(5, 8).selectExpr("id", "'b' AS tag").write.format("delta").mode("append") \
        .save(str(table.location))
    v1 = current_version(spark, table)
    assert (v0, v1) == (0, 1)
    assert read_table(spark, table, version=0).count() == 5
    assert read_table(spark, table).count() == 8
    assert read_table(spark, table, timestamp=str(first_commit)).count() == 5
    assert spark.sql("SELECT count(*) FROM roundtrip_t VERSION AS OF 0").first()[0] == 5
    assert spark.sql("SELECT count(*) FROM roundtrip_t").first()[0] == 8
    assert table_properties(spark, table)["delta.enableChangeDataFeed"] == "true"
    changes = spark.read.format("delta").option("readChangeFeed", "true") \
        .option("startingVersion", 1).load(str(table.location))
    assert sorted(r.id for r in changes.collect()) == [5, 6, 7]


def test_register_table_only_for_existing_delta_tables(spark, settings) -> None:
    missing = TableConf("never_written", settings.location_under_warehouse("never_written"))
    assert register_table(spark, missing) is False
    assert not spark.catalog.tableExists("never_written")


def test_tables_outside_conf_are_discovered_under_the_warehouse(spark, settings) -> None:
    from delta_tables.catalog import discover_tables

    spark.range(2).write.format("delta").save(str(settings.warehouse_dir / "found_later"))
    (settings.warehouse_dir / "not an identifier" / "_delta_log").mkdir(parents=True)
    names = {t.name for t in discover_tables(settings)}
    assert "found_later" in names and "not an identifier" not in names
    assert set(settings.tables) <= names


def test_register_tables_registers_the_named_tables_or_all(spark, settings) -> None:
    from delta_tables.catalog import register_tables

    for name in ("reg_a", "reg_b", "reg_c"):
        spark.range(3).write.format("delta").save(str(settings.warehouse_dir / name))
    # Only the named ones (any case); a name that is no table is ignored.
    assert register_tables(spark, settings, names={"REG_A", "reg_b", "no_such"}) == \
        ["reg_a", "reg_b"]
    assert spark.catalog.tableExists("reg_a") and not spark.catalog.tableExists("reg_c")
    # All: the registrations run on threads, every existing table ends up queryable.
    everything = register_tables(spark, settings)
    assert {"reg_a", "reg_b", "reg_c", "found_later"} <= set(everything)
    assert spark.sql("SELECT count(*) FROM reg_c").first()[0] == 3
    assert "never_written" not in everything
    # Again: nothing left to create, the same answer.
    assert register_tables(spark, settings) == everything


def test_the_sql_command_registers_the_tables_its_statement_names() -> None:
    from sql_ext.statement import statement_words

    names = statement_words("SELECT * FROM approx_match_seq('PATTERN bpi2012; x', "
                            "TABLE(SELECT * FROM `app_sketch_nodes` VERSION AS OF 3), "
                            "mode => 'exists')")
    assert {"app_sketch_nodes", "approx_match_seq"} <= names
    assert "bpi2012" not in names  # inside a string literal: the pattern's text
    assert statement_words("SELECT 'no end") is None  # does not tokenize: register everything
