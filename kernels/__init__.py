"""Kernel modules of the workshop book: references/ holds the solutions, kernels/ your starters
(derived from references/ by tools/make_starters.py; same names, same API)."""
