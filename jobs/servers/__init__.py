"""The SQL servers for tools outside Python, and what they share.

- :mod:`~jobs.servers.server`: the Thrift (JDBC/ODBC) server for BI tools
  (``python -m jobs serve``).
- :mod:`~jobs.servers.connect_server`: the Spark Connect server (``python -m jobs
  connect-server``).
- :mod:`~jobs.servers.listener`: host/port checks, the port probe before the JVM starts, and
  serving until SIGTERM/SIGINT.

Both servers have a ``serve`` and a ``start_server``; use them through their modules.
"""

from __future__ import annotations

from jobs.servers import connect_server, listener, server
from jobs.servers.connect_server import ConnectServer, load_connect_conf
from jobs.servers.server import ThriftServer, load_server_conf

__all__ = ["server", "connect_server", "listener", "ThriftServer", "ConnectServer",
           "load_server_conf", "load_connect_conf"]
