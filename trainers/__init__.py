"""Trainers (installed as ``gymhub.trainers``): the GRPO trainer and trainer adapters."""
