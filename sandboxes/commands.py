"""The ``gymhub sandbox`` commands: build the docker image, prune leftovers, check backends.

Registered in pyproject.toml's ``gymhub._cli`` entry-point group; :mod:`gymhub._cli` adds them
when they are run or listed. The docker SDK loads only inside the commands that need it.
"""

from __future__ import annotations

import typer
from rich.table import Table

from gymhub._cli import err, out

sandbox_app = typer.Typer(help="Sandbox backends.", no_args_is_help=True)


@sandbox_app.command("build-image")
def build_image_command(
    tag: str = typer.Option("gymhub-sandbox:bookworm", help="Image tag."),
    mirror: str | None = typer.Option(None, help="Debian mirror (default: the one apt uses)."),
    force: bool = typer.Option(False, help="Rebuild even if the recipe is unchanged."),
) -> None:
    """Build the docker backend's default image locally (debootstrap + docker import)."""
    from gymhub.sandboxes.image_build import build_image

    err.print("building the sandbox image (about 90 s) ...")
    out.print(build_image(tag, mirror=mirror, force=force))


@sandbox_app.command("prune")
def sandbox_prune_command() -> None:
    """Remove docker sandbox containers and sandbox cgroups left behind by killed processes."""
    from gymhub.sandboxes.docker_backend import prune_containers
    from gymhub.sandboxes.job_cgroup import prune_cgroups

    cgroups = prune_cgroups()
    out.print(f"removed {len(cgroups)} orphaned sandbox cgroup(s)")
    removed = prune_containers()
    out.print(f"removed {len(removed)} orphaned sandbox container(s) {' '.join(removed)}".rstrip())


@sandbox_app.command("check")
def sandbox_check_command() -> None:
    """Which sandbox backends work on this machine, and why not where they do not."""
    from gymhub.sandboxes.bwrap import bwrap_available
    from gymhub.sandboxes.docker_backend import docker_available
    from gymhub.sandboxes.local import local_available

    table = Table("backend", "status")
    for name, available in (
        ("local", local_available),
        ("local-unsafe", None),
        ("bwrap", bwrap_available),
        ("docker", docker_available),
    ):
        reason = available() if available else None
        status = "ok" if reason is None else f"unavailable: {reason}"
        table.add_row(name, "ok: no isolation at all" if name == "local-unsafe" else status)
    out.print(table)
