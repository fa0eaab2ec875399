"""Benchmark variants of the split softmax workshop (issue 7).

`split_softmax(x)` (three launches) against `torch.softmax` and a copy, 8 / 64 / 1024 rows x
32768 / 131072 / 262144, float16, bfloat16 and float32. Bytes are counted both ways: the
problem's bytes are one read and one write per element (what every softmax must move, and
what the goals use); ours also declares its real traffic, x read twice (statistics pass and
normalization pass) plus y written, plus the (rows, chunks) float32 statistics.
"""

from __future__ import annotations

from benchmarks._common import ITEMSIZE, Goal, Plot, impl_configs, row_softmax_problem
from benchmarks.harness import OURS, Provider

WORKSHOP = "split_softmax"
DTYPES = ("float16", "bfloat16", "float32")
ROWS = (8, 64, 1024)
WIDTHS = (32768, 131072, 262144)

GOALS = [
    Goal("8 x 131072: >= 5x torch.softmax", "speedup", 5.0,
         lambda p: (p["rows"], p["width"]) == (8, 131072), against="torch.softmax"),
    Goal("64 x 131072: >= 1.3x torch.softmax", "speedup", 1.3,
         lambda p: (p["rows"], p["width"]) == (64, 131072), against="torch.softmax"),
    Goal("large shapes (1024 rows): >= 0.57 of the copy bandwidth, counted as one read and one "
         "write per element", "of_ceiling", 0.57, lambda p: p["rows"] == 1024),
]
PLOTS = [Plot("bandwidth", "forward", x="width", panels=("dtype",), series=("rows",),
              title="split softmax: bandwidth (one read + one write) against row width")]


def _shapes(scale: str):
    if scale == "dry":
        return [(2, 100, "float32"), (3, 64, "float16"), (1, 257, "bfloat16")]
    if scale == "quick":
        return [(r, 131072, d) for d in ("float16", "float32") for r in ROWS]
    return [(r, w, d) for d in DTYPES for r in ROWS for w in WIDTHS]


def _ours(impl, rows: int, width: int, dtype: str, knobs: dict) -> Provider:
    itemsize = ITEMSIZE[dtype]
    chunk = knobs.get("chunk") or _default_chunk(impl, rows, width)
    chunks = -(-width // chunk) if chunk else None
    provider = Provider("ours", OURS, lambda t: impl.split_softmax(t["x"], **knobs),
                        knobs=dict(knobs))
    if chunks:
        provider.bytes_moved = 3 * rows * width * itemsize + 2 * rows * chunks * 4 * 2
        provider.bytes_moved_formula = (
            f"3 * rows * width * {itemsize} + 2 * rows * chunks * 4 * 2 (x read twice, y "
            f"written; m and s (rows, chunks={chunks}) float32 written and read)")
    return provider


def _default_chunk(impl, rows, width):
    default_chunk = getattr(impl, "default_chunk", None)
    if default_chunk is None:
        return None
    try:
        import torch

        sms = torch.cuda.get_device_properties(0).multi_processor_count \
            if torch.cuda.is_available() else 132
        return default_chunk(rows, width, sms)
    except Exception:  # noqa: BLE001 - only used to declare the traffic; never fatal
        return None


def problems(impl, scale: str) -> list:
    out = []
    for rows, width, dtype in _shapes(scale):
        problem = row_softmax_problem(WORKSHOP, "forward", rows, width, dtype, "contiguous", None)
        problem.providers.insert(0, _ours(impl, rows, width, dtype, {}))
        out.append(problem)
    return out


def sweep_problems(impl, scale: str) -> list:
    """Every CONFIGS entry on float16 8 x 131072 (few rows) and 1024 x 131072 (many)."""
    configs = impl_configs(impl)
    if not configs:
        return []
    shapes = [(2, 100, "float32")] if scale == "dry" else [(8, 131072, "float16"),
                                                           (1024, 131072, "float16")]
    out = []
    for rows, width, dtype in shapes:
        problem = row_softmax_problem(WORKSHOP, "sweep", rows, width, dtype, "contiguous", None)
        # "ours" with the launcher's defaults first, then each configuration
        problem.providers[:0] = [_ours(impl, rows, width, dtype, knobs)
                                 for knobs in [{}] + configs]
        out.append(problem)
    return out
