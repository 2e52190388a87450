package cep.sql;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.CreateMap;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.LateralSubquery;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.RaiseError;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.expressions.WindowExpression;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Generate;
import org.apache.spark.sql.catalyst.plans.logical.LateralJoin;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.Window;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Replaces a Python table function call by the selection its {@code analyze} computed, when
 * the selection already says the whole answer: no Python task runs at all.
 *
 * <p>A call's {@code analyze} selects its TABLE argument's columns into a {@code named_struct}
 * (Spark plans it as a {@code LateralJoin} of that projection and a {@code Generate} of the
 * function). When the struct has a field {@link #KEEP}, this rule, run once the call is
 * resolved (after {@link FactsRule}), puts in place of the join:
 * <ol>
 *   <li>a {@code Filter} of the rows where {@link #KEEP} is true; first, a non-NULL
 *       {@link #ERROR} on any row is raised as the statement's error; every row is kept when
 *       a requirement {@code need_<i>} of the facts ({@link FactsRule}) is unmet;</li>
 *   <li>the window functions of the late fields ({@code __n<i>}, {@code __cep_absent_<i>} and
 *       {@link #LATE_ERROR}) computed again over the kept rows only (a row number then counts
 *       the output rows);</li>
 *   <li>a {@code Filter} that raises the message {@code __cep_absent_<i>} when requirement
 *       {@code need_<i>} is unmet, then a non-NULL {@link #LATE_ERROR};</li>
 *   <li>the function's output columns: column {@code i} is {@code __n<i>} if selected, else
 *       {@code __o<i>} (evaluated over every row, before the filter), cast to the declared
 *       type.</li>
 * </ol>
 * The error fields are strings, never raised by the selection itself: without this rule (no
 * shim) Spark computes them as plain columns, the Python function runs on the same selection
 * and ignores them, and the answer is the same. With {@link #ENABLED} false the rule sets the
 * native fields to constants instead, so that Spark does not compute them for the Python path. Which calls run
 * natively, and what each field computes, is decided in Python (DESIGN.md section 5).
 */
public final class NativeCallRule extends Rule<LogicalPlan> {

    /** The keep condition; its presence asks for the rewrite. */
    public static final String KEEP = "__cep_native";

    /** A string per row: raised when not NULL, before the keep condition. */
    public static final String ERROR = "__cep_native_error";

    /** A string per kept row, its window functions over the kept rows: raised when not NULL. */
    public static final String LATE_ERROR = "__cep_native_late_error";

    /** Prefix of the late message raised when the facts' requirement {@code need_<i>} is unmet. */
    public static final String ABSENT = "__cep_absent_";

    /** Prefix of an output column's value computed before the filter. */
    public static final String EARLY = "__o";

    /** Prefix of an output column's value computed over the kept rows. */
    public static final String LATE = "__n";

    /** A session setting that turns the rule off ({@code false}); on by default. */
    public static final String ENABLED = "spark.cep.nativeCalls.enabled";

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        final boolean enabled = !"false".equalsIgnoreCase(
                SQLConf.get().getConfString(ENABLED, "true").trim());
        return plan.transformUpWithSubqueries(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return node instanceof LateralJoin && selection((LateralJoin) node) != null;
            }

            @Override
            @SuppressWarnings("unchecked")
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
                if (!isDefinedAt(node)) {
                    return otherwise.apply(node);
                }
                if (!enabled) {
                    return (B1) strip((LateralJoin) node);
                }
                LogicalPlan native_ = rewrite((LateralJoin) node);
                return (B1) (native_ == null ? node : native_);
            }
        });
    }

    /** The projection of a call's struct with a {@link #KEEP} field, or null. */
    private static Project selection(LateralJoin join) {
        if (generate(join.right()) == null) {
            return null;
        }
        LogicalPlan node = join.left();
        while (node instanceof SubqueryAlias) {
            node = ((SubqueryAlias) node).child();
        }
        if (!(node instanceof Project) || ((Project) node).projectList().size() != 1) {
            return null;
        }
        NamedExpression item = ((Project) node).projectList().head();
        if (!(item instanceof Alias) || !(((Alias) item).child() instanceof CreateNamedStruct)) {
            return null;
        }
        return fields((CreateNamedStruct) ((Alias) item).child()).containsKey(KEEP) ? (Project) node : null;
    }

    /** The {@code Generate} of a Python table function under the lateral subquery, or null. */
    private static Generate generate(LateralSubquery subquery) {
        LogicalPlan node = subquery.plan();
        while (node instanceof SubqueryAlias || node instanceof Project) {
            node = node.children().head();
        }
        if (node instanceof Generate
                && ((Generate) node).generator().getClass().getSimpleName().equals("PythonUDTF")) {
            return (Generate) node;
        }
        return null;
    }

    private static Map<String, Expression> fields(CreateNamedStruct struct) {
        Map<String, Expression> out = new LinkedHashMap<>();
        List<Expression> parts = CollectionConverters.asJava(struct.children());
        for (int i = 0; i + 1 < parts.size(); i += 2) {
            if (parts.get(i) instanceof Literal) {
                out.put(String.valueOf(((Literal) parts.get(i)).value()), parts.get(i + 1));
            }
        }
        return out;
    }

    /** The call with its native fields set to constants: switched off, the rule leaves the
     * call to Python, which ignores them, and Spark need not compute them for every row. */
    private static LogicalPlan strip(LateralJoin join) {
        Project project = selection(join);
        Alias alias = (Alias) project.projectList().head();
        List<Expression> parts = new ArrayList<>(CollectionConverters.asJava(alias.child().children()));
        for (int i = 0; i + 1 < parts.size(); i += 2) {
            String name = String.valueOf(((Literal) parts.get(i)).value());
            if (name.startsWith(KEEP) || name.startsWith(ABSENT) || name.matches("__[on][0-9]+")) {
                // A constant of the same type, never NULL: the struct's type stays as analysed.
                parts.set(i + 1, constant(parts.get(i + 1).dataType()));
            }
        }
        Expression struct = alias.child().withNewChildren(CollectionConverters.asScala(parts).toSeq());
        NamedExpression item = (NamedExpression) alias.withNewChildren(seq(struct));
        LogicalPlan stripped = new Project(seq(item), project.child());
        return join.withNewChildren(seq(replace(join.left(), project, stripped)));
    }

    /** Spark's default value of {@code type} ({@code Literal.default}, whose name Java cannot
     * spell). */
    private static Expression constant(org.apache.spark.sql.types.DataType type) {
        try {
            return (Expression) Literal$.class.getMethod("default", org.apache.spark.sql.types.DataType.class)
                    .invoke(Literal$.MODULE$, type);
        } catch (ReflectiveOperationException impossible) {
            throw new IllegalStateException(impossible);
        }
    }

    /** {@code plan} with its node {@code old} (under subquery aliases) replaced by {@code by}. */
    private static LogicalPlan replace(LogicalPlan plan, LogicalPlan old, LogicalPlan by) {
        if (plan == old) {
            return by;
        }
        return plan.withNewChildren(seq(replace(plan.children().head(), old, by)));
    }

    /** The native plan of the call, or null when the selection is not as expected. */
    private static LogicalPlan rewrite(LateralJoin join) {
        Project project = selection(join);
        Map<String, Expression> fields = fields(
                (CreateNamedStruct) ((Alias) project.projectList().head()).child());
        List<Attribute> outputs = CollectionConverters.asJava(generate(join.right()).generatorOutput());
        LogicalPlan child = project.child();
        Late late = new Late(child);
        try {
            List<Expression> values = new ArrayList<>();
            for (int i = 0; i < outputs.size(); i++) {
                Expression early = fields.get(EARLY + i);
                Expression later = fields.get(LATE + i);
                if (later != null) {
                    values.add(late.expand(later));
                } else if (early != null) {
                    values.add(late.inline(early));
                } else {
                    return null;
                }
            }
            // Raised over the kept rows, in order: an absent class (every row is kept then, so
            // that its message can offer a type value of the key), then the late error.
            Expression lateCheck = Literal.create(true, DataTypes.BooleanType);
            if (fields.containsKey(LATE_ERROR)) {
                Expression error = late.expand(fields.get(LATE_ERROR));
                lateCheck = new If(new IsNotNull(error), raise(error), lateCheck);
            }
            Expression keep = late.inline(fields.get(KEEP));
            Expression facts = fields.containsKey(FactsRule.FIELD) ? late.inline(fields.get(FactsRule.FIELD)) : null;
            if (facts != null && facts.dataType() instanceof StructType) {
                StructType type = (StructType) facts.dataType();
                // Facts not answered (FactsRule off): nothing is known, nothing raised.
                Expression done = new Coalesce(seq(
                        new GetStructField(facts, type.fieldIndex(FactsRule.DONE), Option.empty()),
                        Literal.create(false, DataTypes.BooleanType)));
                List<String> names = new ArrayList<>(fields.keySet());
                for (int i = names.size() - 1; i >= 0; i--) {
                    String name = names.get(i);
                    if (!name.startsWith(ABSENT)) {
                        continue;
                    }
                    String need = FactsRule.NEED + name.substring(ABSENT.length());
                    Expression met = new Coalesce(seq(
                            new GetStructField(facts, type.fieldIndex(need), Option.empty()),
                            Literal.create(false, DataTypes.BooleanType)));
                    Expression absent = new And(done, new Not(met));
                    keep = new If(absent, Literal.create(true, DataTypes.BooleanType), keep);
                    lateCheck = new If(absent, raise(late.expand(fields.get(name))), lateCheck);
                }
            }
            if (fields.containsKey(ERROR)) {
                Expression error = late.inline(fields.get(ERROR));
                keep = new If(new IsNotNull(error), raise(error), keep);
            }

            List<Expression> used = new ArrayList<>(values);
            used.add(keep);
            used.add(lateCheck);
            used.addAll(late.definitions());
            List<Attribute> needed = new ArrayList<>();
            for (Expression e : used) {
                needed.addAll(CollectionConverters.asJava(e.references().toSeq()));
            }
            LogicalPlan plan = passThrough(child, needed);
            AttributeSet available = plan.outputSet();
            for (Attribute a : needed) {
                if (!late.produces(a) && !available.contains(a)) {
                    return null;
                }
            }
            plan = new Filter(keep, plan);
            plan = late.windows(plan);
            if (!(lateCheck instanceof Literal)) {
                plan = new Filter(lateCheck, plan);
            }
            List<NamedExpression> list = new ArrayList<>();
            for (int i = 0; i < outputs.size(); i++) {
                Attribute out = outputs.get(i);
                Expression value = values.get(i);
                if (!value.dataType().equals(out.dataType())) {
                    value = new Cast(value, out.dataType(), Option.empty());
                }
                list.add(new Alias(value, out.name(), out.exprId(), seq(), Option.empty(), seq()));
            }
            return new Project(CollectionConverters.asScala(list).toSeq(), plan);
        } catch (IllegalStateException unexpected) {
            return null;  // a selection this rule does not understand: the Python function runs
        }
    }

    /** The statement's error with {@code message} (a string), typed as a boolean. */
    private static Expression raise(Expression message) {
        Expression params = new CreateMap(seq(Literal.create("errorMessage", DataTypes.StringType), message));
        return new RaiseError(Literal.create("USER_RAISED_EXCEPTION", DataTypes.StringType), params,
                DataTypes.BooleanType);
    }

    /** {@code plan} with every projection below it passing on the {@code needed} attributes
     * that its input has (a late expression may read columns the selection did not keep). */
    private static LogicalPlan passThrough(LogicalPlan plan, List<Attribute> needed) {
        if (plan instanceof Project) {
            Project project = (Project) plan;
            LogicalPlan child = passThrough(project.child(), needed);
            List<NamedExpression> list = new ArrayList<>(CollectionConverters.asJava(project.projectList()));
            AttributeSet have = project.outputSet();
            AttributeSet below = child.outputSet();
            for (Attribute a : needed) {
                if (!have.contains(a) && below.contains(a)) {
                    list.add(a);
                    have = have.$plus(a);
                }
            }
            return new Project(CollectionConverters.asScala(list).toSeq(), child);
        }
        if (plan instanceof Window || plan instanceof SubqueryAlias || plan instanceof Filter) {
            return plan.withNewChildren(seq(passThrough(plan.children().head(), needed)));
        }
        return plan;
    }

    /** The late fields' window functions, recomputed over the kept rows. */
    private static final class Late {
        private final Map<ExprId, Expression> projected = new HashMap<>();
        private final Map<ExprId, Expression> windowed = new HashMap<>();
        private final Map<ExprId, Alias> recomputed = new LinkedHashMap<>();
        private final Map<Expression, Attribute> firsts = new HashMap<>();
        private final Map<ExprId, Attribute> twins = new HashMap<>();

        Late(LogicalPlan plan) {
            collect(plan);
        }

        private void collect(LogicalPlan node) {
            if (node instanceof Project) {
                for (NamedExpression e : CollectionConverters.asJava(((Project) node).projectList())) {
                    if (e instanceof Alias) {
                        projected.put(e.exprId(), ((Alias) e).child());
                    }
                }
            } else if (node instanceof Window) {
                for (NamedExpression e : CollectionConverters.asJava(((Window) node).windowExpressions())) {
                    if (e instanceof Alias && ((Alias) e).child() instanceof WindowExpression) {
                        windowed.put(e.exprId(), ((Alias) e).child());
                        // The selection writes `lead(id, 1)` once per field that reads it; one
                        // is enough (the optimizer then prunes the others from the window).
                        Expression same = ((Alias) e).child().canonicalized();
                        Attribute first = firsts.get(same);
                        if (first == null) {
                            firsts.put(same, e.toAttribute());
                        } else {
                            twins.put(e.exprId(), first);
                        }
                    }
                }
            }
            // Only the call's own projections and windows: below them is the user's input
            // (a view or subquery whose inner columns the filter must not reach into).
            if (node instanceof Project || node instanceof Window || node instanceof Filter) {
                collect(node.children().head());
            }
        }

        /** {@code e} written over the columns below the selection, its window functions'
         * results replaced by their recomputed twins. */
        Expression expand(Expression e) {
            return rewriteRefs(e, true);
        }

        /** {@code e} written over the columns below the selection and the window functions'
         * results: the selection's own aliases (a column selected twice under two names, a
         * fact read by one field) need not cross the window's shuffle. */
        Expression inline(Expression e) {
            return rewriteRefs(e, null);
        }

        /** {@code windows}: true to recompute window functions, false to refuse them, null
         * to keep their results. */
        private Expression rewriteRefs(Expression e, Boolean windows) {
            final Boolean windowsAllowed = windows;
            Late self = this;
            return e.transformUp(new AbstractPartialFunction<Expression, Expression>() {
                @Override
                public boolean isDefinedAt(Expression x) {
                    return x instanceof AttributeReference && (projected.containsKey(((AttributeReference) x).exprId())
                            || windowed.containsKey(((AttributeReference) x).exprId()));
                }

                @Override
                @SuppressWarnings("unchecked")
                public <A1 extends Expression, B1> B1 applyOrElse(A1 x, Function1<A1, B1> otherwise) {
                    if (!isDefinedAt(x)) {
                        return otherwise.apply(x);
                    }
                    ExprId id = ((AttributeReference) x).exprId();
                    if (windowed.containsKey(id)) {
                        if (windowsAllowed == null) {
                            return (B1) (twins.containsKey(id) ? twins.get(id) : x);
                        }
                        if (!windowsAllowed) {
                            throw new IllegalStateException("a window function over a window function");
                        }
                        return (B1) self.twin(id, (AttributeReference) x);
                    }
                    return (B1) self.rewriteRefs(projected.get(id), windowsAllowed);
                }
            });
        }

        private Attribute twin(ExprId id, AttributeReference original) {
            Alias alias = recomputed.get(id);
            if (alias == null) {
                Expression function = rewriteRefs(windowed.get(id), false);
                for (Alias done : recomputed.values()) {  // the same function under two names
                    if (done.child().canonicalized().equals(function.canonicalized())) {
                        alias = done;
                    }
                }
                if (alias == null) {
                    alias = new Alias(function, original.name(), NamedExpression.newExprId(), seq(),
                            Option.empty(), seq());
                }
                recomputed.put(id, alias);
            }
            return alias.toAttribute();
        }

        /** The recomputed window functions (for the columns they read). */
        List<Expression> definitions() {
            List<Expression> out = new ArrayList<>();
            for (Alias alias : new java.util.LinkedHashSet<>(recomputed.values())) {
                out.add(alias.child());
            }
            return out;
        }

        boolean produces(Attribute a) {
            for (Alias alias : recomputed.values()) {
                if (alias.exprId().equals(a.exprId())) {
                    return true;
                }
            }
            return false;
        }

        /** One {@code Window} per partitioning and order of the recomputed functions. */
        LogicalPlan windows(LogicalPlan plan) {
            List<List<Alias>> groups = new ArrayList<>();
            for (Alias alias : new java.util.LinkedHashSet<>(recomputed.values())) {
                WindowExpression w = (WindowExpression) alias.child();
                List<Alias> home = null;
                for (List<Alias> group : groups) {
                    WindowExpression first = (WindowExpression) group.get(0).child();
                    if (first.windowSpec().partitionSpec().equals(w.windowSpec().partitionSpec())
                            && first.windowSpec().orderSpec().equals(w.windowSpec().orderSpec())) {
                        home = group;
                    }
                }
                if (home == null) {
                    home = new ArrayList<>();
                    groups.add(home);
                }
                home.add(alias);
            }
            for (List<Alias> group : groups) {
                WindowExpression first = (WindowExpression) group.get(0).child();
                List<NamedExpression> named = new ArrayList<>(group);
                scala.collection.immutable.Seq<SortOrder> order = first.windowSpec().orderSpec();
                plan = new Window(CollectionConverters.asScala(named).toSeq(),
                        first.windowSpec().partitionSpec(), order, plan, Option.empty());
            }
            return plan;
        }
    }

    @SafeVarargs
    private static <T> scala.collection.immutable.Seq<T> seq(T... items) {
        return CollectionConverters.asScala(java.util.Arrays.asList(items)).toSeq();
    }
}
