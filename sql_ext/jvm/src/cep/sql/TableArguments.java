package cep.sql;

import java.util.Locale;
import java.util.Set;

import org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.FunctionTableSubqueryArgumentExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.Origin;

/**
 * Refuses {@code TABLE(t) PARTITION BY ... / ORDER BY ... / WITH SINGLE PARTITION} in a call of
 * a CEP function, right after parsing, with the project's own error (CEP-SQL-003).
 *
 * <p>Spark's documentation teaches that form for table functions, but every CEP function brings
 * each key's rows together and orders them itself (its {@code key_col} and {@code ts_col}
 * arguments); Spark would refuse the call later with
 * {@code TABLE_VALUED_FUNCTION_REQUIRED_METADATA_INCOMPATIBLE_WITH_CALL}, which does not say what
 * to write. The names of the functions come from Python's registry when the rewriter is
 * installed ({@link StatementRewrites#functions}); nothing is checked before that.
 */
final class TableArguments {

    private TableArguments() {
    }

    /** Throws CEP-SQL-003 for the first CEP call in {@code plan} with a partitioned TABLE. */
    static void check(LogicalPlan plan, String sql) {
        Set<String> names = StatementRewrites.functions();
        if (!names.isEmpty() && sql != null) {
            visit(plan, names, sql);
        }
    }

    private static void visit(LogicalPlan plan, Set<String> names, String sql) {
        if (plan instanceof UnresolvedTableValuedFunction) {
            UnresolvedTableValuedFunction call = (UnresolvedTableValuedFunction) plan;
            String name = call.name().last().toLowerCase(Locale.ROOT);
            if (names.contains(name)) {
                scala.collection.Iterator<Expression> args = call.functionArgs().iterator();
                while (args.hasNext()) {
                    refuse(args.next(), name, sql);
                }
            }
        }
        scala.collection.Iterator<Expression> exprs = plan.expressions().iterator();
        while (exprs.hasNext()) {
            visitExpression(exprs.next(), names, sql);
        }
        scala.collection.Iterator<LogicalPlan> children = plan.children().iterator();
        while (children.hasNext()) {
            visit(children.next(), names, sql);
        }
        // A WITH clause's queries (UnresolvedWith) and the expressions' subqueries.
        scala.collection.Iterator<?> inner = plan.innerChildren().iterator();
        while (inner.hasNext()) {
            Object node = inner.next();
            if (node instanceof LogicalPlan) {
                visit((LogicalPlan) node, names, sql);
            }
        }
    }

    private static void visitExpression(Expression expr, Set<String> names, String sql) {
        if (expr instanceof SubqueryExpression) {
            visit(((SubqueryExpression) expr).plan(), names, sql);
        }
        scala.collection.Iterator<Expression> children = expr.children().iterator();
        while (children.hasNext()) {
            visitExpression(children.next(), names, sql);
        }
    }

    /** Looks through named arguments for a TABLE argument with a partitioning of its own. */
    private static void refuse(Expression arg, String function, String sql) {
        if (arg instanceof FunctionTableSubqueryArgumentExpression) {
            FunctionTableSubqueryArgumentExpression table = (FunctionTableSubqueryArgumentExpression) arg;
            if (table.partitionByExpressions().nonEmpty() || table.withSinglePartition()
                    || table.orderByExpressions().nonEmpty()) {
                String key = table.partitionByExpressions().size() == 1
                    ? table.partitionByExpressions().head().sql() : "<key column>";
                Origin origin = table.origin();
                int start = origin.startIndex().isDefined() ? (Integer) origin.startIndex().get() : 0;
                int stop = origin.stopIndex().isDefined() ? (Integer) origin.stopIndex().get() : start;
                throw new IllegalArgumentException("CEP-SQL-003: "
                    + RewrittenErrorsRule.where(sql, start) + function + " brings each key's rows "
                    + "together and orders them itself: write key_col => '" + key.replace("`", "")
                    + "' (and ts_col for the order) instead of PARTITION BY, ORDER BY or WITH "
                    + "SINGLE PARTITION after TABLE(...)"
                    + RewrittenErrorsRule.snippet(sql, start, stop));
            }
            return;
        }
        scala.collection.Iterator<Expression> children = arg.children().iterator();
        while (children.hasNext()) {
            refuse(children.next(), function, sql);
        }
    }
}
