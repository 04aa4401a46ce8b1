"""A plain agent loop as a toolgym harness: the `openai` client for the model, the `mcp` client for the tools.

toolgym runs it once per episode with OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, TOOLGYM_MCP_URL,
TOOLGYM_SYSTEM_PROMPT and TOOLGYM_TASK_PROMPT set (docs/harness.md).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from mcp import Client
from openai import AsyncOpenAI

MAX_TURNS = 20


async def main() -> None:
    model = AsyncOpenAI(max_retries=0, timeout=600)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    async with Client(os.environ["TOOLGYM_MCP_URL"]) as mcp:
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                   "parameters": t.input_schema}} for t in (await mcp.list_tools()).tools]
        messages: list[Any] = [{"role": "system", "content": os.environ["TOOLGYM_SYSTEM_PROMPT"]},
                               {"role": "user", "content": os.environ["TOOLGYM_TASK_PROMPT"]}]
        for _ in range(MAX_TURNS):
            response = await model.chat.completions.create(model=os.environ["OPENAI_MODEL"], messages=messages,
                                                           tools=tools)
            reply = response.choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                print(reply.content)
                return
            for call in reply.tool_calls:
                result = await mcp.call_tool(call.function.name, json.loads(call.function.arguments))
                text = "".join(block.text for block in result.content if block.type == "text")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


if __name__ == "__main__":
    asyncio.run(main())
