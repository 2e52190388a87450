package cep.sql;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TServerTransport;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;

/**
 * Keeps the JDBC server (HiveServer2's binary Thrift service) serving under hostile clients
 * (issue 46). It holds no CEP semantics: it only watches connections.
 *
 * <p>HiveServer2 gives every connection a worker thread (500 at most) from the moment it is
 * accepted, and its login (the SASL handshake) reads with no timeout: 505 connections that
 * never log in took every thread, and every later client waited forever. And a statement that
 * a client runs synchronously (PyHive, ODBC drivers) runs in that client's worker thread, which
 * reads nothing until the statement ends, so a killed client's query ran on to its end. The
 * guard, installed on the started service:
 *
 * <ul>
 *   <li>gives each accepted connection a read timeout until it has logged in (the login
 *       timeout), lifted once the handshake is done;
 *   <li>caps the connections still logging in: beyond the cap, the oldest one is closed, so
 *       connections that idle at the door cannot crowd out a client that logs in at once;
 *   <li>watches the logged-in connections (every {@code watchMs}) in the kernel's table of TCP
 *       connections ({@code /proc/net/tcp}, {@code /proc/net/tcp6}): a connection whose client
 *       has gone (no longer ESTABLISHED) has its session closed, which cancels its running
 *       statements (their Spark job groups), whatever thread runs them.
 * </ul>
 */
public final class ThriftGuard {

    private static final String ESTABLISHED = "01";

    private final Object cliService;
    private final Method closeSession;
    private final int port;
    private final int loginTimeoutMs;
    private final int maxPending;
    /** Connections accepted and not yet logged in, oldest first. */
    private final Map<Socket, Long> pending = new LinkedHashMap<>();
    /** Logged-in connections by their server context. */
    private final Map<ServerContext, Socket> live = new ConcurrentHashMap<>();
    private final AtomicLong evicted = new AtomicLong();
    private final AtomicLong closedSessions = new AtomicLong();
    private volatile boolean stopped;

    private ThriftGuard(Object cliService, int port, int loginTimeoutMs, int maxPending)
            throws ReflectiveOperationException {
        this.cliService = cliService;
        this.closeSession = cliService.getClass().getMethod(
            "closeSession", Class.forName("org.apache.hive.service.cli.SessionHandle"));
        this.port = port;
        this.loginTimeoutMs = loginTimeoutMs;
        this.maxPending = maxPending;
    }

    /**
     * Puts a guard on a started {@code ThriftBinaryCLIService} and returns it.
     *
     * @param thriftService the service's binary Thrift child (HiveThriftServer2's)
     * @param loginTimeoutMs how long a connection may take to log in
     * @param maxPending how many connections may be logging in at once
     * @param watchMs how often gone clients are looked for (0: never)
     */
    public static ThriftGuard install(Object thriftService, int loginTimeoutMs, int maxPending,
                                      int watchMs) throws ReflectiveOperationException {
        TServer server = (TServer) field(thriftService.getClass(), "server").get(thriftService);
        Object cli = field(thriftService.getClass(), "cliService").get(thriftService);
        Field transportField = field(TServer.class, "serverTransport_");
        TServerTransport original = (TServerTransport) transportField.get(server);
        int port = ((TServerSocket) original).getServerSocket().getLocalPort();
        ThriftGuard guard = new ThriftGuard(cli, port, loginTimeoutMs, maxPending);
        // The accept loop reads this field for every connection.
        transportField.set(server, guard.new Door(original));
        server.setServerEventHandler(guard.new Watch(server.getEventHandler()));
        if (watchMs > 0) {
            Thread watcher = new Thread(() -> guard.watch(watchMs), "cep-thrift-guard");
            watcher.setDaemon(true);
            watcher.start();
        }
        return guard;
    }

    /** Connections that are logging in now. */
    public int pendingCount() {
        synchronized (pending) {
            purge();
            return pending.size();
        }
    }

