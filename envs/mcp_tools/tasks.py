"""Back-office tasks in the spirit of τ-bench, generated from the seeded database: refunds the
policy allows or forbids, address changes with a right or wrong zip code, restocks."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from gymhub.envs.mcp_tools.backoffice import TODAY, Customer, Item, Order, refund_allowed
from gymhub.tool_calls import scripted_tool_calls
from gymhub.types import Task

REASONS = ["arrived broken", "wrong colour", "never used", "changed my mind", "arrived late"]


_script = scripted_tool_calls


def build_backoffice_tasks(
    env_id: str, rows: dict[str, list[Any]], seed: int = 0, per_kind: int = 50
) -> list[Task]:
    rng = random.Random(f"backoffice-tasks:{seed}")
    customers = {c.id: c for c in rows["customers"]}
    orders = rows["orders"]
    items = rows["inventory"]
    specs: list[tuple[str, str, dict[str, Any], list[tuple[str, dict[str, Any]]], list[str]]] = []

    def refund(order: Order, allowed: bool, kind: str) -> None:
        c = customers[order.customer_id]
        reason = rng.choice(REASONS)
        prompt = (
            f"Customer {c.email} (zip code {c.zip_code}) asks for a full refund of order {order.id}: "
            f"'{reason}'. Handle the request according to the policy."
        )
        calls = [
            ("find_customer", {"email": c.email}),
            ("verify_identity", {"customer_id": c.id, "zip_code": c.zip_code}),
            ("get_order", {"order_id": order.id}),
        ]
        expected: dict[str, Any] = {"refunds": [], "orders": {}, "customers": {}, "inventory": {}}
        if allowed:
            calls.append(
                ("refund_order", {"order_id": order.id, "amount": order.total_cents / 100, "reason": reason})
            )
            expected["refunds"] = [[order.id, order.total_cents]]
            expected["orders"] = {str(order.id): "refunded"}
        specs.append((kind, prompt, expected, calls, ["find_customer", "get_order"]))

    def age(o: Order) -> int:
        return (TODAY - dt.date.fromisoformat(o.placed_on)).days

    pools = {
        "refund-allowed": [o for o in orders if refund_allowed(o, o.total_cents)],
        "refund-over-limit": [
            o for o in orders if o.status == "delivered" and age(o) <= 30 and o.total_cents > 20000
        ],
        "refund-too-old": [o for o in orders if o.status == "delivered" and age(o) > 30],
        "refund-not-delivered": [o for o in orders if o.status != "delivered"],
    }
    for kind, pool in pools.items():
        for order in rng.sample(pool, min(per_kind, len(pool))):
            refund(order, kind == "refund-allowed", kind)
    for c in rng.sample(list(customers.values()), 2 * per_kind):
        new = f"{rng.randint(1, 300)} {rng.choice(['Birch Rd', 'Canal St', 'Dune Ave', 'Fjord Way'])}"
        wrong_zip = rng.random() < 0.5
        given = f"{(int(c.zip_code) + 1) % 100000:05d}" if wrong_zip else c.zip_code
        prompt = (
            f"Customer {c.email} (zip code {given}) moved and asks to change their address to '{new}'. "
            f"Handle the request according to the policy."
        )
        calls = [
            ("find_customer", {"email": c.email}),
            ("verify_identity", {"customer_id": c.id, "zip_code": given}),
        ]
        expected = {"refunds": [], "orders": {}, "customers": {}, "inventory": {}}
        if not wrong_zip:
            calls.append(("update_address", {"customer_id": c.id, "address": new}))
            expected["customers"] = {str(c.id): new}
        specs.append(
            (
                "address-wrong-zip" if wrong_zip else "address-change",
                prompt,
                expected,
                calls,
                ["find_customer"],
            )
        )
    for item in rng.sample(items, min(per_kind, len(items))):
        units = rng.randint(5, 60)
        prompt = f"Restock {item.sku} by {units} units, if the policy allows it."
        calls = [("get_inventory", {"sku": item.sku})]
        expected = {"refunds": [], "orders": {}, "customers": {}, "inventory": {}}
        if not item.discontinued:
            calls.append(("restock", {"sku": item.sku, "quantity": units}))
            expected["inventory"] = {item.sku: item.quantity + units}
        specs.append(
            (
                "restock-discontinued" if item.discontinued else "restock",
                prompt,
                expected,
                calls,
                ["get_inventory"],
            )
        )
    tasks = []
    for kind, prompt, expected, calls, required in specs:
        full_prompt = prompt + " Read the policy with get_policy first; call finish when done."
        hidden = {
            "expected": expected,
            "solutions": {
                "reference": _script([("get_policy", {}), *calls, ("finish", {})]),
                "do-nothing": _script([("finish", {})]),
            },
        }
        task = Task.create(env_id, "train", full_prompt, hidden, {"kind": kind, "required": required})
        tasks.append(task.model_copy(update={"split": "eval" if int(task.id, 16) % 5 == 0 else "train"}))
    return tasks


__all__ = ["Customer", "Item", "build_backoffice_tasks"]
