"""Environment families (installed as ``gymhub.envs``)."""
