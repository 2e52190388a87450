package cep.sql;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * The session's parser: statements that mention MATCH_RECOGNIZE or a process-mining function
 * are rewritten by Python first
 * ({@link StatementRewrites}), and {@link LockdownRule}'s check runs in front of analysis, for
 * the statements that act while they are analysed.
 *
 * <p>Some commands do their work inside the analyser (Delta's {@code RESTORE} is analysed into
 * the finished command's empty result), so the check rule, which sees analysed plans, comes too
 * late for them. The parser's plans are checked as well: every plan the session's parser
 * returns goes through {@link LockdownRule#check}. The wrapper is a dynamic proxy of Spark's
 * parser interface, so whatever methods a Spark version adds are passed on unchanged.
 */
public final class LockdownParser {

    /** The parser's methods that take a whole statement (Spark 4.2: spark.sql calls the last). */
    private static final java.util.Set<String> STATEMENT_METHODS =
        java.util.Set.of("parsePlan", "parseQuery", "parsePlanWithParameters");

    private LockdownParser() {
    }

    /** The parser to use in place of ``parent``: the same answers, parsed plans checked. */
    public static ParserInterface wrap(ParserInterface parent) {
        InvocationHandler handler = (Object proxy, Method method, Object[] args) -> {
            boolean statement = args != null && args.length >= 1 && args[0] instanceof String
                && STATEMENT_METHODS.contains(method.getName());
            String asked = statement ? (String) args[0] : null;
            if (statement) {
                args = args.clone();
                args[0] = StatementRewrites.apply(asked);
            }
            Object result;
            try {
                result = method.invoke(parent, args);
            } catch (InvocationTargetException failed) {
                RuntimeException ours = statement
                    ? RewrittenOrigins.parseFailure(failed.getCause(), asked, (String) args[0]) : null;
                if (ours != null) {
                    throw ours;
                }
                if (statement && !StatementRewrites.installed()
                        && StatementRewrites.mentionsClause((String) args[0])) {
                    throw StatementRewrites.missing((String) args[0]);
                }
                throw failed.getCause();
            }
            if (result instanceof LogicalPlan) {
                if (statement && !asked.equals(args[0])) {
                    RewrittenOrigins.remap((LogicalPlan) result, asked, (String) args[0]);
                }
                LockdownRule.check((LogicalPlan) result);
                if (statement) {
                    TableArguments.check((LogicalPlan) result, asked);
                }
            }
            return result;
        };
        return (ParserInterface) Proxy.newProxyInstance(
            LockdownParser.class.getClassLoader(), new Class<?>[] {ParserInterface.class}, handler);
    }
}
