"""Glob and Grep. Grep's Python search is always tested; ripgrep when it is installed (the two
must give the same output), and the ripgrep code path also with a stand-in `rg` script."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kode_tui.tools import grep, grep_python
from kode_tui.tools.base import ToolEnv, ToolError
from kode_tui.tools.files import ReadFile, ReadFileParams
from kode_tui.tools.glob import Glob, GlobParams
from kode_tui.tools.grep import Grep, find_rg, rg_arguments
from kode_tui.tools.grep_params import GrepParams


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def env(work: Path) -> ToolEnv:
    return ToolEnv(work_dir=work)


def make(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


async def glob(env: ToolEnv, pattern: str, **params: Any) -> Any:
    return await Glob().run(GlobParams(pattern=pattern, **params), env, "call")


# --- Glob ----------------------------------------------------------------------------------------


async def test_glob_matches_recursively_sorted_and_relative_to_the_work_dir(
    env: ToolEnv, work: Path
) -> None:
    make(work, {"src/b.py": "", "src/a.py": "", "src/pkg/c.py": "", "src/d.txt": "", "e.py": ""})
    result = await glob(env, "src/**/*.py")
    assert result.output.splitlines() == ["src/a.py", "src/b.py", "src/pkg/c.py"]
    assert result.message == "Found 3 matches for pattern `src/**/*.py`."
    top = await glob(env, "*.py")
    assert top.output == "e.py"
    assert top.message == "Found 1 match for pattern `*.py`."


async def test_glob_in_a_directory_still_shows_paths_from_the_work_dir(
    env: ToolEnv, work: Path
) -> None:
    make(work, {"src/pkg/c.py": "", "src/pkg/d.py": ""})
    result = await glob(env, "*.py", directory="src/pkg")
    assert result.output.splitlines() == ["src/pkg/c.py", "src/pkg/d.py"]


async def test_glob_skips_heavy_dirs_unless_the_pattern_names_them(
    env: ToolEnv, work: Path
) -> None:
    make(
        work,
        {
            "src/a.js": "",
            "node_modules/react/index.js": "",
            "src/node_modules/x/y.js": "",
            ".venv/lib/site.py": "",
            ".git/HEAD": "",
        },
    )
    assert (await glob(env, "src/**/*.js")).output == "src/a.js"
    assert (await glob(env, "*")).output.splitlines() == ["src"]
    named = await glob(env, "node_modules/react/*.js")
    assert named.output == "node_modules/react/index.js"
    nested = await glob(env, "src/**/node_modules/*/*.js")
    assert nested.output == "src/node_modules/x/y.js"


async def test_glob_accepts_a_leading_double_star_and_leaves_ignored_and_dependency_files_out(
    env: ToolEnv, work: Path
) -> None:
    # `**/*.py`, the pattern models use most, was refused as "unsafe".
    make(
        work,
        {
            ".gitignore": "build/\n*_gen.py\n",
            "top.py": "",
            "src/a.py": "",
            "src/pkg/deep/b.py": "",
            "src/pkg/c_gen.py": "",
            "build/out.py": "",
            "node_modules/x/setup.py": "",
            ".venv/lib/site.py": "",
            "README.md": "",
        },
    )
    expected = ["src/a.py", "src/pkg/deep/b.py", "top.py"]
    for in_git in (False, True):
        if in_git:
            git(work, "init", "-q")
        result = await glob(env, "**/*.py")
        assert result.output.splitlines() == expected
        assert result.message == "Found 3 matches for pattern `**/*.py`."
    everything = await glob(env, "**/*.py", include_ignored=True)
    assert everything.output.splitlines() == [
        ".venv/lib/site.py",
        "build/out.py",
        "node_modules/x/setup.py",
        "src/a.py",
        "src/pkg/c_gen.py",
        "src/pkg/deep/b.py",
        "top.py",
    ]


async def test_glob_refuses_absolute_and_parent_patterns(env: ToolEnv) -> None:
    for pattern in ("/etc/*", "../*", ""):
        with pytest.raises(ToolError, match="relative"):
            await glob(env, pattern)


async def test_glob_checks_every_brace_alternative_so_none_reaches_out(
    env: ToolEnv, work: Path, tmp_path: Path
) -> None:
    # Braces expand after the check used to run: `{..,x}/outside/*` listed the parent's files.
    make(tmp_path / "outside", {"secret.txt": ""})
    make(work, {"a/b.txt": ""})
    for pattern in ("{..,x}/outside/*", "a/{../..,x}/*", "{/etc,x}/passwd", "{.,.}{.,.}/*"):
        with pytest.raises(ToolError, match="relative"):
            await glob(env, pattern)
    assert (await glob(env, "{**,a}/*.txt")).output == "a/b.txt"
    assert (await glob(env, "{a,x}/*")).output == "a/b.txt"


async def test_glob_caps_the_results_at_1000(env: ToolEnv, work: Path) -> None:
    make(work, {f"many/f{n:04}.txt": "" for n in range(1005)})
    result = await glob(env, "many/*.txt")
    lines = result.output.splitlines()
    assert len(lines) == 1000
    assert lines[0] == "many/f0000.txt" and lines[-1] == "many/f0999.txt"
    assert "Found 1005 matches" in result.message
    assert "Only the first 1000 matches are returned" in result.message


async def test_glob_can_leave_directories_out(env: ToolEnv, work: Path) -> None:
    make(work, {"src/a.py": "", "src/pkg/b.py": ""})
    assert (await glob(env, "src/*")).output.splitlines() == ["src/a.py", "src/pkg"]
    assert (await glob(env, "src/*", include_dirs=False)).output == "src/a.py"
    assert (await glob(env, "src/**", include_dirs=False)).output.splitlines() == [
        "src/a.py",
        "src/pkg/b.py",
    ]


async def test_glob_expands_braces(env: ToolEnv, work: Path) -> None:
    make(work, {"a.ts": "", "b.tsx": "", "c.js": "", "d.py": "", "docs/e.md": "", "f.{x}": ""})
    assert (await glob(env, "*.{ts,tsx}")).output.splitlines() == ["a.ts", "b.tsx"]
    assert (await glob(env, "**/*.{py,md}")).output.splitlines() == ["d.py", "docs/e.md"]
    assert (await glob(env, "{docs/*,c}.{md,js}")).output.splitlines() == ["c.js", "docs/e.md"]
    assert (await glob(env, "f.{x}")).output == "f.{x}"


async def test_glob_with_no_match_says_so(env: ToolEnv) -> None:
    result = await glob(env, "*.rs")
    assert result.output == ""
    assert result.message == "No matches found for pattern `*.rs`."


async def test_glob_of_a_missing_directory_is_an_error(env: ToolEnv) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await glob(env, "*", directory="nowhere")


async def test_glob_outside_the_work_dir_needs_a_read_approval(
    env: ToolEnv, tmp_path: Path
) -> None:
    inside = await Glob().permission(GlobParams(pattern="*"), env)
    assert inside is None
    other = tmp_path / "other"
    other.mkdir()
    permission = await Glob().permission(GlobParams(pattern="*", directory=str(other)), env)
    assert permission is not None
    assert permission.kind == "read"
    assert permission.scope == f"read:{other.resolve()}"
    assert permission.outside_work_dir


# --- Grep ----------------------------------------------------------------------------------------

TREE: dict[str, str | bytes] = {
    "src/app.py": "import os\n\ndef main():\n    print('hello')\n    return 0\n\n\nmain()\n",
    "src/util.py": "def helper():\n    return 'Hello'\n",
    "src/web/page.ts": "const hello = 'hello';\nexport default hello;\n",
    "docs/guide.md": "Say hello to the app.\n",
    "data/blob.bin": b"hello\0\x01\x02",
    ".hidden.cfg": "hello = true\n",
}


def grep_params(**params: Any) -> GrepParams:
    return GrepParams.model_validate(params)


async def python_grep(env: ToolEnv, **params: Any) -> Any:
    return await Grep(use_rg=False).run(grep_params(**params), env, "call")


@pytest.fixture
def tree(work: Path) -> Path:
    make(work, TREE)
    return work


async def test_grep_lists_matching_files_newest_first(env: ToolEnv, tree: Path) -> None:
    os.utime(tree / "src/util.py", (1_000, 1_000))
    os.utime(tree / "src/app.py", (3_000, 3_000))
    result = await python_grep(env, pattern="hello", **{"-i": True}, glob="*.py")
    assert result.output.splitlines() == ["src/app.py", "src/util.py"]
    assert result.brief == "2 files"


async def test_grep_searches_hidden_files_and_skips_binary_ones(env: ToolEnv, tree: Path) -> None:
    result = await python_grep(env, pattern="hello")
    files = set(result.output.splitlines())
    assert ".hidden.cfg" in files
    assert "data/blob.bin" not in files
    assert files == {".hidden.cfg", "docs/guide.md", "src/app.py", "src/web/page.ts"}


async def test_grep_content_shows_numbered_lines_with_context(env: ToolEnv, tree: Path) -> None:
    result = await python_grep(
        env, pattern="print|^main", output_mode="content", path="src/app.py", **{"-C": 1}
    )
    assert result.output.splitlines() == [
        "src/app.py-3-def main():",
        "src/app.py:4:    print('hello')",
        "src/app.py-5-    return 0",
        "--",
        "src/app.py-7-",
        "src/app.py:8:main()",
    ]


async def test_grep_context_before_and_after_separately(env: ToolEnv, tree: Path) -> None:
    result = await python_grep(
        env, pattern="print", output_mode="content", path="src", **{"-B": 2, "-A": 0, "-C": 5}
    )
    assert result.output.splitlines() == [
        "src/app.py-2-",
        "src/app.py-3-def main():",
        "src/app.py:4:    print('hello')",
    ]


async def test_grep_content_separates_files_only_when_showing_context(
    env: ToolEnv, tree: Path
) -> None:
    plain = await python_grep(env, pattern="hello", output_mode="content", type="ts")
    assert plain.output.splitlines() == [
        "src/web/page.ts:1:const hello = 'hello';",
        "src/web/page.ts:2:export default hello;",
    ]
    with_context = await python_grep(
        env, pattern="hello", output_mode="content", glob="*.{md,cfg}", **{"-A": 1}
    )
    assert with_context.output.splitlines() == [
        ".hidden.cfg:1:hello = true",
        "--",
        "docs/guide.md:1:Say hello to the app.",
    ]


async def test_grep_content_without_line_numbers(env: ToolEnv, tree: Path) -> None:
    result = await python_grep(
        env, pattern="hello", output_mode="content", path="docs", **{"-n": False}
    )
    assert result.output == "docs/guide.md:Say hello to the app."


async def test_grep_content_drops_the_carriage_returns_of_windows_lines(
    env: ToolEnv, work: Path
) -> None:
    make(work, {"win.txt": "first\r\nsecond\r\n"})
    result = await python_grep(env, pattern="first", output_mode="content", **{"-A": 1})
    assert result.output == "win.txt:1:first\nwin.txt-2-second"


async def test_grep_counts_matches_per_file_and_in_total(env: ToolEnv, tree: Path) -> None:
    result = await python_grep(env, pattern="hello", output_mode="count_matches", path="src")
    assert result.output.splitlines() == ["src/app.py:1", "src/web/page.ts:3"]
    assert "Found 4 total occurrences across 2 files." in result.message


async def test_grep_multiline_matches_span_lines(env: ToolEnv, tree: Path) -> None:
    result = await python_grep(
        env, pattern=r"def main\(\):.*?print", output_mode="content", multiline=True
    )
    assert result.output.splitlines() == [
        "src/app.py:3:def main():",
        "src/app.py:4:    print('hello')",
    ]
    single = await python_grep(env, pattern=r"main\(\):\n", output_mode="content")
    assert single.message.startswith("No matches found")


async def test_grep_pages_with_head_limit_and_offset(env: ToolEnv, work: Path) -> None:
    make(work, {"many.txt": "".join(f"match {n}\n" for n in range(1, 11))})
    first = await python_grep(env, pattern="match", output_mode="content", head_limit=4)
    assert first.output.splitlines()[-1] == "many.txt:4:match 4"
    assert "Results truncated to 4 lines (total: 10). Use offset=4 to see more." in first.message
    rest = await python_grep(env, pattern="match", output_mode="content", head_limit=4, offset=8)
    assert rest.output.splitlines() == ["many.txt:9:match 9", "many.txt:10:match 10"]
    unlimited = await python_grep(env, pattern="match", output_mode="content", head_limit=0)
    assert len(unlimited.output.splitlines()) == 10


async def test_grep_cuts_very_long_lines(env: ToolEnv, work: Path) -> None:
    make(work, {"min.js": "var a='" + "x" * 5000 + "';\n"})
    result = await python_grep(env, pattern="var", output_mode="content")
    assert len(result.output) < 2100
    assert result.output.endswith("[line cut at 2000 of 5018 chars]")


async def test_grep_with_no_match_is_not_an_error(env: ToolEnv, tree: Path) -> None:
    result = await python_grep(env, pattern="nothing matches this")
    assert not result.is_error
    assert result.output == ""
    assert result.message == "No matches found."


async def test_grep_reports_a_bad_regex_and_a_missing_path(env: ToolEnv, tree: Path) -> None:
    with pytest.raises(ToolError, match="Invalid regular expression"):
        await python_grep(env, pattern="(unclosed")
    with pytest.raises(ToolError, match="does not exist"):
        await python_grep(env, pattern="x", path="nowhere")
    with pytest.raises(ToolError, match="Unknown file type"):
        await python_grep(env, pattern="x", type="cobol-ish")


def git(work: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(work), *args], check=True, capture_output=True)


async def test_grep_in_a_git_repo_skips_ignored_files_unless_asked(
    env: ToolEnv, work: Path
) -> None:
    make(
        work,
        {
            ".gitignore": "build/\n*.log\n",
            "src/a.py": "needle\n",
            "build/out.py": "needle\n",
            "debug.log": "needle\n",
            "untracked.txt": "needle\n",
        },
    )
    git(work, "init", "-q")
    git(work, "add", "src/a.py")
    result = await python_grep(env, pattern="needle")
    assert sorted(result.output.splitlines()) == ["src/a.py", "untracked.txt"]
    everything = await python_grep(env, pattern="needle", include_ignored=True)
    assert sorted(everything.output.splitlines()) == [
        "build/out.py",
        "debug.log",
        "src/a.py",
        "untracked.txt",
    ]
    # Pointed at an ignored folder, it is searched all the same (as ripgrep does).
    named = await python_grep(env, pattern="needle", path="build")
    assert named.output == "build/out.py"


async def test_grep_outside_git_skips_heavy_dirs(env: ToolEnv, work: Path) -> None:
    make(work, {"a.js": "needle\n", "node_modules/x/b.js": "needle\n", ".git/c": "needle\n"})
    result = await python_grep(env, pattern="needle")
    assert result.output == "a.js"


@pytest.mark.parametrize("use_rg", [pytest.param(False, id="python"), pytest.param(True, id="rg")])
async def test_grep_outside_git_honours_gitignore_files_and_skips_dependency_folders(
    env: ToolEnv, work: Path, use_rg: bool
) -> None:
    if use_rg and find_rg() is None:
        pytest.skip("ripgrep is not installed")
    make(
        work,
        {
            ".gitignore": "*.log\n",
            "src/.gitignore": "gen/\n",
            "a.txt": "needle\n",
            "debug.log": "needle\n",
            "src/gen/out.py": "needle\n",
            "src/b.py": "needle\n",
            "vendor/node_modules/x/i.js": "needle\n",
        },
    )
    result = await Grep(use_rg=use_rg).run(grep_params(pattern="needle"), env, "c")
    assert sorted(result.output.splitlines()) == ["a.txt", "src/b.py"]


async def test_grep_that_runs_out_of_time_returns_partial_results(
    env: ToolEnv, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep_python, "GREP_TIMEOUT", -1.0)
    result = await python_grep(env, pattern="hello")
    assert "timed out" in result.message


async def test_grep_outside_the_work_dir_needs_a_read_approval(
    env: ToolEnv, tmp_path: Path
) -> None:
    assert await Grep().permission(grep_params(pattern="x"), env) is None
    other = tmp_path / "other"
    other.mkdir()
    permission = await Grep().permission(grep_params(pattern="x", path=str(other)), env)
    assert permission is not None
    assert permission.scope == f"read:{other.resolve()}"


def test_grep_params_use_kimis_names_and_aliases() -> None:
    properties = Grep().schema()["function"]["parameters"]["properties"]
    assert {"pattern", "path", "glob", "output_mode", "-B", "-A", "-C", "-n", "-i"} <= set(
        properties
    )
    assert {"type", "head_limit", "offset", "multiline", "include_ignored"} <= set(properties)
    assert grep_params(pattern="x", **{"-i": True}).ignore_case
    assert grep_params(pattern="x", ignore_case=True).ignore_case
    with pytest.raises(ValidationError):
        grep_params(pattern="x", output_mode="lines")
    with pytest.raises(ValidationError):
        grep_params(pattern="x", head_limit=-1)
    with pytest.raises(ValidationError):
        grep_params(path=".")


def test_rg_arguments_follow_the_mode() -> None:
    files = rg_arguments("rg", grep_params(pattern="-x", glob="*.py", **{"-i": True}), ".")
    assert "--files-with-matches" in files and "--ignore-case" in files
    assert files[-3:] == ["--", "-x", "."]
    assert files[files.index("*.py") - 1 : files.index("*.py") + 1] == ["--glob", "*.py"]
    content = rg_arguments("rg", grep_params(pattern="x", output_mode="content", **{"-C": 2}), ".")
    assert content[content.index("--before-context") : content.index("--line-number") + 1] == [
        "--before-context",
        "2",
        "--after-context",
        "2",
        "--line-number",
    ]
    counts = rg_arguments("rg", grep_params(pattern="x", output_mode="count_matches"), "src")
    assert "--count-matches" in counts and "--sort" in counts


def fake_rg(tmp_path: Path, stdout: str, exit_code: int = 0, stderr: str = "") -> str:
    """A stand-in `rg` printing `stdout` (`\\0` in it is a NUL, as `--null` prints)."""
    script = tmp_path / "fake-rg"
    script.write_text(
        f"#!/bin/sh\nprintf '{stdout}'\nprintf '%s' '{stderr}' >&2\nexit {exit_code}\n"
    )
    script.chmod(0o755)
    return str(script)


async def test_grep_with_ripgrep_shows_paths_from_the_work_dir(
    env: ToolEnv, tmp_path: Path
) -> None:
    rg = fake_rg(tmp_path, "./src/a.py\\0003:hit\\n./src/a.py\\0004-after\\n")
    result = await Grep(rg_path=rg).run(grep_params(pattern="hit", output_mode="content"), env, "c")
    assert result.output.splitlines() == ["src/a.py:3:hit", "src/a.py-4-after"]


async def test_grep_with_ripgrep_keeps_results_despite_unreadable_files(
    env: ToolEnv, tmp_path: Path
) -> None:
    rg = fake_rg(tmp_path, "./a.py\\0002\\n", exit_code=2, stderr="secret: Permission denied")
    result = await Grep(rg_path=rg).run(
        grep_params(pattern="x", output_mode="count_matches"), env, "c"
    )
    assert result.output == "a.py:2"
    assert "Some files could not be searched: secret: Permission denied" in result.message
    assert "Found 2 total occurrences across 1 files." in result.message
    broken = fake_rg(tmp_path, "", exit_code=2, stderr="regex parse error")
    with pytest.raises(ToolError, match="regex parse error"):
        await Grep(rg_path=broken).run(grep_params(pattern="("), env, "c")


async def test_grep_uses_ripgrep_from_path_when_it_can_run(
    env: ToolEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rg = fake_rg(tmp_path, "./from-rg.py\\000")
    monkeypatch.setattr(grep, "find_rg", lambda: rg)
    assert (await Grep().run(grep_params(pattern="x"), env, "c")).output == "from-rg.py"
    make(env.work_dir, {"from-python.py": "x\n"})
    monkeypatch.setattr(grep, "find_rg", lambda: str(tmp_path / "no-such-rg"))
    assert (await Grep().run(grep_params(pattern="x"), env, "c")).output == "from-python.py"
    monkeypatch.setattr(grep, "find_rg", lambda: None)
    assert (await Grep().run(grep_params(pattern="x"), env, "c")).output == "from-python.py"


PARITY_CASES: list[dict[str, Any]] = [
    {"pattern": "hello"},
    {"pattern": "hello", "-i": True, "output_mode": "content"},
    {"pattern": "print|^main", "output_mode": "content", "-C": 1},
    {"pattern": "hello", "output_mode": "content", "-A": 1, "glob": "*.{md,cfg}"},
    {"pattern": "hello", "output_mode": "count_matches"},
    {"pattern": "return", "output_mode": "content", "type": "py", "-n": False},
    {"pattern": r"def main\(\):.*?print", "output_mode": "content", "multiline": True},
    {"pattern": "hello", "output_mode": "content", "path": "src/web/page.ts"},
    {"pattern": "o", "output_mode": "content", "head_limit": 3, "offset": 2},
    {"pattern": "hello|main", "output_mode": "content", "-C": 1, "-n": False},
]


@pytest.mark.skipif(find_rg() is None, reason="ripgrep is not installed")
@pytest.mark.parametrize("params", PARITY_CASES)
async def test_ripgrep_and_the_python_search_give_the_same_output(
    env: ToolEnv, tree: Path, params: dict[str, Any]
) -> None:
    for n, name in enumerate(sorted(TREE)):
        os.utime(tree / name, (1_000 + n, 1_000 + n))
    with_rg = await Grep().run(grep_params(**params), env, "c")
    with_python = await Grep(use_rg=False).run(grep_params(**params), env, "c")
    assert with_rg == with_python


@pytest.mark.skipif(find_rg() is None, reason="ripgrep is not installed")
@pytest.mark.parametrize("include_ignored", [False, True])
async def test_ripgrep_and_the_python_search_ignore_the_same_files(
    env: ToolEnv, work: Path, include_ignored: bool
) -> None:
    make(
        work,
        {
            ".gitignore": "build/\n*.log\n",
            "src/a.py": "needle\r\nhay\n",
            "build/out.py": "needle\n",
            "debug.log": "needle\n",
            ".env.example": "needle\n",
        },
    )
    git(work, "init", "-q")
    params = grep_params(
        pattern="needle", output_mode="content", include_ignored=include_ignored, **{"-A": 1}
    )
    with_rg = await Grep().run(params, env, "c")
    with_python = await Grep(use_rg=False).run(params, env, "c")
    assert with_rg == with_python


# --- confinement: symlinks that lead out of the work dir ------------------------------------------

MARKER = "MARKER-outside-the-work-dir"


@pytest.fixture
def outside_links(tmp_path: Path, work: Path) -> Path:
    """A work dir with a symlink to a file and one to a folder outside it, both holding MARKER."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"{MARKER}.txt").write_text(f"{MARKER}\n")
    (outside / "secret.txt").write_text(f"token = {MARKER}\n")
    (work / "notes.txt").symlink_to(outside / "secret.txt")
    (work / "shared").symlink_to(outside)
    (work / "own.txt").write_text("token = mine\n")
    return outside


