"""Verifiers (installed as ``gymhub.verifiers``): protocol, checkers and RLVP rules."""

from gymhub.verifiers.base import BaseVerifier, Verifier, state_fingerprint

__all__ = ["BaseVerifier", "Verifier", "state_fingerprint"]
