"""What a check body gets: random inputs, a guarded call into learner code, comparisons.

`ctx.call(...)` is where the robustness rules of the check contract live, once for every
workshop: inputs must come back bitwise unchanged (the whole memory block each lives in, not
only a view's elements), the output must be a fresh tensor of the promised shape, dtype and
device, nothing may be stored outside it, every element must be written (fresh memory holds a
NaN of our own until a kernel writes it), and a crash in learner code becomes a FAIL naming
the file and line.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from checks import compare
from checks.core import CheckFailed, ExercisePending, Unavailable
from checks.device import torch_device

# The hint of every output found in memory an earlier call returned (see expect_fresh).
CACHED_BUFFER_HINT = "outputs must be freshly allocated on every call (no cached buffer)"

# During a call, every float tensor torch.empty (or empty_like, new_empty, ...) makes is filled
# with a NaN of this bit pattern (by dtype name): an element the kernels never wrote then reads
# as NaN on every run, never as right by the luck of what the allocator held, and its bits say
# it was never written. Arithmetic never makes these NaNs (a GPU's operations return the
# canonical NaN); only a copy of unwritten memory carries one.
FRESH_MEMORY_FILL = {
    "float16": (0x7E5B, "int16"),
    "bfloat16": (0x7FDB, "int16"),
    "float32": (0x7FDB7E5B, "int32"),
    "float64": (0x7FFB7E5B7E5B7E5B, "int64"),
}
# The torch functions that hand out uninitialized memory (as a TorchFunctionMode sees them).
_EMPTY_FACTORIES = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}


class CheckContext:
    def __init__(self, device: str, seed: int, key: str):
        self.device = device  # "cuda", "interpreter" or "cpu"
        self.torch_device = torch_device(device)
        self.seed = seed
        # One generator per (seed, check, case): any single row can be reproduced alone.
        digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
        self.case_seed = int.from_bytes(digest[:6], "little")
        self._generator = None
        self.max_error: float | None = None
        self.tolerance: float | None = None
        self.notes: list[str] = []
        self._tracking = False  # inside track_allocations (no tail guard there)
        # Outputs of this case's earlier calls, kept alive so that their memory cannot be
        # handed out again legitimately: a later output in it is a cached buffer.
        self._earlier_outputs: list[tuple[str, Any]] = []
        self._earlier_bytes = 0
        # (output, mask of its elements never written) for the outputs of call() with any
        self._never_written: list[tuple[Any, Any]] = []
        # names -> the TODO lines still open for them in the implementation (set by the runner)
        self.unfilled: Callable[[tuple[str, ...]], list[str]] = lambda names: []

    # -- lazily imported libraries ---------------------------------------------------------------
    @property
    def torch(self):
        import torch

        return torch

    @property
    def generator(self):
        if self._generator is None:
            self._generator = self.torch.Generator().manual_seed(self.case_seed)
        return self._generator

    def numpy_rng(self):
        import numpy as np

        return np.random.default_rng(self.case_seed)

    # -- inputs ----------------------------------------------------------------------------------
    def randn(self, shape: Sequence[int], dtype="float32", *, scale: float = 1.0,
              shift: float = 0.0, device: str | None = None):
        """Standard normal * scale + shift, drawn in float64 on the CPU, rounded to `dtype`.

        Never all zeros: fresh random values on every run (the seed is in the result row).
        """
        torch = self.torch
        x = torch.randn(tuple(shape), generator=self.generator, dtype=torch.float64)
        x = (x * scale + shift).to(_dtype(dtype))
        return x.to(device or self.torch_device)

    def rand_like_distinct(self, shape, dtype="float32", low=-1.0, high=1.0, device=None):
        torch = self.torch
        x = torch.rand(tuple(shape), generator=self.generator, dtype=torch.float64)
        return (low + (high - low) * x).to(_dtype(dtype)).to(device or self.torch_device)

    # -- outputs ---------------------------------------------------------------------------------
    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def never_written(self, out):
        """The mask of `out`'s elements that still hold the fill of fresh memory (None when
        call() returned `out` with every element written, or did not return it)."""
        for t, mask in self._never_written:
            if t is out:
                return mask
        return None

    def assert_close(self, got, expected, **kwargs) -> None:
        kwargs.setdefault("never_written", self.never_written(got))
        max_error, tolerance = compare.assert_close(got, expected, **kwargs)
        if self.max_error is None or max_error > self.max_error:
            self.max_error, self.tolerance = max_error, tolerance

    def assert_rows_sum_to_one(self, probabilities, dim: int, dtype: str, *, hint: str) -> None:
        """Every softmax row of `probabilities` (reduced over `dim`) sums to 1 within the
        rounding budget of its output dtype."""
        torch = self.torch
        n = probabilities.shape[dim]
        sums = probabilities.double().cpu().sum(dim=dim)
        eps = torch.finfo(getattr(torch, dtype)).eps
        eps32 = torch.finfo(torch.float32).eps
        # Each output is rounded once (relative error <= eps/2, so the sum is off by <= eps/2),
        # and a row's outputs share one fp32 denominator, whose tree sum over n terms is off by
        # about log2(n) * eps32/2, plus the fp32 divide: (log2(n) + 2) * eps32 covers both.
        allowed = 0.5 * eps + (n.bit_length() + 2) * eps32
        if self.device == "interpreter" and dtype == "bfloat16":
            # Triton 3.6's interpreter truncates fp32 -> bf16 (round toward zero): up to a full
            # eps per output, all in the same direction.
            allowed += 0.5 * eps
            self.note("bf16 stores truncate under Triton's interpreter; tolerance widened to eps")
        worst = float((sums - 1).abs().max())  # NaN if any row's sum is NaN
        self.max_error, self.tolerance = worst, allowed
        if not worst <= allowed:  # written so, a NaN sum fails (NaN > allowed is False)
            self.fail(f"a row sums to {float(sums[(sums - 1).abs().argmax()]):.8g}, off by "
                      f"{worst:.3g} > {allowed:.3g}", hint=hint)

    def fail(self, message: str, hint: str = "") -> None:
        raise CheckFailed(message, hint=hint)

    def require_exercises(self, *names: str, runs: str) -> None:
        """Stop this case as TODO while an exercise region tagged with one of `names` is still
        open; `runs` says what this case runs that needs it ("path B's two-pass walk")."""
        todos = self.unfilled(tuple(names))
        if todos:
            raise ExercisePending(todos, runs)

    def require_cuda(self) -> None:
        if self.device != "cuda":
            where = "the Triton CPU interpreter" if self.device == "interpreter" else "the CPU"
            raise Unavailable(f"needs a CUDA GPU; this run uses {where}")

    # -- calling learner code -------------------------------------------------------------------
    def call(self, fn: Callable, *args, expect_shape=None, expect_dtype=None,
             expect_contiguous: bool = False, name: str | None = None, **kwargs):
        """Call learner code and enforce the contract on its inputs and output.

        FAIL (with the reason named) when it raises, writes an input, returns a non-tensor,
        returns an input (or a view of one), returns memory that an earlier call of the same
        case returned (a cached buffer: see expect_fresh), or returns the wrong shape, dtype or
        device. On a GPU, given the expected shape and dtype, also when it stores outside a
        tensor of the output's size that it allocated (checks/tail_guard.py: the interpreter's
        own bounds check catches that everywhere else).
        """
        torch = self.torch
        label = name or getattr(fn, "__name__", "function")
        inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        # Not the whole memory blocks inside track_allocations, where their copies would count
        # as the call's own memory (like the tail guard's bands).
        snapshot = InputsSnapshot(inputs, whole_blocks=not self._tracking)
        with self._tail_guard(expect_shape, expect_dtype) as guard, fresh_memory_filled():
            out = call_learner(fn, *args, label=label, **kwargs)
        if self.device == "cuda":
            # A kernel's fault (an illegal address) surfaces here, at the first sync after the
            # launch: it is the learner's error too, so it becomes a FAIL with a hint.
            call_learner(torch.cuda.synchronize, label=f"{label} (its kernels, at the sync)")
        overrun = guard.overrun(out if isinstance(out, torch.Tensor) else None) if guard else None
        if overrun:
            raise CheckFailed(f"{label} {overrun}",
                              hint="tail not masked (or a wrong offset or stride, or a grid "
                                   "larger than the work): a store reached outside the tensor; "
                                   "mask the lanes beyond the size, and launch programs only "
                                   "for rows or tiles that exist")
        snapshot.check(label)
        if not isinstance(out, torch.Tensor):
            raise CheckFailed(f"{label} returned {type(out).__name__}, expected a torch.Tensor",
                              hint="return the output tensor from the launcher")
        for t in inputs:
            # `is` as well: an empty tensor has no memory to share, so only identity shows it.
            if out is t or _shares_memory(out, t):
                raise CheckFailed(f"{label} returned one of its inputs (or a view of it)",
                                  hint="outputs must be freshly allocated, e.g. torch.empty(...)")
        self.expect_fresh(out, label)
        if expect_shape is not None and tuple(out.shape) != tuple(expect_shape):
            raise CheckFailed(f"{label} returned shape {tuple(out.shape)}, expected "
                              f"{tuple(expect_shape)}", hint="wrong output shape")
        if expect_dtype is not None and out.dtype != _dtype(expect_dtype):
            raise CheckFailed(f"{label} returned dtype {out.dtype}, expected {_dtype(expect_dtype)}",
                              hint="the output keeps the input's dtype; statistics stay in fp32")
        if out.device.type != self.torch_device:
            raise CheckFailed(f"{label} returned a tensor on {out.device}, expected "
                              f"{self.torch_device}", hint="allocate the output on x.device")
        if expect_contiguous and not out.is_contiguous():
            raise CheckFailed(f"{label} returned a non-contiguous tensor (strides {out.stride()})",
                              hint="the API promises a new contiguous output")
        self.remember_unwritten(out)
        return out

    def remember_unwritten(self, out) -> None:
        """Note which of out's elements still hold the fill of fresh memory (call() does it for
        its output; a check that calls learner code inside fresh_memory_filled() itself, for
        a function returning several tensors, does it for each)."""
        unwritten = holds_fresh_memory_fill(out)
        if unwritten is not None:
            self._never_written.append((out, unwritten))

    # At most this many bytes of earlier outputs are kept alive per case (memory on a GPU).
    _EARLIER_OUTPUTS_MAX_BYTES = 256 << 20

    def expect_fresh(self, out, label: str) -> None:
        """FAIL if `out` lies in memory that an earlier call of this case returned (and the
        check still holds): a buffer cached across calls, which overwrote that earlier result.
        Then remember `out` for the calls after it."""
        for earlier_label, earlier in self._earlier_outputs:
            if _shares_memory(out, earlier):
                raise CheckFailed(
                    f"{label} returned memory that an earlier call's output ({earlier_label}) "
                    "still holds: that earlier result was overwritten",
                    hint=CACHED_BUFFER_HINT)
        size = out.untyped_storage().nbytes()
        if self._earlier_bytes + size <= self._EARLIER_OUTPUTS_MAX_BYTES:
            self._earlier_outputs.append((label, out))
            self._earlier_bytes += size

    @contextlib.contextmanager
    def _tail_guard(self, expect_shape, expect_dtype):
        """On a GPU, guard bands around the output (checks/tail_guard.py); elsewhere None:
        the interpreter bounds-checks every store itself. Off inside track_allocations, whose
        log and peak memory must see the learner's allocations only."""
        if self.device != "cuda" or expect_shape is None or expect_dtype is None or self._tracking:
            yield None
            return
        from checks.tail_guard import guard_tails

        with guard_tails(math.prod(expect_shape), _dtype(expect_dtype), self.torch_device) as guard:
            yield guard

    def expect_error(self, fn: Callable, *args, errors=(TypeError, ValueError),
                     mentions: Iterable[str] = (), what: str = "", **kwargs) -> None:
        """The call must raise one of `errors`, mentioning each word of `mentions`, before any
        kernel launch."""
        from checks import launches

        label = what or getattr(fn, "__name__", "call")
        with launches.counting() as log:
            try:
                fn(*args, **kwargs)
            except errors as exc:
                message = str(exc)
                missing = [m for m in mentions if m.lower() not in message.lower()]
                if missing:
                    raise CheckFailed(f"{label}: raised {type(exc).__name__}({message!r}), which "
                                      f"does not mention {missing}",
                                      hint="name the argument, what it got and what it accepts"
                                      ) from exc
                if log:
                    raise CheckFailed(f"{label}: raised only after launching {log}",
                                      hint="validate arguments before launching any kernel"
                                      ) from exc
                return
            except Exception as exc:  # noqa: BLE001 - learner code may raise anything
                raise CheckFailed(f"{label}: raised {type(exc).__name__}: {exc}, expected "
                                  f"{' or '.join(e.__name__ for e in errors)}",
                                  hint="refuse bad calls with a TypeError or ValueError") from exc
        raise CheckFailed(f"{label}: no error was raised for a bad call",
                          hint="refuse bad calls: validate arguments in the launcher before launching")

    @contextlib.contextmanager
    def track_allocations(self):
        """Yield a list that receives (shape, dtype) of every tensor a torch op creates inside
        the block (a TorchDispatchMode sees factory calls such as torch.empty as well as the
        results of computations), except those made while a kernel launch runs: Triton's own
        (the interpreter copies every tensor argument to host memory and back). On a GPU, the
        list's `peak_bytes` attribute is also set to the peak device memory allocated above the
        start of the block."""
        torch = self.torch
        from torch.utils._python_dispatch import TorchDispatchMode

        from checks import launches

        launches.install()

        class Log(list):
            peak_bytes: int | None = None

        log = Log()

        class Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if launches.inside_launch():
                    return out
                for t in (out if isinstance(out, (tuple, list)) else (out,)):
                    if isinstance(t, torch.Tensor):
                        log.append((tuple(t.shape), t.dtype))
                return out

        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = torch.cuda.memory_allocated()
        self._tracking = True
        try:
            with Recorder():
                yield log
        finally:
            self._tracking = False
        if self.device == "cuda":
            torch.cuda.synchronize()
            log.peak_bytes = torch.cuda.max_memory_allocated() - start

    @contextlib.contextmanager
    def count_launches(self):
        from checks import launches

        with launches.counting() as log:
            yield log


