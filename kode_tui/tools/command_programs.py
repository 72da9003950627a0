"""The programs whose commands "approve for session" may widen, each with the options it may get.

This is an allow-list: a program not listed here, an option its grammar does not list, an
abbreviated one, or anything else `command_options.parse` cannot place gets the scope "exactly
this command". A listed option neither runs code, nor loads code or config from a place its value
names, nor chooses another program, file of rules or interpreter, nor follows symlinks out of
the tree it reads. An option whose value names a file it writes (`sort -o`, `cp -t`) is listed:
every word of every command is checked against the work dir and the protected files anyway
(`kode_tui.tools.command_paths`), so it can only write what a WriteFile could without asking.

Operands are files or other data, except where the table says otherwise: a `make` target or an
`npm run` script is part of the scope (`make test` does not cover `make deploy`); `pytest`
refuses `@file` (arguments read from a file); `tar` refuses the old `tar xf` form and an archive
name holding `:` (a remote archive, reached through rsh). Options and operands were read off
`--help` of the versions on the machine this was written on: GNU coreutils 9.1, grep 3.8,
diffutils 3.8, findutils 4.9, tar 1.34, make 4.3, file 5.44, ripgrep 13, git 2.39, cargo 1.95,
npm 11, pytest 8.4, Python 3.11.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from kode_tui.tools.command_options import Grammar, grammar, parse


@dataclass(frozen=True, slots=True)
class Widening:
    """What a widened scope names: the program and the words that follow it in the scope
    (`git log`, `npm run build`, `python3 -m pytest`)."""

    words: tuple[str, ...]
    bare: bool = False
    """The scope covers the command only with no arguments at all (`npm install`)."""
    values: tuple[str, ...] = ()
    """The option values the grammar read (`.npmrc` of `-uo.npmrc`): what the command's
    options can name, for `command_paths`."""


class Spec(Protocol):
    """How one program's (or subcommand's) arguments are read."""

    def widen(self, args: Sequence[str]) -> Widening | None:
        """The words after the program that name the scope of `args`; None for an exact scope."""
        ...


@dataclass(frozen=True, slots=True)
class Options:
    """A command read with one grammar; its operands are data (files, patterns) unless `keyed`."""

    grammar: Grammar
    operands: int | None = None
    """The most operands it may have; None for any number."""
    keyed: Literal["none", "first", "all"] = "none"
    """Which operands are part of the scope: an npm script's name, make's targets."""
    refused_operand: str = ""
    """A pattern: an operand it matches gets an exact scope (`@args.txt`, `VAR=value`)."""
    forward: Grammar | None = None
    """How the words after `--` are read, when the program passes them on (to a script, a test
    binary); None when `--` only ends the options."""
    local_values: frozenset[str] = frozenset()
    """Options whose value must not hold `:` (tar's `host:archive` runs rsh)."""
    dash_first: bool = False
    """The first argument must be an option (tar's old `tar xf ARCHIVE` is not read)."""
    bare: bool = False
    """Covered only with no arguments (the grammar lists none and `operands` is 0)."""

    def widen(self, args: Sequence[str]) -> Widening | None:
        if self.dash_first and args and not args[0].startswith("-"):
            return None
        parsed = parse(self.grammar, args)
        if parsed is None:
            return None
        for name, value in parsed.options:
            if name in self.local_values and ":" in (value or ""):
                return None
        operands = list(parsed.operands)
        values = [value for _, value in parsed.options if value is not None]
        if parsed.after_dashdash is not None and self.forward is None:
            operands.extend(parsed.after_dashdash)
        elif parsed.after_dashdash is not None and self.forward is not None:
            forwarded = parse(self.forward, parsed.after_dashdash)
            if forwarded is None:
                return None
            values.extend(value for _, value in forwarded.options if value is not None)
        if self.refused_operand and any(re.search(self.refused_operand, o) for o in operands):
            return None
        if self.operands is not None and len(operands) > self.operands:
            return None
        keyed = {"none": 0, "first": 1, "all": len(operands)}[self.keyed]
        return Widening(tuple(operands[:keyed]), self.bare, tuple(values))


@dataclass(frozen=True, slots=True)
class Subcommands:
    """A program scoped with its subcommand (`git log`, `cargo test`, `python3 -m pytest`)."""

    commands: Mapping[str, Spec]
    """By the words that select it: `"log"`, `"-m pytest"`."""
    global_options: Grammar | None = None
    """Options allowed before the subcommand (and left out of the scope: `git --no-pager log`
    is `git log`); None for none."""

    def widen(self, args: Sequence[str]) -> Widening | None:
        rest = list(args)
        if self.global_options is not None:
            parsed = parse(self.global_options, args)
            if parsed is None or parsed.after_dashdash is not None:
                return None
            rest = list(parsed.operands)
        for selector, spec in self.commands.items():
            words = tuple(selector.split())
            if tuple(rest[: len(words)]) == words:
                inner = spec.widen(rest[len(words) :])
                if inner is None:
                    return None
                return Widening((*words, *inner.words), inner.bare, inner.values)
        return None


@dataclass(frozen=True, slots=True)
class Wrapper:
    """`uv run pytest -q`: scoped as `uv run` and the scope of the command it runs."""

    word: str

    def widen(self, args: Sequence[str]) -> Widening | None:
        if len(args) < 2 or args[0] != self.word or isinstance(PROGRAMS.get(args[1]), Wrapper):
            return None  # (`uv run uv run …` would only nest)
        inner = widen_command(args[1:])
        if inner is None:
            return None
        return Widening((self.word, *inner.words), inner.bare, inner.values)


@dataclass(frozen=True, slots=True)
class AnyArguments:
    """A shell builtin that only prints its arguments (`echo`, `printf`)."""

    def widen(self, args: Sequence[str]) -> Widening | None:
        return Widening(())


_FIND_GLOBAL = frozenset({"-P", "-H"})
_FIND_WORDS = frozenset(
    {"!", "(", ")", ",", "-not", "-a", "-and", "-o", "-or", "-print", "-print0", "-prune"}
    | {"-quit", "-empty", "-true", "-false", "-readable", "-writable", "-executable", "-nouser"}
    | {"-nogroup", "-depth", "-d", "-xdev", "-mount", "-noleaf", "-daystart", "-ls"}
    | {"-ignore_readdir_race", "-noignore_readdir_race"}
)
_FIND_TESTS = frozenset(
    {"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex"}
    | {"-regextype", "-type", "-xtype", "-maxdepth", "-mindepth", "-size", "-mtime", "-mmin"}
    | {"-atime", "-amin", "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-perm", "-user"}
    | {"-group", "-uid", "-gid", "-links", "-inum", "-samefile", "-lname", "-ilname", "-used"}
    | {"-fstype", "-printf"}
)
_FIND_NEWER = re.compile(r"-newer[aBcmt][aBcmt]")


@dataclass(frozen=True, slots=True)
class FindExpression:
    """find's own grammar: `-P`/`-H`, the starting points, then an expression of tests and
    actions, each with its fixed number of values. `-exec`, `-ok`, `-delete`, `-fprint`, `-L`,
    `-follow`, `-files0-from` and anything unknown are not in it."""

    def widen(self, args: Sequence[str]) -> Widening | None:
        index = 0
        while index < len(args) and args[index] in _FIND_GLOBAL:
            index += 1
        while index < len(args) and not _find_expression_word(args[index]):
            index += 1  # a starting point
        while index < len(args):
            word = args[index]
            if word in _FIND_TESTS or _FIND_NEWER.fullmatch(word):
                if index + 1 == len(args):
                    return None
                index += 2
            elif word in _FIND_WORDS:
                index += 1
            else:
                return None
        return Widening(())


def _find_expression_word(word: str) -> bool:
    return word.startswith("-") or word in ("!", "(", ")", ",")


# --- the grammars --------------------------------------------------------------------------------

_DIGITS = "0123456789"
"""`head -20`, `grep -3`: a number as an option (head's count, grep's context)."""

_NOTHING = grammar()
_PASSED_ON = grammar(end_of_options=False)
"""Words passed on to a program kode-tui does not know (an npm script): operands only."""

_LS = grammar(
    "aAbBcCdDfFgGhHiI:klmnNopqQrRsStT:uUvw:xXZ1",
    """all almost-all author escape block-size= ignore-backups color=? directory dired
    classify=? file-type format= full-time group-directories-first no-group human-readable si
    dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink=?
    indicator-style= inode ignore= kibibytes literal numeric-uid-gid quote-name quoting-style=
    reverse recursive size sort= time= time-style= tabsize= width= context zero
    show-control-chars hide-control-chars""",
)
_CAT = grammar(
    "AbeEnstTuv",
    "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting",
)
_HEAD = grammar("c:n:qvz" + _DIGITS, "bytes= lines= quiet silent verbose zero-terminated")
_TAIL = grammar(
    "c:fFn:qs:vz" + _DIGITS,
    """bytes= follow=? lines= max-unchanged-stats= pid= quiet silent retry sleep-interval=
    verbose zero-terminated""",
)
_WC = grammar("cmlLw", "bytes chars lines max-line-length words total=")
_SORT = grammar(
    "bdfgiMhnRrVcCk:mo:sS:t:T:uz",
    """ignore-leading-blanks dictionary-order ignore-case general-numeric-sort
    ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse sort=
    version-sort batch-size= check=? debug key= merge output= stable buffer-size=
    field-separator= temporary-directory= parallel= unique zero-terminated""",
)
_UNIQ = grammar(
    "cdDf:is:uzw:",
    """count repeated all-repeated=? skip-fields= group=? ignore-case skip-chars= unique
    zero-terminated check-chars=""",
)
_CUT = grammar(
    "b:c:d:f:nsz",
    "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= "
    "zero-terminated",
)
_NL = grammar(
    "b:d:f:h:i:l:n:ps:v:w:",
    """body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment=
    join-blank-lines= number-format= no-renumber number-separator= starting-line-number=
    number-width=""",
)
_TAC = grammar("brs:", "before regex separator=")
_DIFF = grammar(
    "qscC:uU:enyW:ptTNx:X:S:iEZbwBI:aD:dF:",
    """normal brief report-identical-files context=? unified=? ed rcs side-by-side width=
    left-column suppress-common-lines show-c-function show-function-line= label= expand-tabs
    initial-tab tabsize= suppress-blank-empty no-dereference new-file
    unidirectional-new-file ignore-file-name-case no-ignore-file-name-case exclude=
    exclude-from= starting-file= from-file= to-file= ignore-case ignore-tab-expansion
    ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines
    ignore-matching-lines= text strip-trailing-cr ifdef= line-format= minimal horizon-lines=
    speed-large-files color=? palette=""",
)
"""diff without `-r` (it follows symlinks in the trees it compares, out of the work dir too)
and `-l` (pr)."""
_CMP = grammar("bi:ln:s", "print-bytes ignore-initial= verbose bytes= quiet silent")
_STAT = grammar("Lfc:t", "dereference file-system cached= format= printf= terse")
_FILE = grammar(
    "biLhkNnp0rsF:e:E",
    """brief mime mime-type mime-encoding apple extension keep-going dereference
    no-dereference no-buffer no-pad print0 preserve-date raw special-files separator=
    exclude= exclude-quiet=""",
)
_GREP = grammar(
    "EFGPe:f:iywxzsvVm:bnHhoqaId:D:rLlcTZA:B:C:U" + _DIGITS,
    """extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case
    no-ignore-case word-regexp line-regexp null-data no-messages invert-match max-count=
    byte-offset line-number line-buffered with-filename no-filename label= only-matching
    quiet silent binary-files= text directories= devices= recursive include= exclude=
    exclude-from= exclude-dir= files-without-match files-with-matches count initial-tab null
    before-context= after-context= context= group-separator= no-group-separator color=?
    colour=? binary""",
)
_RG = grammar(
    "A:B:C:bsce:E:Ff:lg:.HhiIjM:m:nNo0PpqUr:St:T:uvwxa",
    """after-context= before-context= context= byte-offset case-sensitive color= colors=
    column count count-matches crlf encoding= fixed-strings file= files files-with-matches
    files-without-match glob= iglob= glob-case-insensitive heading no-heading hidden
    ignore-case ignore-file= invert-match json line-buffered line-number no-line-number
    line-regexp max-columns= max-columns-preview max-count= max-depth= max-filesize=
    multiline multiline-dotall no-config no-filename with-filename no-ignore no-ignore-dot
    no-ignore-exclude no-ignore-files no-ignore-global no-ignore-parent no-ignore-vcs
    no-messages null null-data only-matching passthru pcre2 pretty quiet regexp= replace=
    smart-case sort= sortr= stats text threads= trim type= type-not= type-add= type-clear=
    type-list unrestricted vimgrep word-regexp""",
)
_DU = grammar(
    "0abB:cd:hklmPsSt:xX:",
    """null all apparent-size block-size= bytes total max-depth= human-readable inodes
    count-links no-dereference separate-dirs si summarize threshold= time=? time-style=
    exclude-from= exclude= one-file-system""",
)
_REALPATH = grammar(
    "emLPqsz",
    """canonicalize-existing canonicalize-missing logical physical quiet relative-to=
    relative-base= strip no-symlinks zero""",
)
_READLINK = grammar(
    "femnqsvz",
    """canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent
    verbose zero""",
)
_MKDIR = grammar("m:pvZ", "mode= parents verbose context=?")
_RMDIR = grammar("pv", "ignore-fail-on-non-empty parents verbose")
_TOUCH = grammar("acd:fhmr:t:", "no-create date= no-dereference reference= time=")
_RM = grammar(
    "fiIrRdv", "force interactive=? one-file-system preserve-root=? recursive dir verbose"
)
CP = grammar(
    "abdfiHlnPpRrst:TuvxZ",
    """archive attributes-only backup=? copy-contents force interactive link no-clobber
    no-dereference preserve=? no-preserve= parents recursive reflink=? remove-destination
    sparse= strip-trailing-slashes symbolic-link target-directory= no-target-directory
    update=? verbose one-file-system context=? debug keep-directory-symlink""",
)
"""cp without `-L` (copy what links in the tree point to) and `-S` (a backup suffix with `/`)."""
MV = grammar(
    "bfint:TuvZ",
    """backup=? force interactive no-clobber strip-trailing-slashes target-directory=
    no-target-directory update=? verbose context""",
)
_LN = grammar(
    "bdFfinPrst:Tv",
    """backup=? directory force interactive no-dereference physical relative symbolic
    target-directory= no-target-directory verbose""",
)
_TAR = grammar(
    "ctzjJavf:C:kWX:",
    """create list gzip gunzip ungzip bzip2 xz zstd lzip lzma auto-compress verbose file=
    directory= exclude= exclude-vcs exclude-vcs-ignores exclude-backups exclude-caches
    exclude-from= no-recursion recursion anchored no-anchored wildcards no-wildcards
    wildcards-match-slash totals=? sort= owner= group= mode= mtime= numeric-owner format=
    posix force-local verify""",
)
"""tar creating or listing: no `-x`, `-P`, `-h`, `-I`, `--to-command`, `-T`, `-F`, …"""

_MAKE = grammar(
    "j#ksBnqwrRiSO::L",
    """jobs=# keep-going silent quiet always-make dry-run just-print recon question
    print-directory no-print-directory no-builtin-rules no-builtin-variables ignore-errors
    no-keep-going stop output-sync=? trace check-symlink-times warn-undefined-variables
    no-silent""",
    end_of_options=False,
)
"""make without `-f`, `-C`, `-I`, `-E`/`--eval`, `-o`, `-W`, `-t`, `-e`, `-p`, `--debug`."""

_PYTEST = grammar(
    "qvxslr:k:m:n:",
    """quiet verbose exitfirst maxfail= lf last-failed ff failed-first nf new-first sw
    stepwise stepwise-skip co collect-only showlocals tb= capture= durations= durations-min=
    no-header no-summary disable-warnings strict-markers runxfail color= code-highlight=
    ignore= ignore-glob= deselect= setup-show full-trace""",
)
"""pytest without `-p` (plugins), `-c`/`-o`/`--rootdir` (config), `-W` (imports a warning
class), `--basetemp` (emptied), `--pdbcls`, `--pyargs`, `--import-mode`, `--junitxml`, …"""

_CARGO_LONG = """release quiet verbose jobs= package= workspace all exclude= lib bins bin= examples
    example= tests test= benches bench= all-targets features= all-features no-default-features
    keep-going locked offline frozen message-format= color= ignore-rust-version
    future-incompat-report"""
_CARGO_BUILD = grammar("rqvj:p:F:", _CARGO_LONG)
"""cargo without `--config`, `-Z`, `--manifest-path`, `--target`, `--target-dir`, `--profile`."""
_CARGO_TEST = grammar("rqvj:p:F:", _CARGO_LONG + " no-run no-fail-fast doc")
_LIBTEST = grammar(
    "q",
    "nocapture test-threads= exact ignored include-ignored show-output quiet list skip= color=",
    end_of_options=False,
)
"""A Rust test binary's options after `cargo test --`, without `--logfile`."""

_GIT_GLOBAL = grammar(
    "P",
    """no-pager no-optional-locks literal-pathspecs glob-pathspecs noglob-pathspecs
    icase-pathspecs no-replace-objects""",
    stop_at_operand=True,
    end_of_options=False,
)
_GIT_DIFF_SHORT = "puszRwbaWM::C::B::U::S:G:"
_GIT_DIFF_LONG = """stat=? numstat shortstat dirstat=? summary name-only name-status patch
    no-patch raw patch-with-stat patch-with-raw compact-summary unified=? color=? no-color
    word-diff=? word-diff-regex= color-words=? color-moved=? no-color-moved renames no-renames
    find-renames=? find-copies=? find-copies-harder diff-filter= ignore-all-space
    ignore-space-change ignore-blank-lines ignore-space-at-eol ignore-cr-at-eol minimal
    patience histogram full-index binary abbrev=? no-abbrev relative=? no-relative text
    exit-code quiet check no-prefix src-prefix= dst-prefix= line-prefix= submodule=?
    ignore-submodules=? stat-width= stat-name-width= stat-count= pickaxe-all pickaxe-regex
    function-context no-ext-diff no-textconv irreversible-delete"""
"""Diff options of `git diff`, `log` and `show`, without `--output`, `--ext-diff`,
`--textconv` and `-O` (an order file)."""
_GIT_REVISION_LONG = """max-count= skip= since= after= until= before= author= committer=
    grep= all-match invert-grep regexp-ignore-case extended-regexp fixed-strings
    perl-regexp merges no-merges min-parents= max-parents= first-parent all branches=?
    tags=? remotes=? exclude= not reflog cherry-pick cherry-mark left-right left-only
    right-only cherry walk-reflogs merge boundary simplify-by-decoration full-history dense
    sparse ancestry-path topo-order date-order author-date-order reverse no-walk=? do-walk
    pretty=? format= abbrev-commit no-abbrev-commit oneline encoding= expand-tabs=?
    no-expand-tabs notes=? no-notes relative-date date= parents children graph
    decorate=? no-decorate source use-mailmap mailmap no-mailmap follow log-size full-diff
    cc diff-merges= no-diff-merges remerge-diff"""
_GIT_LOG = grammar(
    _GIT_DIFF_SHORT + "n:iEFPgmct" + _DIGITS, _GIT_DIFF_LONG + " " + _GIT_REVISION_LONG
)
_GIT_DIFF = grammar(_GIT_DIFF_SHORT, _GIT_DIFF_LONG + " cached staged merge-base no-index")
_GIT_STATUS = grammar(
    "sbvzu::",
    """short branch show-stash porcelain=? long verbose untracked-files=? ignored=?
    ignore-submodules=? column=? no-column ahead-behind no-ahead-behind renames no-renames
    find-renames=? null""",
)
_GIT_GREP = grammar(
    "nilLcwvhHEFGPIaoqpWrze:A:B:C:m:" + _DIGITS,
    """cached untracked no-index exclude-standard no-exclude-standard text ignore-case
    word-regexp invert-match full-name extended-regexp basic-regexp fixed-strings
    perl-regexp line-number column files-with-matches name-only files-without-match null
    count color=? no-color break heading show-function function-context after-context=
    before-context= context= threads= max-depth= max-count= only-matching quiet and or not
    all-match recursive no-recursive""",
)
"""git grep without `-O`/`--open-files-in-pager` (runs a program on the matches) and `-f`."""
_GIT_BLAME = grammar(
    "L:wseltfncpbM::C::",
    """porcelain line-porcelain incremental root show-stats show-name show-number show-email
    date= abbrev=? ignore-rev=""",
)
_GIT_SHORTLOG = grammar(
    "nsec", "numbered summary email committer group= format= all no-merges since= until="
)
_GIT_DESCRIBE = grammar(
    "",
    """tags all always long abbrev= dirty=? broken=? exact-match first-parent match= exclude=
    contains candidates=""",
)
_GIT_REV_PARSE = grammar(
    "q",
    """show-toplevel show-prefix show-cdup git-dir git-common-dir absolute-git-dir
    is-inside-work-tree is-inside-git-dir is-bare-repository is-shallow-repository
    abbrev-ref=? short=? verify quiet symbolic symbolic-full-name all branches=? tags=?
    remotes=? show-superproject-working-tree""",
)
_GIT_LS_FILES = grammar(
    "cdmoisukztvfx:",
    """cached deleted modified others ignored stage unmerged killed directory
    no-empty-directory exclude= exclude-standard full-name error-unmatch abbrev=? eol
    deduplicate format= sparse""",
)
_GIT_LS_TREE = grammar(
    "drtlz", "long name-only name-status object-only full-name full-tree abbrev=? format="
)
_GIT_BRANCH = grammar(
    "arvl",
    """all remotes verbose list show-current no-color color=? sort= format= column=?
    no-column ignore-case omit-empty abbrev=? no-abbrev""",
)
"""git branch listing only: no operands (a new branch), no `-d`, `-m`, `--edit-description`."""
_GIT_ADD = grammar(
    "AuvnfN",
    """all update verbose dry-run force intent-to-add ignore-errors ignore-missing
    renormalize no-all ignore-removal no-ignore-removal sparse""",
)
"""git add without `-p`, `-i`, `-e` (an editor) and `--pathspec-from-file`."""
_GIT_COMMIT = grammar(
    "m:aqnsv",
    """message= all amend no-edit quiet no-verify signoff allow-empty allow-empty-message
    author= date= dry-run short porcelain status no-status only include verbose""",
)
"""git commit without `-F`/`-t` (files), `-C`/`-c`, `-e`, `-S` (gpg), `--fixup`, `--cleanup`."""
_GIT_RM = grammar("rfqn", "cached ignore-unmatch quiet dry-run force sparse")
_GIT_MV = grammar("fknv", "force dry-run verbose sparse")

_GIT = Subcommands(
    {
        "status": Options(_GIT_STATUS),
        "log": Options(_GIT_LOG),
        "show": Options(_GIT_LOG),
        "diff": Options(_GIT_DIFF),
        "grep": Options(_GIT_GREP),
        "blame": Options(_GIT_BLAME),
        "shortlog": Options(_GIT_SHORTLOG),
        "describe": Options(_GIT_DESCRIBE),
        "rev-parse": Options(_GIT_REV_PARSE),
        "ls-files": Options(_GIT_LS_FILES),
        "ls-tree": Options(_GIT_LS_TREE),
        "branch": Options(_GIT_BRANCH, operands=0),
        "add": Options(_GIT_ADD),
        "commit": Options(_GIT_COMMIT),
        "rm": Options(_GIT_RM),
        "mv": Options(_GIT_MV),
    },
    global_options=_GIT_GLOBAL,
)
"""git's read-only subcommands, and those that write only what their operands name. Not
`checkout`, `switch`, `restore`, `reset`, `stash`, `merge`, `pull` (they write whatever files a
commit holds, `.envrc` included), `config`, `fetch`, `submodule`, `rebase`, aliases, …"""

_PYTHON = Subcommands({"-m pytest": Options(_PYTEST, refused_operand="^@")})
"""An interpreter is widened only to run pytest, with no interpreter options: never `-c`, a
script (its arguments are its own), or another module. (`-m` looks in the work dir first: a
module pytest would run anyway, such as a `conftest.py`, gains nothing there; a standard one
such as `http.server` would run whatever `http/` the model wrote.)"""

PROGRAMS: Mapping[str, Spec] = {
    "ls": Options(_LS),
    "cat": Options(_CAT),
    "head": Options(_HEAD),
    "tail": Options(_TAIL),
    "wc": Options(_WC),
    "sort": Options(_SORT),
    "uniq": Options(_UNIQ, operands=2),
    "cut": Options(_CUT),
    "nl": Options(_NL),
    "tac": Options(_TAC),
    "diff": Options(_DIFF),
    "cmp": Options(_CMP, operands=4),
    "stat": Options(_STAT),
    "file": Options(_FILE),
    "grep": Options(_GREP),
    "rg": Options(_RG),
    "find": FindExpression(),
    "du": Options(_DU),
    "realpath": Options(_REALPATH),
    "readlink": Options(_READLINK),
    "basename": Options(grammar("as:z", "multiple suffix= zero")),
    "dirname": Options(grammar("z", "zero")),
    "pwd": Options(grammar("LP"), operands=0),
    "which": Options(grammar("a")),
    "echo": AnyArguments(),
    "printf": AnyArguments(),
    "mkdir": Options(_MKDIR),
    "rmdir": Options(_RMDIR),
    "touch": Options(_TOUCH),
    "rm": Options(_RM),
    "cp": Options(CP),
    "mv": Options(MV),
    "ln": Options(_LN),
    "tar": Options(_TAR, local_values=frozenset({"-f", "--file"}), dash_first=True),
    "make": Options(_MAKE, keyed="all", refused_operand="="),
    "pytest": Options(_PYTEST, refused_operand="^@"),
    "python": _PYTHON,
    "python3": _PYTHON,
    **{f"python3.{minor}": _PYTHON for minor in range(8, 16)},
    "git": _GIT,
    "npm": Subcommands(
        {
            "test": Options(_NOTHING, operands=0, forward=_PASSED_ON),
            "run": Options(_NOTHING, operands=1, keyed="first", forward=_PASSED_ON),
            "install": Options(_NOTHING, operands=0, bare=True),
        }
    ),
    "cargo": Subcommands(
        {
            "build": Options(_CARGO_BUILD, operands=0),
            "check": Options(_CARGO_BUILD, operands=0),
            "test": Options(_CARGO_TEST, operands=1, forward=_LIBTEST),
        }
    ),
    "uv": Wrapper("run"),
}
"""The allow-list, by the program's name exactly as typed (`/usr/bin/ls` or `LS` is not `ls`)."""


def widen_command(words: Sequence[str]) -> Widening | None:
    """The scope `words` (one simple command: the program, then its arguments) may be widened
    to, program first; None when it gets "exactly this command"."""
    spec = PROGRAMS.get(words[0]) if words else None
    inner = spec.widen(words[1:]) if spec is not None else None
    return None if inner is None else Widening((words[0], *inner.words), inner.bare, inner.values)
