"""The search family: answer questions about a fictional encyclopedia with a local search engine."""

from gymhub.envs.search.search_env import SearchEnv

__all__ = ["SearchEnv"]
