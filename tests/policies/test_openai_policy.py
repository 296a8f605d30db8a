"""gymhub's OpenAI-compatible client over real HTTP (a scripted server on loopback): the chat
policy, token-ids-in/token-ids-out completions, vLLM's LoRA calls, retries and errors."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import gymhub
from gymhub.policies import make_policy
from gymhub.policies.openai_policy import OpenAIPolicy
from gymhub.store import open_store

# the scripted model's next-token logits, whatever the prompt: token id -> logit
LOGITS = {5: 2.0, 6: 1.0, 7: 0.0, 8: -1.0, 9: -3.0}


def _logprobs(temperature: float) -> dict[int, float]:
    norm = math.log(sum(math.exp(z / temperature) for z in LOGITS.values()))
    return {t: z / temperature - norm for t, z in LOGITS.items()}


class ScriptedServer:
    """Answers POSTs from a script: a list of 'kind' strings, then repeats the last. Chat
    completions, completions (token ids in and out, like vLLM: the log-probs raw, or processed
    with ``processed=True``), and vLLM's LoRA adapter calls."""

    def __init__(self, script: list[str], *, processed: bool = True) -> None:
        self.script = list(script)
        self.processed = processed
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, {"data": [{"id": "scripted-model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.paths.append(self.path)
                kind = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if kind == "500":
                    self._send(500, {"error": "overloaded"})
                elif kind == "malformed":
                    self._raw(200, b"{this is not json")
                elif kind == "400":
                    self._send(400, {"error": "bad request"})
                elif kind == "hang":
                    self.server.hanging.wait(5)  # type: ignore[attr-defined]
                    self._send(200, server.tokens(body))
                elif self.path.endswith("_lora_adapter"):
                    self._raw(200, b"Success: LoRA adapter done.")  # vLLM answers in plain text
                elif self.path.endswith("/completions") and "prompt" in body:
                    self._send(200, server.tokens(body))
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
        self.httpd.hanging = threading.Event()  # type: ignore[attr-defined]
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

    def tokens(self, body: dict[str, Any]) -> dict[str, Any]:
        """A completions reply: ``max_tokens`` tokens counting down from 9."""
        logprobs = _logprobs(body["temperature"] if self.processed else 1.0)
        ids = [max(5, 9 - i) for i in range(body["max_tokens"])]
        top = {f"token_id:{t}": lp for t, lp in sorted(logprobs.items())[: body["logprobs"]]}
        return {
            "choices": [
                {
                    "index": 0,
                    "text": "".join(chr(96 + t) for t in ids),
                    "logprobs": {
                        "tokens": [f"token_id:{t}" for t in ids],
                        "token_logprobs": [logprobs[t] for t in ids],
                        "top_logprobs": [{**top, f"token_id:{t}": logprobs[t]} for t in ids],
                    },
                }
            ]
        }

    def close(self) -> None:
        self.httpd.hanging.set()  # type: ignore[attr-defined]
        self.httpd.shutdown()


@pytest.fixture
def server_factory() -> Iterator[Any]:
    servers: list[ScriptedServer] = []

    def make(script: list[str], *, processed: bool = True) -> ScriptedServer:
        servers.append(ScriptedServer(script, processed=processed))
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


def test_completions_send_token_ids_and_return_the_sampled_ids_and_logprobs(server_factory: Any) -> None:
    server = server_factory(["tokens"])
    client = OpenAIPolicy(server.url, "m", temperature=0.5)
    sample = client.run(lambda: client.complete_ids([1, 2, 3], max_tokens=3, seed=2**64 + 5, top_k=4))
    assert sample.token_ids == (9, 8, 7) and sample.text == "ihg"
    assert sample.logprobs == tuple(_logprobs(0.5)[t] for t in (9, 8, 7))
    assert sample.top_logprobs == ()  # not asked for
    [request] = server.requests
    assert server.paths == ["/v1/completions"]
    assert request["prompt"] == [1, 2, 3] and request["max_tokens"] == 3 and request["model"] == "m"
    assert request["temperature"] == 0.5 and request["top_k"] == 4 and request["seed"] == 5
    assert request["return_tokens_as_token_ids"] is True and request["logprobs"] == 0


def test_completions_retry_transient_errors_then_give_up_with_a_policy_error(server_factory: Any) -> None:
    server = server_factory(["500", "malformed", "tokens"])
    client = OpenAIPolicy(server.url, "m", backoff=0.01)
    assert client.run(lambda: client.complete_ids([1], max_tokens=1)).token_ids == (9,)
    assert len(server.requests) == 3
    failing = server_factory(["500"])
    client = OpenAIPolicy(failing.url, "m", backoff=0.01, max_retries=2)
    with pytest.raises(gymhub.PolicyError, match=r"gave up after 3 attempts; last error: HTTP 500"):
        client.run(lambda: client.complete_ids([1], max_tokens=1))
    assert len(failing.requests) == 3


def test_a_refused_request_is_a_policy_error_at_once_naming_the_call(server_factory: Any) -> None:
    server = server_factory(["400"])
    client = OpenAIPolicy(server.url, "m", backoff=0.01)
    with pytest.raises(
        gymhub.PolicyError, match=r"HTTP 400 from POST .*/v1/load_lora_adapter: .*bad request"
    ):
        client.run(lambda: client.load_lora_adapter("a", "/adapters/a"))
    assert len(server.requests) == 1


def test_lora_adapter_calls(server_factory: Any) -> None:
    server = server_factory(["ok"])
    client = OpenAIPolicy(server.url, "m")
    client.run(lambda: client.load_lora_adapter("step-1", "/adapters/step-1"))
    client.run(lambda: client.unload_lora_adapter("step-0"))
    assert server.paths == ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"]
    assert server.requests == [
        {"lora_name": "step-1", "lora_path": "/adapters/step-1"},
        {"lora_name": "step-0"},
    ]


def test_raw_logprobs_are_detected_and_the_flag_named(server_factory: Any) -> None:
    raw = server_factory(["tokens"], processed=False)
    client = OpenAIPolicy(raw.url, "m")
    with pytest.raises(gymhub.PolicyError, match="--logprobs-mode processed_logprobs"):
        client.run(lambda: client.check_processed_logprobs([1, 2], 0.7))
    assert [r["temperature"] for r in raw.requests] == [0.7, 1.0]
    processed = server_factory(["tokens"], processed=True)
    client = OpenAIPolicy(processed.url, "m")
    assert client.run(lambda: client.check_processed_logprobs([1, 2], 0.7)) is True
    assert client.run(lambda: client.check_processed_logprobs([1, 2], 1.0)) is None  # cannot tell
    assert len(processed.requests) == 2


def test_closing_waits_for_requests_in_flight(server_factory: Any) -> None:
    """Two rollouts share one client; the first to finish closes it while the other's request
    is still running: that request completes, and a later one opens a new connection."""
    server = server_factory(["hang", "tokens"])
    client = OpenAIPolicy(server.url, "m", max_retries=0)

    async def scenario() -> tuple[int, ...]:
        pending = asyncio.ensure_future(client.complete_ids([1], max_tokens=1))
        while not server.requests:
            await asyncio.sleep(0.01)
        await client.aclose()  # the other rollout finished
        server.httpd.hanging.set()
        first = await pending
        second = await client.complete_ids([1], max_tokens=2)
        return first.token_ids + second.token_ids

    assert client.run(scenario) == (9, 9, 8)
