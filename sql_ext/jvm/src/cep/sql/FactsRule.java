package cep.sql;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.ScalarSubquery;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Repartition;
import org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.catalyst.plans.logical.Window;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Gives a table function facts about its whole input: the maximum of each requested expression.
 *
 * <p>A Python table function's {@code analyze} may select a column named {@code __cep_facts}
 * into its TABLE argument: a {@code named_struct('done', false, name1, IF(false, expr1, NULL),
 * ...)} over the argument's columns. A task sees only its own rows, so what must hold for the
 * whole input (the newest event time, which event classes occur at all) cannot be decided
 * there. This rule, run once the call is resolved, replaces that struct with a scalar subquery
 * over the same input: {@code named_struct('done', true, name1, max(expr1), ...)}, one
 * single-stage aggregate that Spark runs once before the tasks (column pruning leaves it the
 * columns it reads); every row carries the same value. A boolean's maximum says whether any
 * row made it true. Fields named {@code need_...} are requirements: a {@code __cep_keep}
 * condition selected beside the facts lets every row through when one was not met, so that
 * the tasks see rows and report it. Without this rule Spark folds every field to NULL, the
 * struct reaches the task with {@code done} false, and the Python side knows it has no facts
 * (DESIGN.md section 5: the shim holds no semantics; which facts matter is decided in Python).
 */
public final class FactsRule extends Rule<LogicalPlan> {

    /** The name of the selected column that asks for facts. */
    public static final String FIELD = "__cep_facts";

    /** The struct's first field: false as asked, true once replaced. */
    public static final String DONE = "done";

    /** Fields named so are requirements: booleans that some row must make true. */
    public static final String NEED = "need_";

    /** A session setting that turns the rule off ({@code false}); on by default. */
    public static final String ENABLED = "spark.cep.facts.enabled";

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if ("false".equalsIgnoreCase(SQLConf.get().getConfString(ENABLED, "true").trim())) {
            return plan;
        }
        // Bottom up, a call's keep condition comes after its facts: in the same projection, or
        // in one above it when Spark moved the facts below the window of a strict-contiguity
        // call. The last facts answered are the ones of the keep condition met next.
        final Expression[] met = {null};
        return plan.transformUpWithSubqueries(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return node instanceof Project && (find((Project) node) >= 0
                        || (met[0] != null && uncoupled((Project) node) >= 0));
            }

