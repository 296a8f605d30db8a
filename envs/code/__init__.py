"""The code family: write Python that passes hidden tests."""

from gymhub.envs.code.python_env import CodePythonEnv

__all__ = ["CodePythonEnv"]
