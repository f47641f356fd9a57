"""The Python MCP SDK against benchtop over stdio (run by tests/node/clients.sh).

Checks what a Python agent sees: every tool's input and output schema is a
valid JSON Schema (2020-12) that the SDK accepts, structured results validate
against their output schema, a tool error comes back as is_error, and a
prompt and a resource (ecu-tables') read as the SDK's typed results.

    python3 client.py BENCHTOP_BIN serve --config benchtop.toml --no-watch
"""

import asyncio
import json
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent, TextResourceContents

# What ecu-tables offers besides tools, on the bundled sample ROM.
PROMPT = "ecu_tuning_assistant"
TEMPLATE = "rom://{+rom}/tables"
RESOURCE = "rom://ecu/BT000001.bin/tables"


async def check_offers(session: ClientSession, failures: list) -> None:
    """One prompt and one resource read through the SDK's typed models."""
    prompts = {p.name for p in (await session.list_prompts()).prompts}
    if PROMPT not in prompts:
        failures.append(f"prompts/list lacks {PROMPT}: {sorted(prompts)}")
        return
    prompt = await session.get_prompt(PROMPT)
    if not prompt.messages or prompt.messages[0].role != "user":
        failures.append(f"{PROMPT}: expected a user message, got {prompt.messages!r:.200}")
    elif not isinstance(prompt.messages[0].content, TextContent) or "rom_info" not in prompt.messages[0].content.text:
        failures.append(f"{PROMPT}: the message does not name rom_info: {prompt.messages[0].content!r:.200}")
    templates = {t.uri_template for t in (await session.list_resource_templates()).resource_templates}
    if TEMPLATE not in templates:
        failures.append(f"resources/templates/list lacks {TEMPLATE}: {sorted(templates)}")
        return
    contents = (await session.read_resource(RESOURCE)).contents
    if len(contents) != 1 or not isinstance(contents[0], TextResourceContents):
        failures.append(f"{RESOURCE}: expected one text content, got {contents!r:.200}")
    elif str(contents[0].uri) != RESOURCE or not contents[0].text.strip():
        failures.append(f"{RESOURCE}: empty or for another URI: {contents[0]!r:.200}")


async def main() -> int:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    failures = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        for tool in tools:
            for kind, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
                if schema is None:
                    continue
                try:
                    jsonschema.Draft202012Validator.check_schema(schema)
                except jsonschema.SchemaError as e:
                    failures.append(f"{tool.name} {kind} schema: {e.message}")
        # Structured results validate against their declared output schema
        # (the SDK checks this itself and raises when they do not).
        calls = [
            ("status", {}),
            ("cp1600_create_session", {}),
            ("get_connection_state", {}),
            ("rom_info", {"rom": "ecu/BT000001.bin"}),
        ]
        by_name = {t.name: t for t in tools}
        for name, args in calls:
            result = await session.call_tool(name, args)
            if result.is_error:
                failures.append(f"{name}: unexpected error {result.content[0].text}")
            elif by_name[name].output_schema is not None:
                jsonschema.validate(result.structured_content, by_name[name].output_schema)
        error = await session.call_tool("read_table", {"rom": "ecu/BT000001.bin", "table": "No Such Table"})
        if not error.is_error:
            failures.append("read_table on an unknown table should be an error")
        await check_offers(session, failures)
        print(f"python sdk: {len(tools)} tools, {len(calls) + 1} calls, a prompt and a resource")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
