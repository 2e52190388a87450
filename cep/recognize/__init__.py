"""MATCH_RECOGNIZE (SQL:2016 row pattern recognition): parser, compiler and matcher."""
