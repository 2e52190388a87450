"""What PyFlink 2.3's MATCH_RECOGNIZE answers to each conformance case, where it is not ours.

``tests/flink/test_flink_conformance.py`` runs every case of
``tests/sql_ext/match_recognize_cases.py`` that has expected rows through Flink and requires:

* a case in neither dict: Flink returns exactly the expected rows (``agrees``);
* a case in :data:`FLINK_DIFFERS`: Flink runs it and returns other rows; the value says why;
* a case in :data:`FLINK_UNSUPPORTED`: Flink refuses it; the value is the feature it refuses,
  one of the keys of :data:`FEATURE_ERRORS`, whose pattern must be found in Flink's error.

docs/match-recognize-flink.md lists every name of both dicts (a test checks it).
"""

from __future__ import annotations

# --- the features Flink refuses (the first refusal of each case) ------------------------------
MATCH_NUMBER = "MATCH_NUMBER()"
VARIABLE_STAR = "COUNT(B.*), the number of rows of one variable"
GREEDY_LAST = "a greedy quantifier on the last element of the pattern"
EMPTY_MATCH = "a pattern that can match no rows (A{,2})"
CLASSIFIER = "CLASSIFIER()"
RELUCTANT_OPTIONAL = "the reluctant optional quantifier ??"
ALTERNATION = "alternation |"
PERMUTE = "PERMUTE"
GROUPS = "quantified groups ((A | B)+, (A B)+?)"
EMPTY_PATTERN = "the empty pattern ()"
ALL_ROWS = "ALL ROWS PER MATCH"
ROWS_PER_MATCH_OPTIONS = "SHOW EMPTY MATCHES, OMIT EMPTY MATCHES, WITH UNMATCHED ROWS"
REPEATED_VARIABLE = "a variable used twice in the pattern (A A)"
SUBSET = "SUBSET variables in DEFINE and AFTER MATCH SKIP TO"
PHYSICAL_NAVIGATION = "PREV/NEXT over the partition (NEXT, PREV of a FIRST/LAST)"
NAVIGATION_IN_MEASURES = "PREV/NEXT in MEASURES"
WITHIN_UNITS = "WITHIN n UNITS (our extension; Flink has WITHIN INTERVAL)"
SPARK_FUNCTION = "Spark SQL's timestamp_seconds()"
NULLS_ORDER = "NULLS FIRST or NULLS LAST in the ORDER BY"
ORDER_NOT_TIME = "an ORDER BY that is not an ascending time attribute"
CLASSIFIER_ARGUMENT = "CLASSIFIER(U) of a variable or SUBSET"
SPARK_AGGREGATE = "Spark's aggregates collect_list, count_if and max_by"
ORDER_BY_MEASURE = "a MATCH_RECOGNIZE over another one's output (no time attribute to order by)"
UNBOUNDED_BRACES = "the quantifier {,} (no bounds, the same as *)"

FEATURE_ERRORS: dict[str, str] = {
    MATCH_NUMBER: r"No match found for function signature MATCH_NUMBER\(\)",
    VARIABLE_STAR: r"Unknown field '\*'",
    GREEDY_LAST: r"Greedy quantifiers are not allowed as the last element of a Pattern",
    EMPTY_MATCH: r"The from should be a positive number greater than 0",
    CLASSIFIER: r"Unsupported call: CLASSIFIER\(\)",
    RELUCTANT_OPTIONAL: r"Reluctant optional variables are not supported",
    ALTERNATION: r"CEP doesn't support branching patterns",
    PERMUTE: r"CEP doesn't support PERMUTE patterns",
    GROUPS: r"Group patterns are not supported yet",
    EMPTY_PATTERN: r"SQL parse failed\. Encountered \"\)\"",
    ALL_ROWS: r"All rows per match mode is not supported yet",
    ROWS_PER_MATCH_OPTIONS: r"SQL parse failed\. Encountered \"(SHOW|OMIT|WITH)\"",
    REPEATED_VARIABLE: r"Pattern variables must be unique",
    SUBSET: r"Table 'U' not found|pattern name specified in AfterMatchSkipStrategy can not be "
            r"found",
    PHYSICAL_NAVIGATION: r"Flink does not support physical offsets within partition",
    NAVIGATION_IN_MEASURES: r"Cannot use PREV/NEXT in MEASURE",
    WITHIN_UNITS: r"SQL parse failed\. Encountered \"\d+\"",
    SPARK_FUNCTION: r"No match found for function signature timestamp_seconds",
    NULLS_ORDER: r"^AssertionError$|SqlBasicCall cannot be cast to class "
                 r"org\.apache\.calcite\.sql\.SqlIdentifier",
    ORDER_NOT_TIME: r"You must specify time point for order by as the first one",
    ORDER_BY_MEASURE: r"Column 'rt' not found in any table",
    UNBOUNDED_BRACES: r"SQL parse failed\. Encountered \"\}\"",
    CLASSIFIER_ARGUMENT: r'SQL parse failed\. Encountered "[A-Z]" at line 1',
    SPARK_AGGREGATE: r"No match found for function signature (collect_list|count_if|max_by)",
}
"""Per refused feature: a regular expression that Flink's error for it matches."""

