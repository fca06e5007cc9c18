"""What an MCP host gets from dshkit beyond text, through the official Python SDK
client (`mcp`, pinned in requirements.txt): progress during a verification, the
screenshot as image content, the evidence as resources (linked, listed, read),
and a log message after the preview browser is killed under the server and
relaunched. Prints one JSON report, in the same shape as sdk-evidence.mjs.

    python sdk_evidence.py <app url> stdio <command> [args...]
    python sdk_evidence.py <app url> http <url> <token> <server pid>
"""

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import signal
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parents() -> dict[int, int]:
    """Live (not zombie) processes and their parents, from /proc."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split(" ")
        if fields[0] != "Z":
            found[int(entry)] = int(fields[1])
    return found


def descendants(root: int) -> list[int]:
    parent = parents()

    def below(pid: int) -> bool:
        at = parent.get(pid)
        while at:
            if at == root:
                return True
            at = parent.get(at)
        return False

    return [pid for pid in parent if below(pid)]


async def run(app_url: str, mode: str, rest: list[str]) -> dict:
    logs: list[dict] = []
    list_changed = 0

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))

    async def on_message(message) -> None:
        nonlocal list_changed
        if isinstance(message, types.ResourceListChangedNotification):
            list_changed += 1

    async with contextlib.AsyncExitStack() as stack:
        if mode == "stdio":
            server = StdioServerParameters(command=rest[0], args=rest[1:], env=dict(os.environ))
            read, write = await stack.enter_async_context(stdio_client(server))
            # The server is this process's child running the given command.
            me = os.getpid()
            server_pid = next(pid for pid, parent in parents().items() if parent == me)
        else:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {rest[1]}"})
            await stack.enter_async_context(http)
            read, write = await stack.enter_async_context(streamable_http_client(rest[0], http_client=http))
            server_pid = int(rest[2])
        session = await stack.enter_async_context(
            ClientSession(
                read,
                write,
                logging_callback=on_log,
                message_handler=on_message,
                client_info=types.Implementation(name="dshkit-evidence-client-py", version="1.0.0"),
            )
        )
        await session.initialize()
        capabilities = session.server_capabilities
        report: dict = {
            "capabilities": capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
            if capabilities
            else None
        }

        progress: list[str | None] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        verified = await session.call_tool(
            "liveloop_verify",
            {
                "appUrl": app_url,
                "steps": [{"action": "press", "key": "Tab"}],
                "assertions": [{"kind": "text_present", "text": "Todo"}],
                "allowConsoleErrors": True,
                "image": True,
            },
            progress_callback=on_progress,
        )
        structured = verified.structured_content or {}
        report["progress"] = progress
        report["verdict"] = structured.get("verdict")
        report["screenshotPath"] = (structured.get("screenshot") or {}).get("path")
        report["images"] = [
            {"mimeType": c.mime_type, "sha256": sha256(base64.b64decode(c.data))}
            for c in verified.content
            if isinstance(c, types.ImageContent)
        ]
        report["links"] = [
            {"uri": str(c.uri), "mimeType": c.mime_type} for c in verified.content if isinstance(c, types.ResourceLink)
        ]
        report["listChangedBeforeResult"] = list_changed
        report["listed"] = [str(r.uri) for r in (await session.list_resources()).resources]
        report["reads"] = []
        for link in report["links"]:
            read_back = await session.read_resource(link["uri"])
            content = read_back.contents[0]
            blob = getattr(content, "blob", None)
            body = base64.b64decode(blob) if blob is not None else content.text.encode()
            report["reads"].append({"uri": link["uri"], "mimeType": content.mime_type, "sha256": sha256(body)})

        # Kill the preview browser under the server (every process descending
        # from it), then open a preview: the server relaunches it and says so.
        await session.set_logging_level("warning")
        opened = await session.call_tool("liveloop_browser", {"operation": "open", "url": app_url})
        for pid in descendants(server_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for _ in range(200):
            if not descendants(server_pid):
                break
            await asyncio.sleep(0.05)
        before = len(logs)
        reopened = await session.call_tool("liveloop_browser", {"operation": "open", "url": app_url})
        report["firstOpen"] = not opened.is_error
        report["reopened"] = not reopened.is_error
        if reopened.is_error and reopened.content:
            report["reopenedText"] = getattr(reopened.content[0], "text", None)
        report["logsAfterRelaunch"] = logs[before:]
        report["listChangedTotal"] = list_changed
        return report


def main() -> None:
    app_url, mode, *rest = sys.argv[1:]
    report = asyncio.run(run(app_url, mode, rest))
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
