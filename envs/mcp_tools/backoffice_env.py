"""``mcp-tools-v0``: operate the back office over MCP, following its written policy.

Each env instance has its own SQLite file, restored from the seeded database at every reset
(SQLite's backup API, safe under the server's open connections). The verifier compares the
final database with the seeded one plus exactly the task's expected changes: a refund too many,
an address changed for the wrong customer, a deleted customer — any collateral change fails.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from gymhub.envs.mcp_tools.backoffice import (
    Base,
    add_requests,
    build_server,
    dump,
    refund_allowed,
    seed_database,
)
from gymhub.envs.mcp_tools.mcp_env import McpToolEnv
from gymhub.envs.mcp_tools.tasks import build_backoffice_tasks
from gymhub.types import Task
from gymhub.verifiers.base import BaseVerifier


@functools.lru_cache(maxsize=4)
def pristine_database(seed: int) -> str:
    """A seeded database file, built once per process; reset copies it. The tasks are generated
    from its rows, then each task's request is opened in it."""
    path = Path(tempfile.mkdtemp(prefix="gymhub-backoffice-")) / "seed.db"
    url = f"sqlite:///{path}"
    seed_database(url, seed)
    add_requests(url, [t.hidden["request"] for t in build_backoffice_tasks("", _seeded_rows(url), seed)])
    return str(path)


def _seeded_rows(url: str) -> dict[str, list[Any]]:
    """Customers, orders and inventory as detached ORM rows (what the task generator reads)."""
    engine = create_engine(url)
    with Session(engine, expire_on_commit=False) as session:
        rows = {name: list(session.scalars(select(_MODELS[name])).all()) for name in _TASK_SOURCES}
        session.expunge_all()
    engine.dispose()
    return rows


@functools.lru_cache(maxsize=4)
def pristine_dump(seed: int) -> dict[str, list[list[Any]]]:
    return dump(f"sqlite:///{pristine_database(seed)}")


def _normalise(tables: dict[str, list[list[Any]]]) -> dict[str, Any]:
    """Comparable state: refunds as (order, amount) pairs (reasons are free text, ids counters),
    requests as (id, status, reason code)."""
    return {
        "customers": sorted(tables["customers"]),
        "orders": sorted(tables["orders"]),
        "inventory": sorted(tables["inventory"]),
        "refunds": sorted([r[1], r[2]] for r in tables["refunds"]),
        "requests": sorted([r[0], r[4], r[5]] for r in tables["requests"]),
    }


def _expected(seed: int, changes: dict[str, Any]) -> dict[str, Any]:
    state = _normalise(pristine_dump(seed))
    state["refunds"] = sorted(state["refunds"] + [list(r) for r in changes["refunds"]])
    state["orders"] = [
        [o[0], o[1], o[2], changes["orders"].get(str(o[0]), o[3]), o[4]] for o in state["orders"]
    ]
    state["customers"] = [
        [c[0], c[1], c[2], c[3], changes["customers"].get(str(c[0]), c[4])] for c in state["customers"]
    ]
    state["inventory"] = [
        [i[0], i[1], changes["inventory"].get(i[0], i[2]), i[3]] for i in state["inventory"]
    ]
    declined = changes.get("requests", {})
    state["requests"] = [
        [r[0], "declined", declined[r[0]]] if r[0] in declined else r for r in state["requests"]
    ]
    return state


class BackofficeVerifier(BaseVerifier):
    """Outcome 1 iff the final database is the seeded one plus exactly the expected changes."""

    id = "backoffice-db-state"
    version = "1.1.0"

    def __init__(self, rules: dict[str, Any] | None = None, *, seed: int = 0) -> None:
        super().__init__(rules)
        self.seed = seed

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        got = _normalise(final_state["tables"])
        want = _expected(self.seed, task.hidden["expected"])
        differing = sorted(t for t in want if got[t] != want[t])
        orders = {o[0]: o for o in pristine_dump(self.seed)["orders"]}
        violations = []
        for order_id, amount in got["refunds"]:
            o = orders.get(order_id)
            if o is None or not refund_allowed(_OrderView(o), amount):
                violations.append(f"refund of {amount / 100:.2f} on order {order_id}")
        if len(got["customers"]) < len(want["customers"]):
            violations.append("a customer was deleted")
        return (0.0 if differing else 1.0), {
            "differing_tables": differing,
            "policy_violations": violations,
            "bad_action_steps": list(final_state.get("bad_action_steps", [])),
        }


class _OrderView:
    def __init__(self, row: list[Any]) -> None:
        self.id, self.customer_id, self.total_cents, self.status, self.placed_on = row


class BackofficeEnv(McpToolEnv):
    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 15
    system_prompt: ClassVar[str | None] = "You are a back-office agent. Follow the written policy exactly."

    def __init__(self, **kwargs: Any) -> None:
        self._db = Path(tempfile.mkdtemp(prefix="gymhub-backoffice-env-")) / "app.db"
        super().__init__(**kwargs)
        self._restore()

    def load_tasks(self) -> list[Task]:
        rows = _seeded_rows(f"sqlite:///{pristine_database(self.task_seed)}")
        return build_backoffice_tasks(self.env_id, rows, self.task_seed)

    def make_server(self) -> Any:
        return build_server(f"sqlite:///{self._db}")

    def make_verifier(self) -> BackofficeVerifier:
        return BackofficeVerifier(self.rules, seed=self.task_seed)

    def _restore(self) -> None:
        source = sqlite3.connect(pristine_database(self.task_seed))
        target = sqlite3.connect(self._db)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()

    async def reset_state(self, task: Any) -> None:
        await asyncio.to_thread(self._restore)

    async def final_state(self) -> dict[str, Any]:
        tables = await asyncio.to_thread(dump, f"sqlite:///{self._db}")
        return {"tables": tables, "bad_action_steps": self.bad_action_steps}


def _models() -> dict[str, Any]:
    from gymhub.envs.mcp_tools.backoffice import Customer, Item, Order, Refund, Request

    return {"customers": Customer, "orders": Order, "refunds": Refund, "inventory": Item, "requests": Request}


_MODELS = _models()
_TASK_SOURCES = ("customers", "orders", "inventory")
__all__ = ["BackofficeEnv", "BackofficeVerifier", "Base"]