FLINK_UNSUPPORTED: dict[str, str] = {
    # MATCH_NUMBER() is not a Flink function
    "one_row_per_match": MATCH_NUMBER,
    "numbering_per_partition": MATCH_NUMBER,
    "no_partition_by": MATCH_NUMBER,
    "no_match_across_a_row_no_variable_accepts": MATCH_NUMBER,
    "numbering_across_dropped_rows": MATCH_NUMBER,
    "overlapping_matches_all_rows": MATCH_NUMBER,
    "empty_matches_one_row": MATCH_NUMBER,
    "all_rows_show_empty": MATCH_NUMBER,
    "anchor_start_all_rows_per_partition": MATCH_NUMBER,
    "exclusion_at_the_end_quantified": MATCH_NUMBER,
    "exclusion_of_alternation_in_group": MATCH_NUMBER,
    "excluded_row_output_by_overlapping_match": MATCH_NUMBER,
    "skip_to_last_subset_all_rows": MATCH_NUMBER,
    "skip_to_first_subset_all_rows": MATCH_NUMBER,
    "skip_to_next_row_running_and_final": MATCH_NUMBER,
    "reluctant_star_prefers_the_empty_match": MATCH_NUMBER,
    "match_numbers_skip_to_next_row_with_empty": MATCH_NUMBER,
    # COUNT(B.*)
    "greedy_star": VARIABLE_STAR,
    "reluctant_star": VARIABLE_STAR,
    "reluctant_star_needs_more": VARIABLE_STAR,
    "greedy_plus_leaves_one": VARIABLE_STAR,
    "reluctant_plus": VARIABLE_STAR,
    "undefined_variable_is_true": VARIABLE_STAR,
    "grouped_repetition": VARIABLE_STAR,
    "exclusion_counts_in_one_row": VARIABLE_STAR,
    "other_variable_value": VARIABLE_STAR,
    "count_of_a_variable": VARIABLE_STAR,
    "less_preferred_history_wins": VARIABLE_STAR,
    "optional_inside_repeated_group": VARIABLE_STAR,
    "alternation_repeated_exactly_twice": VARIABLE_STAR,
    "reluctant_bounds_inside_greedy_group": VARIABLE_STAR,
    "permute_with_quantified_item": VARIABLE_STAR,
    "exclusion_in_the_middle_reluctant": VARIABLE_STAR,
    "running_final_aggregates": VARIABLE_STAR,
    "prev_offsets_in_define": VARIABLE_STAR,
    "aggregates_universal_and_subsets": VARIABLE_STAR,
    "aggregates_skip_nulls": VARIABLE_STAR,
    "define_running_count_and_avg": VARIABLE_STAR,
    # A+, B*, A{2,} ... as the last element
    "two_or_more": GREEDY_LAST,
    "two_to_three": GREEDY_LAST,
    "skip_to_first": GREEDY_LAST,
    "skip_to_last": GREEDY_LAST,
    "skip_to_variable_is_last": GREEDY_LAST,
    "logical_offsets": GREEDY_LAST,
    "column_means_last_row": GREEDY_LAST,
    "v_shape": GREEDY_LAST,
    "null_in_define_is_false": GREEDY_LAST,
    "trino_c_at_most_a": GREEDY_LAST,
    "first_of_the_match": GREEDY_LAST,
    "count_star_caps_the_length": GREEDY_LAST,
    "running_sum_threshold": GREEDY_LAST,
    "running_min_max": GREEDY_LAST,
    "null_in_navigation_is_unknown": GREEDY_LAST,
    "skip_to_next_row_with_reads": GREEDY_LAST,
    "between_and_arithmetic": GREEDY_LAST,
    "null_in_running_sum_define": GREEDY_LAST,
    # the pattern language
    "at_most_two": EMPTY_MATCH,
    "optional_reluctant": RELUCTANT_OPTIONAL,
    "alternation_prefers_left": ALTERNATION,
    "alternation_left_is_longer": ALTERNATION,
    "anchor_inside_alternation": ALTERNATION,
    "three_branch_alternation": ALTERNATION,
    "permute_listed_order_first": PERMUTE,
    "permute_other_order": PERMUTE,
    "permute_finds_any_order": PERMUTE,
    "permute_three_lexicographic": PERMUTE,
    "permute_of_a_group": PERMUTE,
    "permute_with_alternation_item": PERMUTE,
    "alternation_under_kleene": GROUPS,
    "reluctant_group_takes_what_it_needs": GROUPS,
    "prev_classifier": GROUPS,
    "empty_alternative_preferred": EMPTY_PATTERN,
    "empty_pattern": EMPTY_PATTERN,
    "skip_past_last_row": REPEATED_VARIABLE,
    "skip_to_next_row": REPEATED_VARIABLE,
    # CLASSIFIER()
    "optional_greedy": CLASSIFIER,
    "classifier_in_an_expression": CLASSIFIER,
    "classifier_in_define_is_the_variable": CLASSIFIER,
    # output modes
    "exclusion_hides_rows": ALL_ROWS,
    "all_rows_classifier": ALL_ROWS,
    "running_and_final": ALL_ROWS,
    "all_rows_with_reads": ALL_ROWS,
    "exclusion_at_the_start": ALL_ROWS,
    "running_final_first_last_classifier": ALL_ROWS,
    "running_final_logical_offsets": ALL_ROWS,
    "order_by_two_columns_all_rows": ALL_ROWS,
    "all_rows_show_empty_explicit": ROWS_PER_MATCH_OPTIONS,
    "all_rows_omit_empty": ROWS_PER_MATCH_OPTIONS,
    "all_rows_with_unmatched": ROWS_PER_MATCH_OPTIONS,
    "anchor_only_pattern_with_unmatched_rows": ROWS_PER_MATCH_OPTIONS,
    "omit_empty_matches_two_partitions": ROWS_PER_MATCH_OPTIONS,
    "unmatched_rows_two_partitions": ROWS_PER_MATCH_OPTIONS,
    # SUBSET, navigation
    "skip_to_subset": SUBSET,
    "subset_in_define": SUBSET,
    "subset_sum_accepts": SUBSET,
    "next_in_define": PHYSICAL_NAVIGATION,
    "prev_of_last_is_physical": PHYSICAL_NAVIGATION,
    "prev_next_reach_outside_match": NAVIGATION_IN_MEASURES,
    "prev_of_qualified_column": NAVIGATION_IN_MEASURES,
    "prev_next_offsets_in_measures": NAVIGATION_IN_MEASURES,
    # WITHIN, order, the statement around the clause
    "within_units": WITHIN_UNITS,
    "within_units_too_short": WITHIN_UNITS,
    "within_stops_greedy": WITHIN_UNITS,
    "within_with_reads": WITHIN_UNITS,
    "within_units_with_running_count": WITHIN_UNITS,
    "within_minutes": SPARK_FUNCTION,
    "nulls_last": NULLS_ORDER,
    "descending_nulls_first": NULLS_ORDER,
    "descending_order": ORDER_NOT_TIME,
    "clause_over_a_clause": ORDER_BY_MEASURE,
    "subquery_where_group_by": GREEDY_LAST,
    # the documented examples (DOCUMENTED_CASES)
    "oracle_v_shape_one_row": GREEDY_LAST,
    "oracle_v_shape_all_rows_running_and_final": MATCH_NUMBER,
    "oracle_w_shape_all_rows": MATCH_NUMBER,
    "oracle_v_shape_skip_to_next_row": MATCH_NUMBER,
    "oracle_v_shape_default_skip": GREEDY_LAST,
    "oracle_v_shape_bounded_quantifiers": VARIABLE_STAR,
    "oracle_v_inside_w_cte_join": GREEDY_LAST,
    "oracle_sessionization": MATCH_NUMBER,
    "snowflake_v_shapes_per_company": MATCH_NUMBER,
    "snowflake_all_rows_one_company": MATCH_NUMBER,
    "snowflake_v_shapes_grouped": GREEDY_LAST,
    "flink_within_price_drop": WITHIN_UNITS,
    "flink_define_sums_over_match_and_variable": GREEDY_LAST,
    "flink_logical_offsets_two_back": GREEDY_LAST,
    "trino_exclusion_inside_the_v": ALL_ROWS,
    "trino_union_variable_skip_to_last": GROUPS,
    "trino_unmatched_rows_with_overlaps": ROWS_PER_MATCH_OPTIONS,
    "trino_empty_match_measures": NAVIGATION_IN_MEASURES,
    "trino_constant_measure_empty_or_unmatched": ROWS_PER_MATCH_OPTIONS,
    "trino_window_measures_per_input_row": GREEDY_LAST,
    "trino_empty_bounds_are_star": UNBOUNDED_BRACES,
    "trino_nested_navigation_offsets": NAVIGATION_IN_MEASURES,
    "ties_any_order_permute": PERMUTE,
    # issue 49's constructs
    "classifier_of_a_subset_one_row": CLASSIFIER_ARGUMENT,
    "classifier_of_a_subset_all_rows": CLASSIFIER_ARGUMENT,
    "navigation_around_classifier_one_row": CLASSIFIER_ARGUMENT,
    "classifier_of_a_subset_in_define": CLASSIFIER_ARGUMENT,
    "navigation_around_classifier_all_rows": NAVIGATION_IN_MEASURES,
    "match_number_in_define": MATCH_NUMBER,
    "every_spark_aggregate_one_row": SPARK_AGGREGATE,
    "every_spark_aggregate_running_and_final": SPARK_AGGREGATE,
    "aggregates_of_a_fixed_length_pattern": SPARK_AGGREGATE,
    "count_if_and_bool_or_in_define": SPARK_AGGREGATE,
    "case_like_in_around_the_match_in_define": GREEDY_LAST,
    "stddev_and_max_by_in_define": SPARK_AGGREGATE,
    "trino_documented_classifier_and_aggregate_arguments": CLASSIFIER_ARGUMENT,
    "scalar_functions_around_the_match_in_define": VARIABLE_STAR,
    "interval_around_the_match_in_define": SPARK_FUNCTION,
    "collecting_aggregates_in_define": SPARK_AGGREGATE,
}
"""Case name → the feature Flink refuses (a key of :data:`FEATURE_ERRORS`)."""

