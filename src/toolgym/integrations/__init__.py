"""toolgym inside other trainers: TRL (SFT rows, GRPO `environment_factory`) and OpenEnv (MCP environments).

Each adapter imports its trainer's package only when used, so toolgym never depends on them: install
`toolgym[bench]` for TRL and `toolgym[openenv]` for OpenEnv.
"""
