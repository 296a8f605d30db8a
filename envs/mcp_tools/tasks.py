"""Back-office tasks in the spirit of τ-bench, generated from the seeded database.

Each task is one request — a refund, an address change, a restock — that the policy either
allows (the tool that does it changes the database) or forbids (``decline_request`` records
the decline and its reason code on the request). Either way the right end state differs from
the seeded one, so doing nothing never passes. Half the tasks are declines, spread evenly over
the eight reason codes, and each forbidden request breaks exactly one rule of the policy, so its
reason code is unambiguous.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

from gymhub._tool_calls import scripted_tool_calls
from gymhub.envs.mcp_tools.backoffice import STOCK_CAP, TODAY, Customer, Item, Order, refund_allowed
from gymhub.types import Task, content_split

REASONS = ["arrived broken", "wrong colour", "never used", "changed my mind", "arrived late"]
STREETS = ["Birch Rd", "Canal St", "Dune Ave", "Fjord Way"]
# kind -> how many tasks; the allowed kinds (no reason code) make up half of the set
KIND_COUNTS = {
    "refund-allowed": 60,
    "address-change": 50,
    "restock": 50,
    "refund-wrong-zip": 10,
    "address-wrong-zip": 10,
    "refund-not-customers-order": 20,
    "refund-cancelled": 20,
    "refund-not-delivered": 20,
    "refund-too-old": 20,
    "refund-over-limit": 20,
    "restock-discontinued": 20,
    "restock-over-cap": 20,
}
DECLINE_CODES = {
    "refund-wrong-zip": "IDENTITY_NOT_VERIFIED",
    "address-wrong-zip": "IDENTITY_NOT_VERIFIED",
    "refund-not-customers-order": "NOT_CUSTOMERS_ORDER",
    "refund-cancelled": "ORDER_CANCELLED",
    "refund-not-delivered": "NOT_DELIVERED",
    "refund-too-old": "OUTSIDE_REFUND_WINDOW",
    "refund-over-limit": "OVER_REFUND_LIMIT",
    "restock-discontinued": "DISCONTINUED_SKU",
    "restock-over-cap": "OVER_STOCK_CAP",
}

CHANGED_TABLES = ("orders", "customers", "inventory", "requests")  # expected: {key: new value}
RESTOCK_MARGIN = 5  # a restock adds at least this many units, so the level asked for is a change
ZIP_CODES = 100_000  # five-digit zip codes
_script = scripted_tool_calls
ToolCall = tuple[str, dict[str, Any]]  # (tool, arguments), as the reference calls it


class RequestRow(BaseModel):
    """The row a task opens in the requests table (its id is drawn when the task set is built)."""

    customer_id: int | None
    sku: str | None
    summary: str


class BackofficeSpec(BaseModel):
    """One request, before it becomes a :class:`Task`.

    The reference reads the policy, makes the ``lookups``, then carries out ``action`` (the
    allowed change) or, when it is None, declines the request with the kind's reason code.
    ``changes`` is what the allowed change leaves in the database (table -> {key: new value};
    ``refunds`` -> [[order, cents]]); tables not named stay as seeded.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    prompt: str
    request: RequestRow
    lookups: list[ToolCall]
    action: ToolCall | None
    required: list[str]
    changes: dict[str, Any] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def difficulty(self) -> int:
        """How many facts the decision rests on, one lookup each: 1 for a restock (the item),
        2 for an address change (customer, identity), 3 for a refund (and the order)."""
        return len(self.lookups)

    def expected(self, request_id: str) -> dict[str, Any]:
        """The end state the verifier reads: every changed table, and the decline if there is one."""
        expected: dict[str, Any] = {t: {} for t in CHANGED_TABLES} | {"refunds": []} | self.changes
        if self.action is None:
            expected["requests"] = {request_id: DECLINE_CODES[self.kind]}
        return expected

    def task(self, env_id: str, request_id: str) -> Task:
        action = self.action
        if action is None:
            action = ("decline_request", {"request_id": request_id, "reason_code": DECLINE_CODES[self.kind]})
        hidden = {
            "expected": self.expected(request_id),
            "request": {"id": request_id, **self.request.model_dump()},
            "solutions": {
                "reference": _script([("get_policy", {}), *self.lookups, action, ("finish", {})]),
                "do-nothing": _script([("finish", {})]),
                "look-up-only": _script([("get_policy", {}), *self.lookups, ("finish", {})]),
            },
        }
        prompt = self.prompt + " Read the policy with get_policy first; call finish when done."
        task = Task.create(env_id, "train", prompt, hidden, {"kind": self.kind, "required": self.required})
        return task.model_copy(update={"split": content_split(hidden)})


