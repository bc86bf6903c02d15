"""The console's front-end toolchain (devtools.assets, frontend/build.mjs) and the ``icon`` tag.

The build tests run the real build with runtime/node's Node and frontend/node_modules, which
``make test`` installs first (``make assets``); run ``make assets`` before running them alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.template import Context, Template, TemplateSyntaxError
from django.test import Client

from devtools import assets
from occ.runtime import Runtime, machine_paths
from tests.conftest import service_missing
from tests.factories import AgentFactory, ConfigurationFactory

NOT_BUILT = "the console's assets are not built: run `make assets`"


def runtime_with_frontend() -> Runtime:
    runtime = Runtime.default()
    if not runtime.node_binary().exists():
        service_missing("runtime/node is not installed: run `make runtime`")
    if not runtime.is_current(assets.FRONTEND):
        service_missing(f"frontend/node_modules is not installed from its lock: {NOT_BUILT}")
    return runtime


def run_build(tmp_path: Path, templates: dict[str, str]) -> subprocess.CompletedProcess[str]:
    runtime = runtime_with_frontend()
    for name, text in templates.items():
        (tmp_path / "templates" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "templates" / name).write_text(text)
    env = {**assets.node_env(runtime), "OCC_ASSETS_OUTPUT": str(tmp_path / "out"),
           "OCC_ASSETS_TEMPLATES": str(tmp_path / "templates")}
    return subprocess.run([str(runtime.node_binary()), "build.mjs"], cwd=assets.FRONTEND, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_lock_is_portable_and_every_package_is_pinned():
    manifest = json.loads((assets.FRONTEND / "package.json").read_text())
    lock = json.loads((assets.FRONTEND / "package-lock.json").read_text())

    assert machine_paths(lock) == []
    declared = {**manifest.get("dependencies", {}), **manifest.get("devDependencies", {})}
    assert declared, "frontend/package.json declares no package"
    for name, version in declared.items():
        assert version[0].isdigit(), f"{name} is not pinned to one version: {version!r}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, f"the lock disagrees on {name}"


def test_the_built_assets_are_static_files():
    for path in ("console/build/console.css", "console/build/icons.svg"):
        assert finders.find(path), f"{path} is missing: {NOT_BUILT}"


def test_collected_static_files_are_sent_gzip_to_a_client_that_accepts_it(settings, tmp_path):
    """collectstatic writes the gzip copy; WhiteNoise (which reads STATIC_ROOT when its middleware
    starts, hence a new Client) sends it to a client that accepts gzip, the file itself otherwise."""
    settings.STATIC_ROOT = tmp_path
    call_command("collectstatic", interactive=False, verbosity=0)
    css = tmp_path / "console" / "build" / "console.css"
    assert css.with_name("console.css.gz").stat().st_size < css.stat().st_size / 2

    client = Client()
    gzipped = client.get("/static/console/build/console.css", headers={"accept-encoding": "gzip"})
    assert gzipped.status_code == 200
    assert gzipped["content-encoding"] == "gzip"
    assert int(gzipped["content-length"]) == css.with_name("console.css.gz").stat().st_size
    plain = client.get("/static/console/build/console.css")
    assert plain.status_code == 200
    assert "content-encoding" not in plain
    assert b"".join(plain.streaming_content) == css.read_bytes()


def test_install_skips_a_project_whose_lock_is_unchanged(monkeypatch):
    runtime = runtime_with_frontend()

    def refuse(*args, **kwargs):
        raise AssertionError("npm ci ran although frontend/ is current with its lock")

    monkeypatch.setattr(assets, "npm_ci", refuse)

    assert assets.install(runtime) is False


def test_install_refuses_a_lock_naming_one_machine(tmp_path):
    (tmp_path / "package.json").write_text("{}")
    lock = {"packages": {"node_modules/x": {"resolved": "file:/home/me/x"}}}
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))

    with pytest.raises(assets.RuntimeMissing, match="paths of one machine"):
        assets.install(Runtime.default(), project=tmp_path)


def test_build_bundles_each_entry_and_a_sprite_of_the_icons_named(tmp_path):
    result = run_build(tmp_path, {"a/page.html": '{% icon "copy" %} {% icon "trash-2" label="Delete" %}'})

    assert result.returncode == 0, result.stderr
    css = (tmp_path / "out" / "console.css").read_text()
    assert "--size-3:" in css, "Open Props' tokens are bundled in"
    assert "\n\n" not in css.split("/*! ")[0], "the CSS is minified"
    sprite = (tmp_path / "out" / "icons.svg").read_text()
    assert '<symbol id="copy"' in sprite
    assert '<symbol id="trash-2"' in sprite
    assert '<symbol id="x"' in sprite, "the icons scripts use are always in"
    assert '<symbol id="plus"' not in sprite, "only the icons named are in the sprite"


def test_build_fails_on_an_unknown_icon(tmp_path):
    result = run_build(tmp_path, {"page.html": '{% icon "no-such-icon" %}'})

    assert result.returncode == 1
    assert "unknown Lucide icon(s): no-such-icon" in result.stderr


def test_icon_tag_is_decorative_unless_labelled():
    html = Template('{% icon "copy" %}|{% icon "trash-2" label="Delete" css_class="danger" %}').render(Context())
    decorative, labelled = html.split("|")

    assert decorative == ('<svg class="icon" aria-hidden="true" focusable="false">'
                          '<use href="/static/console/build/icons.svg#copy"></use></svg>')
    assert 'role="img" aria-label="Delete"' in labelled
    assert 'class="icon danger"' in labelled


def test_icon_tag_refuses_a_name_that_is_no_icon_name():
    with pytest.raises(TemplateSyntaxError):
        Template('{% icon "../x" %}').render(Context())


def test_the_frontend_project_is_the_only_npm_project_of_the_console():
    """Pages add packages to frontend/package.json, never a second project or a CDN."""
    root = assets.ROOT
    projects = {path.parent.relative_to(root).as_posix() for path in root.glob("*/package.json")}
    projects |= {path.parent.relative_to(root).as_posix() for path in root.glob("runtime/*/package.json")}
    assert projects == {"frontend", "runtime/node", "runtime/openclaw"}
    assert os.path.isdir(assets.FRONTEND / "src")


# --- what a page loads, gzip-compressed (docs/performance.md "Console assets") --------------------

_LOADED = re.compile(r'<(?:link rel="stylesheet" href|script src)="/static/([^"]+)"')


def loaded(html: str) -> list[str]:
    """The static stylesheets and scripts a rendered page loads."""
    return _LOADED.findall(html)


def gzip_total(paths: list[str]) -> int:
    total = 0
    for path in paths:
        found = finders.find(path)
        assert found, f"{path} is missing: {NOT_BUILT}"
        total += assets.gzip_size(Path(str(found)).read_bytes())
    return total


@pytest.fixture
def pages(ready_namespace) -> dict[str, str]:
    """A page of each kind, by what it is; the editor's three pages named ``editor: …``."""
    configuration = ConfigurationFactory(namespace=ready_namespace, values={"agents": {"defaults": {}}})
    agent = AgentFactory(namespace=ready_namespace, name="Sized", configuration=configuration)
    ns = f"/console/namespaces/{ready_namespace.id}"
    return {
        "agents": f"{ns}/agents", "create agent": f"{ns}/agents/new", "agent overview": f"{ns}/agents/{agent.id}",
        "configurations": f"{ns}/configurations", "configuration": f"{ns}/configurations/{configuration.id}",
        "secrets": f"{ns}/secrets", "namespaces": "/console/namespaces", "audit log": "/console/audit",
        "usage": f"{ns}/usage",
        "editor: create configuration": f"{ns}/configurations/new",
        "editor: edit configuration": f"{ns}/configurations/{configuration.id}/edit",
        "editor: agent configuration tab": f"{ns}/agents/{agent.id}?tab=configuration",
    }


