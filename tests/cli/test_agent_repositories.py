"""``occ agents repositories`` and ``--repo owner/name[:profile]`` on ``occ agents create|update``,
as a process against OCC's real web stack on loopback, with the GitHub App driver speaking HTTP
to a loopback fake of GitHub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from occ_cli.client import Exit

from occ.models import Agent, Namespace
from tests.conftest import mark_namespace_ready
from tests.factories import ConfigurationFactory
from tests.fakes.fake_github import FakeGitHub, serving

OCC = Path(sys.executable).with_name("occ")
CLI_SOURCE = Path(__file__).resolve().parents[2] / "cli"  # this checkout's CLI, whichever one is installed


@pytest.fixture
def github(settings) -> Iterator[FakeGitHub]:
    yield from serving(settings)


@pytest.fixture
def occ(live_server, bootstrap):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1",
               PYTHONPATH=str(CLI_SOURCE))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCC), *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    return run


def data(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.django_db(transaction=True)
def test_list_the_choices_then_create_and_update_with_repo(occ, github):
    listed = occ("agents", "repositories", "-n", "default")
    assert listed.returncode == 0, listed.stderr
    assert "acme/widgets" in listed.stdout
    assert "git-read git-write git-full" in listed.stdout
    ConfigurationFactory(namespace=Namespace.objects.get(name="default"), name="cli-cfg")

    created = data(occ("agents", "create", "coder", "-n", "default", "-c", "cli-cfg", "--no-grant",
                       "--repo", "acme/widgets", "--repo", "Acme/Docs:git-full", "--json"))
    assert created["repositoryBindings"] == [{"repositoryRef": "acme/widgets", "profile": "git-read"},
                                             {"repositoryRef": "acme/docs", "profile": "git-full"}]
    for_agent = data(occ("agents", "repositories", "-n", "default", "--agent", "coder", "--json"))
    assert [r["repositoryRef"] for r in for_agent] == ["acme/docs", "acme/secret-plans", "acme/widgets"]

    replaced = data(occ("agents", "update", "coder", "-n", "default", "--repo", "acme/docs:git-write", "--json"))
    assert replaced["repositoryBindings"] == [{"repositoryRef": "acme/docs", "profile": "git-write"}]
    both = occ("agents", "update", "coder", "-n", "default", "--repo", "acme/docs", "--no-repos")
    assert both.returncode == Exit.USAGE
    cleared = data(occ("agents", "update", "coder", "-n", "default", "--no-repos", "--json"))
    assert cleared["repositoryBindings"] == []
    assert Agent.objects.get(name="coder").repository_bindings == []


@pytest.mark.django_db(transaction=True)
def test_refusals_say_what_to_do(occ, github):
    ConfigurationFactory(namespace=Namespace.objects.get(name="default"), name="cli-cfg")
    bad = occ("agents", "create", "coder", "-n", "default", "-c", "cli-cfg", "--repo", "acme/widgets:admin")
    assert bad.returncode == Exit.USAGE
    assert "owner/name[:profile]" in bad.stderr
    unreachable = occ("agents", "create", "coder", "-n", "default", "-c", "cli-cfg", "--repo", "acme/elsewhere")
    assert unreachable.returncode != 0
    assert "cannot reach acme/elsewhere" in unreachable.stderr
    assert not Agent.objects.filter(name="coder").exists()
    github.revoke()
    outage = occ("agents", "repositories", "-n", "default")
    assert outage.returncode != 0
    assert "reinstall the App" in outage.stderr
