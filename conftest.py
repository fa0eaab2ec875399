"""Repository-wide pytest setup: a fixed, printed seed for every check run in the suite.

Check runs from the command line and from notebooks draw fresh random inputs every time; the
test suite pins CHECKS_SEED (override it to explore) so a failure can be replayed exactly.
"""

import os

os.environ.setdefault("CHECKS_SEED", "20261130")
# Kernels under test run on the CPU interpreter unless a GPU is present and asked for.
os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_report_header(config):
    return f"CHECKS_SEED={os.environ['CHECKS_SEED']} (set CHECKS_SEED to replay another seed)"
