package cep.sql;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.internal.SQLConf;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Drops, before they reach Python, the rows a table function said it does not need.
 *
 * <p>A Python table function's {@code analyze} may select a boolean column named
 * {@code __cep_keep} into its TABLE argument (Spark builds the argument as a
 * {@code named_struct} in a {@code Project}). This rule turns that column into a {@code Filter}
 * under the {@code Project} and sets the field to {@code true}, so the optimizer's own rules push
 * the filter below the shuffle and no row it rejects is sent to the Python worker. The Python
 * side still drops rows whose {@code __cep_keep} is false, so a session without this rule gives
 * the same answer, only slower. The field set to {@code true} marks the rewrite as done: the
 * optimizer runs rules to a fixed point.
 */
public final class KeepRowsRule extends Rule<LogicalPlan> {

    /** The name of the selected column that carries the condition. */
    public static final String FIELD = "__cep_keep";

    /** A session setting that turns the rule off ({@code false}); on by default. */
    public static final String ENABLED = "spark.cep.keepRows.enabled";

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if ("false".equalsIgnoreCase(SQLConf.get().getConfString(ENABLED, "true").trim())) {
            return plan;
        }
        return plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return node instanceof Project && find((Project) node) >= 0;
            }

            @Override
            @SuppressWarnings("unchecked")
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
                if (!isDefinedAt(node)) {
                    return otherwise.apply(node);
                }
                return (B1) rewrite((Project) node);
            }
        });
    }

    /** The index in the project list of the struct that holds an unapplied keep field, or -1. */
    private static int find(Project project) {
        List<NamedExpression> list = CollectionConverters.asJava(project.projectList());
        for (int i = 0; i < list.size(); i++) {
            if (keepIndex(list.get(i)) >= 0) {
                return i;
            }
        }
        return -1;
    }

    /** The child index of the keep field's value in an aliased struct, or -1. */
    private static int keepIndex(NamedExpression expression) {
        if (!(expression instanceof Alias)) {
            return -1;
        }
        Expression child = ((Alias) expression).child();
        if (!(child instanceof CreateNamedStruct)) {
            return -1;
        }
        List<Expression> parts = CollectionConverters.asJava(child.children());
        for (int i = 0; i + 1 < parts.size(); i += 2) {
            Expression name = parts.get(i);
            if (name instanceof Literal && FIELD.equals(String.valueOf(((Literal) name).value()))) {
                Expression value = parts.get(i + 1);
                boolean applied = value instanceof Literal && Boolean.TRUE.equals(((Literal) value).value());
                return applied ? -1 : i + 1;
            }
        }
        return -1;
    }

    private static LogicalPlan rewrite(Project project) {
        List<NamedExpression> list = new ArrayList<>(CollectionConverters.asJava(project.projectList()));
        int at = find(project);
        Alias alias = (Alias) list.get(at);
        CreateNamedStruct struct = (CreateNamedStruct) alias.child();
        List<Expression> parts = new ArrayList<>(CollectionConverters.asJava(struct.children()));
        int index = keepIndex(alias);
        Expression condition = parts.get(index);
        parts.set(index, Literal.create(true, org.apache.spark.sql.types.DataTypes.BooleanType));
        Expression newStruct = struct.withNewChildren(CollectionConverters.asScala(parts).toSeq());
        List<Expression> aliasChildren = new ArrayList<>();
        aliasChildren.add(newStruct);
        list.set(at, (NamedExpression) alias.withNewChildren(CollectionConverters.asScala(aliasChildren).toSeq()));
        LogicalPlan filtered = new Filter(condition, project.child());
        return new Project(CollectionConverters.asScala(list).toSeq(), filtered);
    }
}
