"""Columnar: the data the runs work on (the event stream, column values, bindings, buffers,
joins and ranges over sorted positions, match arrays). Imports only :mod:`cep.match.compile`
besides the package's shared modules.
"""
