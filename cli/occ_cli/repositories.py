"""``--repo owner/name[:profile]``: the repository bindings of ``occ agents create|update``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from occ_cli.client import CliError, Exit

PROFILES = ("git-read", "git-write", "git-full")
DEFAULT_PROFILE = "git-read"  # the least access; a binding always names its profile to the API

RepoOption = Annotated[list[str] | None, typer.Option(
    "--repo", help="A GitHub repository the Agent may reach, owner/name[:profile] (repeatable, up to 16; profile "
    f"{', '.join(PROFILES)}; default {DEFAULT_PROFILE}). See `occ agents repositories` for the choices.")]


def repository_bindings(values: list[str], *, clear: bool = False) -> list[dict[str, Any]]:
    """The API's ``repositoryBindings`` of ``--repo`` values (``clear``: ``--no-repos``, none)."""
    if values and clear:
        raise CliError("Pass --repo or --no-repos, not both.", Exit.USAGE, code="USAGE")
    bindings = []
    for value in values:
        ref, _, profile = value.strip().partition(":")
        profile = profile or DEFAULT_PROFILE
        if ref.count("/") != 1 or not all(ref.split("/")) or profile not in PROFILES:
            raise CliError(f"--repo takes owner/name[:profile] with profile one of {', '.join(PROFILES)}, "
                           f"not {value!r}.", Exit.USAGE, code="USAGE")
        bindings.append({"repositoryRef": ref, "profile": profile})
    return bindings