    /** Connections closed because more than the cap were logging in. */
    public long evictedCount() {
        return evicted.get();
    }

    /** Sessions closed because their client had gone. */
    public long closedSessionCount() {
        return closedSessions.get();
    }

    /** Stops watching (the server is stopping). */
    public void stop() {
        stopped = true;
    }

    private static Field field(Class<?> start, String name) throws NoSuchFieldException {
        for (Class<?> at = start; at != null; at = at.getSuperclass()) {
            try {
                Field found = at.getDeclaredField(name);
                found.setAccessible(true);
                return found;
            } catch (NoSuchFieldException next) {
                // look in the superclass
            }
        }
        throw new NoSuchFieldException(start.getName() + "." + name);
    }

    /** The socket under a transport (SASL and TLS wrap a TSocket), or null. */
    private static Socket socketOf(TTransport transport) {
        TTransport at = transport;
        for (int depth = 0; at != null && depth < 8; depth++) {
            if (at instanceof TSocket) {
                return ((TSocket) at).getSocket();
            }
            // SASL's transport class is not public in libthrift 0.16: its accessor by name.
            try {
                Method under = at.getClass().getMethod("getUnderlyingTransport");
                under.setAccessible(true);
                at = (TTransport) under.invoke(at);
            } catch (ReflectiveOperationException | RuntimeException notWrapping) {
                return null;
            }
        }
        return null;
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already gone
        }
    }

    /** Drops the sockets that were closed (a failed login) from {@link #pending}. */
    private void purge() {
        pending.keySet().removeIf(Socket::isClosed);
    }

    private void accepted(Socket socket) {
        try {
            socket.setSoTimeout(loginTimeoutMs);
        } catch (IOException gone) {
            return;
        }
        List<Socket> out = new ArrayList<>();
        synchronized (pending) {
            purge();
            pending.put(socket, System.nanoTime());
            Iterator<Socket> oldest = pending.keySet().iterator();
            while (pending.size() > maxPending && oldest.hasNext()) {
                out.add(oldest.next());
                oldest.remove();
            }
        }
        for (Socket socket1 : out) {
            evicted.incrementAndGet();
            closeQuietly(socket1);
        }
    }

    private void loggedIn(Socket socket) {
        synchronized (pending) {
            pending.remove(socket);
        }
        try {
            socket.setSoTimeout(0);  // a logged-in client may idle between statements
        } catch (IOException gone) {
            // the worker finds out itself
        }
    }

    private void watch(int watchMs) {
        while (!stopped) {
            try {
                Thread.sleep(watchMs);
                sweep();
            } catch (InterruptedException stop) {
                return;
            } catch (RuntimeException | IOException | ReflectiveOperationException failed) {
                // A transient failure (a /proc read racing a closing socket): try again.
            }
        }
    }

    /** Closes the sessions of logged-in connections whose client has gone. */
    void sweep() throws IOException, ReflectiveOperationException {
        if (live.isEmpty()) {
            return;
        }
        Map<ServerContext, Socket> snapshot = new LinkedHashMap<>(live);
        Set<Integer> established = establishedPeers();
        if (established == null) {
            return;  // no kernel table to read (not Linux): the watch is off
        }
        for (Map.Entry<ServerContext, Socket> entry : snapshot.entrySet()) {
            Socket socket = entry.getValue();
            if (socket.isClosed() || established.contains(socket.getPort())) {
                continue;
            }
            live.remove(entry.getKey());
            Method getter = entry.getKey().getClass().getMethod("getSessionHandle");
            getter.setAccessible(true);
            Object handle = getter.invoke(entry.getKey());
            if (handle != null) {
                // A statement run synchronously joins its session's operations only when it
                // ends, so closing the session alone would not stop it: cancel it first.
                cancelRunning(handle);
                try {
                    closeSession.invoke(cliService, handle);
                    closedSessions.incrementAndGet();
                } catch (java.lang.reflect.InvocationTargetException alreadyClosed) {
                    // the worker closed it first
                }
            }
            closeQuietly(socket);
        }
    }

    /** Cancels the running operations of session ``handle`` (their Spark job groups). */
    private void cancelRunning(Object handle) throws ReflectiveOperationException {
        Object sessions = call(cliService, "getSessionManager");
        Object operations = call(sessions, "getOperationManager");
        Map<?, ?> byHandle = (Map<?, ?>) field(operations.getClass(), "handleToOperation").get(operations);
        List<Object> ours = new ArrayList<>();
        synchronized (operations) {  // the manager guards its map with its own monitor
            for (Object operation : byHandle.values()) {
                Object session = call(operation, "getParentSession");
                if (handle.equals(call(session, "getSessionHandle"))
                        && Boolean.TRUE.equals(call(operation, "isRunning"))) {
                    ours.add(call(operation, "getHandle"));
                }
            }
        }
        for (Object operation : ours) {
            try {
                cliService.getClass().getMethod("cancelOperation", operation.getClass())
                    .invoke(cliService, operation);
            } catch (java.lang.reflect.InvocationTargetException finished) {
                // it ended meanwhile
            }
        }
    }

    private static Object call(Object target, String method) throws ReflectiveOperationException {
        Method found = target.getClass().getMethod(method);
        found.setAccessible(true);
        return found.invoke(target);
    }

    /** Remote ports of the ESTABLISHED connections to this server's port; null without /proc. */
    private Set<Integer> establishedPeers() throws IOException {
        Set<Integer> peers = new HashSet<>();
        boolean any = false;
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            Path path = Paths.get(table);
            if (!Files.isReadable(path)) {
                continue;
            }
            any = true;
            for (String line : Files.readAllLines(path)) {
                String[] parts = line.trim().split("\\s+");
                if (parts.length < 4 || !parts[1].contains(":")) {
                    continue;
                }
                int local = Integer.parseInt(parts[1].substring(parts[1].lastIndexOf(':') + 1), 16);
                if (local == port && ESTABLISHED.equals(parts[3].toUpperCase(Locale.ROOT))) {
                    peers.add(Integer.parseInt(parts[2].substring(parts[2].lastIndexOf(':') + 1), 16));
                }
            }
        }
        return any ? peers : null;
    }

    /** The listening socket, handing each accepted connection to the guard first. */
    private final class Door extends TServerTransport {
        private final TServerTransport inner;

        Door(TServerTransport inner) {
            this.inner = inner;
        }

        @Override
        public void listen() throws TTransportException {
            inner.listen();
        }

        @Override
        public TTransport accept() throws TTransportException {
            TTransport client = inner.accept();
            Socket socket = socketOf(client);
            if (socket != null) {
                accepted(socket);
            }
            return client;
        }

        @Override
        public void close() {
            stopped = true;
            inner.close();
        }

        @Override
        public void interrupt() {
            inner.interrupt();
        }
    }

    /** The service's own event handler, told first when a connection has logged in or ended. */
    private final class Watch implements TServerEventHandler {
        private final TServerEventHandler inner;

        Watch(TServerEventHandler inner) {
            this.inner = inner;
        }

        @Override
        public void preServe() {
            if (inner != null) {
                inner.preServe();
            }
        }

        @Override
        public ServerContext createContext(TProtocol input, TProtocol output) {
            // Called once the transport is open: the login is done.
            Socket socket = socketOf(input.getTransport());
            if (socket != null) {
                loggedIn(socket);
            }
            ServerContext context = inner == null ? null : inner.createContext(input, output);
            if (context != null && socket != null) {
                live.put(context, socket);
            }
            return context;
        }

        @Override
        public void deleteContext(ServerContext context, TProtocol input, TProtocol output) {
            if (context != null) {
                live.remove(context);
            }
            if (inner != null) {
                inner.deleteContext(context, input, output);
            }
        }

        @Override
        public void processContext(ServerContext context, TTransport input, TTransport output) {
            if (inner != null) {
                inner.processContext(context, input, output);
            }
        }
    }
}
