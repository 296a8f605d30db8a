"""`gymhub mcp ENV`: an env's tools over a real fastmcp server, driven by fastmcp's client."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from typing import Any

import pytest
from processes import free_port, gymhub_cli

import gymhub

fastmcp = pytest.importorskip("fastmcp")

from gymhub.mcp_server import build_mcp_server  # noqa: E402


async def _play_reference(client: Any, env_id: str, task: gymhub.Task) -> dict[str, Any]:
    """Replay the task's reference solution through MCP tool calls; the last result."""
    results = [result async for result in await _start(client, task)]
    return results[-1]


async def _start(client: Any, task: gymhub.Task) -> Any:
    """Reset to ``task``; an async iterator that plays one reference action per step."""
    reset = await client.call_tool("reset", {"task_id": task.id})
    assert reset.data["task_id"] == task.id and reset.data["prompt"] == task.prompt
    episode = {"episode_id": reset.data["episode_id"]}  # works on stateless HTTP too

    async def steps() -> Any:
        for message in task.hidden["solutions"]["reference"]:
            for call in message.get("tool_calls") or []:
                arguments = {**json.loads(call["function"]["arguments"]), **episode}
                yield (await client.call_tool(call["function"]["name"], arguments)).structured_content
            if not message.get("tool_calls"):
                answer = {"answer": message["content"], **episode}
                yield (await client.call_tool("submit", answer)).structured_content

    return steps()


def test_tools_schemas_and_a_full_episode_with_verdict() -> None:
    env = gymhub.make("mcp-tools-v0")
    task = env.tasks[0]
    [group] = gymhub.rollout("mcp-tools-v0", "reference", tasks=[task.id])
    expected = group.trajectories[0].verdict

    async def main() -> dict[str, Any]:
        async with fastmcp.Client(build_mcp_server("mcp-tools-v0")) as client:
            tools = {t.name: t for t in await client.list_tools()}
            for spec in env.tools():
                f = spec["function"]
                schema = dict(tools[f["name"]].input_schema)
                schema["properties"] = dict(schema["properties"])
                assert schema["properties"].pop("episode_id")["type"] == "string"
                assert schema == f["parameters"]  # the env's own schema, plus the episode id
            assert {"list_tasks", "reset"} <= set(tools)
            listed = (await client.call_tool("list_tasks", {"limit": 3})).data
            assert [t["task_id"] for t in listed] == [t.id for t in env.tasks[:3]]
            assert "hidden" not in json.dumps(listed)
            return await _play_reference(client, "mcp-tools-v0", task)

    result = asyncio.run(main())
    assert result["done"] is True
    assert result["verdict"]["outcome"] == expected.outcome == 1.0
    assert result["verdict"]["path_signal"] == expected.path_signal


def test_submit_ends_an_env_without_a_submit_tool_and_reads_the_state() -> None:
    task = gymhub.make("search-v0").tasks[0]

    async def main() -> tuple[Any, Any, Any]:
        async with fastmcp.Client(build_mcp_server("search-v0")) as client:
            with pytest.raises(fastmcp.exceptions.ToolError, match="call reset first"):
                await client.call_tool("search", {"query": "x"})
            await client.call_tool("reset", {"task_id": task.id})
            bad = await client.call_tool("open", {"doc_id": "no-such-doc"})
            final = await client.call_tool("submit", {"answer": "I am sure it is right."})
            again = await client.call_tool("reset", {"task_id": task.id})
            return bad, final, again

    bad, final, again = asyncio.run(main())
    assert bad.structured_content["done"] is False
    assert final.structured_content["done"] is True
    assert final.structured_content["verdict"]["outcome"] == 0.0  # a claim is not an answer
    assert again.data["task_id"] == task.id  # a new episode starts after the verdict


def test_stdio_and_http_transports_from_the_cli() -> None:
    task = gymhub.make("mcp-tools-v0").tasks[1]
    stdio = fastmcp.client.transports.StdioTransport(command=gymhub_cli(), args=["mcp", "mcp-tools-v0"])

    async def over(transport: Any) -> dict[str, Any]:
        async with fastmcp.Client(transport, timeout=60) as client:
            return await _play_reference(client, "mcp-tools-v0", task)

    assert asyncio.run(over(stdio))["verdict"]["outcome"] == 1.0

    port = free_port()
    server = subprocess.Popen(
        [gymhub_cli(), "mcp", "mcp-tools-v0", "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        assert asyncio.run(over(f"http://127.0.0.1:{port}/mcp"))["verdict"]["outcome"] == 1.0
    finally:
        server.terminate()
        server.wait(10)


def _start_http_server(*extra: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    server = subprocess.Popen(
        [gymhub_cli(), "mcp", "search-v0", "--transport", "http", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            time.sleep(0.2)
    server.terminate()
    raise AssertionError("the MCP server did not start")


def test_each_client_has_its_own_episode_over_http() -> None:
    env = gymhub.make("search-v0")
    first, second = env.tasks[0], env.tasks[1]
    server, port = _start_http_server()
    url = f"http://127.0.0.1:{port}/mcp"

    async def interleaved() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with fastmcp.Client(url, timeout=60) as a, fastmcp.Client(url, timeout=60) as b:
            steps_a = await _start(a, first)
            steps_b = await _start(b, second)  # before a has finished: a's episode must survive
            last_a = [result async for result in steps_a][-1]
            last_b = [result async for result in steps_b][-1]
            with pytest.raises(fastmcp.exceptions.ToolError, match="pass the episode_id"):
                await a.call_tool("search", {"query": "x"})  # stateless HTTP: no implicit episode
            return last_a, last_b, None

    try:
        last_a, last_b, _ = asyncio.run(interleaved())
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=20)
    assert last_a["verdict"]["outcome"] == 1.0 and last_b["verdict"]["outcome"] == 1.0
    assert b"Traceback" not in stderr  # a tool error is an answer, not a logged traceback


def test_http_with_a_token_refuses_clients_without_it() -> None:
    server, port = _start_http_server("--token", "s3cret")
    url = f"http://127.0.0.1:{port}/mcp"

    async def with_token() -> Any:
        async with fastmcp.Client(url, auth="s3cret", timeout=60) as client:
            return (await client.call_tool("list_tasks", {"limit": 1})).data

    try:
        assert len(asyncio.run(with_token())) == 1
        import httpx

        ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"accept": "application/json, text/event-stream"}
        assert httpx.post(url, json=ping, headers=headers, timeout=30).status_code == 401
        wrong = {**headers, "authorization": "Bearer nope"}
        assert httpx.post(url, json=ping, headers=wrong, timeout=30).status_code == 401
    finally:
        server.terminate()
        server.wait(20)
