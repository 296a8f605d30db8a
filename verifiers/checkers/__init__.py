"""Reusable checkers that env verifiers compose."""
