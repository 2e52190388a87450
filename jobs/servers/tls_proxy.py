"""A TLS front for a service that listens on loopback in clear text (Spark Connect's gRPC).

Spark 4.2's Connect service has no TLS of its own. With ``connect-server --tls`` the service
binds a free loopback port and this proxy listens where clients connect: it completes the TLS
handshake (TLS 1.2 or 1.3, ALPN ``h2`` as gRPC clients require), then copies bytes both ways
between the client and the service, which sees HTTP/2 in clear text from 127.0.0.1. The
proxy reads nothing it forwards: the token and every message stay gRPC's.

It runs an asyncio loop in one daemon thread of the server's Python process; the copy is a
64 KiB read and a write per chunk, so a result of many megabytes costs the loop a few
milliseconds per megabyte.

Example:
    >>> import socket, threading
    >>> backend = socket.create_server(("127.0.0.1", 0))
    >>> proxy = TlsProxy("127.0.0.1", 0, backend.getsockname()[1], None)  # no TLS: for tests
    >>> port = proxy.start()
    >>> with socket.create_connection(("127.0.0.1", port)) as client:
    ...     inner, _ = backend.accept()
    ...     client.sendall(b"ping")
    ...     inner.recv(4)
    b'ping'
    >>> inner.close(); proxy.stop(); backend.close()
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from pathlib import Path

__all__ = ["CHUNK", "HANDSHAKE_SECONDS", "TlsProxy", "server_context"]

CHUNK = 64 * 1024
"""Bytes read at a time from either side."""
HANDSHAKE_SECONDS = 30.0
"""How long a client may take to finish its TLS handshake (a stalled one is dropped)."""
START_SECONDS = 60.0
"""A bound for the loop thread to bind its socket, not a timing."""


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The proxy's TLS settings: ``cert``/``key`` (PEM), TLS 1.2 at least, ALPN ``h2``.

    Raises:
        ssl.SSLError, OSError: the files cannot be read or do not match.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    context.set_alpn_protocols(["h2"])
    return context


class TlsProxy:
    """Listens at ``host:port`` with TLS and forwards each connection to a loopback port.

    Args:
        host: The address clients connect to.
        port: Its port (0: a free one, returned by :meth:`start`).
        backend_port: The clear-text service's port on 127.0.0.1.
        context: :func:`server_context`; ``None`` forwards without TLS (the module's own
            tests of the copying).
    """

    def __init__(self, host: str, port: int, backend_port: int,
                 context: ssl.SSLContext | None) -> None:
        self.host, self.port, self.backend_port, self.context = host, port, backend_port, context
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Bind and serve in a daemon thread; returns the bound port.

        Raises:
            OSError: the address cannot be bound (the error of the bind itself).
        """
        ready: dict[str, object] = {}
        bound = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(asyncio.start_server(
                    self._forward, self.host, self.port, ssl=self.context,
                    ssl_handshake_timeout=HANDSHAKE_SECONDS if self.context else None,
                    limit=CHUNK))
                ready["port"] = self._server.sockets[0].getsockname()[1]
            except OSError as exc:
                ready["error"] = exc
                bound.set()
                loop.close()
                return
            bound.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="cep-tls-proxy", daemon=True)
        self._thread.start()
        if not bound.wait(START_SECONDS):
            raise OSError(f"the TLS proxy did not bind {self.host}:{self.port}")
        if "error" in ready:
            raise ready["error"]  # type: ignore[misc]
        self.port = int(ready["port"])  # type: ignore[arg-type]
        return self.port

    def stop(self) -> None:
        """Close the listener and every open connection; idempotent."""
        loop, server = self._loop, self._server
        if loop is None or loop.is_closed():
            return

        async def close() -> None:
            if server is not None:
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
            loop.stop()

        asyncio.run_coroutine_threadsafe(close(), loop)
        if self._thread is not None:
            self._thread.join(START_SECONDS)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: open the service's port and copy both ways until either
        side closes."""
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.backend_port,
                                                                 limit=CHUNK)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes from ``reader`` to ``writer`` until the end of the stream, then close ``writer``."""
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.CancelledError):
        pass  # the other side went away: closing ours is all there is to do
    finally:
        try:
            writer.close()
        except (ConnectionError, RuntimeError, ssl.SSLError):
            pass