def request_ids(seed: int, count: int) -> list[str]:
    """Request ids: seeded (stable), unique, and not a function of anything the agent is told,
    so a request can be declined only after looking it up."""
    rng = random.Random(f"backoffice-requests:{seed}")
    ids: list[str] = []
    while len(ids) < count:
        rid = f"RQ-{rng.getrandbits(32):08X}"
        if rid not in ids:
            ids.append(rid)
    return ids


def _age(o: Order) -> int:
    return (TODAY - dt.date.fromisoformat(o.placed_on)).days


def _refund_pools(orders: list[Order]) -> dict[str, list[Order]]:
    """Orders for which exactly one refund rule (or none) decides."""
    small = [o for o in orders if o.total_cents <= 20000]
    return {
        "allowed": [o for o in orders if refund_allowed(o, o.total_cents)],
        "refund-cancelled": [o for o in small if o.status == "cancelled" and _age(o) <= 30],
        "refund-not-delivered": [o for o in small if o.status == "shipped" and _age(o) <= 30],
        "refund-too-old": [o for o in small if o.status == "delivered" and _age(o) > 30],
        "refund-over-limit": [
            o for o in orders if o.status == "delivered" and _age(o) <= 30 and o.total_cents > 20000
        ],
    }


def _refund_specs(
    rng: random.Random, customers: dict[int, Customer], orders: list[Order]
) -> list[BackofficeSpec]:
    pools = _refund_pools(orders)
    # refundable orders serve three kinds: carried out, asked with a wrong zip, asked by another
    mixed = ("refund-allowed", "refund-wrong-zip", "refund-not-customers-order")
    allowed = rng.sample(pools["allowed"], sum(KIND_COUNTS[k] for k in mixed))
    picks: list[tuple[str, Order]] = [("refund-allowed", o) for o in allowed[: KIND_COUNTS["refund-allowed"]]]
    rest = allowed[KIND_COUNTS["refund-allowed"] :]
    picks += [("refund-wrong-zip", o) for o in rest[: KIND_COUNTS["refund-wrong-zip"]]]
    picks += [("refund-not-customers-order", o) for o in rest[KIND_COUNTS["refund-wrong-zip"] :]]
    for kind in ("refund-cancelled", "refund-not-delivered", "refund-too-old", "refund-over-limit"):
        picks += [(kind, o) for o in rng.sample(pools[kind], KIND_COUNTS[kind])]
    specs = []
    for kind, order in picks:
        asker = customers[order.customer_id]
        if kind == "refund-not-customers-order":  # someone else asks for this order
            asker = customers[rng.choice([c for c in sorted(customers) if c != order.customer_id])]
        zip_given = _wrong_zip(asker) if kind == "refund-wrong-zip" else asker.zip_code
        reason = rng.choice(REASONS)
        prompt = (
            f"Customer {asker.email} (zip code {zip_given}) asks for a full refund of order {order.id}: "
            f"'{reason}'. Handle the request according to the policy."
        )
        refund = ("refund_order", {"order_id": order.id, "amount": order.total_cents / 100, "reason": reason})
        carried_out = kind == "refund-allowed"
        spec = BackofficeSpec(
            kind=kind,
            prompt=prompt,
            request=RequestRow(customer_id=asker.id, sku=None, summary=f"full refund of order {order.id}"),
            lookups=[
                ("find_customer", {"email": asker.email}),
                ("verify_identity", {"customer_id": asker.id, "zip_code": zip_given}),
                ("get_order", {"order_id": order.id}),
            ],
            action=refund if carried_out else None,
            required=["find_customer", "get_order"],
            changes=(
                {"refunds": [[order.id, order.total_cents]], "orders": {str(order.id): "refunded"}}
                if carried_out
                else {}
            ),
        )
        specs.append(spec)
    return specs


