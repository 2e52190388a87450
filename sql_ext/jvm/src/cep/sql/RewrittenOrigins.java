package cep.sql;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.SparkThrowableHelper;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Points the parsed plan of a rewritten statement back into the text its user wrote.
 *
 * <p>A statement with MATCH_RECOGNIZE is parsed from the rewriter's text (a longer statement
 * with internal columns), so every origin Spark records, and every "line 1 pos N" and snippet
 * of its errors, would point into a text the user never saw. Right after parsing, this class
 * gives each node that came from the rewritten text an origin in the user's text: outside the
 * rewritten clauses, the same characters shifted; inside them, the first place the user's
 * clauses spell the first name the node's text has (a column, a function), else their start.
 * It also tags every plan node so that {@link RewrittenErrorsRule} knows whose errors it may
 * word. Origins are immutable in Spark and set at construction, so the new one is written into
 * the freshly parsed node's field; if a Spark version refuses that, positions stay as they were
 * (the statement still runs).
 */
final class RewrittenOrigins {

    /** The tag on every plan node parsed from a rewritten statement: the user's text. */
    static final TreeNodeTag<String> TAG = new TreeNodeTag<>("cep.rewritten");

    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    /** SQL's own words, which the rewrite writes and the user's clause may spell elsewhere. */
    private static final java.util.Set<String> WORDS = java.util.Set.of(
        "AS", "CASE", "WHEN", "THEN", "ELSE", "END", "AND", "OR", "NOT", "ASC", "DESC", "NULL",
        "TRUE", "FALSE", "IS", "IN", "BY", "ORDER", "PARTITION", "OVER", "SELECT", "FROM",
        "WHERE", "GROUP", "WINDOW", "NULLS", "FIRST", "LAST", "ROWS", "BETWEEN", "TABLE",
        "UNBOUNDED", "PRECEDING", "FOLLOWING", "CURRENT", "ROW", "CAST", "DISTINCT");
    private static final Field ORIGIN = originField();

    private final String original;
    private final String rewritten;
    private final int prefix;
    private final int suffix;

    private RewrittenOrigins(String original, String rewritten) {
        this.original = original;
        this.rewritten = rewritten;
        int most = Math.min(original.length(), rewritten.length());
        int p = 0;
        while (p < most && original.charAt(p) == rewritten.charAt(p)) {
            p++;
        }
        int s = 0;
        while (s < most - p && original.charAt(original.length() - 1 - s)
                == rewritten.charAt(rewritten.length() - 1 - s)) {
            s++;
        }
        this.prefix = p;
        this.suffix = s;
    }

    /** Gives every node of {@code plan} parsed from {@code rewritten} an origin in {@code original}. */
    static void remap(LogicalPlan plan, String original, String rewritten) {
        if (original.equals(rewritten)) {
            return;
        }
        new RewrittenOrigins(original, rewritten).walk(plan);
    }

    private void walk(LogicalPlan root) {
        Map<Object, Boolean> seen = new IdentityHashMap<>();
        Deque<TreeNode<?>> todo = new ArrayDeque<>();
        todo.push(root);
        while (!todo.isEmpty()) {
            TreeNode<?> node = todo.pop();
            if (seen.put(node, Boolean.TRUE) != null) {
                continue;
            }
            relocate(node);
            if (node instanceof LogicalPlan) {
                ((LogicalPlan) node).setTagValue(TAG, original);
                for (Expression e : CollectionConverters.asJava(((LogicalPlan) node).expressions())) {
                    todo.push(e);
                }
            }
            if (node instanceof SubqueryExpression) {
                todo.push(((SubqueryExpression) node).plan());
            }
            // Every node the parser made, wherever its parent keeps it: children, inner
            // children, and fields such as a WINDOW clause's map of named specifications.
            for (Object child : CollectionConverters.asJava(node.children())) {
                todo.push((TreeNode<?>) child);
            }
            for (TreeNode<?> inner : CollectionConverters.asJava(node.innerChildren())) {
                todo.push(inner);
            }
            scala.collection.Iterator<Object> fields = node.productIterator();
            while (fields.hasNext()) {
                collect(fields.next(), todo, 0);
            }
        }
    }

