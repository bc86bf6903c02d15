"""``occ agents models`` as a process against OCC's real web stack on loopback, which asks the
loopback fakes of the providers (real HTTP all the way): an API key or a service account token
from stdin or a Secret, never on the command line, never echoed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from occ_cli.client import Exit

from occ.commands.secrets import SecretCreate
from occ.models import Namespace
from occ.services.secrets import secret_create
from tests.conftest import mark_namespace_ready
from tests.fakes import fake_codex, fake_model_providers
from tests.fakes.fake_codex import TOKEN
from tests.fakes.fake_model_providers import OPENAI_KEY

OCC = Path(sys.executable).with_name("occ")


@pytest.fixture
def fakes(settings) -> Iterator[fake_codex.FakeCodex]:
    settings.OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = 30.0
    providers = fake_model_providers.serving(settings, timeout=30.0)
    next(providers)
    yield from fake_codex.serving(settings)
    providers.close()


@pytest.fixture
def occ(live_server, bootstrap, fakes):
    mark_namespace_ready(Namespace.objects.get(name="default"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(OCC_URL=live_server.url, OCC_API_KEY=bootstrap.key_token, COLUMNS="200", NO_COLOR="1")

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(OCC), *args], input=stdin, capture_output=True, text=True, env=env, timeout=60,
                              check=False)
    return run


@pytest.mark.django_db(transaction=True)
def test_a_service_account_token_from_stdin_lists_the_workspace_models(occ, fakes):
    done = occ("agents", "models", "-n", "default", "--auth-method", "codex_pat", stdin=TOKEN + "\n")
    assert done.returncode == 0, done.stderr
    cells = [line.strip("│┃ ").split()[0] for line in done.stdout.splitlines() if line.startswith(("│", "┃"))]
    assert cells == ["MODEL", "gpt-6-astra", "gpt-6-luna", "gpt-6-mini", "gpt-5.6-sol"]  # priority order
    assert "GPT-6 Astra" in done.stdout
    assert TOKEN not in done.stdout + done.stderr
    assert [r["path"] for r in fakes.requests][-1] == "/backend-api/codex/models"


@pytest.mark.django_db(transaction=True)
def test_a_token_secret_and_an_api_key(occ, admin_actor):
    namespace = Namespace.objects.get(name="default")
    secret_create(actor=admin_actor, namespace_id=namespace.id, command=SecretCreate(name="codex-token", value=TOKEN))
    listed = occ("agents", "models", "-n", "default", "--auth-method", "codex_pat", "--secret", "codex-token",
                 "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)[0] == {"id": "gpt-6-astra", "displayName": "GPT-6 Astra"}
    keyed = occ("agents", "models", "-n", "default", "--json", stdin=OPENAI_KEY)
    assert keyed.returncode == 0, keyed.stderr
    assert json.loads(keyed.stdout)[0]["id"] == "gpt-6-astra"


@pytest.mark.django_db(transaction=True)
def test_an_api_key_given_as_a_token_is_refused_naming_the_field(occ):
    done = occ("agents", "models", "-n", "default", "--auth-method", "codex_pat", stdin=OPENAI_KEY)
    assert done.returncode == Exit.API_ERROR
    assert "at-" in done.stderr
    assert "apiKey" in done.stderr
    assert OPENAI_KEY not in done.stdout + done.stderr