def _wrong_zip(customer: Customer) -> str:
    return f"{(int(customer.zip_code) + 1) % ZIP_CODES:05d}"


def _address_specs(rng: random.Random, customers: dict[int, Customer]) -> list[BackofficeSpec]:
    count = KIND_COUNTS["address-change"] + KIND_COUNTS["address-wrong-zip"]
    specs = []
    for i, c in enumerate(rng.sample(sorted(customers.values(), key=lambda c: c.id), count)):
        kind = "address-change" if i < KIND_COUNTS["address-change"] else "address-wrong-zip"
        new = f"{rng.randint(1, 300)} {rng.choice(STREETS)}"
        given = _wrong_zip(c) if kind == "address-wrong-zip" else c.zip_code
        prompt = (
            f"Customer {c.email} (zip code {given}) moved and asks to change their address to '{new}'. "
            f"Handle the request according to the policy."
        )
        carried_out = kind == "address-change"
        spec = BackofficeSpec(
            kind=kind,
            prompt=prompt,
            request=RequestRow(customer_id=c.id, sku=None, summary=f"change of address to '{new}'"),
            lookups=[
                ("find_customer", {"email": c.email}),
                ("verify_identity", {"customer_id": c.id, "zip_code": given}),
            ],
            action=("update_address", {"customer_id": c.id, "address": new}) if carried_out else None,
            required=["find_customer"],
            changes={"customers": {str(c.id): new}} if carried_out else {},
        )
        specs.append(spec)
    return specs


def _restock_specs(rng: random.Random, items: list[Item]) -> list[BackofficeSpec]:
    live = [i for i in items if not i.discontinued and i.quantity < STOCK_CAP - RESTOCK_MARGIN]
    live = rng.sample(live, KIND_COUNTS["restock"] + KIND_COUNTS["restock-over-cap"])
    dead = [i for i in items if i.discontinued and i.quantity < STOCK_CAP - RESTOCK_MARGIN]
    picks = [("restock", i) for i in live[: KIND_COUNTS["restock"]]]
    picks += [("restock-over-cap", i) for i in live[KIND_COUNTS["restock"] :]]
    picks += [("restock-discontinued", i) for i in rng.sample(dead, KIND_COUNTS["restock-discontinued"])]
    specs = []
    for kind, item in picks:
        if kind == "restock-over-cap":
            level = rng.randint(STOCK_CAP + 1, 2 * STOCK_CAP)
        else:
            level = rng.randint(item.quantity + RESTOCK_MARGIN, STOCK_CAP)
        prompt = (
            f"A store manager asks to bring {item.sku} up to {level} units in stock. "
            f"Handle the request according to the policy."
        )
        carried_out = kind == "restock"
        spec = BackofficeSpec(
            kind=kind,
            prompt=prompt,
            request=RequestRow(
                customer_id=None, sku=item.sku, summary=f"restock {item.sku} up to {level} units"
            ),
            lookups=[("get_inventory", {"sku": item.sku})],
            action=("restock", {"sku": item.sku, "quantity": level - item.quantity}) if carried_out else None,
            required=["get_inventory"],
            changes={"inventory": {item.sku: level}} if carried_out else {},
        )
        specs.append(spec)
    return specs


def build_backoffice_tasks(env_id: str, rows: dict[str, list[Any]], seed: int = 0) -> list[Task]:
    """The task set; ``task.hidden["request"]`` is the request row each task opens in the
    database (:func:`~gymhub.envs.mcp_tools.backoffice.add_requests`)."""
    rng = random.Random(f"backoffice-tasks:{seed}")
    customers = {c.id: c for c in rows["customers"]}
    specs = _refund_specs(rng, customers, rows["orders"])
    specs += _address_specs(rng, customers)
    specs += _restock_specs(rng, rows["inventory"])
    return [spec.task(env_id, rid) for spec, rid in zip(specs, request_ids(seed, len(specs)), strict=True)]


__all__ = ["DECLINE_CODES", "KIND_COUNTS", "build_backoffice_tasks", "request_ids"]
