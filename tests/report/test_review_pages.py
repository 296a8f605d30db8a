"""The served pages (`gymhub review`, `gymhub serve --db`) in a real browser, a person's review
of verdicts stored in the store, and `gymhub bench verifiers --labels` against those reviews."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from chromium_cdp import ARTIFACTS, Browser
from fastapi.testclient import TestClient
from processes import free_port, gymhub_cli
from report_runs import Runs

from gymhub.server import create_app
from gymhub.store import open_store


@pytest.fixture()
def own_runs(runs: Runs, tmp_path: Path) -> Runs:
    """A copy of the session's store: these tests write reviews into it."""
    db = tmp_path / "runs.db"
    shutil.copy(runs.db, db)
    return Runs(db=db, a=runs.a, b=runs.b)


def _serve(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    process = subprocess.Popen(
        [gymhub_cli(), *args, "--port", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # printed once the server listens
    assert f"127.0.0.1:{port}" in line, line + process.stderr.read()
    return process, f"http://127.0.0.1:{port}"


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_review_in_the_browser_is_stored_and_scored(own_runs: Runs) -> None:
    store = open_store(str(own_runs.db), create=False)
    trajs = store.load_trajectories(own_runs.a)
    store.close()
    passed = next(t for t in trajs if t.verdict is not None and t.verdict.outcome >= 1.0)
    failed = next(t for t in trajs if t.verdict is not None and t.verdict.outcome == 0.0)
    process, base = _serve(["review", own_runs.a, "--db", str(own_runs.db)])
    try:
        with Browser(height=1100) as browser:
            browser.open(f"{base}/runs", ready="document.getElementById('runs')")
            listed = browser.evaluate("[...document.querySelectorAll('#runs a')].map(a => a.textContent)")
            assert listed == [own_runs.a, own_runs.b]
            for t, right, note in ((passed, False, "the reply is not the letter"), (failed, True, "")):
                browser.open(f"{base}/runs/{own_runs.a}#traj={t.id}")
                assert browser.evaluate("document.getElementById('viewer').dataset.open") == t.id
                browser.evaluate(
                    f"document.getElementById('review-note').value = {json.dumps(note)};"
                    f" document.getElementById('review-{'right' if right else 'wrong'}').click()"
                )
                browser.wait_for("document.getElementById('review-state').textContent.startsWith('saved')")
            # the page loaded afresh (not a same-document hash change) shows the stored reviews
            browser.open("about:blank", ready="true")
            browser.open(f"{base}/runs/{own_runs.a}#traj={passed.id}")
            assert browser.evaluate("document.getElementById('sum-0-reviewed').dataset.value") == "2"
            state = browser.evaluate("document.getElementById('review-state').textContent")
            assert state == "reviewed: verdict wrong — the reply is not the letter"
            browser.screenshot(ARTIFACTS / "review.png")
            browser.drain()
            assert browser.errors == []
        # a review of a trajectory the run does not have is refused
        answer = httpx.post(
            f"{base}/runs/{own_runs.a}/labels",
            json={"trajectory_id": "nope", "verdict_right": True},
            timeout=30,
        )
        assert answer.status_code == 404
    finally:
        _stop(process)
    store = open_store(str(own_runs.db), create=False)
    labels = store.labels(own_runs.a)
    store.close()
    assert {tid: (label.verdict_right, label.note) for tid, label in labels.items()} == {
        passed.id: (False, "the reply is not the letter"),
        failed.id: (True, ""),
    }
    # the verifier against the people: it passed one trajectory wrongly, failed one rightly
    done = subprocess.run(
        [gymhub_cli(), "bench", "verifiers", "--labels", own_runs.a, "--db", str(own_runs.db), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reviewed"] == 2 and result["agreement"] == 0.5
    assert result["false_positives"] == 1 and result["true_negatives"] == 1
    assert result["precision"] == 0.0 and result["recall"] is None


def test_serve_shows_the_pages_read_only(own_runs: Runs) -> None:
    process, base = _serve(["serve", "toy-letters-v0", "--db", str(own_runs.db)])
    try:
        with Browser() as browser:
            browser.open(f"{base}/runs/{own_runs.b}")
            shown = browser.evaluate("document.getElementById('sum-0-trajectories').dataset.value")
            store = open_store(str(own_runs.db), create=False)
            assert int(shown) == len(store.load_trajectories(own_runs.b))
            store.close()
            browser.open(f"{base}/runs/{own_runs.b}#traj={_first_id(own_runs)}")
            assert browser.evaluate("document.getElementById('review-right')") is None  # no review buttons
            browser.drain()
            assert browser.errors == []
        answer = httpx.post(
            f"{base}/runs/{own_runs.b}/labels",
            json={"trajectory_id": _first_id(own_runs), "verdict_right": True},
            timeout=30,
        )
        assert answer.status_code in (404, 405)
        assert httpx.get(f"{base}/runs/no-such-run", timeout=30).status_code == 404
    finally:
        _stop(process)


def _first_id(runs: Runs) -> str:
    store = open_store(str(runs.db), create=False)
    try:
        return store.load_trajectories(runs.b)[0].id
    finally:
        store.close()


def test_review_endpoint_replaces_a_review(own_runs: Runs) -> None:
    client = TestClient(create_app(["toy-letters-v0"], db=str(own_runs.db), review=True))
    tid = _first_id(own_runs)
    for right, note in ((True, "first"), (False, "second thoughts")):
        answer = client.post(
            f"/runs/{own_runs.b}/labels", json={"trajectory_id": tid, "verdict_right": right, "note": note}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["verdict_right"] is right
    store = open_store(str(own_runs.db), create=False)
    labels = store.labels(own_runs.b)
    store.close()
    assert len(labels) == 1 and labels[tid].verdict_right is False and labels[tid].note == "second thoughts"
    # the trajectory belongs to run b, not run a
    assert (
        client.post(
            f"/runs/{own_runs.a}/labels", json={"trajectory_id": tid, "verdict_right": True}
        ).status_code
        == 404
    )
