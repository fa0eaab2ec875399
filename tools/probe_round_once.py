"""How far from float64 split softmax's bfloat16 normalize lands, rounded once or twice, when
float32 -> bfloat16 rounds to nearest (as a GPU's cast does) or truncates (as Triton 3.6's
interpreter does). CPU only: it emulates the kernel's arithmetic with torch on the CPU.

    python3 tools/probe_round_once.py

Why: `contract.round_once` (checks/split_softmax.py) bounded the error at 1.5 bfloat16 ulp on
every device, which the reference must meet under the interpreter, whose truncation costs up
to 1 ulp. The two mistakes it names (exp2(...) or 1 / s_row rounded to bfloat16 before the
final multiply) reach 2-3 ulp there, but stay under 1.5 ulp where the cast rounds to nearest,
so they were planted as `interpreter_only`. This prints, per device rounding, each variant's
worst error and how many elements pass 0.6, 0.75 and 1.5 ulp: the numbers the device-dependent
bound rests on (since the thirty-third session 0.75 ulp where the cast rounds to nearest, which
the H200 run confirmed: the reference passed, both mistakes failed). A
diagnostic, not evidence (the GPU's own exp2 is not emulated; its relative error, about 2^-22,
is 2^-14 of a bfloat16 ulp).
"""

from __future__ import annotations

import torch

LOG2E = 1.4426950408889634
SHAPES = (((64, 4096), 1.0), ((4, 4097), 2.0), ((64, 1000), 3.0))  # the check's, and larger


def to_bf16(t: torch.Tensor, rounding: str) -> torch.Tensor:
    """float32 -> bfloat16 by round-to-nearest-even, or by truncation (dropping 16 bits)."""
    if rounding == "nearest":
        return t.to(torch.bfloat16)
    bits = t.contiguous().view(torch.int32) & ~0xFFFF
    return bits.view(torch.float32).to(torch.bfloat16)  # exact: the low bits are zero


def ulps(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|got - exact| in units of the bfloat16 ulp at exact (8 significant bits)."""
    scale = 2.0 ** (torch.floor(torch.log2(exact.abs().clamp_min(1e-30))) - 7)
    return (got.double() - exact).abs() / scale


def main() -> None:
    torch.manual_seed(0)
    print(f"{'rounding':8} {'shape':>10} {'scale':>5} {'variant':18} {'worst':>7} "
          f"{'>0.6':>7} {'>0.75':>7} {'>1.5':>6} {'of':>7}")
    for rounding in ("nearest", "truncate"):
        for shape, scale in SHAPES:
            x = (torch.randn(shape, dtype=torch.float64) * scale).to(torch.bfloat16)
            x64 = x.double()
            m = x64.amax(dim=1, keepdim=True)
            s = torch.exp(x64 - m).sum(dim=1, keepdim=True)
            exact = torch.exp(x64 - m) / s
            # The statistics as the check hands them over: float32 (m exact, s rounded once).
            m32, s32 = m.float(), s.float()
            e32 = torch.exp2((x.float() - m32) * LOG2E)
            inv = 1.0 / s32
            variants = {
                "rounded once": to_bf16(e32 * inv, rounding),
                "exp rounded early": to_bf16(to_bf16(e32, rounding).float() * inv, rounding),
                "inv_s rounded": to_bf16(e32 * to_bf16(inv, rounding).float(), rounding),
            }
            for name, y in variants.items():
                u = ulps(y, exact)
                print(f"{rounding:8} {'x'.join(map(str, shape)):>10} {scale:5.1f} {name:18} "
                      f"{u.max().item():7.3f} {(u > 0.6).sum().item():7d} "
                      f"{(u > 0.75).sum().item():7d} {(u > 1.5).sum().item():6d} {u.numel():7d}")


if __name__ == "__main__":
    main()