            @Override
            @SuppressWarnings("unchecked")
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
                if (!isDefinedAt(node)) {
                    return otherwise.apply(node);
                }
                Project project = (Project) node;
                if (find(project) >= 0) {
                    project = rewrite(project, met);
                }
                if (uncoupled(project) >= 0) {
                    project = couple(project, met[0]);
                    met[0] = null;  // one keep condition per call
                }
                return (B1) project;
            }
        });
    }

    /** The index in the project list of an unanswered facts struct, or -1. */
    private static int find(Project project) {
        List<NamedExpression> list = CollectionConverters.asJava(project.projectList());
        for (int i = 0; i < list.size(); i++) {
            if (asked(list.get(i)) != null) {
                return i;
            }
        }
        return -1;
    }

    /** The struct of an {@code __cep_facts} alias whose {@code done} is still false, or null. */
    private static CreateNamedStruct asked(NamedExpression expression) {
        if (!(expression instanceof Alias) || !FIELD.equals(expression.name())) {
            return null;
        }
        Expression child = ((Alias) expression).child();
        if (!(child instanceof CreateNamedStruct)) {
            return null;
        }
        List<Expression> parts = CollectionConverters.asJava(child.children());
        if (parts.size() < 2 || !(parts.get(0) instanceof Literal)
                || !DONE.equals(String.valueOf(((Literal) parts.get(0)).value()))
                || !(parts.get(1) instanceof Literal)
                || !Boolean.FALSE.equals(((Literal) parts.get(1)).value())) {
            return null;
        }
        return (CreateNamedStruct) child;
    }

    /** The input as the user wrote it: below the repartitioning, sorting and windows that the
     * call's own analysis added (they change neither which rows there are nor their values). */
    private static LogicalPlan input(LogicalPlan plan) {
        LogicalPlan node = plan;
        while (node instanceof Sort || node instanceof RepartitionByExpression
                || node instanceof Repartition || node instanceof Window) {
            node = node.children().head();
        }
        return node;
    }

    /** The expression a field asks about: {@code e} of {@code IF(false, e, NULL)}, so that
     * without this rule Spark folds the field to NULL and computes nothing row by row. */
    private static Expression question(Expression value) {
        if (value instanceof If && ((If) value).predicate() instanceof Literal
                && Boolean.FALSE.equals(((Literal) ((If) value).predicate()).value())) {
            return ((If) value).trueValue();
        }
        return value;
    }

    /** The project with its facts answered; {@code met[0]} becomes the condition that every
     * requirement is met, read from the same subquery (Spark runs it once). */
    private static Project rewrite(Project project, Expression[] met) {
        List<NamedExpression> list = new ArrayList<>(CollectionConverters.asJava(project.projectList()));
        int at = find(project);
        Alias alias = (Alias) list.get(at);
        List<Expression> parts = CollectionConverters.asJava(asked(alias).children());
        List<Expression> answered = new ArrayList<>();
        answered.add(parts.get(0));
        answered.add(Literal.create(true, DataTypes.BooleanType));
        for (int i = 2; i + 1 < parts.size(); i += 2) {
            answered.add(parts.get(i));
            answered.add(new Max(question(parts.get(i + 1))).toAggregateExpression());
        }
        // One row, one struct of the asked struct's type exactly (the task's input schema was
        // fixed when the call was analysed): a single-stage aggregate of the columns it reads.
        Expression struct = new CreateNamedStruct(seq(answered.toArray(new Expression[0])));
        LogicalPlan once = new Aggregate(seq(), seq(named(struct, FIELD)), input(project.child()),
                Option.empty());
        list.set(at, (NamedExpression) alias.withNewChildren(seq(subquery(once))));
        Expression ok = null;
        for (int i = 2, field = 0; i + 1 < parts.size(); i += 2, field++) {
            if (String.valueOf(((Literal) parts.get(i)).value()).startsWith(NEED)) {
                Expression need = new GetStructField(subquery(once), field + 1, Option.empty());
                Expression sure = new Coalesce(seq(need, Literal.create(false, DataTypes.BooleanType)));
                ok = new And(ok == null ? Literal.create(true, DataTypes.BooleanType) : ok, sure);
            }
        }
        met[0] = ok;  // null: nothing required, the keep condition stays as it is
        return new Project(CollectionConverters.asScala(list).toSeq(), project.child());
    }

    /** The index of a keep condition not yet widened by {@link #couple}, or -1. */
    private static int uncoupled(Project project) {
        List<NamedExpression> list = CollectionConverters.asJava(project.projectList());
        for (int i = 0; i < list.size(); i++) {
            NamedExpression item = list.get(i);
            if (item instanceof Alias && KeepRowsRule.FIELD.equals(item.name())
                    && !(((Alias) item).child() instanceof Or
                         && ((Or) ((Alias) item).child()).right() instanceof Not
                         && ((Not) ((Or) ((Alias) item).child()).right()).child() instanceof And)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The keep condition widened to every row when a requirement is not met: with every row of
     * a misspelt class filtered away, no task would run to report it.
     */
    private static Project couple(Project project, Expression met) {
        int at = uncoupled(project);
        if (met == null || at < 0) {
            return project;
        }
        List<NamedExpression> list = new ArrayList<>(CollectionConverters.asJava(project.projectList()));
        Alias keep = (Alias) list.get(at);
        Expression wide = new Or(keep.child(), new Not(met));
        list.set(at, (NamedExpression) keep.withNewChildren(seq(wide)));
        return new Project(CollectionConverters.asScala(list).toSeq(), project.child());
    }

    private static NamedExpression named(Expression child, String name) {
        return new Alias(child, name, NamedExpression.newExprId(), seq(), Option.empty(), seq());
    }

    private static Expression subquery(LogicalPlan plan) {
        return new ScalarSubquery(plan, seq(), NamedExpression.newExprId(), seq(), Option.empty(),
                Option.empty(), Option.empty());
    }

    @SafeVarargs
    private static <T> scala.collection.immutable.Seq<T> seq(T... items) {
        return CollectionConverters.asScala(java.util.Arrays.asList(items)).toSeq();
    }
}
