"""``python -m gymhub``: the ``gymhub`` command."""

from gymhub._cli import main

main()
