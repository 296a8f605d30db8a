"""The gymhub error hierarchy: one base, a few precise subclasses, each message saying what to do."""

from __future__ import annotations


class GymhubError(Exception):
    """Base class of every error gymhub raises on purpose."""


class UnknownEnv(GymhubError, KeyError):
    """An environment id that no registry source knows."""

    def __init__(self, env_id: str, close: list[str] | None = None) -> None:
        self.env_id = env_id
        self.close = close or []
        hint = f" Did you mean: {', '.join(self.close)}?" if self.close else ""
        super().__init__(f"unknown environment {env_id!r}.{hint} Run `gymhub list` to see all ids.")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class UnknownTask(GymhubError, KeyError):
    """A task id that is not in the environment's task set."""

    def __str__(self) -> str:
        return str(self.args[0])


class EpisodeOver(GymhubError, RuntimeError):
    """`step` was called after the episode terminated or was truncated."""


class BadAction(GymhubError, ValueError):
    """An action the environment cannot interpret (raised internally, answered as an observation)."""


class SandboxError(GymhubError, RuntimeError):
    """The sandbox could not run a job (it died, could not start, or returned garbage)."""


class SandboxTimeout(SandboxError):
    """A job ran past its time limit and was killed inside the sandbox."""


class VerifierError(GymhubError, RuntimeError):
    """A verifier failed to produce a verdict."""


class PolicyError(GymhubError, RuntimeError):
    """A policy failed to produce an action (after its retries)."""


class StoreError(GymhubError, RuntimeError):
    """The trajectory store cannot do what was asked (unknown run, bad URL)."""


class EnvContractError(GymhubError, AssertionError):
    """An env broke the contract that :func:`gymhub.check_env` checks; lists every problem."""
