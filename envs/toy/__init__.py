"""Toy environments: tiny, in-memory, learnable by a ~1M-parameter model."""

from gymhub.envs.toy.letters_env import LettersEnv

__all__ = ["LettersEnv"]
