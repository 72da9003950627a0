"""Packages imported with their `__init__` left for the first name asked of them: what the model
process does to the OpenAI SDK's types (~150 ms of its start)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kode_tui.soul.llm.deferred_inits import deferred_inits
from tests.child_python import printed

LOG = "imported"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A package `kitchen` whose `__init__` imports every module, as the SDK's types do; each
    module notes its import in `kitchen_log.imported`. Yields that list."""
    root = tmp_path / "kitchen"
    (root / "drawer").mkdir(parents=True)
    (tmp_path / "kitchen_log.py").write_text(f"{LOG} = []\n")

    def module(path: Path, body: str = "") -> None:
        name = ".".join(path.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__")
        path.write_text(f"import kitchen_log\nkitchen_log.{LOG}.append({name!r})\n{body}")

    module(root / "__init__.py", "from .oven import Oven as Oven\nfrom .sink import Sink\n")
    module(root / "oven.py", "class Oven: pass\n")
    module(root / "sink.py", "from .drawer.fork import Fork\nclass Sink: pass\n")
    module(root / "drawer" / "__init__.py", "from .fork import Fork\nfrom .spoon import Spoon\n")
    module(root / "drawer" / "fork.py", "class Fork: pass\n")
    module(root / "drawer" / "spoon.py", "class Spoon: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__("kitchen_log").imported
    for name in [name for name in sys.modules if name.split(".")[0] in ("kitchen", "kitchen_log")]:
        del sys.modules[name]


def test_a_submodule_imports_without_its_packages_init(package: list[str]) -> None:
    with deferred_inits("kitchen"):
        from kitchen.sink import Sink

    assert Sink.__module__ == "kitchen.sink"
    # The modules sink imports, and no other: neither package's `__init__` ran.
    assert package == ["kitchen.sink", "kitchen.drawer.fork"]

    from kitchen import oven  # a submodule asked for by name: still no `__init__`

    assert oven.Oven.__module__ == "kitchen.oven"
    assert "kitchen" not in package


def test_a_name_the_init_defines_runs_it_then_whole(package: list[str]) -> None:
    with deferred_inits("kitchen"):
        import kitchen.sink
    import kitchen

    # Asked after the finder is gone: the package keeps its deferred `__init__`.
    assert kitchen.Oven.__name__ == "Oven"
    assert package == ["kitchen.sink", "kitchen.drawer.fork", "kitchen", "kitchen.oven"]
    assert kitchen.Sink is kitchen.sink.Sink  # the module already imported, not a second one
    from kitchen.drawer import Spoon  # the subpackage's own `__init__` runs at its first name

    assert Spoon.__module__ == "kitchen.drawer.spoon"
    with pytest.raises(AttributeError):
        _ = kitchen.Kettle  # a name nobody defines is still an AttributeError
    with pytest.raises(ImportError):
        from kitchen import Kettle  # noqa: F401


def test_outside_the_block_packages_import_as_usual(package: list[str]) -> None:
    with deferred_inits("elsewhere"):
        import kitchen.oven  # noqa: F401
    assert package[:2] == ["kitchen", "kitchen.oven"]
    assert "kitchen.drawer.fork" in package  # the `__init__` ran, with all it imports


def test_the_model_process_leaves_the_sdks_other_apis_unimported() -> None:
    """The OpenAI SDK as the model process imports it: no Responses API, evals or graders (the
    request itself is served: test_model_launch's first-request tests); what the SDK's types
    define is all still there, also for litellm, which imports them the usual way later."""
    code = (
        "import sys\n"
        "from kode_tui.soul.llm import worker\n"
        "worker._warm('openai')\n"
        "print(*(name in sys.modules for name in ('openai.types.responses.response',"
        " 'openai.types.eval_create_params', 'openai.types.graders')))\n"
        "import openai\n"
        "from openai.types.responses import ResponseInputParam\n"
        "print(openai.types.Batch.__name__, openai.types.chat.ChatCompletion.__name__,"
        " ResponseInputParam is not None)\n"
    )
    assert printed(code) == ["False"] * 3 + ["Batch", "ChatCompletion", "True"]


def test_a_thread_asking_while_the_init_runs_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model process may load litellm in a thread (its first non-`openai/` request) while
    its loop reads the SDK's types: a name asked while another thread runs the `__init__` is
    there once it has run, never an AttributeError of a half-run package."""
    root = tmp_path / "slow"
    root.mkdir()
    (tmp_path / "slow_gate.py").write_text(
        "import threading\nrunning, go = threading.Event(), threading.Event()\n"
    )
    (root / "__init__.py").write_text(
        "import slow_gate\nslow_gate.running.set()\nslow_gate.go.wait(30)\n"
        "from .parts import Part\n"
    )
    (root / "parts.py").write_text("class Part: pass\n")
    (root / "other.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with deferred_inits("slow"):
            import slow.other
        import slow
        import slow_gate

        init = slow.__dict__["__getattr__"]
        waiting = threading.Event()

        class Watched:  # the init's lock, noting who comes to wait for it
            def __init__(self, lock: Any) -> None:
                self._lock = lock

            def __enter__(self) -> None:
                if threading.current_thread().name == "second":
                    waiting.set()
                self._lock.__enter__()

            def __exit__(self, *exc: object) -> None:
                self._lock.__exit__(*exc)

        init._lock = Watched(init._lock)
        found: dict[str, Any] = {}

        def ask(name: str) -> None:
            try:
                found[threading.current_thread().name] = slow.Part
            except AttributeError as error:
                found[threading.current_thread().name] = error

        first = threading.Thread(target=ask, args=("Part",), name="first")
        first.start()
        assert slow_gate.running.wait(30)  # the first thread runs the `__init__`
        second = threading.Thread(target=ask, args=("Part",), name="second")
        second.start()
        assert waiting.wait(30)
        slow_gate.go.set()
        first.join(30)
        second.join(30)
        assert found["first"] is found["second"] is sys.modules["slow.parts"].Part
    finally:
        for name in [name for name in sys.modules if name.split(".")[0] in ("slow", "slow_gate")]:
            del sys.modules[name]
