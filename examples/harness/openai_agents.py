"""An OpenAI Agents SDK agent as a toolgym harness: the SDK's own MCP client for the tools, its own loop.

toolgym runs it once per episode (`toolgym harness run --command "python examples/harness/openai_agents.py"`)
with the episode's endpoints in the environment: OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL for the
model, TOOLGYM_MCP_URL for the tools, TOOLGYM_SYSTEM_PROMPT and TOOLGYM_TASK_PROMPT for the task. Tracing is
off: nothing leaves the machine. The final output is printed; toolgym scores the state the agent left.
"""

from __future__ import annotations

import asyncio
import os

from agents import (
    Agent,
    MaxTurnsExceeded,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

MAX_TURNS = 20


async def main() -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(max_retries=0, timeout=600)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    async with MCPServerStreamableHttp({"url": os.environ["TOOLGYM_MCP_URL"]}, cache_tools_list=True,
                                       client_session_timeout_seconds=60) as tools:
        agent = Agent(name="assistant", instructions=os.environ["TOOLGYM_SYSTEM_PROMPT"], mcp_servers=[tools],
                      model=OpenAIChatCompletionsModel(model=os.environ["OPENAI_MODEL"], openai_client=client))
        try:
            result = await Runner.run(agent, os.environ["TOOLGYM_TASK_PROMPT"], max_turns=MAX_TURNS,
                                      run_config=RunConfig(tracing_disabled=True))
        except MaxTurnsExceeded:  # the agent's own turn limit: its state is scored as it stands
            print(f"stopped after {MAX_TURNS} turns")
            return
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
