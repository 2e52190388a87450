package cep.sql;

import java.util.Locale;

/**
 * Where the session's parser finds the Python rewriter, and what it does with its answer.
 *
 * <p>Only statements that mention MATCH_RECOGNIZE or a function Spark runs as a rewritten
 * plan (the process-mining functions, {@link #setRewritten}) go to Python; everything else is
 * parsed as it is. All semantics stay in Python (DESIGN.md section 5): this class passes text.
 */
public final class StatementRewrites {

    static final String KEYWORD = "match_recognize";
    private static volatile StatementRewriter current;
    private static volatile java.util.Set<String> functions = java.util.Set.of();
    private static volatile java.util.Set<String> rewritten = java.util.Set.of();

    private StatementRewrites() {
    }

    /** Installs (or, with null, removes) the rewriter; called once per Python driver. */
    public static void install(StatementRewriter rewriter) {
        current = rewriter;
    }

    /** The CEP functions' names (comma-separated, from Python's registry) the parser checks. */
    public static void setFunctions(String names) {
        functions = nameSet(names);
    }

    /** The names (comma-separated) of the functions the rewriter replaces by a plan. */
    public static void setRewritten(String names) {
        rewritten = nameSet(names);
    }

    private static java.util.Set<String> nameSet(String names) {
        java.util.Set<String> found = new java.util.HashSet<>();
        for (String name : names.split(",")) {
            if (!name.isBlank()) {
                found.add(name.trim().toLowerCase(Locale.ROOT));
            }
        }
        return java.util.Set.copyOf(found);
    }

    static java.util.Set<String> functions() {
        return functions;
    }

    /** Whether a rewriter is installed. */
    public static boolean installed() {
        return current != null;
    }

    /** Whether the statement mentions MATCH_RECOGNIZE (its error without a rewriter). */
    static boolean mentionsClause(String sql) {
        return sql != null && sql.toLowerCase(Locale.ROOT).contains(KEYWORD);
    }

    static boolean mentions(String sql) {
        if (sql == null) {
            return false;
        }
        String lowered = sql.toLowerCase(Locale.ROOT);
        if (lowered.contains(KEYWORD)) {
            return true;
        }
        for (String name : rewritten) {
            if (lowered.contains(name)) {
                return true;
            }
        }
        return false;
    }

    /** The statement to parse in place of {@code sql}; the project's error on failure. */
    static String apply(String sql) {
        StatementRewriter rewriter = current;
        if (rewriter == null || !mentions(sql)) {
            return sql;
        }
        String out = rewriter.rewrite(sql);
        if (out == null) {
            throw new IllegalArgumentException("CEP-MR-000: the MATCH_RECOGNIZE rewriter "
                + "returned nothing");
        }
        if (!out.isEmpty() && out.charAt(0) == '\u0000') {
            throw new IllegalArgumentException(out.substring(1));
        }
        return out;
    }

    /** The error for a statement Spark could not parse when no rewriter was there to help. */
    static IllegalArgumentException missing(String sql) {
        int at = sql.toLowerCase(Locale.ROOT).indexOf(KEYWORD);
        int line = 1;
        int lineStart = 0;
        for (int i = 0; i < at; i++) {
            if (sql.charAt(i) == '\n') {
                line++;
                lineStart = i + 1;
            }
        }
        return new IllegalArgumentException("CEP-MR-109: line " + line + ", column "
            + (at - lineStart + 1) + ": MATCH_RECOGNIZE needs the project's rewriter, which "
            + "this Spark session does not have: start it with jobs.session.build_session "
            + "(docs/match-recognize.md)");
    }
}
