package cep.sql;

import java.lang.reflect.Field;
import java.sql.Connection;

import org.apache.spark.sql.execution.datasources.jdbc.JDBCOptions;
import org.apache.spark.sql.jdbc.JdbcDialect;
import org.apache.spark.sql.jdbc.JdbcDialects$;
import scala.Function1;

/**
 * The one JDBC dialect of a locked JVM: it claims every URL and opens no connection (issue 46).
 *
 * <p>Every JDBC path of Spark (the V1 relation, the V2 catalog and table, reads and writes)
 * asks the dialect that {@code JdbcDialects.get(url)} returns for its connection factory. With
 * the built-in dialects unregistered and this one in their place, a JDBC URL that got past
 * {@link LockdownRule}'s plan checks still connects nowhere. It is installed once, the first
 * time the lockdown checks a plan, and never in an unlocked JVM.
 */
public final class RefusingDialect extends JdbcDialect {

    private static final long serialVersionUID = 1L;
    private static volatile boolean installed;

    @Override
    public boolean canHandle(String url) {
        return true;
    }

    @Override
    public Function1<Object, Connection> createConnectionFactory(JDBCOptions options) {
        throw new SecurityException(LockdownRule.CODE + ": a JDBC connection is not allowed in "
            + "the server's sessions (docs/bi.md, 'What a session may do')");
    }

    /** Puts this dialect in place of every registered one (once per JVM). */
    static synchronized void install() {
        if (installed) {
            return;
        }
        JdbcDialects$ registry = JdbcDialects$.MODULE$;
        try {
            Field field = JdbcDialects$.class.getDeclaredField("dialects");
            field.setAccessible(true);
            scala.collection.Iterator<?> known = ((scala.collection.Iterable<?>) field.get(null)).iterator();
            while (known.hasNext()) {
                registry.unregisterDialect((JdbcDialect) known.next());
            }
        } catch (ReflectiveOperationException | RuntimeException layoutChanged) {
            // A Spark whose registry is laid out otherwise: the plan checks still refuse JDBC,
            // and this dialect, registered first, answers for every URL no other dialect claims.
        }
        registry.registerDialect(new RefusingDialect());
        installed = true;
    }
}
