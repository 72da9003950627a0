"""The work dir's one file listing: git's when it can, else a walk that follows the same rules."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kode_tui import workfiles

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def make(root: Path, names: list[str]) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def git_init(work: Path) -> None:
    subprocess.run(["git", "init", "-q", str(work)], check=True, capture_output=True)


IGNORE_TREE = {
    ".gitignore": "build/\n*.log\n!keep.log\n/only-top.txt\ndocs/**/draft.md\n",
    "src/.gitignore": "generated/\n!important.tmp\n*.tmp\n",
}
FILES = [
    "keep.log",
    "debug.log",
    "only-top.txt",
    "src/only-top.txt",
    "src/a.py",
    "src/b.tmp",
    "src/important.tmp",
    "src/generated/x.py",
    "build/out.py",
    "docs/guide.md",
    "docs/old/draft.md",
]
LISTED = [
    ".gitignore",
    "docs/guide.md",
    "keep.log",
    "src/.gitignore",
    "src/a.py",
    "src/only-top.txt",
]


@pytest.fixture
def ignore_tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    make(work, FILES)
    for name, text in IGNORE_TREE.items():
        (work / name).write_text(text)
    return work


def test_a_walk_honours_nested_gitignore_files(ignore_tree: Path) -> None:
    listed = workfiles.listing(ignore_tree, use_git=False).files()
    assert sorted(listed) == LISTED
    everything = workfiles.listing(ignore_tree, include_ignored=True).files()
    assert sorted(everything) == sorted([*FILES, *IGNORE_TREE])


@needs_git
def test_the_walk_leaves_out_what_git_leaves_out(ignore_tree: Path) -> None:
    # `src/important.tmp` is re-included before `*.tmp` ignores it again: the later rule wins.
    git_init(ignore_tree)
    from_git = workfiles.listing(ignore_tree)
    assert type(from_git).__name__ == "_GitListing"
    assert sorted(from_git.files()) == LISTED
    assert sorted(workfiles.listing(ignore_tree, use_git=False).files()) == LISTED


@pytest.mark.parametrize("use_git", [False, True], ids=["walk", "git"])
def test_dependency_folders_are_left_out_unless_listed_by_name(
    tmp_path: Path, use_git: bool
) -> None:
    if use_git and shutil.which("git") is None:
        pytest.skip("needs git")
    work = tmp_path / "work"
    make(work, ["app.js", "node_modules/react/index.js", "lib/.venv/bin/python", "target"])
    if use_git:
        git_init(work)
        subprocess.run(["git", "-C", str(work), "add", "-Af"], check=True)  # even when tracked
    assert sorted(workfiles.listing(work, use_git=use_git).files()) == ["app.js", "target"]
    named = workfiles.listing(work / "node_modules", root=work, use_git=use_git)
    assert named.files() == ["react/index.js"]


@pytest.mark.parametrize("use_git", [False, True], ids=["walk", "git"])
def test_entries_and_files_leave_out_symlinks_leading_outside_the_root(
    tmp_path: Path, use_git: bool
) -> None:
    if use_git and shutil.which("git") is None:
        pytest.skip("needs git")
    outside = tmp_path / "outside"
    make(outside, ["secret.txt"])
    work = tmp_path / "work"
    make(work, ["src/a.py"])
    (work / "shared").symlink_to(outside)
    (work / "notes.txt").symlink_to(outside / "secret.txt")
    (work / "near.py").symlink_to("src/a.py")
    if use_git:
        git_init(work)
    listing = workfiles.listing(work, use_git=use_git)
    assert sorted(listing.files()) == ["near.py", "src/a.py"]
    assert sorted(listing.entries("") or []) == [("near.py", False), ("src", True)]


@pytest.mark.parametrize("use_git", [False, True], ids=["walk", "git"])
def test_files_can_stop_at_a_depth_and_list_folders(tmp_path: Path, use_git: bool) -> None:
    if use_git and shutil.which("git") is None:
        pytest.skip("needs git")
    work = tmp_path / "work"
    make(work, ["a.py", "src/b.py", "src/pkg/c.py"])
    if use_git:
        git_init(work)
    listing = workfiles.listing(work, use_git=use_git)
    assert sorted(listing.files(depth=1, folders=True)) == ["a.py", "src/"]
    assert sorted(listing.files(folders=True)) == [
        "a.py",
        "src/",
        "src/b.py",
        "src/pkg/",
        "src/pkg/c.py",
    ]
    assert len(listing.files(limit=2)) == 2


def test_a_gitignore_that_is_a_fifo_or_leads_outside_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.gitignore"
    outside.write_text("*.py\n")
    work = tmp_path / "work"
    make(work, ["a.py", "sub/b.py"])
    (work / ".gitignore").symlink_to(outside)
    os.mkfifo(work / "sub" / ".gitignore")
    listed = workfiles.listing(work, use_git=False).files()  # and does not block
    assert sorted(listed) == ["a.py", "sub/.gitignore", "sub/b.py"]


def test_a_gitignore_pattern_that_would_backtrack_for_minutes_is_skipped(tmp_path: Path) -> None:
    # pathspec's regex for `*a*a*a*a*a*b` takes minutes on a 255-character name of `a`s.
    work = tmp_path / "work"
    make(work, ["a" * 255, "x.log", "keep.min.x.js"])
    (work / ".gitignore").write_text("*a*a*a*a*a*b\n*.log\n*.min.*.js\n")

    listed = workfiles.listing(work, use_git=False).files()

    assert sorted(listed) == [".gitignore", "a" * 255]
