"""Drives `refundsim mcp` with the Python MCP SDK's stdio client (a client this project did
not write), for tests/it/mcp_server.rs.

Usage: python3 tests/mcp/client.py REFUNDSIM_BINARY WORKING_DIR [SERVER_FLAG…] < calls.json

The server runs as `REFUNDSIM_BINARY mcp SERVER_FLAG…` in WORKING_DIR. calls.json is a list of [tool, arguments] pairs. The client initialises, lists the tools,
makes every call at once (concurrently, over one session), and prints one JSON object:
{"server": serverInfo, "tools": [...], "calls": [CallToolResult, ...]}, each as the SDK
parsed it (so a result the SDK rejects fails here, not in the Rust test).
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    binary, cwd, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
    calls = json.load(sys.stdin)
    params = StdioServerParameters(command=binary, args=["mcp", *flags], cwd=cwd)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            listed = await session.list_tools()
            results = await asyncio.gather(
                *(session.call_tool(name, arguments) for name, arguments in calls)
            )
    dump = lambda m: m.model_dump(mode="json", by_alias=True, exclude_none=True)
    print(
        json.dumps(
            {
                "server": dump(init.server_info if hasattr(init, "server_info") else init.serverInfo),
                "tools": [dump(t) for t in listed.tools],
                "calls": [dump(r) for r in results],
            }
        )
    )


asyncio.run(main())