SKIP_TO_NEXT_ROW = ("Without AFTER MATCH, Flink skips TO NEXT ROW (Calcite's default; the "
                    "optimized plan shows after=[SKIP TO NEXT ROW]) where the standard skips "
                    "PAST LAST ROW")
ANCHORS_DROPPED = ("Flink accepts the anchors ^ and $ but drops them from the pattern (the "
                   "optimized plan shows pattern=[A]; its documentation lists anchors as "
                   "unsupported)")
GREEDY_KEEPS_ROWS = ("Flink's greedy loop never gives a row back (its NFA compiler ANDs the "
                     "next state's conditions with NOT the loop's condition)")
SUBSET_EMPTY = ("Flink accepts a SUBSET variable in MEASURES (its documentation lists SUBSET "
                "as unsupported) but maps no row to it")

FLINK_DIFFERS: dict[str, str] = {
    # AFTER MATCH SKIP TO NEXT ROW by default: with SKIP PAST LAST ROW written out, Flink
    # returns the expected rows of these cases.
    "exactly_two": SKIP_TO_NEXT_ROW + ", so A{2} also matches rows 2-3 and 4-5.",
    "two_to_three_reluctant": SKIP_TO_NEXT_ROW + ", so A{2,3}? also matches rows 2-3.",
    "flink_running_average": ("Flink's AVG of an INT column is an INT, so the averages are 14 "
                              "and 13 instead of 14.5 and 13.5 (the matches are the same)."),
    "define_last_with_offset_and_other_variable": SKIP_TO_NEXT_ROW + (
        ", so matches also start at rows 2, 3 and 4."),
    # ^ and $ ignored
    "anchor_start": ANCHORS_DROPPED + ", so every row matches ^ A.",
    "anchor_end": ANCHORS_DROPPED + ", so every row matches A $.",
    "anchors_both": ANCHORS_DROPPED + ", so every row matches ^ A $ instead of none.",
    "anchor_per_partition": ANCHORS_DROPPED + ", so row 2 of k1 matches ^ A too.",
    # PREV within the match
    "prev_with_offset_in_define": (
        "Flink turns PREV(x, 2) into LAST(*.x, 2), the row two back among the rows of the "
        "match so far rather than of the partition, so with the one-row pattern (B) it is "
        "always NULL and nothing matches."),
    # SUBSET variables empty
    "aggregates": SUBSET_EMPTY + ", so SUM(U.x) is NULL instead of 6.",
    "subset_navigation": SUBSET_EMPTY + ", so LAST(U.ts) and FIRST(U.ts) are NULL.",
    "first_last_offsets_in_measures": SUBSET_EMPTY + (
        ", so LAST(U.x, 1) and FIRST(U.x, 1) are NULL instead of 1 and 5."),
    # the documented examples (DOCUMENTED_CASES)
    "flink_rising_run_output_mode": SKIP_TO_NEXT_ROW + (
        ", so matches also start at rows 2 and 3 (Flink's own page shows one row)."),
    "flink_sum_skip_to_next_row": GREEDY_KEEPS_ROWS + (
        ": from row 6 the sum of A is still 21 at row 7, so A takes row 7 and no row is left "
        "for C, where the standard gives A back (A = 7, C = 14); Flink's page lists the same "
        "five rows."),
    "flink_last_offset_of_all_rows": (
        "Flink returns the match A = 10, C = 15 with B? left empty (LAST(x, 1) = 10 < 15), which "
        "ends a row earlier, where the standard's greedy B? prefers B = 15 and C = 20, so k1 "
        "gives (15, 2) instead of (20, 3)."),
}
"""Case name → why Flink runs the case but answers other rows (one sentence)."""
