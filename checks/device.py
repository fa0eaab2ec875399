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
        # Triton 3.6's interpreter vs numpy >= 2.3 (triton-lang/triton#9171): the workaround
        # lives beside the kernels, which also apply it themselves when imported under it.
        from references._interpreter import patch_numpy_index

        patch_numpy_index()
        _install_interpreter_bounds_check()
        _quiet_interpreted_kernels()
    _selected = device
    return device


def torch_device(device: str) -> str:
    """The torch device that tensors live on for a given run device."""
    return "cuda" if device == CUDA else "cpu"


def _quiet_interpreted_kernels() -> None:
    """Run interpreted kernels without NumPy's floating-point warnings.

    Under the interpreter a kernel's operations are NumPy's, which warn about the IEEE special
    values a GPU computes silently (log2(0) = -inf for a row of -inf logits, inf - inf = nan in
    a masked lane): not a learner's mistake, only noise in a check cell. Only the kernel launch
    is quieted; NumPy code outside kernels (online normalization's, the checks' strict mode)
    keeps its own error settings.
    """
    try:
        import numpy as np
        from triton.runtime import interpreter
    except ImportError:
        return
    executor = interpreter.GridExecutor
    if getattr(executor.__call__, "_workshop_patched", False):
        return
    original_call = executor.__call__

    def call(self, *args, **kwargs):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            return original_call(self, *args, **kwargs)

    call._workshop_patched = True
    executor.__call__ = call


class OutOfBoundsAccess(IndexError):
    """A kernel under the interpreter touched memory outside every tensor it was given."""


_launch_ranges: list[tuple[int, int, str]] = []  # (first byte, end byte, argument) of this launch


def _install_interpreter_bounds_check() -> None:
    """Make the interpreter refuse loads and stores outside the kernel's tensor arguments.

    On a GPU an unmasked tail usually reads neighbouring memory silently; under the interpreter
    it reads or writes the CPU heap and can abort the whole Python process ("double free or
    corruption"). So before every masked load and store we check that each active lane's
    address lies inside the storage of one of the launch's tensor arguments, and raise
    OutOfBoundsAccess naming the operation otherwise: the kernel fails cleanly, the check says
    why, and the notebook survives. GPU runs are not affected.
    """
    try:
        import numpy as np
        from triton.runtime import interpreter
    except ImportError:
        return
    executor = interpreter.GridExecutor
    if getattr(executor._init_args_hst, "_workshop_patched", False):
        return
    builder_cls = type(interpreter.interpreter_builder)
    original_init = executor._init_args_hst
    original_load = builder_cls.create_masked_load
    original_store = builder_cls.create_masked_store

    def init_args(self, args_dev, kwargs):
        args_hst, kwargs_hst = original_init(self, args_dev, kwargs)
        ranges = []
        names = list(self.arg_names)
        for i, arg in enumerate(list(args_hst) + list(kwargs_hst.values())):
            if hasattr(arg, "untyped_storage"):
                storage = arg.untyped_storage()
                name = names[i] if i < len(names) else "argument"
                ranges.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes(), name))
        _launch_ranges[:] = ranges
        return args_hst, kwargs_hst

    def check(builder, kind, ptrs, mask):
        if not _launch_ranges:
            return
        addresses = np.asarray(ptrs.data, dtype=np.uint64)
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
        wanted = addresses[active]
        if wanted.size == 0:
            return
        size = np.dtype(interpreter._get_np_dtype(ptrs.get_element_ty())).itemsize
        inside = np.zeros(wanted.shape, dtype=bool)
        for first, end, _ in _launch_ranges:
            inside |= (wanted >= first) & (wanted + size <= end)
        if not inside.all():
            outside = int((~inside).sum())
            # Which program: a program whose every lane is outside the tensors usually should
            # not exist (a grid larger than the work), which the program id and grid show.
            where = ""
            if getattr(builder, "grid_idx", None) and getattr(builder, "grid_dim", None):
                where = (f" in program {tuple(int(i) for i in builder.grid_idx)} of a grid of "
                         f"{tuple(int(i) for i in builder.grid_dim)}")
            lanes = (f"all {outside} active lanes point" if outside == wanted.size else
                     f"{outside} of {wanted.size} active lanes point")
            raise OutOfBoundsAccess(
                f"out-of-bounds {kind}: {lanes} outside every tensor argument "
                f"({', '.join(r[2] for r in _launch_ranges)}){where}; "
                "a mask is missing or wrong")

    def load(self, ptrs, mask, other, *args, **kwargs):
        check(self, "load", ptrs, mask)
        return original_load(self, ptrs, mask, other, *args, **kwargs)

    def store(self, ptrs, value, mask, *args, **kwargs):
        check(self, "store", ptrs, mask)
        return original_store(self, ptrs, value, mask, *args, **kwargs)

    init_args._workshop_patched = True
    executor._init_args_hst = init_args
    builder_cls.create_masked_load = load
    builder_cls.create_masked_store = store
