"""Small host-side helpers the launchers share: integer arithmetic and facts about the GPU.

A launcher runs on every call, so these are plain Python (triton.cdiv and
triton.next_power_of_2 also work on the host, but they are Triton constexpr functions and each
host call pays for that wrapper) and the GPU is asked about itself once per device.
"""

from __future__ import annotations

import functools

import torch


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for positive b."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << (n - 1).bit_length() if n > 1 else 1


def device_index(t: torch.Tensor) -> int:
    """The CUDA device index of `t` (0 for a tensor without one, e.g. on the CPU)."""
    return t.device.index if t.device.index is not None else 0


@functools.cache
def sm_count(index: int) -> int:
    """Streaming multiprocessors of CUDA device `index` (132 on an H200)."""
    return torch.cuda.get_device_properties(index).multi_processor_count


@functools.cache
def capability(index: int) -> tuple[int, int]:
    """Compute capability of CUDA device `index` ((9, 0) on an H200)."""
    return torch.cuda.get_device_capability(index)


def descriptor_scratch(size: int, alignment: int, stream) -> torch.Tensor:
    """Global memory where a kernel's programs build their TMA descriptors: Triton asks for
    `size` bytes per launch through `triton.set_allocator(descriptor_scratch)`."""
    return torch.empty(size, device="cuda", dtype=torch.int8)
