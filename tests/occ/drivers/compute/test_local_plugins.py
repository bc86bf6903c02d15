"""Plugin delivery of the local driver against a stand-in runtime: which install outcomes are
warnings and which are ordinary startup failures, the cache by exact spec, the per-revision
status, and the effective-state verification. The real runtime's run is tests/e2e/test_plugins_gateway.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from occ.documents import PluginWarning, RevisionSpec
from occ.drivers.compute.base import ComputeError
from occ.drivers.compute.local_plugins import PluginDelivery, forget_refusals
from occ.drivers.plugins.catalog import CATALOG_FILE
from occ.drivers.plugins.registry import forget_plugin_drivers
from occ.runtime import Runtime

STUB = Path(__file__).with_name("stub_openclaw_plugins.py")
INTEGRITY = "sha512-" + "A" * 86 + "=="
NPM = {"id": "stubby", "name": "Stubby", "description": "A stub.", "categories": [], "tools": ["stub_tool"],
       "package": "@acme/stubby", "version": "1.2.3", "integrity": INTEGRITY, "force": True}
DRIVER = {"id": "openclaw", "implementation": "occ.openclaw-curated/1"}
SPEC = "npm:@acme/stubby@1.2.3"
FIRST_AGENT = "agt_ae4b8570-5553-451e-8e60-4f4e4f262a58"
SECOND_AGENT = "agt_0d1c3c59-2d5c-4f0c-9e3a-3b7f1b0e6a11"


class StubPluginRuntime(Runtime):
    def require(self) -> tuple[Path, Path]:
        return Path(sys.executable), STUB

    def bin_path(self) -> str:
        return str(Path(sys.executable).parent) + ":/usr/bin:/bin"


@pytest.fixture
def catalog(tmp_path, settings):
    document = json.loads(CATALOG_FILE.read_text())
    document["npm"].append(NPM)
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    settings.OCC_OPENCLAW_PLUGIN_CATALOG = str(path)
    settings.OCC_PLUGIN_DRIVER = "openclaw"
    forget_plugin_drivers()
    yield path
    forget_plugin_drivers()


def delivery(root: Path, behaviour: dict | None = None, timeout: float = 30.0) -> PluginDelivery:
    for folder in ("state", "home", "logs"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "stub-plugins.json").write_text(json.dumps({SPEC: {"integrity": INTEGRITY, **(behaviour or {})}}))
    return PluginDelivery(runtime=StubPluginRuntime(root), agent_root=root, state_dir=root / "state",
                          home=root / "home", log_path=root / "logs" / "plugins.log", install_timeout=timeout)


def snapshot(**plugins) -> RevisionSpec:
    return RevisionSpec.from_stored({"plugins": {"driver": DRIVER, "plugins": plugins or {
        "occ-plugin:stubby": {"enabled": True, "toolDefaults": {"enabled": True}},
        "occ-plugin:workboard": {"enabled": True, "tools": {"workboard_list": {"enabled": True}}}}}})


def installs(root: Path) -> int:
    calls = root / "stub-calls.log"
    return calls.read_text().count("plugins install") if calls.exists() else 0


def test_an_install_is_verified_translated_and_cached_by_exact_spec(catalog, tmp_path):
    agent = tmp_path / "agent"
    first_dir, second_dir = agent / "revisions" / "rev_1", agent / "revisions" / "rev_2"
    plugins = delivery(agent)

    prepared = plugins.prepare(snapshot(), first_dir)

    assert prepared is not None
    assert prepared.warnings == ()
    assert installs(agent) == 1
    calls = (agent / "stub-calls.log").read_text()
    assert "--force" in calls
    assert "inspect" not in calls  # the install record is read from the runtime's state database
    cached = json.loads(next((agent / "plugins").glob("*.json")).read_text())
    assert cached["installed"] == {"native_id": "stubby", "package": "@acme/stubby", "version": "1.2.3",
                                   "integrity": INTEGRITY,
                                   "install_path": str(agent / "state/npm/projects/stubby/node_modules/@acme/stubby")}
    config = prepared.translate({})
    assert config["plugins"]["entries"] == {"stubby": {"enabled": True}, "workboard": {"enabled": True}}
    assert config["tools"]["alsoAllow"] == ["stub_tool", "workboard_list"]
    (first_dir / "openclaw.json").write_text(json.dumps(config))
    assert not PluginDelivery.verified(first_dir, config)
    plugins.verify(prepared, config, first_dir / "openclaw.json")
    assert PluginDelivery.verified(first_dir, config)
    assert not PluginDelivery.verified(first_dir, {**config, "tools": {}})  # another config: checked again
    assert oct((first_dir / "plugins.json").stat().st_mode & 0o777) == "0o600"

    assert plugins.prepare(snapshot(), first_dir) is not None  # the same revision again: its status
    assert plugins.prepare(snapshot(), second_dir).warnings == ()  # a new revision: the cached copy
    assert installs(agent) == 1
    assert json.loads((second_dir / "plugin-status.json").read_text())["installSeconds"] < 0.5


def test_a_refused_install_is_a_warning_and_its_selection_is_disabled(catalog, tmp_path):
    agent = tmp_path / "agent"
    plugins = delivery(agent, {"do": "reject"})

    prepared = plugins.prepare(snapshot(), agent / "revisions" / "rev_1")

    assert [w.document() for w in prepared.warnings] == [{"pluginId": "occ-plugin:stubby",
                                                           "code": "PLUGIN_INSTALL_FAILED"}]
    config = prepared.translate({})
    assert config["plugins"]["entries"]["stubby"] == {"enabled": False}
    assert config["tools"]["alsoAllow"] == ["workboard_list"]
    path = agent / "revisions" / "rev_1" / "openclaw.json"
    path.write_text(json.dumps(config))
    plugins.verify(prepared, config, path)
    assert PluginDelivery.warnings(agent / "revisions" / "rev_1") == (
        PluginWarning(plugin_id="occ-plugin:stubby", code="PLUGIN_INSTALL_FAILED"),)


def test_a_refusal_is_remembered_by_exact_spec_and_can_be_forgotten(catalog, tmp_path, settings):
    agents = tmp_path / "agents"
    agent = agents / "agt_1"
    plugins = delivery(agent, {"do": "reject"})
    warned = [{"pluginId": "occ-plugin:stubby", "code": "PLUGIN_INSTALL_FAILED"}]

    first = plugins.prepare(snapshot(), agent / "revisions" / "rev_1")
    second = plugins.prepare(snapshot(), agent / "revisions" / "rev_2")

    assert [w.document() for w in first.warnings] == [w.document() for w in second.warnings] == warned
    assert installs(agent) == 1, "a later revision of the same spec warns without trying again"
    assert "refused by the runtime before" in (agent / "logs" / "plugins.log").read_text()

    settings.OCC_LOCAL_PLUGIN_REFUSAL_SECONDS = 0  # remembered for no time: tried again
    plugins.prepare(snapshot(), agent / "revisions" / "rev_3")
    assert installs(agent) == 2
    settings.OCC_LOCAL_PLUGIN_REFUSAL_SECONDS = 3600

    assert forget_refusals(agents, "agt_other") == 0
    assert forget_refusals(agents, "agt_1") == 1
    (agent / "stub-plugins.json").write_text(json.dumps({SPEC: {"integrity": INTEGRITY}}))  # installable now
    assert plugins.prepare(snapshot(), agent / "revisions" / "rev_4").warnings == ()
    assert installs(agent) == 3
    assert not list((agent / "plugins").glob("*.refused.json"))


def test_another_version_of_a_refused_plugin_is_tried(catalog, tmp_path):
    agent = tmp_path / "agent"
    plugins = delivery(agent, {"do": "reject"})
    plugins.prepare(snapshot(), agent / "revisions" / "rev_1")
    document = json.loads(catalog.read_text())
    document["npm"][-1] = {**NPM, "version": "1.2.4"}
    catalog.write_text(json.dumps(document))
    forget_plugin_drivers()
    (agent / "stub-plugins.json").write_text(json.dumps({SPEC: {"do": "reject"},
                                                         "npm:@acme/stubby@1.2.4": {"integrity": INTEGRITY}}))

    prepared = plugins.prepare(snapshot(), agent / "revisions" / "rev_2")

    assert installs(agent) == 2
    assert "npm:@acme/stubby@1.2.4" in (agent / "stub-calls.log").read_text()
    assert prepared.warnings == ()


@pytest.mark.parametrize(("behaviour", "code"), [
    pytest.param({"do": "hang"}, "PLUGIN_INSTALL_TIMEOUT", id="timeout"),
    pytest.param({"do": "crash"}, "PLUGIN_INSTALL_INTERRUPTED", id="signal"),
    pytest.param({"do": "garbage"}, "PLUGIN_INSTALL_MALFORMED_OUTPUT", id="malformed"),
    pytest.param({"do": "wrong-version"}, "PLUGIN_VERIFICATION_FAILED", id="version"),
    pytest.param({"integrity": "sha512-other"}, "PLUGIN_VERIFICATION_FAILED", id="integrity"),
    pytest.param({"id": "someone-else"}, "PLUGIN_INSTALL_MALFORMED_OUTPUT", id="other-id"),
    pytest.param({"do": "outside"}, "PLUGIN_VERIFICATION_FAILED", id="source-outside-the-install"),
    pytest.param({"do": "other-manifest"}, "PLUGIN_VERIFICATION_FAILED", id="manifest-id"),
])
def test_other_install_failures_are_ordinary_startup_failures(catalog, tmp_path, behaviour, code):
    agent = tmp_path / "agent"
    plugins = delivery(agent, behaviour, timeout=3.0)

    with pytest.raises(ComputeError) as failed:
        plugins.prepare(snapshot(), agent / "revisions" / "rev_1")

    assert failed.value.code == code
    assert not (agent / "revisions" / "rev_1" / "plugin-status.json").exists()


def test_an_effective_state_that_differs_from_the_translation_fails(catalog, tmp_path):
    agent = tmp_path / "agent"
    plugins = delivery(agent)
    prepared = plugins.prepare(snapshot(), agent / "revisions" / "rev_1")
    config = prepared.translate({})
    path = agent / "revisions" / "rev_1" / "openclaw.json"
    path.write_text(json.dumps({**config, "plugins": {"entries": {"workboard": {"enabled": False}}}}))

    with pytest.raises(ComputeError) as failed:
        plugins.verify(prepared, config, path)
    assert failed.value.code == "PLUGIN_POLICY_UNVERIFIED"


def test_no_selections_need_nothing_and_another_driver_is_refused(catalog, tmp_path):
    agent = tmp_path / "agent"
    plugins = delivery(agent)
    assert plugins.prepare(RevisionSpec.from_stored({"plugins": {"driver": DRIVER, "plugins": {}}}),
                           agent / "revisions" / "rev_1") is None
    assert plugins.prepare(RevisionSpec(), agent / "revisions" / "rev_1") is None
    with pytest.raises(ComputeError) as refused:
        plugins.prepare(RevisionSpec.from_stored({"plugins": {"driver": {"id": "codex", "implementation": "x"},
                                                              "plugins": {"occ-plugin:stubby": {"enabled": True}}}}),
                        agent / "revisions" / "rev_1")
    assert refused.value.code == "PLUGIN_DRIVER_UNAVAILABLE"
    assert installs(agent) == 0


def test_the_command_forgets_the_refusals(tmp_path, settings):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    settings.OCC_DATA_DIR = str(tmp_path)
    for agent in (FIRST_AGENT, SECOND_AGENT):
        (tmp_path / "agents" / agent / "plugins").mkdir(parents=True)
        (tmp_path / "agents" / agent / "plugins" / "0123.refused.json").write_text("{}")
        (tmp_path / "agents" / agent / "plugins" / "0123.json").write_text("{}")  # an install: kept
    out = StringIO()
    call_command("occ_plugin_installs", "--forget-refusals", "--agent", FIRST_AGENT, stdout=out)
    assert "Forgot 1 refused install(s)" in out.getvalue()
    call_command("occ_plugin_installs", "--forget-refusals", stdout=out)
    assert "Forgot 1 refused install(s)." in out.getvalue()
    assert sorted(p.name for p in (tmp_path / "agents").rglob("*.json")) == ["0123.json", "0123.json"]
    with pytest.raises(CommandError):
        call_command("occ_plugin_installs", "--forget-refusals", "--agent", "../etc")


def test_codex_selections_deploy_disabled_with_auth_required(catalog, tmp_path):
    """The Codex driver's plugins run only inside a Codex harness signed in to ChatGPT; an
    Agent of the local driver has an API key: each selection warns and is disabled, nothing is
    installed, and the gateway's config names no Codex plugin."""
    agent = tmp_path / "agent"
    plugins = delivery(agent)
    linear, github = "codex-plugin:linear@openai-curated-remote", "codex-plugin:github@openai-curated-remote"
    codex = RevisionSpec.from_stored({"plugins": {
        "driver": {"id": "codex", "implementation": "occ/codex-plugin"},
        "plugins": {linear: {"enabled": True, "toolDefaults": {"approval": "write_actions"}},
                    github: {"enabled": False}}}})

    prepared = plugins.prepare(codex, agent / "revisions" / "rev_1")

    assert [w.document() for w in prepared.warnings] == [{"pluginId": linear, "code": "PLUGIN_AUTH_REQUIRED"}]
    assert installs(agent) == 0
    config = prepared.translate({"tools": {"deny": ["canvas"]}})
    assert config == {"tools": {"deny": ["canvas"]}}
    path = agent / "revisions" / "rev_1" / "openclaw.json"
    path.write_text(json.dumps(config))
    plugins.verify(prepared, config, path)
    assert PluginDelivery.warnings(agent / "revisions" / "rev_1") == (
        PluginWarning(plugin_id=linear, code="PLUGIN_AUTH_REQUIRED"),)
