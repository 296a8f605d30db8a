"""`gymhub report` in a real browser (headless Chromium): the numbers on the page are the
store's, the tables sort and filter, a trajectory opens from #traj=ID with its turns, the
comparison and training curves are drawn, and nothing logs an error."""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from chromium_cdp import ARTIFACTS, Browser
from processes import gymhub_cli
from report_runs import TASKS, G, Runs

from gymhub.report.pass_at_k import pass_at_k
from gymhub.store import open_store
from gymhub.types import Trajectory
from gymhub.verifiers.reachability import reachability_report


def _load(runs: Runs, run_id: str) -> list[Trajectory]:
    store = open_store(str(runs.db), create=False)
    try:
        return store.load_trajectories(run_id)
    finally:
        store.close()


@pytest.fixture(scope="module")
def report(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CLI's report of both runs, with the curves of a metrics.jsonl in the trainer's keys."""
    folder = tmp_path_factory.mktemp("html")
    metrics = folder / "metrics.jsonl"
    metrics.write_text(
        "".join(
            json.dumps(
                {
                    "step": step,
                    "outcome_mean": 0.1 * step,
                    "path_signal_mean": 0.05 * step,
                    "kl": 0.01 * step,
                    "clip_fraction": 0.02,
                    "mismatch/abs_logprob_diff_mean": 0.001,
                    "time/generate_s": 1.5,
                    "time/train_s": 0.5,
                    "time/verify_s": 0.2,
                }
            )
            + "\n"
            for step in range(1, 6)
        )
    )
    target = folder / "report.html"
    done = subprocess.run(
        [
            gymhub_cli(),
            "report",
            runs.a,
            runs.b,
            "--db",
            str(runs.db),
            "-o",
            str(target),
            "--metrics",
            str(metrics),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return target


def test_report_is_self_contained(report: Path) -> None:
    text = report.read_text(encoding="utf-8")
    import re

    for fetched in ('src="http', "src='http", "url(", "@import", "fetch("):
        assert fetched not in text.replace("fetch(DATA.review_url", "")  # posts reviews only when served
    assert re.findall(r"<link[^>]*>", text) == ['<link rel="icon" href="data:,">']  # no favicon request
    assert "<script src" not in text


def test_numbers_on_the_page_are_the_stores(runs: Runs, report: Path) -> None:
    with Browser() as browser:
        browser.open(report.as_uri())
        for index, run_id in enumerate((runs.a, runs.b)):
            trajs = _load(runs, run_id)
            verdicts = [t.verdict for t in trajs if t.verdict is not None]

            def shown(key: str, index: int = index) -> str:
                return browser.evaluate(f"document.getElementById('sum-{index}-{key}').dataset.value")

            assert int(shown("trajectories")) == len(trajs) == TASKS * G
            assert int(shown("tasks")) == TASKS
            passed = sum(v.outcome >= 1.0 for v in verdicts)
            assert float(shown("pass_rate")) == pytest.approx(passed / len(verdicts), abs=1e-6)
            assert float(shown("mean_outcome")) == pytest.approx(
                sum(v.outcome for v in verdicts) / len(verdicts), abs=1e-6
            )
            assert float(shown("mean_path_signal")) == pytest.approx(
                sum(v.path_signal for v in verdicts) / len(verdicts), abs=1e-6
            )
            assert int(shown("episode_errors")) == sum(t.status == "errored" for t in trajs)
            assert 0 < passed < len(verdicts)  # the fixture's runs have both
            # pass@k of every k <= G, from the store's counts
            by_task: dict[str, list[bool]] = defaultdict(list)
            for t in trajs:
                by_task[t.task_id].append(t.verdict is not None and t.verdict.outcome >= 1.0)
            for k in range(1, G + 1):
                expected = sum(pass_at_k(len(p), sum(p), k) for p in by_task.values()) / len(by_task)
                cell = browser.evaluate(
                    f"document.querySelector('#passk-{index} tr[data-k=\"{k}\"] .passk').dataset.value"
                )
                assert float(cell) == pytest.approx(expected, abs=1e-6)
            # rule firing rates and reachability, as `gymhub rlvp-report` computes them
            reach = reachability_report(trajs)["toy-letters-v0"]
            for rule, rate in reach["rule_rates"].items():
                cell = browser.evaluate(
                    f"document.querySelector('#rules-{index} tr[data-rule=\"{rule}\"] td[data-value]')"
                    ".dataset.value"
                )
                assert float(cell) == pytest.approx(rate, abs=1e-6)
            numbers = browser.evaluate(
                f"[...document.querySelectorAll('#reach-{index} b')].map(b => Number(b.dataset.value))"
            )
            assert numbers[0] == reach["groups"] == TASKS
            assert numbers[1] == round(reach["zero_variance_groups"] * reach["groups"])
            outcome_sets = defaultdict(set)
            for t in trajs:
                outcome_sets[t.task_id].add(t.verdict.outcome if t.verdict else None)
            assert numbers[1] == sum(1 for s in outcome_sets.values() if len(s) == 1)
        # the comparison: per-task pass rates of A and B
        rates = [
            {tid: sum(p) / len(p) for tid, p in _pass_lists(_load(runs, run_id)).items()}
            for run_id in (runs.a, runs.b)
        ]
        expected_counts = {
            "fixed": sum(rates[1][t] > rates[0][t] for t in rates[0]),
            "broken": sum(rates[1][t] < rates[0][t] for t in rates[0]),
            "unchanged": sum(rates[1][t] == rates[0][t] for t in rates[0]),
        }
        for change, count in expected_counts.items():
            shown_count = browser.evaluate(
                f"document.querySelector('#cmp-counts b[data-change=\"{change}\"]').textContent"
            )
            assert int(shown_count) == count
        # training curves: one SVG per chart, a line per key present
        charts = browser.evaluate("[...document.querySelectorAll('#training .chart')].length")
        assert charts == 6
        lines = browser.evaluate("document.querySelectorAll('#training polyline').length")
        assert lines == 8  # one per key present: five charts of one, the time split of three
        browser.screenshot(ARTIFACTS / "report_full.png", full_page=True)
        browser.drain()
        assert browser.errors == []


def _pass_lists(trajs: list[Trajectory]) -> dict[str, list[bool]]:
    by_task: dict[str, list[bool]] = defaultdict(list)
    for t in trajs:
        by_task[t.task_id].append(t.verdict is not None and t.verdict.outcome >= 1.0)
    return by_task


def test_tables_sort_and_filter(runs: Runs, report: Path) -> None:
    trajs = _load(runs, runs.a) + _load(runs, runs.b)
    with Browser() as browser:
        browser.open(report.as_uri())
        table = "document.querySelector('[data-table=\"trajectories\"]')"
        count = "document.querySelector('#trajectories .vt-count').textContent"
        assert browser.evaluate(count) == f"{len(trajs)} of {len(trajs)} rows"
        # filter by status: only the failed ones
        failed = sum(1 for t in trajs if t.verdict is not None and t.verdict.outcome == 0)
        browser.evaluate(
            "(() => { const s = document.querySelector('#trajectories select[aria-label=\"status\"]');"
            " s.value = '2'; s.dispatchEvent(new Event('change')); })()"
        )
        assert browser.evaluate(count) == f"{failed} of {len(trajs)} rows"
        shown = browser.evaluate(
            f"[...{table}.querySelectorAll('.vt-row [data-col=\"status\"]')].map(c => c.textContent)"
        )
        assert shown and set(shown) == {"failed"}
        # text filter on one task id
        task_id = trajs[0].task_id
        browser.evaluate(
            "(() => { const s = document.querySelector('#trajectories select[aria-label=\"status\"]');"
            " s.value = '-1'; s.dispatchEvent(new Event('change'));"
            f" const f = document.querySelector('#trajectories input'); f.value = '{task_id}';"
            " f.dispatchEvent(new Event('input')); })()"
        )
        assert browser.evaluate(count) == f"{sum(t.task_id == task_id for t in trajs)} of {len(trajs)} rows"
        # sort the task table by mean outcome, descending (a click on a numeric column)
        browser.evaluate("document.querySelector('#tasks .vt-head [data-col=\"mean_outcome\"]').click()")
        means = browser.evaluate(
            "[...document.querySelectorAll('#tasks .vt-row [data-col=\"mean_outcome\"]')]"
            ".map(c => Number(c.textContent))"
        )
        assert means == sorted(means, reverse=True) and len(means) == 2 * TASKS
        browser.drain()
        assert browser.errors == []


def test_a_trajectory_opens_from_the_url_fragment(runs: Runs, report: Path) -> None:
    trajs = _load(runs, runs.a)
    t = next(t for t in trajs if t.verdict is not None and t.verdict.path_events)
    with Browser(height=1100) as browser:
        browser.open(f"{report.as_uri()}#traj={t.id}")
        assert browser.evaluate("document.getElementById('viewer').dataset.open") == t.id
        turns = browser.evaluate("[...document.querySelectorAll('#turns .turn')].map(n => n.className)")
        assert turns == [f"turn {turn.source}" for turn in t.turns]
        texts = browser.evaluate("[...document.querySelectorAll('#turns .msg pre')].map(p => p.textContent)")
        assert texts == [m.content for turn in t.turns for m in turn.messages]
        assert (
            browser.evaluate("document.querySelector('#verdict [data-field=\"digest\"]').textContent")
            == t.verdict.digest
        )
        events = browser.evaluate("document.querySelectorAll('#path-events tr.event').length")
        assert events == len(t.verdict.path_events)
        details = json.loads(browser.evaluate("document.getElementById('verdict-details').textContent"))
        assert details == t.verdict.details
        browser.screenshot(ARTIFACTS / "report_trajectory.png")
        # a link in the page opens another one
        other = trajs[-1]
        browser.evaluate(f"location.hash = '#traj={other.id}'")
        browser.wait_for(f"document.getElementById('viewer').dataset.open === '{other.id}'")
        browser.drain()
        assert browser.errors == []


def test_errors_in_a_page_are_caught(tmp_path: Path) -> None:
    """The harness itself: an uncaught exception and a console error are reported."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<html><body><script>console.error('bad thing'); document.body.dataset.ready = '1';"
        " setTimeout(() => { throw new Error('boom'); }, 0);</script></body></html>"
    )
    with Browser() as browser:
        browser.open(page.as_uri())
        browser.wait_for("true")
        import time

        time.sleep(0.3)
        browser.drain()
        assert any("bad thing" in e for e in browser.errors)
        assert any("boom" in e for e in browser.errors)
