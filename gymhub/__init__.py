"""gymhub: resettable, parallel, sandboxed environments for LLM agents, with verifiers.

The public surface: build envs (:func:`make`, :func:`register`, :func:`list_envs`), roll
them out (:func:`rollout`), check them (:func:`check_env`), read a trajectory's token-level
record (:func:`token_episode`), the types, and the errors. Besides these names, the public
modules are ``gymhub.types``, ``gymhub.errors``, ``gymhub.env``, ``gymhub.registry``, the
HTTP and MCP front ends (``gymhub.client``, ``gymhub.server``, ``gymhub.mcp_server``) and the
``policies``, ``store`` and ``report`` packages; modules named ``gymhub._*`` are internal and
may change without notice. Heavy parts (torch, sandboxes, the store, HTTP) load only when used.
"""

from __future__ import annotations

from gymhub._env_checker import check_env
from gymhub._rollout_engine import rollout
from gymhub._token_episodes import TokenEpisode, token_episode
from gymhub.env import Env, EnvReply
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
    "TokenEpisode",
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
    "token_episode",
    "unregister",
]
