"""The openai policy over real HTTP (a scripted OpenAI-compatible server on loopback)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import gymhub
from gymhub.policies import make_policy
from gymhub.store import open_store


class ScriptedServer:
    """Answers chat completions from a script: a list of 'kind' strings, then repeats last."""

    def __init__(self, script: list[str]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, {"data": [{"id": "scripted-model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                kind = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if kind == "500":
                    self._send(500, {"error": "overloaded"})
                elif kind == "malformed":
                    self._raw(200, b"{this is not json")
                elif kind == "400":
                    self._send(400, {"error": "bad request"})
                else:
                    self._send(200, server.completion(kind, body))

            def _send(self, code: int, data: dict[str, Any]) -> None:
                self._raw(code, json.dumps(data).encode())

            def _raw(self, code: int, payload: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def completion(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        if kind == "tool":
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "submit",
                            "arguments": json.dumps({"code": "def f():\n  pass\n"}),
                        },
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": "aaaa"}
        return {
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "token_ids": [7, 7, 7, 7],
                    "logprobs": {"content": [{"token": "a", "logprob": -0.25}] * 4},
                }
            ],
            "prompt_token_ids": [1, 2, 3],
        }

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture
def server_factory() -> Iterator[Any]:
    servers: list[ScriptedServer] = []

    def make(script: list[str]) -> ScriptedServer:
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_text_reply_with_token_ids_and_logprobs(server_factory: Any) -> None:
    server = server_factory(["text"])
    policy = make_policy(f"openai:{server.url}", request_token_ids=True)
    [group] = gymhub.rollout("toy-letters-v0", policy, tasks=1)
    t = group.trajectories[0]
    [turn] = [x for x in t.turns if x.source == "policy"]
    assert turn.token_ids == (7, 7, 7, 7) and turn.logprobs == (-0.25,) * 4
    assert turn.prompt_token_ids == (1, 2, 3) and turn.loss_mask == (1, 1, 1, 1)
    assert t.verdict.outcome == 1.0 or t.verdict.outcome == 0.0
    request = server.requests[0]
    assert request["model"] == "scripted-model" and request["logprobs"] is True
    assert request["return_token_ids"] is True
    assert request["messages"][-1]["role"] == "user"


def test_native_tool_calls_reach_the_env(server_factory: Any) -> None:
    server = server_factory(["tool"])
    [group] = gymhub.rollout("code-python-v0", f"openai:{server.url}#scripted-model", tasks=1)
    t = group.trajectories[0]
    assert t.status == "ok" and t.turns[1].messages[0].tool_calls[0].name == "submit"
    assert t.turns[2].messages[0].role == "tool"  # the env answered the call
    assert server.requests[0]["tools"][0]["function"]["name"] == "submit"


def test_transient_errors_are_retried(server_factory: Any) -> None:
    server = server_factory(["500", "malformed", "text"])
    policy = make_policy(f"openai:{server.url}#m", backoff=0.01)
    [group] = gymhub.rollout("toy-letters-v0", policy, tasks=1)
    assert group.trajectories[0].status == "ok"
    assert len(server.requests) == 3


def test_persistent_failure_is_stored_as_errored(server_factory: Any, tmp_path: Any) -> None:
    server = server_factory(["500"])
    policy = make_policy(f"openai:{server.url}#m", backoff=0.01, max_retries=2)
    store = open_store(str(tmp_path / "s.db"))
    env = gymhub.make("toy-letters-v0")
    store.create_run(
        "r",
        env_id="toy-letters-v0",
        policy=policy.id,
        split="train",
        group_size=1,
        seed=0,
        tasks=env.tasks[:2],
    )
    gymhub.rollout("toy-letters-v0", policy, tasks=env.tasks[:2], store=store, run_id="r")
    stored = store.load_trajectories("r")
    assert len(stored) == 2 and {t.status for t in stored} == {"errored"}
    assert all("HTTP 500" in t.error and "3 attempts" in t.error for t in stored)
    assert len(server.requests) == 6


def test_client_errors_are_not_retried(server_factory: Any) -> None:
    server = server_factory(["400"])
    [group] = gymhub.rollout("toy-letters-v0", f"openai:{server.url}#m", tasks=1)
    assert group.trajectories[0].status == "errored" and len(server.requests) == 1


def test_unreachable_server_is_an_errored_trajectory() -> None:
    policy = make_policy("openai:http://127.0.0.1:9/v1#m", backoff=0.01, max_retries=1)
    [group] = gymhub.rollout("toy-letters-v0", policy, tasks=1)
    assert "transport error" in group.trajectories[0].error


def test_bad_spec_is_refused() -> None:
    with pytest.raises(gymhub.PolicyError, match="needs a URL"):
        make_policy("openai:localhost")
