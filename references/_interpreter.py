"""Triton's CPU interpreter, made to run with the numpy this book installs.

Triton's interpreter (3.6 and earlier) turns a scalar tensor into a Python int with
`int(handle.data)`, where `data` is a 1-element array. numpy 2.3 deprecated and 2.4 removed that
conversion, so `range(0, n, BLOCK)` over a runtime `n` fails inside an interpreted kernel with
"only 0-dimensional arrays can be converted to Python scalars" (triton-lang/triton#9171).
`patch_numpy_index()` wraps the interpreter's patch of `tl.tensor` so that `__index__` takes the
one element first. It changes nothing where the bug is fixed, and a GPU run never reaches it.

The package's `__init__` applies it whenever TRITON_INTERPRET=1, so a script that imports a
kernel module under the interpreter works as the notebooks and the checks do.
"""

from __future__ import annotations


def patch_numpy_index() -> None:
    """Apply the workaround above to Triton's interpreter (once; harmless to call again)."""
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