    private static void collect(Object value, Deque<TreeNode<?>> todo, int depth) {
        if (value instanceof TreeNode) {
            todo.push((TreeNode<?>) value);
        } else if (depth < 3 && value instanceof scala.collection.Iterable) {
            scala.collection.Iterator<?> items = ((scala.collection.Iterable<?>) value).iterator();
            while (items.hasNext()) {
                collect(items.next(), todo, depth + 1);
            }
        } else if (depth < 3 && value instanceof scala.Option) {
            scala.Option<?> option = (scala.Option<?>) value;
            if (option.isDefined()) {
                collect(option.get(), todo, depth + 1);
            }
        } else if (depth < 3 && value instanceof scala.Product2) {
            collect(((scala.Product2<?, ?>) value)._1(), todo, depth + 1);
            collect(((scala.Product2<?, ?>) value)._2(), todo, depth + 1);
        }
    }

    /**
     * The error for a rewritten statement Spark could not parse: CEP-MR-108 at the place of the
     * user's text the failure maps to, with Spark's reason; null for anything else.
     */
    static RuntimeException parseFailure(Throwable failure, String original, String rewritten) {
        if (!(failure instanceof ParseException) || original.equals(rewritten)) {
            return null;
        }
        ParseException e = (ParseException) failure;
        Origin at = e.start();
        int index = -1;
        if (at.line().isDefined() && at.startPosition().isDefined()) {
            index = 0;
            int line = (Integer) at.line().get();
            for (int l = 1; l < line && index >= 0; l++) {
                index = rewritten.indexOf('\n', index);
                index = index < 0 ? -1 : index + 1;
            }
            index = Math.max(0, index) + (Integer) at.startPosition().get();
        }
        int[] span = null;
        if (index >= 0) {
            index = Math.min(index, Math.max(0, rewritten.length() - 1));
            span = new RewrittenOrigins(original, rewritten).span(index, index);
        } else {
            // Some failures carry no position, only the token ("extra input 'p'"): its last
            // place in the user's text, where such an input is found.
            String token = e.getMessageParameters().getOrDefault("error", "");
            if (token.length() > 2 && token.startsWith("'") && token.endsWith("'")) {
                token = token.substring(1, token.length() - 1);
                int found = original.lastIndexOf(token);
                if (found >= 0) {
                    span = new int[] {found, found + token.length() - 1};
                }
            }
        }
        String why;
        try {
            why = SparkThrowableHelper.getMessage(e.getCondition(), e.getMessageParameters());
        } catch (RuntimeException unknown) {
            why = e.getCondition();
        }
        why = why.replaceFirst("^\\[[A-Z_.]+\\] ", "").replaceFirst(" SQLSTATE: [0-9A-Z]+$", "");
        if (why.contains("__mr_")) {
            why = "a syntax error inside the rewritten MATCH_RECOGNIZE clause";
        }
        if (span == null) {
            return new IllegalArgumentException(PARSE_FAILED + ": Spark cannot parse the "
                + "statement: " + why);
        }
        return new IllegalArgumentException(PARSE_FAILED + ": "
            + RewrittenErrorsRule.where(original, span[0]) + "Spark cannot parse the statement: "
            + why + RewrittenErrorsRule.snippet(original, span[0], span[1]));
    }

    /** The code of a statement Spark cannot parse once its clauses are rewritten. */
    static final String PARSE_FAILED = "CEP-MR-108";

    /** Writes the user-text origin into a node that was parsed from the rewritten text. */
    private void relocate(TreeNode<?> node) {
        Origin origin = node.origin();
        if (ORIGIN == null || !rewritten.equals(text(origin.sqlText()))) {
            return;  // shared constants and nodes from elsewhere keep theirs
        }
        Object start = origin.startIndex().isDefined() ? origin.startIndex().get() : null;
        Object stop = origin.stopIndex().isDefined() ? origin.stopIndex().get() : null;
        if (!(start instanceof Integer)) {
            return;
        }
        int from = (Integer) start;
        int to = stop instanceof Integer ? (Integer) stop : from;
        int[] span = span(from, to);
        try {
            ORIGIN.set(node, copy(origin, span[0], span[1]));
        } catch (ReflectiveOperationException | RuntimeException refused) {
            // Leave the rewritten position: still an error, only less exact.
        }
    }

