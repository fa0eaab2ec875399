"""Argument checks shared by every launcher: refuse a bad call before any kernel launches.

Each raises TypeError (wrong kind of thing) or ValueError (right kind, wrong value) with a
message naming the argument, what it got and what it accepts. No bare `assert`: asserts vanish
under `python -O`.
"""

from __future__ import annotations

import os

import torch

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def interpreting() -> bool:
    """True when kernels run on the CPU under Triton's interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def check_tensor(name: str, t, *, dtypes=FLOAT_DTYPES, ndim: int | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        accepted = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{name} must have dtype {accepted}; got {str(t.dtype).replace('torch.', '')}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")


def check_device(name: str, t: torch.Tensor) -> None:
    """On a GPU run tensors must be on CUDA; under the interpreter they must be on the CPU."""
    if interpreting():
        if t.device.type != "cpu":
            raise ValueError(f"{name} must be on the CPU under TRITON_INTERPRET=1, got {t.device}")
    elif t.device.type != "cuda":
        raise ValueError(f"{name} must be on a CUDA device, got {t.device} (to run on the CPU, "
                         "set TRITON_INTERPRET=1 before importing the kernels)")


def check_same(name: str, t: torch.Tensor, like_name: str, like: torch.Tensor, *,
               shape: bool = True) -> None:
    """`t` must match `like` in dtype, device and (by default) shape."""
    if t.dtype != like.dtype:
        raise TypeError(f"{name} must have {like_name}'s dtype {like.dtype}, got {t.dtype}")
    if t.device != like.device:
        raise ValueError(f"{name} must be on {like_name}'s device {like.device}, got {t.device}")
    if shape and t.shape != like.shape:
        raise ValueError(f"{name} must have {like_name}'s shape {tuple(like.shape)}, "
                         f"got {tuple(t.shape)}")


def check_power_of_two(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or value > high or value & (value - 1):
        raise ValueError(f"{name} must be a power of two in [{low}, {high}], got {value}")


def check_int_range(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or value > high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


def check_dim(dim, ndim: int) -> int:
    """Normalise a dim argument (negative allowed) for an `ndim`-D tensor."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        raise ValueError(f"dim must be in [{-ndim}, {ndim - 1}] for a {ndim}-D tensor, got {dim}")
    return dim % ndim
