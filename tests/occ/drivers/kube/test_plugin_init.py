"""The Pod's ``plugins`` init step run for real, outside a cluster: the rendered ``install.sh``
under ``sh``, the runtime's own Node (``make runtime``), and a stand-in for the image's
``/app/openclaw.mjs`` that refuses the specs a test names (exit 1, the runtime's normal refusal)
or dies by a signal. The test cluster runs no container, so this is where the script's
behaviour is checked: every install tried on its own, the termination message, and the
effective config equal to the translation with exactly the refused selections failed (what
the local driver starts its gateway with).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from occ.documents import PluginWarning, RevisionSpec
from occ.drivers.compute.base import RevisionRef
from occ.drivers.kube import plugin_init
from occ.drivers.kube.api import Connection, Settings
from occ.drivers.kube.compute import KubernetesComputeDriver
from occ.drivers.kube.manifests import RevisionManifest
from occ.drivers.plugins.catalog import CATALOG_FILE
from occ.drivers.plugins.registry import forget_plugin_drivers
from occ.ids import IdPrefix, new_id
from occ.runtime import Runtime

STUBS = [
    {"id": "stubby", "name": "Stubby", "description": "A stub.", "categories": [], "tools": ["stub_tool"],
     "package": "@acme/stubby", "version": "1.2.3", "integrity": "sha512-" + "A" * 86 + "==", "force": True},
    {"id": "other", "name": "Other", "description": "Another stub.", "categories": [], "tools": [],
     "package": "@acme/other", "version": "0.4.0", "integrity": "sha512-" + "B" * 86 + "=="},
]
SELECTIONS = {"driver": {"id": "openclaw", "implementation": "occ.openclaw-curated/1"}, "plugins": {
    "occ-plugin:stubby": {"enabled": True, "toolDefaults": {"enabled": True}},
    "occ-plugin:other": {"enabled": True, "toolDefaults": {"enabled": True}},
    "occ-plugin:workboard": {"enabled": True, "tools": {"workboard_list": {"enabled": True}}}}}
DOCUMENT = {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": "openai/gpt-5"}}},
            "tools": {"deny": ["exec"]}}
# The stand-in entry: records each call, refuses the specs in $REFUSE, dies on those in $KILL.
ENTRY = """\
import { appendFileSync } from "node:fs";
const args = process.argv.slice(2);
appendFileSync(process.env.CALLS, JSON.stringify(args) + "\\n");
const spec = args[2];
if ((process.env.KILL || "").split(",").includes(spec)) process.kill(process.pid, "SIGKILL");
process.exit((process.env.REFUSE || "").split(",").includes(spec) ? 1 : 0);
"""


@pytest.fixture
def node() -> Path:
    binary = Runtime.default().node_binary()
    if not binary.exists():
        pytest.fail("the runtime's Node is missing: run `make runtime`")
    return binary


@pytest.fixture(params=["with-bundled"])
def plan(request, tmp_path, settings) -> RevisionManifest:
    document = json.loads(CATALOG_FILE.read_text())
    document["npm"].extend(STUBS)
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(document))
    settings.OCC_OPENCLAW_PLUGIN_CATALOG = str(catalog)
    settings.OCC_PLUGIN_DRIVER = "openclaw"
    forget_plugin_drivers()
    driver = KubernetesComputeDriver(connection=cast(Connection, SimpleNamespace(settings=Settings())),
                                     image="occ/gateway:test", trusted_proxy_cidrs=["10.0.0.0/8"], storage_class="")
    revision = RevisionRef(id=new_id(IdPrefix.REVISION), namespace_id=new_id(IdPrefix.NAMESPACE),
                           agent_id=new_id(IdPrefix.AGENT), number=1,
                           spec=RevisionSpec.from_stored({
                               "configuration": DOCUMENT, "plugins": SELECTIONS if request.param == "with-bundled"
                               else {**SELECTIONS, "plugins": {key: value for key, value in SELECTIONS[
                                   "plugins"].items() if key != "occ-plugin:workboard"}}}))
    yield RevisionManifest(driver, revision, None)
    forget_plugin_drivers()


def run_init(plan: RevisionManifest, folder: Path, node: Path, *, refuse=(), kill=()
             ) -> subprocess.CompletedProcess[str]:
    """The init container's command with its environment (the Pod spec's, paths moved here)."""
    data = plan.plugin_data()
    assert data is not None
    plugins, config = folder / "plugins", folder / "config"
    for directory in (plugins, config):
        directory.mkdir(parents=True, exist_ok=True)
    for key, text in data.items():
        (plugins / key).write_text(text)
    (config / "openclaw.json").write_text(plan.rendered())
    (folder / "openclaw.mjs").write_text(ENTRY)
    init = plan.plugin_init_container(plan.pod_template().spec.containers[0])
    env = {variable.name: variable.value for variable in init.env}
    env.update({"OPENCLAW_ENTRY": str(folder / "openclaw.mjs"), "OCC_PLUGIN_DIR": str(plugins),
                "OCC_SOURCE_CONFIG": str(config / "openclaw.json"),
                "OCC_EFFECTIVE_CONFIG": str(folder / "effective.json"),
                "OCC_PLUGIN_RESULT": str(folder / "termination-log"), "CALLS": str(folder / "calls"),
                "PATH": f"{node.parent}:{os.environ['PATH']}", "REFUSE": ",".join(refuse), "KILL": ",".join(kill)})
    script = data[plugin_init.INSTALL_KEY].replace("/tmp/plugin-install.json", str(folder / "plugin-install.json"))
    (folder / "install.sh").write_text(script)
    return subprocess.run(["sh", str(folder / "install.sh")], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_init_step_installs_each_plugin_on_its_own_and_disables_exactly_the_refused(plan, tmp_path, node):
    specs = {"occ-plugin:stubby": "npm:@acme/stubby@1.2.3", "occ-plugin:other": "npm:@acme/other@0.4.0"}
    init = plan.plugin_init_container(plan.pod_template().spec.containers[0])
    assert init.termination_message_path == "/dev/termination-log"
    assert init.command == ["sh", "/etc/openclaw/plugins/install.sh"]
    gateway_env = {v.name: v.value for v in plan.pod_template().spec.containers[0].env}
    assert gateway_env["OPENCLAW_CONFIG_PATH"] == {v.name: v.value for v in init.env}["OCC_EFFECTIVE_CONFIG"]
    _, spec = plan.plugins
    for count in range(len(specs) + 1):
        for refused in itertools.combinations(specs, count):
            folder = tmp_path / ("-".join(refused).replace(":", "_") or "none")
            result = run_init(plan, folder, node, refuse=[specs[key] for key in refused])
            assert result.returncode == 0, result.stderr  # a refusal never fails the Pod
            calls = [json.loads(line) for line in (folder / "calls").read_text().splitlines()]
            assert calls == [["plugins", "install", "npm:@acme/stubby@1.2.3", "--pin", "--force"],
                             ["plugins", "install", "npm:@acme/other@0.4.0", "--pin"]]  # each one tried
            message = json.loads((folder / "termination-log").read_text())
            assert message == {"version": 1, "spec": plugin_init.spec_digest(spec),
                               "installs": ["refused" if key in refused else "installed" for key in specs]}
            assert len((folder / "termination-log").read_bytes()) < 4096  # the kubelet keeps 4 KiB
            effective = json.loads((folder / "effective.json").read_text())
            assert effective == plan._config(frozenset(refused)), refused  # the local driver's config
            pod = SimpleNamespace(status=SimpleNamespace(init_container_statuses=[SimpleNamespace(
                name="plugins", state=SimpleNamespace(terminated=SimpleNamespace(
                    exit_code=0, message=(folder / "termination-log").read_text())))]))
            outcome = plugin_init.outcome(pod, spec)
            assert plugin_init.warnings(spec, outcome) == tuple(
                PluginWarning(plugin_id=key, code="PLUGIN_INSTALL_FAILED") for key in refused)
    assert effective["plugins"]["entries"]["stubby"]["enabled"] is False
    assert "stub_tool" not in json.dumps(effective.get("tools", {}))
    assert effective["tools"]["deny"] == ["exec"]  # the operator's own lists stay


@pytest.mark.parametrize("plan", ["npm-only"], indirect=True)
def test_a_list_the_translation_created_goes_once_every_plugin_in_it_was_refused(plan, tmp_path, node):
    """Without the bundled plugin the managed tool allowance is the plugins' alone: both refused,
    the config has no ``alsoAllow`` left, as the translation writes it with both failed."""
    result = run_init(plan, tmp_path, node, refuse=["npm:@acme/stubby@1.2.3", "npm:@acme/other@0.4.0"])
    assert result.returncode == 0, result.stderr
    effective = json.loads((tmp_path / "effective.json").read_text())
    assert "alsoAllow" in plan._config(frozenset())["tools"]
    assert effective == plan._config(frozenset({"occ-plugin:stubby", "occ-plugin:other"}))
    assert effective["tools"] == {"deny": ["exec"]}


def test_an_install_that_does_not_finish_fails_the_init_step(plan, tmp_path, node):
    result = run_init(plan, tmp_path, node, kill=["npm:@acme/stubby@1.2.3"])
    assert result.returncode != 0
    assert "did not finish" in result.stderr
    assert not (tmp_path / "termination-log").exists()
    assert len((tmp_path / "calls").read_text().splitlines()) == 1  # nothing after it


def test_a_message_of_another_spec_or_shape_establishes_nothing(plan):
    _, spec = plan.plugins

    def pod(message, exit_code=0):
        return SimpleNamespace(status=SimpleNamespace(init_container_statuses=[SimpleNamespace(
            name="plugins", state=SimpleNamespace(terminated=SimpleNamespace(exit_code=exit_code, message=message)))]))

    good = {"version": 1, "spec": plugin_init.spec_digest(spec), "installs": ["installed", "refused"]}
    assert plugin_init.outcome(pod(json.dumps(good)), spec) == ("installed", "refused")
    for bad in ({**good, "spec": "0" * 64}, {**good, "installs": ["installed"]}, {**good, "version": 2},
                {**good, "installs": ["installed", "maybe"]}):
        assert plugin_init.outcome(pod(json.dumps(bad)), spec) is None
    assert plugin_init.outcome(pod("not json"), spec) is None
    assert plugin_init.outcome(pod(json.dumps(good), exit_code=1), spec) is None
    assert plugin_init.outcome(SimpleNamespace(status=SimpleNamespace(init_container_statuses=None)), spec) is None
