"""Choosing where kernels run: a real GPU, or Triton's CPU interpreter.

Triton reads `TRITON_INTERPRET` when a `@triton.jit` function is *defined*, that is when a
kernel module is imported. So the choice must be made before any kernel module is imported;
`select()` refuses, with instructions, when that is no longer possible.
"""

from __future__ import annotations

import os
import sys

AUTO, CUDA, INTERPRETER = "auto", "cuda", "interpreter"
CHOICES = (AUTO, CUDA, INTERPRETER)

_selected: str | None = None


class DeviceError(RuntimeError):
    """The requested device cannot be used in this process (the message says what to do)."""


def interpreter_requested() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _kernel_modules_imported() -> list[str]:
    """Implementation modules already imported (their @triton.jit decorators already ran)."""
    roots = ("kernels.", "references.", "_impl_")
    return sorted(name for name in sys.modules if name.startswith(roots))


def select(choice: str = AUTO) -> str:
    """Resolve `choice` to "cuda" or "interpreter", set TRITON_INTERPRET, return the device.

    auto: the GPU if torch sees one and TRITON_INTERPRET is not already 1, else the interpreter.
    """
    global _selected
    if choice not in CHOICES:
        raise ValueError(f"device must be one of {CHOICES}, got {choice!r}")
    if choice == AUTO:
        device = INTERPRETER if interpreter_requested() or not cuda_available() else CUDA
    elif choice == CUDA:
        if not cuda_available():
            raise DeviceError("--device cuda was asked for, but torch sees no CUDA GPU here; "
                              "use --device interpreter (or auto) to run on the CPU")
        device = CUDA
    else:
        device = INTERPRETER

    wanted = "1" if device == INTERPRETER else "0"
    current = os.environ.get("TRITON_INTERPRET", "0")
    imported = _kernel_modules_imported()
    if imported and (current == "1") != (wanted == "1") and _selected != device:
        raise DeviceError(
            f"kernel modules were already imported with TRITON_INTERPRET={current} "
            f"({', '.join(imported[:3])}...), so they cannot switch to {device!r} in this "
            "process. Restart the Python process (in JupyterLab: Kernel > Restart) and run the "
            "setup cell first, before anything imports a kernel module.")
    os.environ["TRITON_INTERPRET"] = wanted
    if device == INTERPRETER:
        _patch_interpreter_for_numpy()
    _selected = device
    return device


def torch_device(device: str) -> str:
    """The torch device that tensors live on for a given run device."""
    return "cuda" if device == CUDA else "cpu"


def _patch_interpreter_for_numpy() -> None:
    """Work around an upstream interpreter bug (triton-lang/triton#9171) with numpy >= 2.3.

    Triton's interpreter (3.6 and earlier) converts a scalar tensor to a Python int with
    `int(handle.data)`, where `data` is a 1-element array. numpy 2.3 deprecated and 2.4 removed
    that conversion, so `range(0, n, BLOCK)` over a runtime `n` fails inside an interpreted
    kernel. We wrap the interpreter's patch of `tl.tensor` so `__index__` squeezes first; this
    changes nothing where the bug is already fixed. Real GPU compilation never runs this code.
    """
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_workshop_patched", False):
        return

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    patched._workshop_patched = True
    interpreter._patch_lang_tensor = patched
