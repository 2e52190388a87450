"""The one list of SQL functions this project offers, with their signatures and status.

Every SQL function is named here exactly once. :func:`sql_ext.register_all` registers the
entries whose adapter exists (a UDTF, ``status == "available"``); those with a ``plan`` need
no registration (the JVM shim's parser replaces their calls by the plan); the others document what is planned
and which issue builds it, so ``SELECT * FROM cep_functions()`` tells an analyst what they
can call today. Adapters (in ``udfs/``, or here for catalog functions) are named by dotted path, so this module
imports neither pyspark nor ``udfs`` when it is imported.

Example:
    >>> [f.name for f in FUNCTIONS if f.adapter]
    ['cep_functions', 'match_seq', 'approx_match_seq', 'sketch_stats', 'cet_trends', 'match_prob', 'predict_match', 'predict_model', 'cep_match_recognize']
    >>> [f.name for f in FUNCTIONS if f.plan]
    ['follows', 'variants', 'case_stats']
    >>> function("predict_match").adapter
    'udfs.predict_match:predict_match_udtf'
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.errors import CepError
from cep.signature import SIGNATURES


class UnknownFunctionError(CepError):
    """A name that is not in the registry."""

    code = "CEP-SQL-001"


@dataclass(frozen=True)
class FunctionSpec:
    """One SQL function: name, SQL signature (written from its arguments,
    :data:`cep.signature.SIGNATURES`), output schema, status and its adapter."""

    name: str
    signature: str
    returns: str
    status: str  # "available" or "planned"
    adapter: str | None  # "module:attribute" of the UDTF factory in udfs/, when available
    description: str
    plan: str | None = None
    """"module:attribute" of the function that writes the Spark SQL a call stands for, for
    functions Spark runs as a rewritten plan (no UDTF: the JVM shim's parser hook replaces each
    call, docs/process-mining.md)."""


FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        "cep_functions", "cep_functions()",
        "name STRING, signature STRING, returns STRING, status STRING, description STRING",
        "available", "sql_ext.catalog_udtf:functions_udtf",
        "Lists every CEP SQL function, its signature and whether it is available."),
    FunctionSpec(
        "match_seq",
        SIGNATURES["match_seq"].text(),
        "<key_col>, match_id BIGINT, start_ts <ts type>, end_ts <ts type>, "
        "event_ids ARRAY<BIGINT>, variables ARRAY<STRING>, n_events INT[, one ARRAY of its "
        "own type per column of columns]",
        "available", "udfs.match_seq:match_seq_udtf",
        "Exact pattern matches (SEQ/AND/OR/NOT, Kleene, predicates, windows, three policies)."),
    FunctionSpec(
        "approx_match_seq",
        SIGNATURES["approx_match_seq"].text(),
        "mode 'exists' (default): stream, matched BOOLEAN; mode 'intervals': "
        "stream, match_id BIGINT, pos_start BIGINT, pos_end BIGINT, ts_start TIMESTAMP, "
        "ts_end TIMESTAMP, node_ids ARRAY<BIGINT>, level INT (stream: the nodes table's type)",
        "available", "udfs.approx_match_seq:approx_match_seq_udtf",
        "Approximate matches from a Bloom-filter-tree sketch of the stream (its <name>_nodes "
        "table), without the raw events."),
    FunctionSpec(
        "sketch_stats",
        SIGNATURES["sketch_stats"].text(),
        "stream, nodes BIGINT, levels INT, top_level BIGINT, open_events BIGINT, "
        "bytes BIGINT, fill DOUBLE, m INT, k INT",
        "available", "udfs.sketch_stats:sketch_stats_udtf",
        "Size and fill of each stream's sketch tree (nodes, levels, bytes, filter density)."),
    FunctionSpec(
        "cet_trends",
        SIGNATURES["cet_trends"].text(),
        "output 'trends' (default): <key_col>, window_start, window_end, trend_id BIGINT, "
        "length INT, first_ts, last_ts, event_ids ARRAY<BIGINT>[, one ARRAY of its own type per "
        "column of columns]; output 'count': <key_col>, "
        "window_start, window_end, n_trends DECIMAL(38,0)",
        "available", "udfs.cet_trends:cet_trends_udtf",
        "Complete event trends (Kleene+ with predicates between neighbours) over the ABI graph, "
        "per key and window, or their exact count."),
    FunctionSpec(
        "match_prob",
        SIGNATURES["match_prob"].text(),
        "output 'groups' (default): <key_col>, t_start BIGINT, t_end BIGINT, "
        "probability DOUBLE, n_matches BIGINT, core_start BIGINT, core_end BIGINT; output "
        "'matches': <key_col>, match_id BIGINT, t_start BIGINT, t_end BIGINT, "
        "probability DOUBLE, values ARRAY<STRING>",
        "available", "udfs.match_prob:match_prob_udtf",
        "Matches and match groups with probabilities over uncertain streams."),
    FunctionSpec(
        "predict_match",
        SIGNATURES["predict_match"].text(),
        "output 'keys' (default): <key_col>, instance STRING, state STRING, progress INT, "
        "probability DOUBLE, p_exact DOUBLE, matched BOOLEAN, matches BIGINT, events BIGINT, "
        "last_ts <ts type>; output 'events': <key_col>, instance STRING, id <id type>, "
        "ts <ts type>, state STRING, progress INT, probability DOUBLE, p_exact DOUBLE, "
        "matched BOOLEAN",
        "available", "udfs.predict_match:predict_match_udtf",
        "Probability that a subscription matches within the next n events (P-ToPSS Markov "
        "prediction), per key and instance or per event."),
    FunctionSpec(
        "predict_model",
        SIGNATURES["predict_model"].text(),
        "one row: subscription STRING, model BINARY, events BIGINT, keys BIGINT",
        "available", "udfs.predict_model:predict_model_udtf",
        "A predict_match model trained over every key of the input, in the prediction job's "
        "format: what predict_match's model argument reads (CREATE TABLE ... AS SELECT)."),
    FunctionSpec(
        "follows",
        SIGNATURES["follows"].text(),
        "output 'graph' (default): source, target (the type column's type), n BIGINT, "
        "cases BIGINT, <key_col> (the smallest case with the pair), min_duration DOUBLE, "
        "median_duration DOUBLE, mean_duration DOUBLE, max_duration DOUBLE; output 'pairs': "
        "<key_col>, source, target, source_id, target_id, source_ts, target_ts, "
        "duration DOUBLE",
        "available", None,
        "Directly- (or eventually-) follows pairs of activities inside each case, with counts "
        "and the time between them: the process's directly-follows graph.",
        plan="cep.mining.plans:follows_sql"),
    FunctionSpec(
        "variants",
        SIGNATURES["variants"].text(),
        "rank INT, variant ARRAY<type>, length INT, cases BIGINT, share DOUBLE, <key_col> "
        "(the smallest case of the variant), min_duration DOUBLE, median_duration DOUBLE, "
        "mean_duration DOUBLE, max_duration DOUBLE",
        "available", None,
        "Each distinct sequence of activities of a case, with its cases, share and case "
        "durations.",
        plan="cep.mining.plans:variants_sql"),
    FunctionSpec(
        "case_stats",
        SIGNATURES["case_stats"].text(),
        "<key_col>, start_ts, end_ts (the ts type), duration DOUBLE, n_events BIGINT, "
        "first_type, last_type (the type column's type), first_id, last_id (the id type)",
        "available", None,
        "Per case: first and last event, duration, number of events.",
        plan="cep.mining.plans:case_stats_sql"),
    FunctionSpec(
        "cep_match_recognize",
        SIGNATURES["cep_match_recognize"].text(),
        "the input's columns, __mr_match BIGINT, __mr_seq INT, __mr_label STRING, "
        "__mr_kind INT, __mr_excluded BOOLEAN[, __mr_rest STRUCT]",
        "available", "udfs.match_recognize:match_recognize_udtf",
        "The matcher behind SELECT ... FROM t MATCH_RECOGNIZE (...): write the clause "
        "(docs/match-recognize.md), Spark SQL calls this."),
)


def function(name: str) -> FunctionSpec:
    """The registry entry called ``name``; :class:`UnknownFunctionError` lists the known ones."""
    for spec in FUNCTIONS:
        if spec.name == name:
            return spec
    known = ", ".join(f.name for f in FUNCTIONS)
    raise UnknownFunctionError(f"unknown CEP function {name!r}: expected one of {known}")
