package cep.sql;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import scala.Function1;
import scala.Function2;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * The project's entry in {@code spark.sql.extensions}: registers {@link KeepRowsRule},
 * {@link FactsRule}, {@link NativeCallRule}, {@link RewrittenErrorsRule} and the
 * servers' {@link LockdownRule}
 * (on analysed plans, and through {@link LockdownParser} on parsed ones).
 *
 * <p>It holds no semantics of its own (DESIGN.md section 5): which rows a call needs is decided
 * by the Python compiler, at analysis, and handed over as a {@code __cep_keep} column; which
 * facts about the whole input a call needs, as a {@code __cep_facts} column.
 */
public final class CepExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        // The builder's parameter is the session; the rule needs nothing from it. A raw
        // Function1 keeps the source independent of which SparkSession class Spark passes.
        Function1 builder = new AbstractFunction1<Object, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(Object session) {
                return new KeepRowsRule();
            }
        };
        extensions.injectOptimizerRule(builder);
        // Facts about a call's whole input, asked for at analysis and answered right after it
        // (so the optimizer prunes and plans the subquery like any other).
        Function1 facts = new AbstractFunction1<Object, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(Object session) {
                return new FactsRule();
            }
        };
        extensions.injectPostHocResolutionRule(facts);
        // A call whose selection is its whole answer, after its facts (it reads them).
        Function1 calls = new AbstractFunction1<Object, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(Object session) {
                return new NativeCallRule();
            }
        };
        extensions.injectPostHocResolutionRule(calls);
        // A MATCH_RECOGNIZE statement's unknown names, worded in the user's statement.
        Function1 names = new AbstractFunction1<Object, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(Object session) {
                return new RewrittenErrorsRule();
            }
        };
        extensions.injectPostHocResolutionRule(names);
        // The check rule is off unless the JVM was started with spark.cep.lockdown=true.
        Function1 check = new AbstractFunction1<Object, LockdownRule>() {
            @Override
            public LockdownRule apply(Object session) {
                return new LockdownRule();
            }
        };
        extensions.injectCheckRule(check);
        // The same check before resolution, which resolves (and may connect to) data sources.
        Function1 early = new AbstractFunction1<Object, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(Object session) {
                return new LockdownRule.Early();
            }
        };
        extensions.injectHintResolutionRule(early);
        Function2 parser = new AbstractFunction2<Object, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(Object session, ParserInterface parent) {
                return LockdownParser.wrap(parent);
            }
        };
        extensions.injectParser(parser);
        return BoxedUnit.UNIT;
    }
}