BACKENDS = [pytest.param(False, id="python")] + (
    [pytest.param(True, id="ripgrep")] if find_rg() is not None else []
)


@pytest.mark.parametrize("use_rg", BACKENDS)
@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
async def test_grep_never_reads_a_symlinked_file_or_folder_outside_the_work_dir(
    env: ToolEnv, work: Path, outside_links: Path, use_rg: bool, in_git: bool
) -> None:
    if in_git:
        git(work, "init", "-q")
        git(work, "add", "-A")  # git tracks the links themselves
    for mode in ("content", "files_with_matches", "count_matches"):
        params = grep_params(pattern="token|MARKER", output_mode=mode, include_ignored=not in_git)
        result = await Grep(use_rg=use_rg).run(params, env, "c")
        assert MARKER not in result.output + result.message
        assert "own.txt" in result.output


async def test_grep_skips_files_git_lists_under_a_folder_now_linked_outside(
    env: ToolEnv, work: Path, tmp_path: Path
) -> None:
    make(work, {"docs/a.txt": "token = mine\n", "b.txt": "token = mine\n"})
    git(work, "init", "-q")
    git(work, "add", "-A")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "a.txt").write_text(f"token = {MARKER}\n")
    (work / "docs/a.txt").unlink()
    (work / "docs").rmdir()
    (work / "docs").symlink_to(outside)  # the index still lists docs/a.txt
    result = await python_grep(env, pattern="token", output_mode="content")
    assert result.output == "b.txt:1:token = mine"


