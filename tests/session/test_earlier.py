"""What came before a compaction: which rotated contexts a resumed session shows above it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kode_tui.session.earlier import compacted_from
from kode_tui.session.rotation import Rotation


def rotation(number: int, reason: str | None, size: int = 100, **info: Any) -> Rotation:
    path = Path(f"/s/context_{number}.jsonl")
    return Rotation(path=path, number=number, size=size, mtime=0.0, reason=reason, info=info)


def names(rotations: list[Rotation]) -> list[str]:
    return [r.path.name for r in rotations]


def test_the_walk_goes_through_reverts_and_restores_and_stops_at_a_clear() -> None:
    rotations = [
        rotation(1, "compaction"),  # before the clear: live, the pane was emptied
        rotation(2, "clear"),
        rotation(3, "compaction"),
        rotation(4, "compaction"),  # restored from below: the live file continues 4
        rotation(5, "revert"),
        rotation(6, "restore", source="context_4.jsonl"),
        rotation(7, "dmail"),
    ]

    found = compacted_from(rotations)

    # 7 continues 6's prefix; 6 was made by restoring 4 (whose past is 3); 2 was a clear.
    assert names(found.shown) == ["context_3.jsonl"]
    assert found.left_out == 0
    assert names(compacted_from(rotations[:5]).shown) == ["context_4.jsonl", "context_3.jsonl"]


def test_a_rotation_nobody_knows_the_reason_of_ends_the_walk() -> None:
    found = compacted_from(
        [rotation(1, "compaction"), rotation(2, None), rotation(3, "compaction")]
    )

    assert names(found.shown) == ["context_3.jsonl"]


def test_a_long_lineage_is_capped_newest_first_and_says_how_many_are_left_out() -> None:
    rotations = [rotation(n, "compaction", size=10) for n in range(1, 6)]

    found = compacted_from(rotations, limit=25)

    assert names(found.shown) == ["context_5.jsonl", "context_4.jsonl"]
    assert found.left_out == 3
