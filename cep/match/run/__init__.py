"""Run: the engines that execute a compiled query on one partition (skip-till-next, any-match,
grouped, segments, closing windows) and ``find_matches``. May import every other room.
"""
