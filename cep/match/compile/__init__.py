"""Compile: pattern text to the matcher's frozen program (normal form, predicates, shapes,
the plan choices that need no data). Imports no other room of :mod:`cep.match`.

The compile / columnar / plan / run rooms import one way only (``tests/cep/test_layering.py``):
compile knows nothing of the data; columnar reads data through compiled expressions; plan
chooses how to run a shape on the data; run executes.
"""
