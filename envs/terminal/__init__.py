"""The terminal family: shell tasks in a sandbox, judged from the final file system."""

from gymhub.envs.terminal.terminal_env import TerminalEnv

__all__ = ["TerminalEnv"]
