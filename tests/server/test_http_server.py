"""The HTTP env server and RemoteEnv, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

import gymhub
from gymhub.client import RemoteEnv
from gymhub.server import create_app


def _serve(**options: object) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(**options), host="127.0.0.1", port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    yield from _serve(env_ids=["toy-letters-v0", "code-python-v0"], max_sessions_per_client=512)


def test_check_env_passes_on_a_remote_env(url: str) -> None:
    gymhub.check_env(RemoteEnv(url, "code-python-v0"))


def test_remote_episode_gives_the_same_verdict_as_a_local_one(url: str) -> None:
    local = gymhub.make("code-python-v0")
    _, info = local.reset(seed=3)
    task = local.get_task(info["task_id"])
    local_verdict = local.step(task.hidden["solutions"]["reference"][0])[4]["verdict"]
    remote = RemoteEnv(url, "code-python-v0")
    remote.reset(options={"task_id": task.id})
    remote_verdict = remote.step(task.hidden["solutions"]["reference"][0])[4]["verdict"]
    assert remote_verdict == local_verdict
    with pytest.raises(gymhub.EpisodeOver):
        remote.step("again")


def test_clear_4xx_for_bad_requests(url: str) -> None:
    with httpx.Client(base_url=url) as http:
        assert http.get("/healthz").status_code == 200
        assert (
            http.post(
                "/sessions", content=b"{not json", headers={"content-type": "application/json"}
            ).status_code
            == 422
        )
        assert http.post("/sessions", json={"env_id": "nope"}).status_code == 404
        assert http.post("/sessions/abc/step", json={"action": "a"}).status_code == 404
        big = b'{"action": "' + b"x" * (17 * 1024 * 1024) + b'"}'
        assert (
            http.post(
                "/sessions/abc/step", content=big, headers={"content-type": "application/json"}
            ).status_code
            == 413
        )
        # a client cannot pick a weaker sandbox (local-unsafe runs its code unisolated)
        chosen = http.post(
            "/sessions", json={"env_id": "code-python-v0", "kwargs": {"sandbox": "local-unsafe"}}
        )
        assert chosen.status_code == 400 and "sandbox" in chosen.text
        assert "gymhub_requests_total" in http.get("/metrics").text
        assert http.get("/openapi.json").json()["info"]["title"] == "gymhub"


def test_token_is_required_when_set() -> None:
    for base in _serve(env_ids=["toy-letters-v0"], token="s3cret"):
        with httpx.Client(base_url=base) as http:
            assert http.get("/envs").status_code == 401
            assert http.get("/envs", headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert http.get("/envs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        remote = RemoteEnv(base, "toy-letters-v0", token="s3cret")
        assert remote.reset(seed=0)[0]


def test_idle_sessions_expire_and_the_per_client_limit_holds() -> None:
    for base in _serve(env_ids=["toy-letters-v0"], ttl_s=0.5, max_sessions_per_client=2):
        with httpx.Client(base_url=base) as http:
            sids = [
                http.post("/sessions", json={"env_id": "toy-letters-v0"}).json()["session_id"]
                for _ in range(2)
            ]
            assert http.post("/sessions", json={"env_id": "toy-letters-v0"}).status_code == 429
            time.sleep(6)
            assert http.get(f"/sessions/{sids[0]}").status_code == 404  # expired: its env was closed
            assert http.post("/sessions", json={"env_id": "toy-letters-v0"}).status_code == 200


def test_200_concurrent_sessions_lose_nothing(url: str) -> None:
    async def episode(client: httpx.AsyncClient, i: int) -> tuple[float, float]:
        start = time.perf_counter()
        made = (await client.post("/sessions", json={"env_id": "toy-letters-v0", "seed": i})).json()
        step = (await client.post(f"/sessions/{made['session_id']}/step", json={"action": "aaaa"})).json()
        await client.delete(f"/sessions/{made['session_id']}")
        return time.perf_counter() - start, step["info"]["verdict"]["outcome"]

    async def load() -> list[tuple[float, float]]:
        async with httpx.AsyncClient(
            base_url=url, timeout=60, limits=httpx.Limits(max_connections=50)
        ) as client:
            return await asyncio.wait_for(
                asyncio.gather(*(episode(client, i) for i in range(200))), timeout=120
            )

    before = httpx.get(f"{url}/healthz").json()["sessions"]
    results = asyncio.run(load())
    assert len(results) == 200 and all(0.0 <= outcome <= 1.0 for _, outcome in results)
    latencies = sorted(r[0] for r in results)
    print(f"200 sessions: p50 {latencies[100] * 1000:.1f} ms, p95 {latencies[190] * 1000:.1f} ms")
    assert httpx.get(f"{url}/healthz").json()["sessions"] == before  # every session closed, none lost


def test_gymnasium_loop_with_nothing_but_gymnasium() -> None:
    import gymnasium

    env = gymnasium.make("gymhub/toy-letters-v0")
    _, info = env.reset(seed=42)
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step("c" * 5)
    assert isinstance(reward, float) and "verdict" in info
    env.close()


def test_malformed_actions_and_kwargs_are_4xx_with_a_message(url: str) -> None:
    with httpx.Client(base_url=url) as http:
        assert (
            http.post("/sessions", json={"env_id": "toy-letters-v0", "kwargs": {"nope": 1}}).status_code
            == 400
        )
        assert http.post("/sessions", json={"env_id": "toy-letters-v0", "task_id": "zz"}).status_code == 400
        for action, status in (
            ({"tool_calls": "x"}, 200),  # answered by the env: an error observation
            ({"tool_calls": [1]}, 200),
            ({"tool_calls": [{"function": {}}]}, 200),
            ({"bytes_b64": "***not base64***"}, 400),
            (5, 422),
            (None, 422),
        ):
            sid = http.post("/sessions", json={"env_id": "toy-letters-v0", "seed": 1}).json()["session_id"]
            answer = http.post(f"/sessions/{sid}/step", json={"action": action})
            assert answer.status_code == status, (action, answer.text)
            assert answer.json()["detail" if status >= 400 else "observation"]
            if status == 200:
                assert answer.json()["observation"].startswith("error:")
            http.delete(f"/sessions/{sid}")


def test_the_body_cap_holds_for_chunked_bodies(url: str) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: httpx sends it chunked
        yield b'{"action": "'
        for _ in range(17):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    with httpx.Client(base_url=url, timeout=60) as http:
        sid = http.post("/sessions", json={"env_id": "toy-letters-v0"}).json()["session_id"]
        answer = http.post(
            f"/sessions/{sid}/step", content=chunks(), headers={"content-type": "application/json"}
        )
        assert answer.status_code == 413 and "body over" in answer.json()["detail"]
        small = http.post(
            f"/sessions/{sid}/step",
            content=iter([b'{"action": ', b'"a"}']),
            headers={"content-type": "application/json"},
        )
        assert small.status_code == 200


def test_the_session_cap_is_race_free_and_cannot_be_dodged_with_headers() -> None:
    for base in _serve(env_ids=["toy-letters-v0"], max_sessions_per_client=5):

        async def create(client: httpx.AsyncClient, i: int) -> int:
            headers = {"Authorization": f"Bearer made-up-{i}"}  # no token is set: these mean nothing
            answer = await client.post("/sessions", json={"env_id": "toy-letters-v0"}, headers=headers)
            return answer.status_code

        async def burst(base: str = base) -> list[int]:
            async with httpx.AsyncClient(
                base_url=base, timeout=120, limits=httpx.Limits(max_connections=200)
            ) as client:
                return await asyncio.gather(*(create(client, i) for i in range(200)))

        codes = asyncio.run(burst())
        assert codes.count(200) == 5 and codes.count(429) == 195, sorted(set(codes))
        assert httpx.get(f"{base}/healthz").json()["sessions"] == 5


def test_401_names_the_scheme_and_bearer_is_case_insensitive() -> None:
    for base in _serve(env_ids=["toy-letters-v0"], token="s3cret"):
        with httpx.Client(base_url=base) as http:
            refused = http.get("/envs")
            assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
            for header in ("bearer s3cret", "BEARER s3cret", "Bearer  s3cret"):
                assert http.get("/envs", headers={"Authorization": header}).status_code == 200, header
            assert http.get("/envs", headers={"Authorization": "Basic s3cret"}).status_code == 401


def test_remote_env_errors_are_gymhub_errors(url: str) -> None:
    from processes import free_port

    from gymhub.client import RemoteError, ServerUnreachable

    dead = RemoteEnv(f"http://127.0.0.1:{free_port()}", "toy-letters-v0", timeout=5)
    with pytest.raises(ServerUnreachable) as caught:
        dead.reset(seed=0)
    assert isinstance(caught.value, gymhub.GymhubError)
    with pytest.raises(ServerUnreachable):
        asyncio.run(dead.areset(seed=0))
    with pytest.raises(RemoteError, match="404"):
        RemoteEnv(url, "no-such-env-v0").reset(seed=0)
    with pytest.raises(RemoteError, match="not gymhub's JSON"):
        _not_json(url)
    remote = RemoteEnv(url, "toy-letters-v0")
    remote.reset(seed=0)
    observation = remote.step({"tool_calls": "x"})[0]  # wrong types inside a dict action
    assert observation.startswith("error: action is not a valid chat message")
    with pytest.raises(gymhub.BadAction):
        remote.step({"content": {1, 2}})  # cannot even travel as JSON
    remote.close()


def _not_json(url: str) -> None:
    from gymhub.client import _checked

    _checked(httpx.get(f"{url}/metrics"))  # a 200 whose body is Prometheus text
