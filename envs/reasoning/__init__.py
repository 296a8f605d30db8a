"""Reasoning envs: every reasoning-gym dataset as ``rg-<name>-v0`` (see docs/envs/reasoning.md).

Importing this package imports no reasoning-gym: the registry reads the data-only table in
:mod:`gymhub.envs.reasoning.datasets`; the env class lives in :mod:`gymhub.envs.reasoning.env`.
"""
