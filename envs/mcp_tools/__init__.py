"""The MCP tools family: stateful applications behind real MCP servers."""

from gymhub.envs.mcp_tools.backoffice_env import BackofficeEnv
from gymhub.envs.mcp_tools.mcp_env import McpToolEnv

__all__ = ["BackofficeEnv", "McpToolEnv"]
