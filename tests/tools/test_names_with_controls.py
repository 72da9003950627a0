"""A file name holding a line feed or an escape is listed as one line of printable text, and the
model reads the file back by the name it was shown."""

from __future__ import annotations

import json
from pathlib import Path

from kode_tui.tools.files import ReadFile
from kode_tui.tools.glob import Glob
from kode_tui.wire import events as ev
from tests.soul_helpers import call, make_rig


async def test_a_name_with_a_line_feed_is_one_listed_name_that_reads_back(tmp_path: Path) -> None:
    shown = "evil\\x0arm -rf ~ \\x1b[8m.txt"
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("Glob", pattern="*.txt"), call("ReadFile", path=shown)]},
            {"text": "ok"},
        ],
        tools=[Glob(), ReadFile()],
    )
    (rig.work_dir / "evil\nrm -rf ~ \x1b[8m.txt").write_text("inside\n")
    (rig.work_dir / "ok.txt").write_text("x\n")

    await rig.soul.run("go")

    listing, read = (result for result in rig.of(ev.ToolResult))
    assert listing.output.splitlines() == [shown, "ok.txt"]
    assert not read.is_error and "inside" in read.output
    assert "\x1b" not in json.dumps(listing.output, ensure_ascii=False)
