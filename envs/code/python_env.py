"""``code-python-v0``: write a Python function from a specification; hidden tests decide.

Single turn: the first valid action submits code — a ``submit`` tool call with ``code``, or a
message whose last ```python block (or whole text) is the code. A bad action (unknown tool,
malformed arguments, non-UTF-8, oversized) gets an error observation and another try, up to
``max_turns``. The verifier runs the hidden tests after the episode, in a fresh sandbox.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gymhub.env import Env, EnvReply
from gymhub.envs.code.tasks import build_code_tasks
from gymhub.envs.code.verifier import CodeUnitTestVerifier
from gymhub.types import Message, Task
from gymhub.verifiers.checkers.code_extraction import extract_code

SUBMIT_TOOL = {
    "type": "function",
    "function": {
        "name": "submit",
        "description": "Submit the complete Python source of your solution.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    },
}


class CodePythonEnv(Env):
    family: ClassVar[str] = "code"
    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 3
    system_prompt: ClassVar[str | None] = (
        "You are a careful Python programmer. Answer with one ```python code block."
    )

    def __init__(self, *, test_timeout: float = 5.0, sandbox: str = "local", **kwargs: Any) -> None:
        self.test_timeout = test_timeout
        self.sandbox_backend = sandbox
        self._code: str | None = None
        super().__init__(**kwargs)

    def load_tasks(self) -> list[Task]:
        return build_code_tasks(self.env_id, self.task_seed)

    def tools(self) -> list[dict[str, Any]]:
        return [SUBMIT_TOOL]

    def make_verifier(self) -> CodeUnitTestVerifier:
        return CodeUnitTestVerifier(self.rules, timeout=self.test_timeout, backend=self.sandbox_backend)

    async def start_episode(self, task: Task) -> None:
        self._code = None

    async def on_action(self, message: Message) -> EnvReply:
        self._code = extract_code(message)
        if message.tool_calls:
            call = message.tool_calls[0]
            if self._code is None:
                return EnvReply(
                    [
                        Message(
                            role="tool",
                            tool_call_id=call.id,
                            name=call.name,
                            content="error: submit needs a string argument 'code'",
                        )
                    ]
                )
            return EnvReply(
                [Message(role="tool", tool_call_id=call.id, name=call.name, content="submitted")], done=True
            )
        return EnvReply([Message(role="user", content="submitted")], done=True)

    async def final_state(self) -> dict[str, Any]:
        return {"code": self._code, "bad_action_steps": self.bad_action_steps}