async def test_glob_neither_lists_nor_enters_symlinks_leading_outside(
    env: ToolEnv, work: Path, outside_links: Path
) -> None:
    (work / "sub").mkdir()
    (work / "sub/inner.txt").write_text("x")
    (work / "near").symlink_to(work / "sub")  # a link that stays inside is fine
    for pattern in ("*", "*.txt", "*/*", "shared/*", "sub/**/*", "shared/**/*", "{near,shared}/*"):
        result = await glob(env, pattern)
        assert MARKER not in result.output
        assert "notes.txt" not in result.output.splitlines()
        assert "shared" not in result.output.splitlines()
    assert (await glob(env, "*")).output.splitlines() == ["near", "own.txt", "sub"]
    assert (await glob(env, "near/*")).output == "near/inner.txt"
    everything = (await glob(env, "**/*")).output.splitlines()
    assert everything == ["near", "own.txt", "sub", "sub/inner.txt"]


async def test_a_path_argument_through_a_symlink_leading_outside_asks_first(
    env: ToolEnv, work: Path, outside_links: Path
) -> None:
    for permission in (
        await Grep().permission(grep_params(pattern="x", path="shared"), env),
        await Grep().permission(grep_params(pattern="x", path="notes.txt"), env),
        await Glob().permission(GlobParams(pattern="*", directory="shared"), env),
    ):
        assert permission is not None and permission.outside_work_dir
        assert permission.scope == f"read:{outside_links.resolve()}"
    # Approved, the folder is searched, and the files in it are shown.
    result = await Grep(use_rg=False).run(grep_params(pattern="MARKER", path="shared"), env, "c")
    assert set(result.output.splitlines()) == {f"shared/{MARKER}.txt", "shared/secret.txt"}


