package cep.sql;

import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Option;
import scala.Product;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * Refuses, in a server's sessions, the statements that reach past the warehouse (issue 21).
 *
 * <p>A check rule: Spark runs it on every analysed plan, before anything executes, so a refused
 * statement has done nothing. It is on only when the JVM was started with
 * {@code spark.cep.lockdown=true} (a Spark setting, which {@code SET} cannot change: {@code SET}
 * writes the SQL configuration, this rule reads the context's). It refuses
 *
 * <ul>
 *   <li>calls into arbitrary Java ({@code reflect}, {@code java_method}, {@code try_reflect}),
 *       which can read system properties or end the JVM;
 *   <li>statements that run programs or load code: {@code TRANSFORM ... USING}, {@code ADD JAR},
 *       {@code ADD FILE}, {@code ADD ARCHIVE}, {@code CREATE FUNCTION ... AS 'class'};
 *   <li>writes to a directory ({@code INSERT OVERWRITE DIRECTORY}), {@code LOAD DATA} and
 *       {@code ALTER TABLE ... SET LOCATION};
 *   <li>any path outside the allowed roots ({@code spark.cep.lockdown.paths}, comma-separated;
 *       the warehouse by default), wherever a plan holds one: a table's {@code LOCATION}, a
 *       {@code path} option, a file relation's root, a Delta table's path;
 *   <li>any data source outside {@link #SOURCES} (issue 46): a provider named in {@code USING},
 *       a reader's or writer's format, a class name; and whatever object of a JDBC package a
 *       plan holds (Spark's JDBC source opens connections, and the embedded Derby it reaches
 *       declares Java procedures);
 *   <li>{@code SET spark.sql.catalog.*}, which would load a catalog class of the client's choice.
 * </ul>
 *
 * <p>The check runs three times for each statement: on the parser's plan
 * ({@link LockdownParser}), before resolution ({@link Early}: a data source is resolved, and a
 * JDBC connection opened, inside the analyser, and a Connect client's reader reaches the
 * analyser without the parser) and on the analysed plan. {@link RefusingDialect} stands behind
 * all three: no JDBC connection opens in a locked JVM whatever route a plan took.
 *
 * <p>The error is a {@link SecurityException} whose message starts with {@code CEP-SQL-090}.
 * The rule knows no CEP semantics (DESIGN.md section 5); it only reads plans.
 */
public final class LockdownRule extends AbstractFunction1<LogicalPlan, BoxedUnit> {

    /** The Spark setting that turns the rule on (read from the context, not the session). */
    public static final String ENABLED = "spark.cep.lockdown";

    /** Comma-separated roots under which paths are allowed; the warehouse when unset. */
    public static final String PATHS = "spark.cep.lockdown.paths";

    /** The code every refusal's message starts with. */
    public static final String CODE = "CEP-SQL-090";

    /** Plan nodes refused whatever they hold, by simple class name, with what they do. */
    private static final Map<String, String> REFUSED = Map.ofEntries(
        Map.entry("CallMethodViaReflection", "reflect/java_method (calls into arbitrary Java)"),
        Map.entry("TryReflect", "try_reflect (calls into arbitrary Java)"),
        Map.entry("ScriptTransformation", "TRANSFORM ... USING (runs a program)"),
        Map.entry("AddJarsCommand", "ADD JAR (loads code)"),
        Map.entry("AddFilesCommand", "ADD FILE"),
        Map.entry("AddArchivesCommand", "ADD ARCHIVE"),
        Map.entry("CreateFunctionCommand", "CREATE FUNCTION ... AS 'class' (loads code)"),
        Map.entry("CreateFunction", "CREATE FUNCTION ... AS 'class' (loads code)"),
        Map.entry("InsertIntoDataSourceDirCommand", "INSERT OVERWRITE DIRECTORY"),
        Map.entry("InsertIntoHiveDirCommand", "INSERT OVERWRITE DIRECTORY"),
        Map.entry("LoadDataCommand", "LOAD DATA"),
        Map.entry("SetTableLocation", "ALTER TABLE ... SET LOCATION"),
        Map.entry("AlterTableSetLocationCommand", "ALTER TABLE ... SET LOCATION"));

    /**
     * The data sources a server's session may name, by Spark's short names (lower case). A class
     * name is refused even when it is one of these sources' own: the short name does the same.
     */
    public static final Set<String> SOURCES = Set.of(
        "delta", "parquet", "orc", "csv", "json", "text", "binaryfile", "xml");

    /** Field names whose string values name a data source. */
    private static final Set<String> SOURCE_KEYS = Set.of("provider", "format", "classname", "source");

    /** Option keys and field names whose values are paths. */
    private static final Set<String> PATH_KEYS = Set.of("path", "paths", "location", "locationuri");

    @Override
    public BoxedUnit apply(LogicalPlan plan) {
        check(plan);
        return BoxedUnit.UNIT;
    }

    /**
     * Throws when the lockdown is on and ``plan`` (parsed or analysed) does what the servers'
     * sessions may not; does nothing otherwise.
     */
    public static void check(LogicalPlan plan) {
        SparkEnv env = SparkEnv.get();
        SparkConf conf = env == null ? null : env.conf();
        if (conf == null || !conf.getBoolean(ENABLED, false)) {
            return;
        }
        RefusingDialect.install();
        checkCatalogs(conf);
        new Walk(roots(conf)).walk(plan);
    }

    /**
     * A catalog set by a client after the start ({@code spark.conf.set} of a Connect client
     * reaches the session's settings without a {@code SET} statement): refused at its first use.
     */
    private static void checkCatalogs(SparkConf conf) {
        scala.collection.Iterator<scala.Tuple2<String, String>> settings =
            org.apache.spark.sql.internal.SQLConf.get().getAllConfs().iterator();
        while (settings.hasNext()) {
            scala.Tuple2<String, String> setting = settings.next();
            String key = setting._1();
            if (key.toLowerCase(Locale.ROOT).startsWith("spark.sql.catalog.")
                    && !setting._2().equals(conf.get(key, null))) {
                throw refuse("the setting " + key + " (a catalog class of the client's choice)");
            }
        }
    }

    /**
     * The check as a rule of the analyser's hint batch, which runs before resolution: a data
     * source that a reader names, and a catalog, are resolved (and connect) in the resolution
     * batch, before a check rule could see them.
     */
    public static final class Early extends org.apache.spark.sql.catalyst.rules.Rule<LogicalPlan> {
        @Override
        public LogicalPlan apply(LogicalPlan plan) {
            check(plan);
            return plan;
        }
    }

    private static List<Path> roots(SparkConf conf) {
        String listed = conf.get(PATHS, conf.get("spark.sql.warehouse.dir", ""));
        List<Path> roots = new ArrayList<>();
        for (String part : listed.split(",")) {
            Path root = toPath(part.trim());
            if (root != null) {
                roots.add(root);
            }
        }
        return roots;
    }

    /** A local, absolute, normalised path for a path or a {@code file:} URI; null for "". */
    private static Path toPath(String text) {
        if (text.isEmpty()) {
            return null;
        }
        try {
            URI uri = new URI(text);
            if (uri.getScheme() != null && uri.getScheme().length() > 1) {
                if (!"file".equalsIgnoreCase(uri.getScheme())) {
                    // A remote file system is outside the local warehouse by definition.
                    return Paths.get("/", "\u0000remote", uri.getScheme());
                }
                return Paths.get(uri.getPath()).toAbsolutePath().normalize();
            }
        } catch (java.net.URISyntaxException | IllegalArgumentException notUri) {
            // A plain path with characters a URI does not allow.
        }
        try {
            return Paths.get(text).toAbsolutePath().normalize();
        } catch (java.nio.file.InvalidPathException bad) {
            return Paths.get("/", "\u0000invalid");
        }
    }

    private static SecurityException refuse(String what) {
        return new SecurityException(CODE + ": " + what
            + " is not allowed in the server's sessions (docs/bi.md, 'What a session may do')");
    }

    /** One walk over a plan and everything it holds, each object visited once. */
    private static final class Walk {
        private final List<Path> roots;
        private final Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());

        Walk(List<Path> roots) {
            this.roots = roots;
        }

        /** Visits ``plan`` and everything it holds, iteratively (plans nest deeply). */
        void walk(Object plan) {
            java.util.ArrayDeque<Object> pending = new java.util.ArrayDeque<>();
            pending.push(plan);
            while (!pending.isEmpty()) {
                Object value = pending.pop();
                if (value instanceof CharSequence || value instanceof Number || value instanceof Boolean
                        || value instanceof org.apache.spark.sql.catalyst.InternalRow || !seen.add(value)) {
                    continue;
                }
                String name = value.getClass().getSimpleName();
                String refused = REFUSED.get(name);
                if (refused != null) {
                    throw refuse(refused);
                }
                checkClass(value);
                if ("SetCommand".equals(name)) {
                    checkSet((Product) value);
                }
                checkLocations(value);
                if (value instanceof Option) {
                    Option<?> option = (Option<?>) value;
                    if (option.isDefined()) {
                        pending.push(option.get());
                    }
                } else if (value instanceof scala.collection.Map) {
                    scala.collection.Iterator<?> entries = ((scala.collection.Map<?, ?>) value).iterator();
                    while (entries.hasNext()) {
                        scala.Tuple2<?, ?> entry = (scala.Tuple2<?, ?>) entries.next();
                        Object key = entry._1();
                        if (key instanceof String
                                && PATH_KEYS.contains(((String) key).toLowerCase(Locale.ROOT))) {
                            checkPathText(String.valueOf(entry._2()));
                        }
                        pending.push(entry._2());
                    }
                } else if (value instanceof scala.collection.Iterable) {
                    checkIdentifier((scala.collection.Iterable<?>) value);
                    scala.collection.Iterator<?> items = ((scala.collection.Iterable<?>) value).iterator();
                    while (items.hasNext()) {
                        Object item = items.next();
                        if (item != null) {
                            pending.push(item);
                        }
                    }
                } else if (value instanceof Product && isCatalyst(value)) {
                    Product product = (Product) value;
                    for (int i = 0; i < product.productArity(); i++) {
                        Object field = product.productElement(i);
                        if (field == null) {
                            continue;
                        }
                        String fieldName = product.productElementName(i).toLowerCase(Locale.ROOT);
                        if (PATH_KEYS.contains(fieldName)) {
                            checkPathField(field);
                        }
                        if (SOURCE_KEYS.contains(fieldName)) {
                            checkSourceField(field);
                        }
                        pending.push(field);
                    }
                    if (value instanceof org.apache.spark.sql.catalyst.plans.QueryPlan) {
                        // A command's query may be an inner child rather than a field.
                        pending.push(((org.apache.spark.sql.catalyst.plans.QueryPlan<?>) value).innerChildren());
                    }
                }
            }
        }

        /** Whether ``value`` is one of Spark's or Delta's own structures (worth walking). */
        private boolean isCatalyst(Object value) {
            String name = value.getClass().getName();
            return name.startsWith("org.apache.spark.") || name.startsWith("io.delta.")
                || name.startsWith("scala.Tuple") || name.startsWith("scala.Some");
        }

        /**
         * Refuses objects of Spark's JDBC packages (a JDBC relation, table, catalog or provider
         * instance, whichever spelling put it into the plan) and Python data sources.
         */
        private void checkClass(Object value) {
            String name = value.getClass().getName();
            if (name.startsWith("org.apache.spark.sql.") && name.contains(".jdbc.")) {
                throw refuse("a JDBC data source (it connects to another database)");
            }
            if (name.startsWith("org.apache.spark.sql.execution.datasources.v2.python.")
                    || name.startsWith("org.apache.spark.sql.execution.python.UserDefinedPythonDataSource")) {
                throw refuse("a Python data source (it runs code of the client's choice)");
            }
        }

        /** {@code SET key=value}: a catalog's class may not be chosen by a client. */
        private void checkSet(Product command) {
            Object kv = command.productElement(0);
            if (kv instanceof Option && ((Option<?>) kv).isDefined()
                    && ((Option<?>) kv).get() instanceof scala.Tuple2) {
                Object key = ((scala.Tuple2<?, ?>) ((Option<?>) kv).get())._1();
                if (key instanceof String
                        && ((String) key).trim().toLowerCase(Locale.ROOT).startsWith("spark.sql.catalog.")) {
                    throw refuse("SET " + key + " (a catalog class of the client's choice)");
                }
            }
        }

        /** A field that names a data source: a string, or a string in an Option. */
        private void checkSourceField(Object field) {
            if (field instanceof Option && ((Option<?>) field).isDefined()) {
                checkSourceField(((Option<?>) field).get());
            } else if (field instanceof String) {
                String source = ((String) field).trim().toLowerCase(Locale.ROOT);
                if (!SOURCES.contains(source)) {
                    throw refuse("the data source '" + field + "' (allowed: "
                        + String.join(", ", new java.util.TreeSet<>(SOURCES)) + ")");
                }
            }
        }

        /** Checks the paths the structures that name one hold, by their accessors. */
        private void checkLocations(Object value) {
            if (value instanceof org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat) {
                Option<URI> uri = ((org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat) value).locationUri();
                if (uri.isDefined()) {
                    checkPathText(uri.get().toString());
                }
            } else if (value instanceof org.apache.spark.sql.catalyst.plans.logical.TableSpecBase) {
                Option<String> location = ((org.apache.spark.sql.catalyst.plans.logical.TableSpecBase) value).location();
                if (location.isDefined()) {
                    checkPathText(location.get());
                }
            } else if (value instanceof org.apache.spark.sql.execution.datasources.FileIndex) {
                scala.collection.Iterator<org.apache.hadoop.fs.Path> paths =
                    ((org.apache.spark.sql.execution.datasources.FileIndex) value).rootPaths().iterator();
                while (paths.hasNext()) {
                    checkPathText(paths.next().toString());
                }
            } else if (value instanceof org.apache.hadoop.fs.Path || value instanceof URI) {
                // Delta's table objects hold their path as a Hadoop Path field: found here.
                checkPathText(value.toString());
            }
        }

        /** A field named like a path: a string, or strings in an Option or a collection. */
        private void checkPathField(Object field) {
            if (field instanceof String) {
                checkPathText((String) field);
            } else if (field instanceof Option && ((Option<?>) field).isDefined()) {
                checkPathField(((Option<?>) field).get());
            } else if (field instanceof scala.collection.Iterable) {
                scala.collection.Iterator<?> items = ((scala.collection.Iterable<?>) field).iterator();
                while (items.hasNext()) {
                    Object item = items.next();
                    if (item instanceof String) {
                        checkPathText((String) item);
                    }
                }
            }
        }

        /**
         * A parsed plan names a file by a multi-part identifier ({@code delta.`/a/b`},
         * {@code parquet.`file:/a`}): a sequence of strings whose last part is a path.
         */
        private void checkIdentifier(scala.collection.Iterable<?> parts) {
            if (parts.size() < 2) {
                return;
            }
            Object last = parts.last();
            if (last instanceof String) {
                String text = (String) last;
                if (text.startsWith("/") || text.matches("^[A-Za-z][A-Za-z0-9+.-]*:.*")) {
                    checkPathText(text);
                }
            }
        }

        private void checkPathText(String text) {
            Path path = toPath(text);
            if (path == null) {
                return;
            }
            for (Path root : roots) {
                if (path.startsWith(root)) {
                    return;
                }
            }
            throw refuse("the path '" + text + "' (outside the warehouse)");
        }
    }
}