@contextlib.contextmanager
def fresh_memory_filled():
    """Inside the block, fill every float tensor that torch.empty (empty_like, empty_strided,
    Tensor.new_empty, new_empty_strided) makes with the NaN of FRESH_MEMORY_FILL (not the
    copies Triton's interpreter makes while a kernel runs).

    A TorchFunctionMode sees those calls where learner code makes them, in Python. (A
    TorchDispatchMode would also see allocations inside torch's own C++ code, but entering
    the first one in a process imports torch._dynamo: 1.6 s, inside the case's time limit.)
    The fill runs with every dispatch mode switched off: track_allocations must not log it as
    an operation of the learner's."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import _disable_current_modes

    from checks import launches

    launches.install()

    class Filled(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            made = func(*args, **(kwargs or {}))
            if (getattr(func, "__name__", "") in _EMPTY_FACTORIES
                    and isinstance(made, torch.Tensor) and made.numel()
                    and made.device.type != "meta" and not launches.inside_launch()):
                fill = FRESH_MEMORY_FILL.get(str(made.dtype).replace("torch.", ""))
                if fill is not None:
                    with _disable_current_modes():
                        made.view(getattr(torch, fill[1])).fill_(fill[0])
            return made

    with Filled():
        yield


def holds_fresh_memory_fill(out):
    """A bool mask (on the CPU) of out's elements whose bits are FRESH_MEMORY_FILL's NaN; None
    when there is none or out's dtype has no fill. Run outside every dispatch mode:
    track_allocations logs the learner's tensors, not these."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    fill = FRESH_MEMORY_FILL.get(str(out.dtype).replace("torch.", ""))
    if fill is None or out.numel() == 0:
        return None
    with _disable_current_modes():  # the checks' own work, not the learner's allocations
        mask = out.detach().view(getattr(torch, fill[1])) == fill[0]
        return mask.cpu() if bool(mask.any()) else None


