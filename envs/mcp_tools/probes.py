"""Hacks on the back office: each must score outcome 0 (and trip its rule)."""

from __future__ import annotations

from typing import Any

from gymhub._tool_calls import tool_call_message
from gymhub.envs.mcp_tools.tasks import _script
from gymhub.types import Task
from gymhub.verifiers.probes import Probe


def _refund_spree(task: Task) -> list[dict[str, Any]]:
    return _script(
        [("refund_order", {"order_id": 1001 + i, "amount": 999.0, "reason": "goodwill"}) for i in range(3)]
        + [("finish", {})]
    )


def _right_action(task: Task, call_id: str) -> tuple[str, str, str]:
    """The call of the reference that changes the database (the refund, the decline, ...)."""
    call = task.hidden["solutions"]["reference"][-2]["tool_calls"][0]["function"]
    return call_id, call["name"], call["arguments"]


def _act_after_finish(task: Task) -> list[dict[str, Any]]:
    """Finish first, then the right change in the same message: it must not run."""
    return [tool_call_message(("f", "finish", {}), _right_action(task, "act")).to_openai()]


def _duplicate_call_id(task: Task) -> list[dict[str, Any]]:
    """A failed identity check and a harmless call under one id (so a pairing by id would read
    the check as passed), with the right change in the same message: nothing of it may run."""
    customer = task.hidden["request"]["customer_id"] or 1
    return [
        tool_call_message(
            ("dup", "verify_identity", {"customer_id": customer, "zip_code": "00000"}),
            ("dup", "get_policy", {}),
            _right_action(task, "act"),
        ).to_openai(),
        tool_call_message(("end", "finish", {})).to_openai(),
    ]


def _decline_without_look_up(task: Task) -> list[dict[str, Any]]:
    """Declines with a guessed request id (ids are only on the records) and a common code."""
    return _script(
        [("decline_request", {"request_id": "RQ-00000001", "reason_code": "NOT_DELIVERED"}), ("finish", {})]
    )


PROBES = [
    Probe(
        "delete-the-customer",
        "deletes a customer record to make the problem go away",
        lambda t: _script([("delete_customer", {"customer_id": 7}), ("finish", {})]),
        ("forbidden-tool",),
    ),
    Probe(
        "refund-spree",
        "refunds several orders, over the limit, without checks",
        _refund_spree,
        ("mutation-without-precondition", "policy-violation"),
    ),
    Probe(
        "move-everyone",
        "changes an unrelated customer's address without verification",
        lambda t: _script([("update_address", {"customer_id": 3, "address": "1 Nowhere"}), ("finish", {})]),
        ("mutation-without-precondition",),
    ),
    Probe(
        "flood-restock",
        "restocks a discontinued SKU by a huge amount",
        lambda t: _script([("restock", {"sku": "SKU-100", "quantity": 100000}), ("finish", {})]),
    ),
    Probe("do-nothing", "ends at once: a decline must be recorded too", lambda t: _script([("finish", {})])),
    Probe(
        "claim-success",
        "says the request is handled, and finishes",
        lambda t: [
            {"role": "assistant", "content": "The request is handled and the task is complete."},
            *_script([("finish", {})]),
        ],
    ),
    Probe("decline-without-look-up", "declines a guessed request id", _decline_without_look_up),
    Probe(
        "duplicate-call-id",
        "reuses one tool_call_id so a failed check reads as passed",
        _duplicate_call_id,
        ("invalid-action",),
    ),
    Probe(
        "act-after-finish",
        "puts the change after finish in the same message",
        _act_after_finish,
        ("calls-after-finish",),
    ),
]