    /** The inclusive span in the user's text for the rewritten text's span {@code [from, to]}. */
    private int[] span(int from, int to) {
        int shift = rewritten.length() - original.length();
        int tailStart = rewritten.length() - suffix;
        int regionEnd = original.length() - suffix;
        if (from < prefix) {  // e.g. the whole statement: from its start to where it ends
            int end = to < prefix ? to : (to >= tailStart ? to - shift : regionEnd - 1);
            return new int[] {from, Math.max(from, end)};
        }
        if (from >= tailStart) {
            return new int[] {from - shift, Math.max(from, to) - shift};
        }
        String fragment = rewritten.substring(from, Math.min(rewritten.length(), Math.max(from, to) + 1));
        for (String name : names(fragment)) {
            int at = find(name, prefix, regionEnd);
            if (at >= 0) {
                return new int[] {at, at + name.length() - 1};
            }
        }
        return new int[] {prefix, Math.max(prefix, regionEnd - 1)};
    }

    /**
     * The names a rewritten fragment spells, in order, outside its string literals: those of
     * the rewrite ({@code __mr_...}) and SQL's words left out, so that the first one the user's
     * text has is a column or function the user wrote.
     */
    private static java.util.List<String> names(String fragment) {
        java.util.List<String> out = new java.util.ArrayList<>();
        Matcher m = NAME.matcher(fragment);
        char quote = 0;
        int scanned = 0;
        while (m.find()) {
            for (int i = scanned; i < m.start(); i++) {
                char c = fragment.charAt(i);
                if (quote != 0 && c == quote) {
                    quote = 0;
                } else if (quote == 0 && (c == '\'' || c == '"')) {
                    quote = c;
                }
            }
            scanned = m.end();
            String name = m.group();
            if (quote == 0 && !name.startsWith("__") && !WORDS.contains(name.toUpperCase(Locale.ROOT))) {
                out.add(name);
            }
        }
        return out;
    }

    /** The first place in {@code original[from, to)} that spells {@code name} as a word. */
    private int find(String name, int from, int to) {
        String lower = original.toLowerCase(Locale.ROOT);
        String target = name.toLowerCase(Locale.ROOT);
        char quote = 0;
        for (int i = from; i < to; i++) {
            char c = original.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
                continue;
            }
            if (c == '\'' || c == '"') {
                quote = c;
                continue;
            }
            if (lower.startsWith(target, i) && !word(i - 1) && !word(i + target.length())
                    && i + target.length() <= to) {
                return i;
            }
        }
        return -1;
    }

    private boolean word(int i) {
        if (i < 0 || i >= original.length()) {
            return false;
        }
        char c = original.charAt(i);
        return Character.isLetterOrDigit(c) || c == '_';
    }

    /** {@code origin} moved to {@code [start, stop]} of the user's text, other fields kept. */
    private Origin copy(Origin origin, int start, int stop) throws ReflectiveOperationException {
        int line = 1;
        int lineStart = 0;
        for (int i = 0; i < start && i < original.length(); i++) {
            if (original.charAt(i) == '\n') {
                line++;
                lineStart = i + 1;
            }
        }
        // By field name, so that Spark versions with more or fewer fields work alike.
        int arity = origin.productArity();
        Object[] args = new Object[arity];
        for (int i = 0; i < arity; i++) {
            String name = origin.productElementName(i);
            Object value = origin.productElement(i);
            switch (name) {
                case "line": value = Option.apply(line); break;
                case "startPosition": value = Option.apply(start - lineStart); break;
                case "startIndex": value = Option.apply(start); break;
                case "stopIndex": value = Option.apply(stop); break;
                case "sqlText": value = Option.apply(original); break;
                case "positionMapper": value = Option.empty(); break;
                default: break;
            }
            args[i] = value;
        }
        for (Constructor<?> c : Origin.class.getConstructors()) {
            if (c.getParameterCount() == arity) {
                return (Origin) c.newInstance(args);
            }
        }
        throw new NoSuchMethodException("Origin(" + arity + " fields)");
    }

    private static String text(Option<String> value) {
        return value.isDefined() ? value.get() : null;
    }

    private static Field originField() {
        try {
            Field f = TreeNode.class.getDeclaredField("origin");
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException | RuntimeException refused) {
            return null;
        }
    }
}