# --- names that are not UTF-8 --------------------------------------------------------------------


@pytest.fixture
def odd_names(work: Path) -> Path:
    """`caf\\xe9.txt` (Latin-1 bytes) and, apart from it, a name with a real backslash."""
    with open(os.fsencode(work) + b"/caf\xe9.txt", "wb") as file:
        file.write(b"latin needle\n")
    (work / "caf\\xe9.txt").write_text("backslash needle\n")
    return work


async def test_glob_shows_names_that_are_not_utf8_escaped_and_apart_from_real_backslashes(
    env: ToolEnv, odd_names: Path
) -> None:
    result = await glob(env, "caf*")
    assert result.output.splitlines() == ["caf\\x5cxe9.txt", "caf\\xe9.txt"]
    result.output.encode("utf-8")  # no lone surrogate: it can be sent
    # The name as shown finds the same file again, in Glob and in every path a tool takes.
    assert (await glob(env, "caf\\xe9.txt")).output == "caf\\xe9.txt"
    assert os.fsencode(env.resolve("caf\\xe9.txt")).endswith(b"/caf\xe9.txt")
    assert env.resolve("caf\\x5cxe9.txt") == odd_names / "caf\\xe9.txt"


@pytest.mark.parametrize("use_rg", BACKENDS)
async def test_grep_shows_names_that_are_not_utf8_escaped(
    env: ToolEnv, odd_names: Path, use_rg: bool
) -> None:
    for mode, expected in (
        ("files_with_matches", {"caf\\xe9.txt", "caf\\x5cxe9.txt"}),
        ("content", {"caf\\xe9.txt:1:latin needle", "caf\\x5cxe9.txt:1:backslash needle"}),
        ("count_matches", {"caf\\xe9.txt:1", "caf\\x5cxe9.txt:1"}),
    ):
        params = grep_params(pattern="needle", output_mode=mode)
        result = await Grep(use_rg=use_rg).run(params, env, "c")
        assert set(result.output.splitlines()) == expected
        result.output.encode("utf-8")
    one = grep_params(pattern="needle", path="caf\\xe9.txt", output_mode="content")
    assert (await Grep(use_rg=use_rg).run(one, env, "c")).output == "caf\\xe9.txt:1:latin needle"


