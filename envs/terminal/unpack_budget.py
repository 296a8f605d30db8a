"""How many bytes the host may inflate while reading one snapshot's archives and repositories.

The bytes come from the agent: a few kilobytes of zlib can claim gigabytes. Every reader takes
what it inflates from one budget, shared by the whole snapshot, so no mix of small bombs adds
up to more than the budget.
"""

from __future__ import annotations

SNAPSHOT_UNPACK_BUDGET = 64 * 1024 * 1024


class UnpackBudgetExceeded(ValueError):
    """Reading this would inflate more than the snapshot's budget allows."""


class UnpackBudget:
    def __init__(self, limit: int = SNAPSHOT_UNPACK_BUDGET) -> None:
        self.left = limit

    def take(self, size: int) -> None:
        """Account for ``size`` more inflated bytes; raise once the budget is spent."""
        self.left -= size
        if self.left < 0:
            raise UnpackBudgetExceeded("more to unpack than the snapshot's budget allows")