def test_every_page_keeps_to_its_budget_and_only_the_editor_pages_load_the_editor(console, pages):
    sizes = {}
    for name, path in pages.items():
        response = console.get(path)
        assert response.status_code == 200, name
        files = loaded(response.content.decode())
        assert "console/build/console.css" in files, name
        assert ("console/build/editor.js" in files) == name.startswith("editor:"), name
        sizes[name] = gzip_total(files)
    for name, size in sizes.items():
        limit = assets.EDITOR_PAGE_CEILING_BYTES if name.startswith("editor:") else assets.PAGE_BUDGET_BYTES
        assert size <= limit, f"{name} loads {size} B gzip, over {limit} B: {sizes}"


def test_the_sizes_report_names_every_page_and_the_editor(capsys):
    assert assets.main(["--sizes"]) == 0
    report = capsys.readouterr().out
    assert "every page (base.html):" in report
    assert "console/vendor/htmx-" in report
    assert "the JSON editor adds (console/components/json_editor_assets.html):" in report
    assert "console/build/editor.js:" in report
    every = int(re.search(r"every page \(base.html\): (\d+) B", report).group(1))
    editor = int(re.search(r"editor adds \([^)]*\): (\d+) B", report).group(1))
    assert f"a page with the editor: {every + editor} B gzip" in report