@pytest.mark.parametrize("use_rg", BACKENDS)
async def test_names_with_control_characters_are_shown_escaped_never_as_forged_lines(
    env: ToolEnv, work: Path, use_rg: bool
) -> None:
    # A hostile repo's file named "a.txt\nsrc/fake.py" listed as two lines forged a second
    # file; ESC in a name reached the terminal raw.
    (work / "a.txt\nsrc").mkdir()
    (work / "a.txt\nsrc" / "fake.py").write_text("needle\n")
    (work / "x\x1b[8my\tz").write_text("needle\n")
    (work / "lit\\x0a").write_text("needle\n")  # a real backslash, apart from a line feed
    shown = {"a.txt\\x0asrc/fake.py", "x\\x1b[8my\\x09z", "lit\\x5cx0a"}

    result = await glob(env, "*/*")
    assert result.output == "a.txt\\x0asrc/fake.py"
    listed = await Grep(use_rg=use_rg).run(grep_params(pattern="needle"), env, "c")
    assert set(listed.output.splitlines()) == shown
    for name in shown:
        read = await ReadFile().run(ReadFileParams(path=name), env, "c")
        assert "needle" in read.output


@pytest.mark.parametrize("use_rg", BACKENDS)
async def test_grep_of_a_fifo_named_explicitly_is_refused_at_once(
    env: ToolEnv, work: Path, use_rg: bool
) -> None:
    # ripgrep opened the FIFO and waited for a writer until the 30 s timeout.
    os.mkfifo(work / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await Grep(use_rg=use_rg).run(grep_params(pattern="x", path="pipe"), env, "c")


# --- bounded memory ------------------------------------------------------------------------------


async def test_python_grep_reads_a_huge_single_line_file_in_bounded_slices(
    env: ToolEnv, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracemalloc

    monkeypatch.setattr(grep_python, "GREP_LINE_BYTES", 64 << 10)
    monkeypatch.setattr(grep_python, "GREP_FILE_BYTES", 4 << 20)
    size = 3 << 20
    (work / "one-line.txt").write_bytes(b"needle " + b"x" * size + b" tail\nneedle again\n")
    (work / "big.txt").write_bytes(b"a\n" * (5 << 19) + b"needle late\n")
    (work / "small.txt").write_text("first\nneedle here\nlast\n")
    tracemalloc.start()
    try:
        result = await python_grep(env, pattern="needle|tail", output_mode="content", **{"-C": 1})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size // 2  # the old search held the whole file (and its text) at once
    lines = result.output.splitlines()
    assert "small.txt:2:needle here" in lines and "small.txt-1-first" in lines
    assert "one-line.txt:2:needle again" in lines
    assert any(line.startswith("one-line.txt:1:needle xxx") for line in lines)
    assert not any("tail" in line for line in lines)  # past the cut: said, not searched
    assert "needle late" not in result.output  # past the per-file limit
    assert "Only the first 4 MiB of `big.txt` were searched." in result.message
    assert "1 line of `one-line.txt` longer than 0.0625 MiB" in result.message


async def test_python_grep_keeps_context_across_the_slices_it_reads(
    env: ToolEnv, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep_python, "GREP_LINE_BYTES", 64)
    text = "".join(f"line {n:04}\n" for n in range(1, 200)).replace("line 0100", "hit  0100")
    (work / "f.txt").write_text(text)
    result = await python_grep(env, pattern="hit", output_mode="content", **{"-B": 3, "-A": 2})
    assert result.output.splitlines() == [
        "f.txt-97-line 0097",
        "f.txt-98-line 0098",
        "f.txt-99-line 0099",
        "f.txt:100:hit  0100",
        "f.txt-101-line 0101",
        "f.txt-102-line 0102",
    ]
    counted = await python_grep(env, pattern="line", output_mode="count_matches")
    assert counted.output == "f.txt:198"
