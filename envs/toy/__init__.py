"""Toy environments: tiny, in-memory, learnable by a ~1M-parameter model."""

from gymhub.envs.toy.json_answer_env import JsonAnswerEnv
from gymhub.envs.toy.letters_env import LettersEnv

__all__ = ["JsonAnswerEnv", "LettersEnv"]
