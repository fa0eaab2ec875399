"""Loading an implementation (starter, reference or a learner's own file) and finding its TODOs.

An implementation is named by `--impl`:
- `kernels` (the learner's starters) or `references` (the solutions): packages in the repo;
- a path to a `.py` file: loaded as the workshop's module; its folder acts as the package, so a
  relative import such as `from .strided_softmax import softmax` finds its siblings;
- a path to a folder holding `<workshop>.py` files.

Exercise regions: a reference marks each with `# EXERCISE <names>: <instructions>` ...
`# END EXERCISE`; the starter holds `# TODO(<names>): <instructions>` in its place (see
tools/make_starters.py). `<names>` are the public functions the region belongs to. A check that
uses one of them reports TODO while the TODO line is still there.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kernels", "references")

TODO_LINE = re.compile(r"^\s*# TODO\((?P<names>[\w., ]+)\):\s*(?P<text>.*)$")


@dataclass(frozen=True)
class Implementation:
    """Where an implementation lives: a package name or an anonymous folder package."""

    label: str  # what the user typed: "kernels", "references" or the path
    folder: Path  # the folder holding <workshop>.py files
    package: str  # import name of that folder as a package
    single_file: Path | None = None  # set when the user named one file

    def module_path(self, workshop: str) -> Path:
        if self.single_file is not None:
            return self.single_file
        return self.folder / f"{workshop}.py"

    def module_name(self, workshop: str) -> str:
        stem = self.single_file.stem if self.single_file is not None else workshop
        return f"{self.package}.{stem}"


def resolve(impl: str | Path) -> Implementation:
    """Turn an --impl value into an Implementation, with a clear error if it does not exist."""
    text = str(impl)
    if text in PACKAGES:
        return Implementation(text, REPO_ROOT / text, text)
    path = Path(text).expanduser().resolve()
    if path.is_file() and path.suffix == ".py":
        return Implementation(text, path.parent, _folder_package(path.parent), path)
    if path.is_dir():
        for name in PACKAGES:  # a path that is one of our own packages imports as that package
            if path == (REPO_ROOT / name).resolve():
                return Implementation(text, path, name)
        return Implementation(text, path, _folder_package(path))
    raise ValueError(f"--impl must be 'kernels', 'references', a .py file or a folder; "
                     f"got {text!r}, which does not exist")


def _folder_package(folder: Path) -> str:
    """Register `folder` as an importable package with a unique name and return that name."""
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:10]
    name = f"_impl_{digest}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_loader(name, loader=None, is_package=True)
        package = importlib.util.module_from_spec(spec)
        package.__path__ = [str(folder)]
        sys.modules[name] = package
    return name


def load(workshop: str, impl: str | Path | Implementation):
    """Import the workshop's module of an implementation (raises what the import raises)."""
    implementation = impl if isinstance(impl, Implementation) else resolve(impl)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    path = implementation.module_path(workshop)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: the implementation {implementation.label!r}"
                                f" has no module for workshop {workshop!r}")
    try:
        return importlib.import_module(implementation.module_name(workshop))
    except ModuleNotFoundError as exc:
        sibling = _missing_sibling(exc, implementation)
        if sibling is None:
            raise
        # A learner's own file imports its helpers relatively (`from ._validate import ...`);
        # Python's message names our made-up package (`_impl_4d21...`), which helps nobody.
        raise ModuleNotFoundError(
            f"{path.name} imports .{sibling}, but {implementation.folder} has no {sibling}.py: "
            f"the folder of your file is imported as a package, so copy kernels/{sibling}.py "
            f"next to it (or pass a copy of the whole kernels/ folder as --impl)",
            name=exc.name) from exc
    except ImportError as exc:  # a name missing from a module that does exist
        _name_the_folder(exc, implementation)
        raise


def _name_the_folder(exc: ImportError, implementation: Implementation) -> None:
    """`cannot import name 'x' from '_impl_4d21..._validate'` names our made-up package, which
    helps nobody: say the file's folder instead. The exception itself is kept (its traceback
    points at the learner's import line); only its message changes."""
    prefix = implementation.package + "."
    if implementation.package in PACKAGES or prefix not in str(exc):
        return
    exc.msg = str(exc).replace(f"'{prefix}", f"'{implementation.folder}/")  # what str() shows
    exc.args = (exc.msg, *exc.args[1:])
    if exc.name and exc.name.startswith(prefix):
        exc.name = exc.name[len(prefix):]


def _missing_sibling(exc: ModuleNotFoundError, implementation: Implementation) -> str | None:
    """The sibling module a relative import did not find in the implementation's folder."""
    prefix = implementation.package + "."
    if implementation.package in PACKAGES or not (exc.name or "").startswith(prefix):
        return None
    return exc.name[len(prefix):]


def unfilled_exercises(workshop: str, impl: Implementation, uses: tuple[str, ...]) -> list[str]:
    """The TODO lines still present for the names a check uses, as 'file:line: text' strings.

    A dotted name (`strided_softmax.softmax`) refers to a sibling module of the implementation.
    """
    found = []
    for name in uses:
        module, _, function = name.rpartition(".")
        path = impl.folder / f"{module}.py" if module else impl.module_path(workshop)
        for lineno, line in _todo_lines(path):
            names = {n.strip() for n in TODO_LINE.match(line)["names"].split(",")}
            if function in names:
                found.append((display_path(path), lineno, TODO_LINE.match(line)["names"]))
    # In file order (sorted as text, line 95 would come after line 209).
    return [f"{path}:{lineno} TODO({names})" for path, lineno, names in sorted(set(found))]


def _todo_lines(path: Path) -> list[tuple[int, str]]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [(i, line) for i, line in enumerate(lines, 1) if TODO_LINE.match(line)]


def display_path(path: Path) -> str:
    """The path relative to the repository when it is inside it (kernels/foo.py), else whole."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def source_files(workshop: str, impl: Implementation) -> list[Path]:
    """The implementation's files a workshop exercises: its module and the siblings it imports,
    and theirs (softmax_backward imports the strided softmax, which imports _gpu)."""
    files = [impl.module_path(workshop)]
    for current in files:  # grows while it is walked: breadth-first over the imports
        try:
            text = current.read_text()
        except OSError:
            continue
        # `from ._gpu import cdiv` and `from . import _attention_hopper as _hopper` alike
        siblings = re.findall(r"^from \.(\w+) import", text, flags=re.M)
        siblings += re.findall(r"^from \. import (\w+)", text, flags=re.M)
        for sibling in siblings:
            path = impl.folder / f"{sibling}.py"
            if path.is_file() and path not in files:
                files.append(path)
    return files


def reload_all(impl: Implementation) -> None:
    """Forget imported modules of an implementation so edited files are read again."""
    prefix = impl.package + "."
    for name in [n for n in sys.modules if n.startswith(prefix)]:
        del sys.modules[name]
    importlib.invalidate_caches()
