"""JVM options for the short-lived Java processes the tests start (job children, the Connect
and Thrift servers, beeline): one place, so a fix reaches every one of them."""

from __future__ import annotations

# C1 alone starts a test JVM ~35 % faster (crash tests: 11 s -> 7 s to a ready session); what
# it computes is the same. Without C2 the JVM reserves only a 48 MB code cache, and a Connect
# server that ran the whole module's queries filled it: the JVM then printed "CodeCache is
# full. Compiler has been disabled." on stdout and a test reading the server's last lines
# failed (stop 64's CI). 240 MB is the tiered default; reserved address space, not memory.
FAST_START: str = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