def left_the_tensors(message: str) -> bool:
    """Did a call fail because a kernel addressed memory outside its tensors: the interpreter's
    bounds check ("out-of-bounds load/store") or, on a GPU, the tail guard's bands ("wrote
    past the end / before the start")? A check may then look for the address's cause."""
    return any(text in message for text in ("out-of-bounds", "wrote past the end",
                                             "wrote before the start"))


def call_learner(fn: Callable, *args, label: str = "", **kwargs) -> Any:
    """Run learner code; turn any exception into a CheckFailed naming where it happened."""
    try:
        return fn(*args, **kwargs)
    except (CheckFailed, Unavailable, TimeoutError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - learner code may raise anything
        raise CheckFailed(f"{label or 'the implementation'} raised {describe_exception(exc)}",
                          hint=_exception_hint(exc)) from exc


def describe_exception(exc: BaseException) -> str:
    """`TypeError: message (at kernels/foo.py:42)`, pointing at the innermost learner frame."""
    import traceback

    from checks.loader import REPO_ROOT

    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:  # the error is in the file, not the import
        return f"SyntaxError: {exc.msg} (at {exc.filename}:{exc.lineno})"
    # The innermost learner frame: Triton's interpreter re-raises a kernel's error as
    # InterpreterError from the original, so look through the causes too (innermost first).
    chain, cause = [], exc
    while cause is not None and len(chain) < 5:
        chain.append(cause)
        cause = cause.__cause__
    for link in reversed(chain):
        for frame in reversed(traceback.extract_tb(link.__traceback__)):
            filename = frame.filename
            if "site-packages" in filename or "/checks/" in filename or filename.startswith("<"):
                continue
            try:
                shown = str(__import__("pathlib").Path(filename).resolve().relative_to(REPO_ROOT))
            except ValueError:
                shown = filename
            where = f" (at {shown}:{frame.lineno})"
            break
        if where:
            break
    # Triton's interpreter wraps a kernel's error once per @triton.jit level it passes through
    # (InterpreterError("InterpreterError(\"OutOfBoundsAccess(...)\")")): name the original.
    shown_exc = chain[-1] if type(exc).__name__ == "InterpreterError" else exc
    text = str(shown_exc).strip()
    if len(text) > 1500:
        text = text[:1500] + " ..."
    return f"{type(shown_exc).__name__}: {text}{where}"


def _exception_hint(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "CompilationError":
        return _compilation_hint(exc)
    text = str(exc)
    if "illegal memory access" in text.lower():
        return ("tail not masked (or a wrong stride): a load or store reached memory outside the "
                "tensors; run the check with --device interpreter, whose bounds check names it. "
                "The CUDA context is now unusable: restart the process")
    if re.search(r"out-of-bounds \w+: all \d+ active lanes point", text):
        # Not one lane of the access was inside a tensor: a missing tail mask leaves the lanes
        # before the end inside, so this program's base address is past the end.
        return ("a whole program addressed memory past the end of the tensors (no lane of the "
                "access was inside one): is the grid larger than the work, with programs for "
                "rows or tiles that do not exist (compare the program id with the grid and the "
                "sizes), or is the base offset or a stride wrong?")
    if "out-of-bounds" in text:
        # The bounds check cannot tell a missing mask from a wrong address: an output viewed
        # with its input's layout (a transposed view not transposed back) overruns it too.
        return ("tail not masked (or a wrong offset or stride): a load or store reached past "
                "the end of a tensor (the interpreter's bounds check stopped it); mask the "
                "lanes beyond the size and check the strides each tensor is addressed with, "
                "or, for a loop meant to load without a mask, end it before the ragged last "
                "block")
    shape = _shape_hint(text)
    if shape:
        return shape
    if "Both operands must be same dtype" in text:
        # The interpreter asserts what a GPU's compiler refuses (_compilation_hint): a tile cast
        # to a fixed dtype (p.to(tl.float16)) beside an operand of another dtype.
        return ("tl.dot operands of two dtypes: both operands of tl.dot must have one dtype; "
                "cast one to the other's dtype (such as attention's p.to(v.dtype)) rather than "
                "to a fixed one, keeping the float32 accumulator")
    if name == "InterpreterError":
        return "the kernel failed under Triton's interpreter: the message shows the Python error"
    if name == "OutOfResources":
        return "the block size needs more registers or shared memory than the GPU has"
    return ""


def _shape_hint(text: str) -> str:
    """The hint for two block shapes that do not fit, from an error's text ("" if not one)."""
    if "Expected pointer argument to have shape" in text or \
            "Expected mask argument to have shape" in text:
        # A load or store whose value (or mask) has another block shape than its pointers: in
        # these kernels almost always per-row statistics reduced over the wrong axis, which
        # reach a store in code that was right (strided softmax's split kernels store them).
        return ("block shapes do not match at a load or store: the value or the mask has "
                "another shape than its pointers, most often after a reduction over the wrong "
                "axis (tl.sum / tl.max(t, axis=...) must run along the row: axis=1 of a (rows, "
                "cols) tile, axis=0 of a tile laid out (positions, rows) such as strided "
                "softmax's path B), which leaves one number per position instead of one per "
                "row; the line the message names may be the store that receives it")
    if "incompatible dimensions" in text:
        # Triton's broadcast refused two block shapes: in these kernels almost always a
        # reduction over the other axis, or a per-row vector meeting a tile unbroadcast.
        return ("block shapes do not broadcast: a reduction over the wrong axis (tl.sum / "
                "tl.max(t, axis=...) must run along the row: axis=1 of a (rows, cols) tile, "
                "axis=0 of a tile laid out (positions, rows) such as strided softmax's path B), "
                "or a per-row value combined with a tile without being broadcast back ([:, None] "
                "for a (rows, cols) tile, [None, :] for a (positions, rows) one); the message "
                "names the line (tl.static_print shows shapes)")
    return ""


def _compilation_hint(exc: BaseException) -> str:
    """A GPU's CompilationError shows the source line (and, raised in a @triton.jit helper,
    only the line of the call into it); the reason is down its chain of causes. (Under the
    interpreter the same mistakes raise the underlying error itself.)"""
    chain, cause = [], exc
    while cause is not None and len(chain) < 8:
        chain.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    reasons = "\n".join(chain)
    if "Both operands must be same dtype" in reasons:
        return ("tl.dot operands of two dtypes (a float32 tile times a 16-bit one): on a GPU "
                "both operands of tl.dot must have one dtype; cast the float32 one, such as "
                "attention's p, to the other's dtype first (p.to(v.dtype)), keeping the "
                "float32 accumulator. (Under the interpreter the 16-bit operand is already "
                "upcast, which hides this.)")
    return _shape_hint(reasons) or ("Triton could not compile the kernel: the message shows "
                                    "the line and the reason")


class InputsSnapshot:
    """Bitwise copies of a call's tensor inputs, taken before it; `check` fails the call that
    changed one. Each input's elements are compared, and, where a view's elements are not its
    whole memory block, the block too: a store with a wrong stride or offset can land between
    a view's elements (the cells a slice or a step skips) and leave every element of the view
    unchanged."""

    def __init__(self, inputs: list, whole_blocks: bool = True):
        self.inputs = inputs
        self.elements = [t.detach().clone() for t in inputs]
        self.blocks = [(i, _storage_bytes(t).clone()) for i, t in _distinct_storages(inputs)
                       if not _covers_its_storage(t)] if whole_blocks else []

    def check(self, label: str,
              hint: str = "inputs must never be written: allocate a fresh output") -> None:
        import torch

        for i, (t, saved) in enumerate(zip(self.inputs, self.elements, strict=True)):
            if not _bitwise_equal(t, saved):
                raise CheckFailed(f"{label} wrote into its input #{i} (shape {tuple(t.shape)})",
                                  hint=hint)
        for i, saved in self.blocks:
            t = self.inputs[i]
            if not torch.equal(_storage_bytes(t), saved):
                raise CheckFailed(
                    f"{label} wrote into the memory of its input #{i} (shape {tuple(t.shape)}, "
                    f"strides {t.stride()}) outside the input's own elements",
                    hint="a store landed in an input's memory, between or around the elements of "
                         "the view: check which pointer each tl.store uses and the offsets and "
                         "strides that address it; inputs must never be written")


def _distinct_storages(tensors) -> list:
    """(index, tensor) for the first input of each distinct memory block (q, k and v cut from
    one buffer share it: one snapshot covers all three)."""
    seen, out = set(), []
    for i, t in enumerate(tensors):
        key = (t.device, t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if key not in seen:
            seen.add(key)
            out.append((i, t))
    return out


def _covers_its_storage(t) -> bool:
    """Whether `t`'s elements are every byte of its memory block (a whole contiguous tensor):
    then comparing the elements, as ctx.call does anyway, compares the block."""
    return (t.is_contiguous() and t.storage_offset() == 0
            and t.numel() * t.element_size() == t.untyped_storage().nbytes())


def _storage_bytes(t):
    """Every byte of the memory block `t` views (its storage), as a 1-D uint8 tensor."""
    import torch

    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def _bitwise_equal(a, b) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:
        bits = {torch.float16: torch.int16, torch.bfloat16: torch.int16,
                torch.float32: torch.int32, torch.float64: torch.int64}[a.dtype]
        return torch.equal(a.detach().contiguous().view(bits), b.detach().contiguous().view(bits))
    return torch.equal(a, b)


def _shares_memory(a, b) -> bool:
    try:
        sa, sb = a.untyped_storage(), b.untyped_storage()
    except Exception:  # noqa: BLE001
        return False
    if sa.data_ptr() == 0 or sb.data_ptr() == 0:
        return False
    a0, a1 = sa.data_ptr(), sa.data_ptr() + sa.nbytes()
    b0, b1 = sb.data_ptr(), sb.data_ptr() + sb.nbytes()
    return a0 < b1 and b0 < a1


def _dtype(dtype):
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, str(dtype).replace("torch.", ""))
