"""Catch stores outside an output on a GPU (an unmasked tail, a wrong offset).

Under Triton's interpreter every load and store is bounds-checked (checks/device.py), so a
tail stored without its mask fails there with "out-of-bounds store". On a GPU the same store
lands silently in whatever memory follows the output, often the unused end of the allocator's
block, and the values the check compares are all right: the mistake passes.

`guard_tails` closes that gap. While it is active, every tensor a torch factory (torch.empty,
empty_like, zeros, ...) creates with the output's dtype and element count is placed between
two guard bands of GUARD_BYTES, filled with CANARY, in one allocation (so a stray store lands
in memory we own and can read, not in someone else's). After the call, `Guard.overrun()`
reads the bands back and reports the first one that changed.

Only the bands are watched: a store more than GUARD_BYTES outside the tensor is not seen, and
neither is a load (only the interpreter sees those).
"""

from __future__ import annotations

import contextlib

# Every float dtype reads the canary as a small negative number (float16 -0.022, bfloat16 and
# float32 about -2.9e-16): no softmax stores it, and anything else only by chance.
CANARY = 0xA5
GUARD_BYTES = 64 * 1024  # one program's tile past the end: 128 rows of 128 float32 is 64 KiB

# The factories learner code allocates outputs with (dispatcher names, as a dispatch mode sees
# them). The result of each is copied into the guarded allocation, so zeros stay zeros.
_FACTORIES = {
    "aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
    "aten.new_empty.default", "aten.new_empty_strided.default", "aten.zeros.default",
    "aten.zeros_like.default", "aten.new_zeros.default", "aten.full.default",
    "aten.full_like.default", "aten.new_full.default",
}


class Guard:
    """The guarded allocations of one call: (tensor's shape, its bytes, the whole allocation,
    laid out as GUARD_BYTES of canary, the tensor's bytes, GUARD_BYTES of canary)."""

    def __init__(self):
        self.allocations: list[tuple[tuple[int, ...], int, object]] = []

    def overrun(self, out=None) -> str | None:
        """None when every guard band is intact, else a sentence naming the first overrun."""
        for shape, used, allocation in self.allocations:
            owner = f"a {shape} tensor it allocated"
            if out is not None and out.untyped_storage().data_ptr() == allocation.data_ptr():
                owner = "its output"
            before = (allocation[:GUARD_BYTES].cpu() != CANARY).nonzero()
            after = (allocation[GUARD_BYTES + used:].cpu() != CANARY).nonzero()
            if len(after):
                first, last = int(after[0]) + 1, int(after[-1]) + 1  # counted from 1
                return (f"wrote past the end of {owner}: bytes {first} to {last} behind its "
                        f"last element changed ({len(after)} of the {GUARD_BYTES}-byte guard "
                        "band)")
            if len(before):
                first, last = GUARD_BYTES - int(before[-1]), GUARD_BYTES - int(before[0])
                return (f"wrote before the start of {owner}: bytes {first} to {last} before its "
                        f"first element changed ({len(before)} of the {GUARD_BYTES}-byte guard "
                        "band)")
        return None


@contextlib.contextmanager
def guard_tails(numel: int, dtype, device_type: str = "cuda"):
    """Guard every factory-made tensor of `numel` elements of `dtype` on `device_type`."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    guard = Guard()

    class Guarded(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            made = func(*args, **(kwargs or {}))
            if (str(func) not in _FACTORIES or not isinstance(made, torch.Tensor)
                    or made.device.type != device_type or made.dtype != dtype
                    or made.numel() != numel or numel == 0):
                return made
            # Bytes the tensor can reach: its last element's offset, plus one element.
            reach = 1 + sum((size - 1) * stride for size, stride in zip(made.shape, made.stride(),
                                                                         strict=True))
            used = reach * made.element_size()
            allocation = torch.full((GUARD_BYTES + used + GUARD_BYTES,), CANARY,
                                    dtype=torch.uint8, device=made.device)
            guarded = torch.empty(0, dtype=made.dtype, device=made.device)
            # The tensor starts GUARD_BYTES in: 64 KiB keeps every alignment a kernel relies on.
            guarded.set_(allocation.untyped_storage(), GUARD_BYTES // made.element_size(),
                         made.shape, made.stride())
            guarded.copy_(made)
            guard.allocations.append((tuple(made.shape), used, allocation))
            return guarded

    with Guarded():
        yield guard
