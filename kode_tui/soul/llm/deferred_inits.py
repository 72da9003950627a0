"""Packages whose `__init__` runs only when a name it defines is asked for.

The OpenAI SDK's `openai.types` and its subpackages import every model of the whole API in
their `__init__` (the Responses API, evals, graders, realtime...: ~400 modules, ~150 ms of the
model process's start), though a chat completion streamed as this process reads it (untyped
chunks, `openai_route._open`) needs a handful: the SDK's own modules import the ones they use
from their own files (`from .types.chat.chat_completion import ...`). `deferred_inits(prefix)`
imports the packages under `prefix` without their `__init__`: a submodule imports as usual,
and the first name asked of the package that is not one of its submodules runs its `__init__`
then, whole, in the package's namespace, as the import would have (so `openai.types.Batch`
still works, a little later). Only the order of the imports changes, never what a name is.

Python's own `importlib.util.LazyLoader` defers a module whole: the import of a submodule
reads the package's `__path__`, which runs its `__init__` at once. The finder is in place only
while the model process imports the SDK, at its start; a package's deferred `__init__` may run
later in any thread (see `_Init`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

__all__ = ["deferred_inits"]


@contextlib.contextmanager
def deferred_inits(prefix: str) -> Iterator[None]:
    """While inside, the packages `prefix` and below that get imported leave their `__init__`
    for the first name asked of them (see the module's docstring); they keep it so after."""
    finder = _Finder(prefix)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._prefix and not fullname.startswith(self._prefix + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.submodule_search_locations is None or spec.loader is None:
            return spec  # a module: imported as usual
        spec.loader = _DeferredInit(spec.loader)
        return spec


class _DeferredInit(importlib.abc.Loader):
    """A package's loader that leaves its `__init__` to `_Init`."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__getattr__ = _Init(module, self._loader)  # type: ignore[method-assign]


class _Init:
    """The package's `__getattr__` (PEP 562) until its `__init__` has run: a submodule of that
    name is imported; any other name runs the `__init__` first. Another thread asking
    meanwhile waits for it; the `__init__` itself, asking a name it has not defined yet, finds
    what an import in progress would (a submodule, else AttributeError)."""

    def __init__(self, package: ModuleType, loader: Any) -> None:
        self._package = package
        self._loader = loader
        self._lock = threading.RLock()
        self._running = False

    def __call__(self, name: str) -> Any:
        package = self._package
        submodule = f"{package.__name__}.{name}"
        is_submodule = not name.startswith("__") and _found(submodule)
        with self._lock:
            if (
                not is_submodule
                and package.__dict__.get("__getattr__") is self
                and not self._running
            ):
                self._running = True
                try:
                    self._loader.exec_module(package)
                finally:
                    self._running = False
                    if package.__dict__.get("__getattr__") is self:
                        del package.__dict__["__getattr__"]
        try:
            return package.__dict__[name]
        except KeyError:
            pass
        if is_submodule:
            return importlib.import_module(submodule)
        own = package.__dict__.get("__getattr__")
        if own is not None and own is not self:  # the `__init__` defines one of its own
            return own(name)
        raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
