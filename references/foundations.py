"""Foundations recap: program ids, masks and a contiguous row softmax.

What you will practise
- `add`: one program per BLOCK of elements; `tl.program_id` picks the block, a mask keeps the
  last program from touching memory past the end (the tail).
- `row_softmax`: one program per row of a contiguous 2-D tensor; the whole row fits one block,
  padded up to a power of two and masked with -inf so the padding never wins the max nor adds
  to the sum; statistics in float32, one rounding at the store.

This module is the template every other workshop copies: kernel and launcher side by side,
the launcher checks, allocates, launches.

Limitations
- `add`: same shape, same dtype (float16, bfloat16, float32), contiguous, same device.
- `row_softmax`: 2-D contiguous rows, width up to 65536 (one block per row: wider rows are the
  split softmax workshop's subject). Measured on an NVIDIA H200; see the validation report.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._validate import check_device, check_power_of_two, check_same, check_tensor

_MAX_ROW_BLOCK = 65536  # one program holds a whole row in registers; beyond this it spills


@triton.jit
def add_kernel(
    x_ptr, y_ptr, out_ptr,  # pointers
    n_elements,  # size
    BLOCK: tl.constexpr,  # elements per program
):
    pid = tl.program_id(0).to(tl.int64)  # int64: n_elements may exceed 2^31
    offsets = pid * BLOCK + tl.arange(0, BLOCK)  # (BLOCK,)
    # EXERCISE add: build `mask` so the last program stops at n_elements, then load x and y
    # with it. Without the mask the last block reads and writes past the end of the tensors.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    # END EXERCISE
    # Add in fp32 and round once: as exact as a native add, and Triton's CPU interpreter has no
    # bfloat16 arithmetic (it would add the raw bit patterns).
    total = x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, *, block: int = 1024) -> torch.Tensor:
    """x + y for two contiguous tensors of one shape, dtype and device."""
    check_tensor("x", x)
    check_tensor("y", y)
    check_same("y", y, "x", x)
    if not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError("add expects contiguous x and y (strided views are workshop 1)")
    check_power_of_two("block", block, 16, 65536)
    check_device("x", x)

    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out
    grid = (triton.cdiv(n, block),)
    add_kernel[grid](x, y, out, n, BLOCK=block)
    return out


@triton.jit
def row_softmax_kernel(
    x_ptr, out_ptr,  # pointers
    n_cols,  # size of a row
    stride_xm, stride_om,  # row strides (columns are contiguous)
    BLOCK_N: tl.constexpr,  # power of two >= n_cols
):
    row = tl.program_id(0).to(tl.int64)  # one program per row; int64 before the stride multiply
    cols = tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    mask = cols < n_cols
    # EXERCISE row_softmax: load the row in float32, with -inf in the padded tail, and
    # subtract the row maximum (why -inf and not 0: the padding must never win the max and
    # exp(-inf) = 0 adds nothing to the sum).
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    # END EXERCISE
    numerator = tl.exp(z)
    # EXERCISE row_softmax: divide by the row sum of the numerators and store the row,
    # rounded once to the output dtype, masked to the real columns.
    denominator = tl.sum(numerator, axis=0)
    y = numerator / denominator
    tl.store(out_ptr + row * stride_om + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    # END EXERCISE


def row_softmax(x: torch.Tensor, *, num_warps: int | None = None) -> torch.Tensor:
    """Softmax over the last dimension of a contiguous 2-D tensor, statistics in float32."""
    check_tensor("x", x, ndim=2)
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got strides {x.stride()} (strided inputs are "
                         "workshop 1)")
    n_rows, n_cols = x.shape
    if n_cols > _MAX_ROW_BLOCK:
        raise ValueError(f"x has {n_cols} columns; row_softmax holds a row in one block of at "
                         f"most {_MAX_ROW_BLOCK} (the split softmax workshop handles wider rows)")
    if num_warps is not None:
        check_power_of_two("num_warps", num_warps, 1, 32)
    check_device("x", x)

    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    block_n = triton.next_power_of_2(n_cols)
    # Wider rows need more threads to keep each thread's share of the row in registers.
    warps = num_warps or min(max(block_n // 256, 1), 16)
    row_softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0),
                                  BLOCK_N=block_n, num_warps=warps)
    return out
