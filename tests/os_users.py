"""An unprivileged local OS user for the servers' tests (issue 21), and the statements a server's
session must refuse.

The servers' promise is about other people on the same machine: a local user who is not the
server's cannot read its secrets, cannot connect without credentials, and with credentials
cannot reach past the warehouse. :func:`probe_user` makes such a user (``cep-probe``, a system
account without a home or a login shell) when the tests run as root and it is missing; without
root and without the account, the tests that need it are skipped with the reason.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

NAME = "cep-probe"


@dataclass(frozen=True)
class ProbeUser:
    """An OS user other than the tests' own, and a folder it owns for its files."""

    name: str
    uid: int
    gid: int
    home: Path

    def run(self, args: list[str], *, env: dict[str, str] | None = None, timeout: float = 300
            ) -> subprocess.CompletedProcess:
        """``args`` run as this user (from its folder), output captured as text."""
        return subprocess.run(args, user=self.uid, group=self.gid, extra_groups=[],
                              cwd=self.home, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)


BEELINE_CLASS = "org.apache.hive.beeline.BeeLine"


def reachable_beeline(user: ProbeUser) -> list[str]:
    """beeline's command line for ``user``, from a folder that user can reach.

    pyspark's own ``bin/beeline`` lies inside the checkout's virtual environment, which another
    user cannot traverse when the checkout sits under a private folder (``mktemp -d`` makes
    one of mode 0700; issue 46). The wheel's jars are hard-linked (copied across file systems,
    or when a jar is not world-readable) into the user's folder, and the JDK's ``java`` runs
    beeline's main class from there, as ``bin/beeline`` does through ``spark-class``.
    """
    import pyspark

    target = user.home / "beeline-jars"
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(prefix="jars-", dir=user.home))
        for jar in sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")):
            if jar.stat().st_mode & 0o004:
                try:
                    os.link(jar, staging / jar.name)
                    continue
                except OSError:  # another file system
                    pass
            shutil.copyfile(jar, staging / jar.name)
        staging.chmod(0o755)
        staging.rename(target)
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("no `java` on PATH for the other user's beeline")
    return [os.path.realpath(java), "-cp", f"{target}/*", BEELINE_CLASS]


def probe_user() -> ProbeUser | None:
    """The unprivileged user, created if the tests run as root; None when unavailable."""
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        if os.geteuid() != 0 or shutil.which("useradd") is None:
            return None
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", NAME], check=True, capture_output=True, timeout=60)
        entry = pwd.getpwnam(NAME)
    if os.geteuid() != 0:  # switching to the user needs root
        return None
    # /tmp itself: pytest's own temporary folders are private to the tests' user.
    home = Path(tempfile.mkdtemp(prefix="cep-probe-"))
    os.chown(home, entry.pw_uid, entry.pw_gid)
    return ProbeUser(NAME, entry.pw_uid, entry.pw_gid, home)


REFUSED_SQL = {
    # what a user of a shared host tried (issue 21's probe), each must give CEP-SQL-090
    "read /etc/shadow": "SELECT count(*) FROM text.`/etc/shadow`",
    "re-enable file SQL, then read": "SET spark.sql.runSQLOnFiles=true; "
                                     "SELECT count(*) FROM text.`/etc/shadow`",
    "the server's OS user": "SELECT reflect('java.lang.System', 'getProperty', 'user.name')",
    "stop the JVM": "SELECT java_method('java.lang.System', 'exit', 0)",
    "write a directory": "INSERT OVERWRITE DIRECTORY '{outside}/written' USING text SELECT 'x'",
    "a table outside": "CREATE TABLE cep_probe_outside (x INT) USING delta "
                       "LOCATION '{outside}/table'",
    "a path option": "CREATE TEMPORARY VIEW cep_probe_v USING text OPTIONS (path '/etc/shadow')",
    "run a program": "SELECT TRANSFORM(1) USING 'touch {outside}/ran' AS (a)",
    "load code": "ADD JAR '{outside}/x.jar'",
    "vacuum a path": "VACUUM '{outside}'",
    # issue 46: Spark's JDBC source opens the embedded Derby, whose SQL declares Java procedures
    # (`create 'true'` reaches Derby as a connection property: a `;` would split the entry)
    "a JDBC view on Derby": "CREATE TEMPORARY VIEW cep_probe_j USING jdbc OPTIONS "
                            "(url 'jdbc:derby:{outside}/db', create 'true', query 'VALUES 1', "
                            "sessionInitStatement "
                            "'CREATE TABLE CEP_PROBE (X INT)')",
    "a JDBC table": "CREATE TABLE cep_probe_jt USING JDBC OPTIONS "
                    "(url 'jdbc:derby:{outside}/db2', create 'true', dbtable 'SYS.SYSTABLES')",
    "JDBC by its class name": "CREATE TEMPORARY VIEW cep_probe_jc USING "
                              "org.apache.spark.sql.execution.datasources.jdbc."
                              "JdbcRelationProvider OPTIONS (url 'jdbc:derby:{outside}/db3', "
                              "create 'true', dbtable 'SYS.SYSTABLES')",
    "a JDBC catalog": "SET spark.sql.catalog.cep_probe=org.apache.spark.sql.execution."
                      "datasources.v2.jdbc.JDBCTableCatalog",
    "a JDBC table as select": "CREATE TABLE cep_probe_jw USING jdbc OPTIONS "
                              "(url 'jdbc:derby:{outside}/db4', create 'true', dbtable 'T') "
                              "AS SELECT 1 AS x",
}
"""Statements a server's session refuses with ``CEP-SQL-090``, ``{outside}`` a folder outside
the warehouse that must stay empty. One entry may hold two statements (the first allowed)."""
