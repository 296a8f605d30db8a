"""gymhub: resettable, parallel, sandboxed environments for LLM agents, with verifiers.

The public surface: build envs (:func:`make`, :func:`register`, :func:`list_envs`), roll
them out (:func:`rollout`), check them (:func:`check_env`), the types, and the errors.
Heavy parts (torch, sandboxes, the store, HTTP) load only when used.
"""

from __future__ import annotations

from gymhub.env import Env, EnvReply
from gymhub.env_checker import check_env
from gymhub.errors import (
    BadAction,
    EpisodeOver,
    GymhubError,
    PolicyError,
    SandboxError,
    SandboxTimeout,
    StoreError,
    UnknownEnv,
    UnknownTask,
    VerifierError,
)
from gymhub.registry import EnvSpec, list_envs, make, register, spec, unregister
from gymhub.rollout_engine import rollout
from gymhub.types import (
    Message,
    PathEvent,
    RewardConfig,
    Task,
    ToolCall,
    ToolResult,
    Trajectory,
    TrajectoryGroup,
    Turn,
    Verdict,
)

__version__ = "0.1.0"


__all__ = [
    "BadAction",
    "Env",
    "EnvReply",
    "EnvSpec",
    "EpisodeOver",
    "GymhubError",
    "Message",
    "PathEvent",
    "PolicyError",
    "RewardConfig",
    "SandboxError",
    "SandboxTimeout",
    "StoreError",
    "Task",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "TrajectoryGroup",
    "Turn",
    "UnknownEnv",
    "UnknownTask",
    "Verdict",
    "VerifierError",
    "__version__",
    "check_env",
    "list_envs",
    "make",
    "register",
    "rollout",
    "spec",
    "unregister",
]
