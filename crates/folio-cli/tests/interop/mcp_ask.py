"""Calls `ask` and `check` on folio serve's /v1/mcp with the official Python MCP SDK."""
import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> None:
    async with streamable_http_client(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            asked = await session.call_tool("ask", {"message": "hello over mcp"})
            session_id = (asked.structured_content or {}).get("sessionId")
            checked = await session.call_tool("check", {"sessionId": session_id})
            print(json.dumps({
                "tools": sorted(tool.name for tool in tools.tools),
                "reply": asked.content[0].text,
                "isError": asked.is_error,
                "sessionId": session_id,
                "structured": asked.structured_content,
                "check": json.loads(checked.content[0].text),
            }))


asyncio.run(main(sys.argv[1]))
