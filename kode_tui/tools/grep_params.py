"""What Grep is called with: one model for the tool and both of its searches (ripgrep in
`grep`, Python in `grep_python`)."""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

OutputMode = Literal["content", "files_with_matches", "count_matches"]


# No docstring: pydantic would send it to the model as the schema's description.
class GrepParams(BaseModel):
    # Kimi's models call with the rg-style aliases (`-i`); code and tests may use the names.
    model_config = ConfigDict(populate_by_name=True)

    pattern: str = Field(description="The regular expression to search for in file contents.")
    path: str = Field(
        default=".",
        description="The file or directory to search in; defaults to the working directory.",
    )
    glob: str | None = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.js`, `*.{ts,tsx}`, `!*.md`.",
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description=(
            "`content`: the matching lines (with `-B`, `-A`, `-C`, `-n`); "
            "`files_with_matches`: the paths of matching files, newest first; "
            "`count_matches`: the number of matches in each file. "
            "Defaults to `files_with_matches`."
        ),
    )
    before_context: int | None = Field(
        default=None, ge=0, alias="-B", description="Lines to show before each match (content)."
    )
    after_context: int | None = Field(
        default=None, ge=0, alias="-A", description="Lines to show after each match (content)."
    )
    context: int | None = Field(
        default=None,
        ge=0,
        alias="-C",
        description="Lines to show before and after each match (content).",
    )
    line_number: bool = Field(
        default=True, alias="-n", description="Show line numbers (content). Defaults to true."
    )
    ignore_case: bool = Field(default=False, alias="-i", description="Search case-insensitively.")
    type: str | None = Field(
        default=None,
        description="Only search files of this type, e.g. py, js, ts, rust, go, java, md.",
    )
    head_limit: int | None = Field(
        default=250,
        ge=0,
        description=(
            "Return at most this many lines (content), paths or counts, like `| head -N`. "
            "Defaults to 250; 0 means no limit (use it sparingly)."
        ),
    )
    offset: int = Field(
        default=0,
        ge=0,
        description="Skip this many lines or entries first, to page through long results.",
    )
    multiline: bool = Field(
        default=False,
        description="Let the pattern span lines, with `.` matching newlines too.",
    )
    include_ignored: bool = Field(
        default=False,
        description=(
            "Also search files that .gitignore excludes (build output, ...) and dependency and "
            "cache folders (`node_modules`, `.venv`, ...)."
        ),
    )

    def around(self) -> tuple[int, int]:
        """Context lines before and after each match; `-B`/`-A` win over `-C`."""
        both = self.context or 0
        before = self.before_context if self.before_context is not None else both
        after = self.after_context if self.after_context is not None else both
        return before, after
