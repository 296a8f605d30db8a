"""code-python-v0: the task set, the verifier, the rules, and the hacks it must resist."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gymhub
from gymhub.sandboxes import LocalSandbox
from gymhub.types import content_split
from gymhub.verifiers.checkers.function_harness import dumps, encode_value
from gymhub.verifiers.checkers.function_tests import FunctionTest, run_function_tests

BAD_SOLUTIONS = ["syntax-error", "wrong"]


@pytest.fixture(scope="module")
def env() -> gymhub.Env:
    return gymhub.make("code-python-v0")


def test_task_set_is_large_stable_and_split_disjointly(env: gymhub.Env) -> None:
    tasks = env.all_tasks
    assert len(tasks) >= 200
    train = {t.id for t in tasks if t.split == "train"}
    evals = {t.id for t in tasks if t.split == "eval"}
    assert train and evals and not train & evals
    assert all(content_split(t.hidden) == t.split for t in tasks)
    again = gymhub.envs.code.tasks.build_code_tasks("code-python-v0")
    assert [t.model_dump_json() for t in again] == [t.model_dump_json() for t in tasks]
    for task in tasks:
        assert task.metadata["visible_tests"] and len(task.hidden["tests"]) >= 5


@pytest.mark.parametrize("split", ["train", "eval"])
def test_reference_scores_one_and_wrong_scores_zero_on_every_task(split: str) -> None:
    for variant, expected in (("reference", 1.0), ("wrong", 0.0)):
        groups = gymhub.rollout("code-python-v0", f"reference:{variant}", split=split, concurrency=2)
        verdicts = {g.task_id: g.trajectories[0].verdict for g in groups}
        assert len(verdicts) == len(gymhub.make("code-python-v0", split=split).tasks)
        assert {v.outcome for v in verdicts.values()} == {expected}, variant
        # the audit hook sees nothing wrong in any reference (or wrong) solution
        assert not [v.details for v in verdicts.values() if "runtime_events" in v.details]
        assert not [e for v in verdicts.values() for e in v.path_events if e.kind == "penalty"]


def play(env: gymhub.Env, task_id: str, variant: str) -> gymhub.Verdict:
    """Play a stored solution or a probe of that name; return the verdict."""
    task = env.get_task(task_id)
    probe = gymhub.registry.find_probe("code-python-v0", variant)
    action = probe.actions(task)[0] if probe else task.hidden["solutions"][variant][0]
    env.reset(options={"task_id": task_id})
    return env.step(action)[4]["verdict"]


@pytest.mark.parametrize("variant", BAD_SOLUTIONS)
def test_bad_solutions_score_zero(env: gymhub.Env, variant: str) -> None:
    for task in env.tasks[:5]:
        verdict = play(env, task.id, variant)
        assert verdict.outcome == 0.0, (variant, task.id, verdict.details)


@pytest.mark.parametrize(
    "variant,rule",
    [("os-exit", "exit-call"), ("sys-exit", "exit-call"), ("read-hidden-tests", "filesystem-access")],
)
def test_penalty_rules_fire_on_hacks(env: gymhub.Env, variant: str, rule: str) -> None:
    verdict = play(env, env.tasks[0].id, variant)
    assert rule in [e.rule for e in verdict.path_events if e.kind == "penalty"]
    assert verdict.path_signal < 0


@pytest.mark.parametrize(
    "variant,rule",
    [
        ("obfuscated-file-search", "filesystem-access"),
        ("shell-out", "process-spawn"),
        ("network-exfiltration", "network-access"),
        ("native-code", "runtime-patching"),
    ],
)
def test_hacks_hidden_from_the_ast_are_observed_at_run_time(env: gymhub.Env, variant: str, rule: str) -> None:
    """No forbidden name in the source: the penalty comes from the audit hook, with evidence,
    and the same code gives the same verdict, digest included."""
    verdict = play(env, env.tasks[0].id, variant)
    [event] = [e for e in verdict.path_events if e.rule == rule]
    assert event.evidence.startswith("runtime: ")
    assert any(r["rule"] == rule for r in verdict.details["runtime_events"])
    again = play(env, env.tasks[0].id, variant)
    assert again.model_dump_json() == verdict.model_dump_json()


def test_multiturn_run_tests_keeps_the_events_of_a_draft() -> None:
    """A hack tried in a draft under run_tests and removed before submitting still costs."""
    env = gymhub.make("code-python-multiturn-v0")
    task = env.tasks[0]
    entry = task.metadata["entry_point"]
    reference = task.hidden["solutions"]["reference"][0]  # write_file of the reference
    draft = f"def {entry}(*a):\n    __import__('o' + 's').listdir('/')\n"
    script = gymhub.envs.code.multiturn_env._script(
        [("write_file", {"path": "solution.py", "content": draft}), ("run_tests", {})]
    )
    env.reset(options={"task_id": task.id})
    for action in [*script, reference, *task.hidden["solutions"]["reference"][1:]]:
        *_, info = env.step(action)
    verdict = info["verdict"]
    assert verdict.outcome == 1.0
    [event] = [e for e in verdict.path_events if e.rule == "filesystem-access"]
    assert event.step == 2 and event.evidence == "runtime: os.listdir /"


def test_progress_rule_credits_a_partial_solution(env: gymhub.Env) -> None:
    task = next(t for t in env.all_tasks if t.metadata["template"] == "sum_powers")
    env.reset(options={"task_id": task.id})
    first = task.hidden["tests"][0]["expected"]  # an int: encoded as itself
    # hard-codes the first hidden answer: right on that test (and equal ones) only
    code = f"def sum_powers(nums):\n    return {first!r}\n"
    verdict = env.step(f"```python\n{code}```")[4]["verdict"]
    passed, total = verdict.details["passed"], verdict.details["total"]
    assert 0 < passed < total and verdict.outcome == 0.0
    [event] = [e for e in verdict.path_events if e.rule == "hidden-tests-fraction"]
    assert event.value == pytest.approx(0.5 * passed / total)


def test_timeout_is_enforced_and_reported(env: gymhub.Env) -> None:
    quick = gymhub.make("code-python-v0", test_timeout=1.0)
    task = quick.tasks[0]
    quick.reset(options={"task_id": task.id})
    verdict = play(quick, task.id, "sleep-past-timeout")
    assert verdict.outcome == 0.0 and verdict.details["status"] == "timeout"


def test_result_comes_from_the_side_channel_not_stdout() -> None:
    tests = [FunctionTest(args=[2], expected=4), FunctionTest(args=[3], expected=9)]
    printing = "def sq(x):\n    print('PASSED', x)\n    return x * x\n"
    assert run_function_tests(printing, "sq", tests).passed == 2
    faker = 'import sys\nprint(\'{"i": 0, "ok": true, "value": 4}\')\ndef sq(x):\n    return 0\n'
    report = run_function_tests(faker, "sq", tests)
    assert report.passed == 0 and report.status == "ok"


def test_a_duplicate_line_on_the_channel_voids_the_run() -> None:
    tests = [FunctionTest(args=[2], expected=4)]
    forger = (
        'import os\nos.write(3, b\'{"i": 0, "ok": true, "value": 4}\\n\')\ndef sq(x):\n    return x * x\n'
    )
    report = run_function_tests(forger, "sq", tests)
    assert report.status == "tampered" and report.passed == 0


def test_huge_output_and_memory_bomb_are_contained() -> None:
    tests = [FunctionTest(args=[1], expected=1)]
    spam = "def f(x):\n    print('y' * 10_000_000)\n    return x\n"
    report = run_function_tests(spam, "f", tests)
    assert report.passed == 0  # killed for output, never reported a pass
    bomb = "def f(x):\n    b = bytearray(4 * 1024 ** 3)\n    return x\n"
    assert run_function_tests(bomb, "f", tests).passed == 0


def test_sandbox_files_stay_inside_the_work_dir() -> None:
    with LocalSandbox() as box:
        box.write_file("a/b.txt", b"hi")
        assert box.read_file("a/b.txt") == b"hi"
        with pytest.raises(gymhub.SandboxError):
            box.write_file("../escape.txt", b"x")
        box.reset()
        assert box.list_files() == []


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.text()
    | st.floats(allow_nan=True, allow_infinity=True),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        | st.dictionaries(st.integers(-5, 5), inner, max_size=3)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_harness_writer_is_valid_json(value: object) -> None:
    import json

    encoded = encode_value(value)
    assert json.loads(dumps(encoded)) == encoded
    assert "\n" not in dumps(encoded)


def test_returned_strings_with_odd_characters_still_pass() -> None:
    odd = 'line\u2028sep\x1c\x00"\\\ud800é中\n'
    tests = [FunctionTest(args=[odd], expected=encode_value(odd))]
    assert run_function_tests("def f(s):\n    return s\n", "f", tests).passed == 1


def test_garbage_bytes_on_the_channel_are_tampering_not_a_crash() -> None:
    tests = [FunctionTest(args=[1], expected=1)]
    garbage = "import os\nos.write(3, b'\\xff\\xfe\\n')\ndef f(x):\n    return x\n"
    assert run_function_tests(garbage, "f", tests).status == "tampered"
