"""Softmax backward: the vector-Jacobian product without a Jacobian.

What you will learn
- The Jacobian of y = softmax(x) over a row of N values is J = diag(y) - y y^T, an N x N matrix.
  Backpropagation never needs J, only J^T dy, and because J is symmetric
  J^T dy = y * dy - y <y, dy> = y * (dy - <dy, y>): one dot product per row, then an
  elementwise formula. Three tensors move (y and dy in, dx out) instead of N^2 values per row.
- One program per row, the row held in registers when it fits; a loop over column tiles when it
  does not (then y and dy are read twice; the benchmark's looped rows run at about 2/3 of the
  copy rate, a little above the 3/5 that five transfers instead of three give, so the second
  read mostly misses L2).
- A column-tile path for the layout where the *independent* dimension is the contiguous one
  (dim=0 of a row-major tensor, or dim=-1 of a transposed view): a program takes BLOCK_M
  neighbouring rows, so every load of the tile is coalesced, and walks the reduced dimension.
  Both paths are one kernel: only the tile shape (BLOCK_M, BLOCK_N) differs.
- Strides for every dimension of every tensor, so views work without copies (a broadcast dy
  has stride 0; dim=0 is handled by transposing views, which only swaps strides).
- The reduction <dy, y> in float32 even for 16-bit inputs: dy - <dy, y> cancels, and an fp16
  sum would lose the digits that survive the cancellation.
- `Softmax`, a torch.autograd.Function whose forward is workshop 1's kernel and whose backward is
  this one. It saves the output y, not the input x: the backward formula needs only y.

Limitations
- y and dy are 2-D, one shape, one dtype (float16, bfloat16 or float32), one device, any strides;
  dx is a new contiguous tensor of y's dtype. The reduction is float32 (no float64 kernel).
- Rows of any width: up to `_MAX_ONE_PASS` elements per tile the row stays in registers; wider
  rows loop over column tiles. A few very wide rows leave most SMs idle (one program per row).
- `Softmax.backward` is once-differentiable (no double backward).
- Speed knobs `block_m`, `block_n`, `num_warps` (validated, default: a heuristic by layout and
  width); `CONFIGS` lists the candidates a benchmark sweep tries. Written for an NVIDIA H200;
  see the validation report for measured numbers.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._validate import check_device, check_dim, check_power_of_two, check_same, check_tensor
from .strided_softmax import softmax as _softmax_forward

_MAX_ONE_PASS = 16384  # tile elements kept in registers: y and dy in fp32 over 16 warps = 64 regs
_MAX_TILE = 65536  # largest BLOCK_M * BLOCK_N a caller may ask for (compile time, registers)
_ROW_TILE = 2048  # narrow rows: pack several rows per program until a tile holds this many
# Rows wider than _MAX_ONE_PASS: columns per loop step. 8192 (so 16 warps, by the rule in
# _pick_tiles) against 4096 over 8 warps, measured on the H200 (graph timing, three sets of
# interleaved rounds; benchmarks/results/diagnostics/probe-backward-warps-*): 1.11x at 32768
# columns in float16 and bfloat16, 1.05x in float32; at 65536 1.04-1.05x in 16-bit, 1.02x
# in float32.
_LOOP_BLOCK_N = 8192
_COLUMN_BLOCK_M = 32  # column-tile path: 32 neighbouring rows = 64 B (fp16) per coalesced load
_COLUMN_BLOCK_N = 128  # column-tile path: reduced-dimension steps per loop iteration

# Candidate launch knobs for a benchmark sweep (None: the heuristic in _pick_tiles).
CONFIGS = [dict(block_m=None, block_n=None, num_warps=None)] + [
    # row path, one pass: several rows per program for narrow rows, warps by tile size
    dict(block_m=m, block_n=None, num_warps=w) for m in (1, 2, 4) for w in (4, 8, 16)
] + [
    # row path, looped: narrower column tiles for wide rows
    dict(block_m=1, block_n=n, num_warps=w) for n in (2048, 4096, 8192) for w in (4, 8, 16)
] + [
    # column-tile path (independent dimension contiguous)
    dict(block_m=m, block_n=n, num_warps=w) for m in (16, 32, 64) for n in (32, 64, 128)
    for w in (2, 4, 8)
]


@triton.jit
def _load_f32(row_ptrs, cols, stride_n, mask, EVICT: tl.constexpr):
    """One (BLOCK_M, BLOCK_N) tile of a tensor, upcast to float32 (the interpreter has no bf16
    arithmetic, and the dot product must be float32 anyway). Masked lanes read 0: a padded lane
    adds 0 * 0 to <dy, y> and is never stored."""
    ptrs = row_ptrs + cols[None, :] * stride_n  # (BLOCK_M, BLOCK_N)
    return tl.load(ptrs, mask=mask, other=0.0, eviction_policy=EVICT).to(tl.float32)


@triton.jit
def softmax_backward_kernel(
    y_ptr, dy_ptr, dx_ptr,  # pointers: softmax output, upstream gradient, result
    n_rows, n_cols,  # sizes: independent rows, reduced columns (after the launcher's views)
    stride_ym, stride_yn,  # strides of y, in elements (any value, 0 included)
    stride_dym, stride_dyn,  # strides of dy (a broadcast dy has a 0 here)
    stride_dxm, stride_dxn,  # strides of dx
    BLOCK_M: tl.constexpr,  # rows per program
    BLOCK_N: tl.constexpr,  # columns per tile, a power of two
    ONE_PASS: tl.constexpr,  # BLOCK_N >= n_cols: the rows stay in registers
):
    pid = tl.program_id(0).to(tl.int64)  # int64 before multiplying a stride: spans may pass 2^31
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) this program's rows
    row_mask = (rows < n_rows)[:, None]  # (BLOCK_M, 1) the last program may run past the end
    cols = tl.arange(0, BLOCK_N).to(tl.int64)  # (BLOCK_N,) int64: cols * stride may pass 2^31
    y_rows = y_ptr + rows[:, None] * stride_ym  # (BLOCK_M, 1) where each row starts
    dy_rows = dy_ptr + rows[:, None] * stride_dym
    dx_rows = dx_ptr + rows[:, None] * stride_dxm
    if ONE_PASS:
        # The whole row fits one tile: read y and dy once, keep them in registers, write dx.
        mask = row_mask & (cols[None, :] < n_cols)  # (BLOCK_M, BLOCK_N)
        y = _load_f32(y_rows, cols, stride_yn, mask, "")
        dy = _load_f32(dy_rows, cols, stride_dyn, mask, "")
        # EXERCISE softmax_backward, vjp: compute `dot`, each row's <dy, y> (shape (BLOCK_M,),
        # float32: y and dy are already float32), then `dx = J^T dy` for the tile, shape
        # (BLOCK_M, BLOCK_N). Hint: `dot[:, None]` broadcasts a per-row value along the row.
        dot = tl.sum(dy * y, axis=1)  # (BLOCK_M,) one dot product per row
        dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)
        # END EXERCISE
        tl.store(dx_rows + cols[None, :] * stride_dxn, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    else:
        # Pass 1: accumulate <dy, y> over column tiles. evict_last asks L2 to keep these lines
        # for pass 2, which reads the same tiles again.
        dot = tl.zeros((BLOCK_M,), dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols  # (BLOCK_N,)
            mask = row_mask & (c[None, :] < n_cols)
            y = _load_f32(y_rows, c, stride_yn, mask, "evict_last")
            dy = _load_f32(dy_rows, c, stride_dyn, mask, "evict_last")
            # EXERCISE softmax_backward, vjp: add this tile's part of each row's <dy, y> to `dot`
            dot += tl.sum(dy * y, axis=1)
            # END EXERCISE
        # Pass 2: the dot products are complete; read the tiles again and write dx.
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            mask = row_mask & (c[None, :] < n_cols)
            y = _load_f32(y_rows, c, stride_yn, mask, "evict_first")
            dy = _load_f32(dy_rows, c, stride_dyn, mask, "evict_first")
            # EXERCISE softmax_backward, vjp: `dx` for this tile, from the finished `dot`
            dx = y * (dy - dot[:, None])  # (BLOCK_M, BLOCK_N)
            # END EXERCISE
            tl.store(dx_rows + c[None, :] * stride_dxn, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int = -1, *,
                     block_m: int | None = None, block_n: int | None = None,
                     num_warps: int | None = None) -> torch.Tensor:
    """dx = y * (dy - sum(dy * y, dim)): the gradient of softmax, given its output y and the
    upstream gradient dy (same shape and dtype, any strides). Returns a new contiguous tensor.

    Knobs (None picks a default by layout and width): `block_m` rows per program, `block_n`
    columns per tile (a row wider than `block_n` is processed in a loop), `num_warps`.
    """
    check_tensor("y", y, ndim=2)
    check_tensor("dy", dy, ndim=2)
    check_same("dy", dy, "y", y)
    dim = check_dim(dim, 2)
    if block_m is not None:
        check_power_of_two("block_m", block_m, 1, 1024)
    if block_n is not None:
        check_power_of_two("block_n", block_n, 1, _MAX_TILE)
    if num_warps is not None:
        check_power_of_two("num_warps", num_warps, 1, 16)
    if (block_m or 1) * (block_n or 1) > _MAX_TILE:
        raise ValueError(f"block_m * block_n must be at most {_MAX_TILE} (one tile lives in "
                         f"registers), got {block_m} * {block_n}")
    check_device("y", y)

    dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)  # fresh and contiguous
    if y.numel() > 0:
        _launch_vjp(y, dy, dx, dim, block_m=block_m, block_n=block_n, num_warps=num_warps)
    return dx


def _launch_vjp(y, dy, dx, dim, *, block_m, block_n, num_warps) -> None:
    """Launch softmax_backward_kernel to write dx, with the reduced dimension as the columns."""
    # EXERCISE softmax_backward, dim0: the kernel reduces along its columns (dimension 1). For
    # dim=0, give it transposed views of y, dy and dx (a view only swaps strides: nothing is
    # copied). (dim arrives normalised: 0 or 1, never -1.)
    if dim == 0:
        y, dy, dx = y.t(), dy.t(), dx.t()
    # END EXERCISE
    n_rows, n_cols = y.shape  # rows are independent; <dy, y> runs along the columns
    bm, bn, warps = _pick_tiles(n_rows, n_cols, y.stride(), block_m, block_n, num_warps)
    grid = (triton.cdiv(n_rows, bm),)
    softmax_backward_kernel[grid](
        y, dy, dx,  # pointers
        n_rows, n_cols,  # sizes
        y.stride(0), y.stride(1),  # strides of y
        dy.stride(0), dy.stride(1),  # strides of dy
        dx.stride(0), dx.stride(1),  # strides of dx
        BLOCK_M=bm, BLOCK_N=bn, ONE_PASS=bn >= n_cols, num_warps=warps,
    )


def _pick_tiles(n_rows: int, n_cols: int, y_strides, block_m, block_n, num_warps):
    """(BLOCK_M, BLOCK_N, num_warps) for a layout; caller's knobs win where given."""
    width = triton.next_power_of_2(n_cols)
    # Column-tile path: the independent dimension is the contiguous one (a transposed view).
    columns = n_rows > 1 and y_strides[0] == 1 and y_strides[1] != 1
    if columns:
        bm = block_m or _COLUMN_BLOCK_M
        bn = block_n or (width if bm * width <= 4096 else min(_COLUMN_BLOCK_N, _MAX_ONE_PASS // bm))
    else:
        # One pass when the row fits the register budget, else loop over column tiles.
        budget = _MAX_ONE_PASS // (block_m or 1)
        bn = block_n or (width if width <= budget else min(_LOOP_BLOCK_N, budget))
        # Narrow rows: pack rows until a tile holds about _ROW_TILE values (fewer, fuller programs).
        bm = block_m or max(1, min(_ROW_TILE // bn, 64, triton.next_power_of_2(n_rows)))
    if bm * bn > _MAX_TILE:
        raise ValueError(f"block_m * block_n must be at most {_MAX_TILE}, got {bm} * {bn}")
    # About 16 values of each tensor per thread (32 at the largest tiles): enough bytes in
    # flight per thread to hide memory latency, few enough registers that nothing spills.
    warps = num_warps or min(max((bm * bn) // 512, 1), 16)
    return bm, bn, warps


class Softmax(torch.autograd.Function):
    """y = softmax(x, dim) with workshop 1's kernel, differentiated with `softmax_backward`.

    Usage: `y = Softmax.apply(x, dim)`; `y.backward(dy)` then fills `x.grad`.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        y = _softmax_forward(x, dim)
        # EXERCISE Softmax: save what backward needs. The VJP is a function of the *output* y
        # alone (not of x): save y with ctx.save_for_backward and remember dim on ctx.
        ctx.save_for_backward(y)
        ctx.dim = dim
        # END EXERCISE
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy: torch.Tensor):
        # EXERCISE Softmax: compute `dx` with softmax_backward from the saved y and the incoming
        # dy (autograd may hand you a non-contiguous or broadcast dy: the kernel takes strides).
        (y,) = ctx.saved_tensors
        dx = softmax_backward(y, dy, ctx.dim)
        # END EXERCISE
        return dx, None  # no gradient for dim


def _dense_jacobian_vjp(y: torch.Tensor, dy: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """The textbook VJP, kept for the lesson's comparison only: build J = diag(y) - y y^T for
    every row (rows x N x N float32 values) and multiply J^T dy. Same answer, N times the
    memory and work: at N = 131072 a single row's J is 64 GiB."""
    y32 = y.float().movedim(dim, -1)  # (rows, N)
    dy32 = dy.float().movedim(dim, -1)
    jac = torch.diag_embed(y32) - y32[:, :, None] * y32[:, None, :]  # (rows, N, N)
    dx = (jac.transpose(1, 2) @ dy32[:, :, None])[:, :, 0]  # J^T dy, (rows, N)
    return dx.movedim(-1, dim).to(y.dtype).contiguous()
