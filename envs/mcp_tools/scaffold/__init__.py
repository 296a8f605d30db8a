"""What `gymhub new-env NAME --family mcp` writes: ``env.py`` becomes the new package's
``__init__.py`` and ``tasks.json`` its task file, with the name
``scaffolded-env`` (and package ``scaffolded_env``) replaced.
Found through the ``gymhub.scaffolds`` entry point (:mod:`gymhub._scaffold`)."""
