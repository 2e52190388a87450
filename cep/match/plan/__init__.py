"""Plan: how a compiled shape runs on the data (join units, late events, cost estimates from
the data's sizes, ``explain``). Imports compile and columnar, never run.
"""
