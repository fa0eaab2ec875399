"""A/B: split softmax with and without early launch (graph and events timing)."""
import sys
sys.path.insert(0, ".")
import torch
from benchmarks import harness
from references import split_softmax as ss

plan = harness.PLANS["full"]
flush = torch.empty(harness.L2_FLUSH_BYTES // 4, device="cuda")
for rows, width, dtype in ((8, 131072, torch.float16), (8, 131072, torch.float32), (64, 131072, torch.float16), (1024, 32768, torch.float16), (1024, 131072, torch.float16)):
    x = torch.randn(rows, width, device="cuda", dtype=dtype)
    ref = torch.softmax(x.double(), -1)
    for early in (False, True):
        ss.EARLY_LAUNCH = early
        y = ss.split_softmax(x)
        err = (y.double() - ref).abs().max().item()
        g = harness.summarize(harness.time_graph(lambda: ss.split_softmax(x), plan)["samples_ms"])["median"]
        e = harness.summarize(harness.time_events(lambda: ss.split_softmax(x), plan, flush)["samples_ms"])["median"]
        print(f"{rows}x{width} {dtype} early={early}: graph {g*1e3:.2f} us, events {e*1e3:.2f} us, max err {err:.2e}", flush=True)
    t = harness.summarize(harness.time_graph(lambda: torch.softmax(x, -1), plan)["samples_ms"])["median"]
    te = harness.summarize(harness.time_events(lambda: torch.softmax(x, -1), plan, flush)["samples_ms"])["median"]
    print(f"   torch.softmax graph {t*1e3:.2f} us events {te*1e3:.2f} us", flush=True)
