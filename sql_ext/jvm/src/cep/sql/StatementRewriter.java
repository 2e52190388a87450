package cep.sql;

/**
 * The Python side of the statement rewrite (MATCH_RECOGNIZE, docs/match-recognize.md),
 * implemented in Python through py4j's callback server ({@code sql_ext/recognize_hook.py}).
 *
 * <p>It returns the statement to parse, or a text starting with NUL followed by the
 * project's error message ({@code CEP-MR-...: line L, column C: ...}).
 */
public interface StatementRewriter {
    String rewrite(String sql);
}
