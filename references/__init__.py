"""Kernel modules of the workshop book: references/ holds the solutions, kernels/ your starters
(derived from references/ by tools/make_starters.py; same names, same API)."""

import os as _os

if _os.environ.get("TRITON_INTERPRET") == "1":
    # Under Triton's CPU interpreter, work around its numpy >= 2.3 bug (see _interpreter.py)
    # for any use of these modules, not only through the notebooks and the checks.
    from ._interpreter import patch_numpy_index as _patch_numpy_index

    _patch_numpy_index()
