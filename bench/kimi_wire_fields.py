"""Write tests/fixtures/kimi_wire_fields.json: the wire record types of Kimi CLI 1.52 and their
fields, for the tests that check our wire.jsonl records without kimi-cli installed.

Run with a Python that has kimi-cli (../shared/bench/setup_kimi.sh makes /tmp/kimi-ref):

    /tmp/kimi-ref/bin/python bench/kimi_wire_fields.py > tests/fixtures/kimi_wire_fields.json
"""

import json
import sys
from importlib.metadata import version
from typing import Any

from kimi_cli.tools.display import DiffDisplayBlock, ShellDisplayBlock, TodoDisplayBlock
from kimi_cli.wire.types import _NAME_TO_WIRE_MESSAGE_TYPE
from kosong.chat_provider import TokenUsage
from kosong.tooling import BriefDisplayBlock, ToolReturnValue
from pydantic import BaseModel


def fields(model: type[BaseModel]) -> dict[str, Any]:
    return {
        "required": sorted(name for name, f in model.model_fields.items() if f.is_required()),
        "optional": sorted(name for name, f in model.model_fields.items() if not f.is_required()),
        "extra": model.model_config.get("extra") or "ignore",
    }


types = {name: fields(model) for name, model in sorted(_NAME_TO_WIRE_MESSAGE_TYPE.items())}
nested = {
    model.__name__: fields(model)
    for model in (
        TokenUsage,
        ToolReturnValue,
        DiffDisplayBlock,
        ShellDisplayBlock,
        TodoDisplayBlock,
        BriefDisplayBlock,
    )
}
json.dump(
    {"kimi_cli": version("kimi-cli"), "types": types, "nested": nested},
    sys.stdout,
    indent=1,
    sort_keys=True,
)
sys.stdout.write("\n")
