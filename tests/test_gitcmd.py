"""kode-tui's own git commands run nothing a hostile repository's config names (issue 12, #2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kode_tui import gitcmd, workfiles
from kode_tui.soul import project_context
from kode_tui.tools.base import ToolEnv
from kode_tui.tools.grep import Grep
from kode_tui.tools.grep_params import GrepParams
from kode_tui.ui.widgets.completion import PathIndex

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

PAYLOADS = ("PWNED_FSMONITOR", "PWNED_FILTER", "PWNED_HOOK", "PWNED_GPG")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=a@b.c", "-c", "user.name=a", *args],
        cwd=repo,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode()


@pytest.fixture
def hostile_repo(tmp_path: Path) -> Path:
    """A repository whose config runs a command through fsmonitor, a filter, hooks and gpg."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("hello\n")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    # A signed-looking commit makes `git log` call gpg when log.showSignature is on.
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    commit = (
        f"tree {tree}\nparent {parent}\nauthor a <a@b.c> 1700000000 +0000\n"
        "committer a <a@b.c> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n"
        " AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    signed = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo,
        input=commit.encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    git(repo, "update-ref", "HEAD", signed.strip())
    hooks = repo / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "post-checkout", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {repo}/PWNED_HOOK\n")
        (hooks / hook).chmod(0o755)
    config = repo / ".git" / "config"
    config.write_text(
        config.read_text()
        + f'[core]\n\tfsmonitor = "touch {repo}/PWNED_FSMONITOR; false"\n'
        + f"\thooksPath = {hooks}\n"
        + f'[filter "evil"]\n\tclean = "touch {repo}/PWNED_FILTER; cat"\n\trequired = true\n'
        + f'[log]\n\tshowSignature = true\n[gpg]\n\tprogram = "{repo}/gpg.sh"\n'
    )
    (repo / "gpg.sh").write_text(f"#!/bin/sh\ntouch {repo}/PWNED_GPG\n")
    (repo / "gpg.sh").chmod(0o755)
    # Stat data that no longer matches the index makes `git status` hash, i.e. clean, the file.
    (repo / "a.txt").write_text("hello again\n")
    return repo


def pwned(repo: Path) -> list[str]:
    return [name for name in PAYLOADS if (repo / name).exists()]


def test_the_hostile_repo_does_run_code_through_plain_git(hostile_repo: Path) -> None:
    # The attack is real: without the overrides each payload runs.
    subprocess.run(["git", "status"], cwd=hostile_repo, capture_output=True, check=False)
    subprocess.run(["git", "log", "-n1"], cwd=hostile_repo, capture_output=True, check=False)
    assert set(pwned(hostile_repo)) >= {"PWNED_FSMONITOR", "PWNED_FILTER", "PWNED_GPG"}


async def test_grep_python_backend_lists_files_without_running_repo_config(
    hostile_repo: Path,
) -> None:
    env = ToolEnv(work_dir=hostile_repo)
    result = await Grep(use_rg=False).run(GrepParams(pattern="hello"), env, "call")
    assert "a.txt" in result.output
    assert workfiles.git_paths(hostile_repo) is not None  # git listed them, not a walk
    workfiles._git_ignores(hostile_repo, 5)
    assert pwned(hostile_repo) == []


def test_project_context_collects_git_status_without_running_repo_config(
    hostile_repo: Path,
) -> None:
    context = project_context.collect(hostile_repo)
    assert "a.txt" in context.blocks.get("gitStatus", "")
    assert "signed" in context.blocks["gitStatus"]  # the log ran too
    assert pwned(hostile_repo) == []


def test_path_completion_lists_files_without_running_repo_config(hostile_repo: Path) -> None:
    paths = PathIndex(hostile_repo).load()
    assert "a.txt" in paths
    assert pwned(hostile_repo) == []


def test_filter_driver_names_are_read_and_neutralised(hostile_repo: Path) -> None:
    assert gitcmd.filter_drivers(hostile_repo, timeout=5) == ["evil"]
    argv, env = gitcmd.command(["status"], hostile_repo, timeout=5)
    for setting in ("core.fsmonitor=false", "core.hooksPath=/dev/null", "filter.evil.clean="):
        assert setting in argv
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_OPTIONAL_LOCKS"] == "0"


def test_a_filter_name_that_cannot_be_overridden_refuses_to_run_git(hostile_repo: Path) -> None:
    git(hostile_repo, "config", "filter.a=b.clean", f"touch {hostile_repo}/PWNED_FILTER")
    (hostile_repo / ".gitattributes").write_text("* filter=a=b\n")
    with pytest.raises(gitcmd.GitRefused):
        gitcmd.run(["status"], hostile_repo, timeout=5)
    assert project_context.collect(hostile_repo).blocks.get("gitStatus") is None
    assert pwned(hostile_repo) == []
