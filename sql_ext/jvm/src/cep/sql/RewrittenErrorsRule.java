package cep.sql;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.SparkThrowableHelper;
import org.apache.spark.sql.catalyst.analysis.AnalysisContext$;
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.Origin;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Words the commonest errors of a MATCH_RECOGNIZE statement in the user's terms, at their
 * place in the statement the user wrote: a name the rows do not have (CEP-MR-208), an
 * expression whose types do not fit (CEP-MR-209) and a table the catalog lacks (CEP-MR-210).
 *
 * <p>Spark's own error for it would suggest the rewrite's internal columns ({@code __mr_tie})
 * and print the rewritten plan. Run after resolution (a post-hoc rule), a name still
 * unresolved in an operator whose inputs are all resolved will never resolve; only plans
 * parsed from a rewritten statement ({@link RewrittenOrigins#TAG}) are looked at, and only
 * in the outermost analysis (a subquery's own pass does not know its outer query yet).
 * Suggestions are the operator's input columns, internal ones left out, nearest first.
 */
public final class RewrittenErrorsRule extends Rule<LogicalPlan> {

    /** The code of the error (cep/recognize/errors.py lists it with the others). */
    public static final String CODE = "CEP-MR-208";

    /** The code of a table or view the catalog does not have. */
    public static final String MISSING_TABLE = "CEP-MR-210";

    /** The code of an expression whose input types do not fit. */
    public static final String MISMATCH = "CEP-MR-209";

    private static final int SNIPPET_WIDTH = 100;

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if (AnalysisContext$.MODULE$.get().outerPlan().isDefined()) {
            return plan;
        }
        Map<Object, Boolean> seen = new IdentityHashMap<>();
        Deque<LogicalPlan> todo = new ArrayDeque<>();
        todo.push(plan);
        while (!todo.isEmpty()) {
            LogicalPlan node = todo.pop();
            if (seen.put(node, Boolean.TRUE) != null) {
                continue;
            }
            for (Object child : CollectionConverters.asJava(node.children())) {
                todo.push((LogicalPlan) child);
            }
            for (Expression e : CollectionConverters.asJava(node.expressions())) {
                collectSubqueries(e, todo);
            }
            if (node instanceof UnresolvedRelation
                    && node.getTagValue(RewrittenOrigins.TAG).isDefined()) {
                String name = ((UnresolvedRelation) node).tableName();
                throw new IllegalArgumentException(MISSING_TABLE + ": " + where(node.origin())
                    + "no table or view `" + name + "` in this session's catalog (check the "
                    + "spelling, or qualify it with its schema)" + snippet(node.origin()));
            }
            if (node.getTagValue(RewrittenOrigins.TAG).isDefined() && node.childrenResolved()
                    && !node.resolved()) {
                for (Expression e : CollectionConverters.asJava(node.expressions())) {
                    UnresolvedAttribute missing = firstUnresolved(e);
                    if (missing != null) {
                        throw new IllegalArgumentException(message(node, missing));
                    }
                }
                for (Expression e : CollectionConverters.asJava(node.expressions())) {
                    String mismatch = mismatch(e);
                    if (mismatch != null) {
                        throw new IllegalArgumentException(mismatch);
                    }
                }
            }
        }
        return plan;
    }

    private static void collectSubqueries(Expression e, Deque<LogicalPlan> todo) {
        if (e instanceof SubqueryExpression) {
            todo.push(((SubqueryExpression) e).plan());
        }
        for (Expression child : CollectionConverters.asJava(e.children())) {
            collectSubqueries(child, todo);
        }
    }

    private static UnresolvedAttribute firstUnresolved(Expression e) {
        if (e instanceof UnresolvedAttribute) {
            return (UnresolvedAttribute) e;
        }
        if (e instanceof SubqueryExpression) {
            return null;  // its plan is walked on its own
        }
        for (Expression child : CollectionConverters.asJava(e.children())) {
            UnresolvedAttribute found = firstUnresolved(child);
            if (found != null) {
                return found;
            }
        }
        return null;
    }

    /**
     * CEP-MR-209 for the innermost expression whose inputs are resolved but whose types do not
     * fit (Spark's check, in Spark's words, without the rewritten expression's text).
     */
    private static String mismatch(Expression e) {
        if (e instanceof SubqueryExpression) {
            return null;
        }
        for (Expression child : CollectionConverters.asJava(e.children())) {
            String inner = mismatch(child);
            if (inner != null) {
                return inner;
            }
        }
        if (e.resolved() || !e.childrenResolved()) {
            return null;
        }
        TypeCheckResult result;
        try {
            result = e.checkInputDataTypes();
        } catch (RuntimeException unresolved) {  // an Unresolved* node: not a type question
            return null;
        }
        String why;
        if (result instanceof TypeCheckResult.DataTypeMismatch) {
            TypeCheckResult.DataTypeMismatch m = (TypeCheckResult.DataTypeMismatch) result;
            Map<String, String> parameters = new java.util.HashMap<>(
                CollectionConverters.asJava(m.messageParameters()));
            parameters.replaceAll((k, v) -> v.contains("__mr_") ? "the expression" : v);
            parameters.put("sqlExpr", "it");
            try {
                why = SparkThrowableHelper.getMessage("DATATYPE_MISMATCH." + m.errorSubClass(),
                    parameters);
            } catch (RuntimeException unknown) {
                why = m.errorSubClass();
            }
            why = why.replaceFirst("^\\[[A-Z_.]+\\] ", "")
                .replaceFirst("^Cannot resolve it due to data type mismatch: ", "")
                .replaceFirst(" SQLSTATE: [0-9A-Z]+$", "");
        } else if (result instanceof TypeCheckResult.TypeCheckFailure) {
            why = ((TypeCheckResult.TypeCheckFailure) result).message();
        } else {
            return null;
        }
        return MISMATCH + ": " + where(e.origin()) + "the types do not fit: " + why
            + snippet(e.origin());
    }

    private static String message(LogicalPlan node, UnresolvedAttribute missing) {
        String name = missing.name();
        List<String> columns = new ArrayList<>();
        for (Object child : CollectionConverters.asJava(node.children())) {
            for (Attribute a : CollectionConverters.asJava(((LogicalPlan) child).output())) {
                String column = a.name();
                if (!column.startsWith("__mr_") && !column.startsWith("__cep_")
                        && !columns.contains(column)) {
                    columns.add(column);
                }
            }
        }
        columns.sort((a, b) -> Integer.compare(distance(name, a), distance(name, b)));
        String hint = columns.isEmpty() ? "" : "; did you mean " + String.join(", ",
            columns.subList(0, Math.min(5, columns.size())).stream().map(c -> "`" + c + "`")
                .toArray(String[]::new)) + "?";
        return CODE + ": " + where(missing.origin()) + "no column `" + name
            + "` in the rows this part of the statement reads" + hint + snippet(missing.origin());
    }

    private static String where(Origin origin) {
        if (!origin.line().isDefined() || !origin.startPosition().isDefined()) {
            return "";
        }
        return "line " + origin.line().get() + ", column "
            + ((Integer) origin.startPosition().get() + 1) + ": ";
    }

    /** {@code line L, column C: } of the character at {@code start} of {@code text}. */
    static String where(String text, int start) {
        int line = 1;
        int lineStart = 0;
        for (int i = 0; i < start && i < text.length(); i++) {
            if (text.charAt(i) == '\n') {
                line++;
                lineStart = i + 1;
            }
        }
        return "line " + line + ", column " + (start - lineStart + 1) + ": ";
    }

    private static String snippet(Origin origin) {
        if (!origin.sqlText().isDefined() || !origin.startIndex().isDefined()) {
            return "";
        }
        int start = (Integer) origin.startIndex().get();
        return snippet(origin.sqlText().get(), start,
            origin.stopIndex().isDefined() ? (Integer) origin.stopIndex().get() : start);
    }

    /** The user's line with a caret under {@code [start, stop]}, as the Python side draws it. */
    static String snippet(String text, int start, int stop) {
        start = Math.max(0, Math.min(start, text.length()));
        int lineStart = text.lastIndexOf('\n', start - 1) + 1;
        int lineEnd = text.indexOf('\n', start);
        String line = text.substring(lineStart, lineEnd < 0 ? text.length() : lineEnd)
            .replace("\r", "");
        int col = start - lineStart;
        int width = Math.max(1, Math.min(stop, lineStart + line.length() - 1) - start + 1);
        String head = "";
        String tail = "";
        if (line.length() > SNIPPET_WIDTH) {
            int lo = Math.max(0, col - SNIPPET_WIDTH / 2);
            int hi = Math.min(line.length(), lo + SNIPPET_WIDTH);
            lo = Math.max(0, hi - SNIPPET_WIDTH);
            head = lo > 0 ? "..." : "";
            tail = hi < line.length() ? "..." : "";
            line = line.substring(lo, hi);
            col -= lo;
            width = Math.min(width, Math.max(1, line.length() - col));
        }
        String shown = head + line + tail;
        col += head.length();
        StringBuilder pad = new StringBuilder();
        for (int i = 0; i < col && i < shown.length(); i++) {
            pad.append(shown.charAt(i) == '\t' ? '\t' : ' ');
        }
        return "\n    " + shown + "\n    " + pad + "^" + "~".repeat(width - 1);
    }

    /** Edit distance, case-insensitive: how far a column's name is from the one written. */
    private static int distance(String a, String b) {
        String x = a.toLowerCase(Locale.ROOT);
        String y = b.toLowerCase(Locale.ROOT);
        int[] row = new int[y.length() + 1];
        for (int j = 0; j <= y.length(); j++) {
            row[j] = j;
        }
        for (int i = 1; i <= x.length(); i++) {
            int diagonal = row[0];
            row[0] = i;
            for (int j = 1; j <= y.length(); j++) {
                int above = row[j];
                row[j] = Math.min(Math.min(row[j] + 1, row[j - 1] + 1),
                    diagonal + (x.charAt(i - 1) == y.charAt(j - 1) ? 0 : 1));
                diagonal = above;
            }
        }
        return row[y.length()];
    }
}
