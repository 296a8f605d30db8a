"""Verifiers (installed as ``gymhub.verifiers``): protocol, checkers and RLVP rules."""

from gymhub.env import Verifier
from gymhub.verifiers.base import BaseVerifier, state_fingerprint

__all__ = ["BaseVerifier", "Verifier", "state_fingerprint"]
