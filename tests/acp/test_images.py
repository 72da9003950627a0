"""An ACP client's prompt images: offered in the capabilities, kept as files, sent to the model
in Kimi CLI's form (the loopback server's request checked), and a bad one refused in one line."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import ImageContentBlock
from PIL import Image

from kode_tui.soul.facade import attachments_dir
from tests.acp.test_agent import RecordingClient, agent
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config


@pytest.fixture
def loopback(home: Path, server: LLMServer) -> LLMServer:
    write_loopback_config(home, server, KEY_ENV)
    return server


def png_data() -> str:
    out = io.BytesIO()
    Image.new("RGB", (9, 9), "red").save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


async def test_a_prompts_image_reaches_the_model_as_an_image_part(
    project: Path, loopback: LLMServer
) -> None:
    loopback.reply_text("Red.")
    data = png_data()
    image = ImageContentBlock(type="image", data=data, mime_type="image/png")
    async with agent(RecordingClient()) as conn:
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        done = await conn.prompt(
            session_id=made.session_id, prompt=[text_block("Which colour?"), image]
        )
        with pytest.raises(RequestError, match="cannot be read"):
            bad = ImageContentBlock(type="image", data="not base64!", mime_type="image/png")
            await conn.prompt(session_id=made.session_id, prompt=[text_block("and?"), bad])
    assert done.stop_reason == "end_turn"
    (saved,) = attachments_dir().iterdir()
    assert saved.suffix == ".png" and base64.b64encode(saved.read_bytes()).decode() == data
    (sent,) = [m for m in loopback.requests[0]["messages"] if "Which colour?" in str(m)]
    assert sent["content"] == [
        {"type": "text", "text": "Which colour?"},
        {"type": "text", "text": f'<image path="{saved}">'},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        {"type": "text", "text": "</image>"},
    ]
    assert len(loopback.requests) == 1  # the bad image sent nothing
