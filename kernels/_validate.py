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


def type_name(value) -> str:
    """The name of value's type for an error message: `numpy.float64`, not a bare `float64`
    that reads like a torch dtype."""
    kind = type(value)
    if kind.__module__ in ("builtins", "__main__"):
        return kind.__name__
    return f"{kind.__module__.split('.')[0]}.{kind.__name__}"


def check_tensor(name: str, t, *, dtypes=FLOAT_DTYPES, ndim: int | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type_name(t)}")
    # A kernel reads a tensor as (pointer, strides) over dense memory. A sparse, mkldnn or nested
    # tensor has no such memory, and the launch would fail deep inside Triton or read garbage.
    if t.is_nested or t.layout != torch.strided:
        layout = "nested" if t.is_nested else str(t.layout).replace("torch.", "")
        raise TypeError(f"{name} must be a dense (strided) tensor, got a {layout} tensor "
                        f"(convert it with .to_dense() or build a dense one)")
    # A lazily negated view (`z.conj().imag` makes one) holds the un-negated values in memory
    # and only a flag says "negate on read": a kernel would read the wrong sign.
    if t.is_neg():
        raise ValueError(f"{name} is a lazily negated view (is_neg() is True: a kernel would read "
                         f"the values before the negation); pass {name}.resolve_neg()")
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
        raise TypeError(f"{name} must be an int, got {type_name(value)}")
    if value < low or value > high or value & (value - 1):
        raise ValueError(f"{name} must be a power of two in [{low}, {high}], got {value}")


def check_int_range(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type_name(value)}")
    if value < low or value > high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


def check_dim(dim, ndim: int) -> int:
    """Normalise a dim argument (negative allowed) for an `ndim`-D tensor."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type_name(dim)}")
    if not -ndim <= dim < ndim:
        raise ValueError(f"dim must be in [{-ndim}, {ndim - 1}] for a {ndim}-D tensor, got {dim}")
    return dim % ndim
