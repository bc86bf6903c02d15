"""The ``openclaw`` driver's curated catalog: committed data, regenerated from the pinned runtime.

Two parts, one file (``occ/drivers/plugins/data/openclaw-catalog.json``):

- ``bundled``: every plugin the pinned OpenClaw ships, read from its manifests
  (``dist/extensions/<id>/openclaw.plugin.json``; the id is the folder's name). The runtime
  loads them from its own install: nothing to fetch.
- ``npm``: the allowlist of installable npm plugins, each at an exact version with the
  registry's integrity (and ``force`` where the source is not official and the runtime asks
  for confirmation). It is curated by hand; regeneration keeps it as it is.

``manage.py occ_plugin_catalog`` rewrites the file from the installed runtime; a test compares
the committed bundled part with the runtime (like the config schema). Nothing here needs the
database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CATALOG_FILE = Path(__file__).resolve().parent / "data" / "openclaw-catalog.json"
MANIFEST_NAME = "openclaw.plugin.json"
NATIVE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
NPM_PACKAGE = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*$")
EXACT_VERSION = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")
INTEGRITY = re.compile(r"^sha512-[A-Za-z0-9+/]+={0,2}$")


class CatalogError(ValueError):
    """The catalog file (or a manifest) is not what this module writes."""


@dataclass(frozen=True)
class CatalogPlugin:
    """One curated plugin. ``tools``: the tool ids its manifest declares (``contracts.tools``);
    ``platforms``: the only platforms it runs on (``None``: all)."""

    native_id: str
    name: str
    description: str | None
    categories: tuple[str, ...]
    source: str  # bundled | npm
    tools: tuple[str, ...] = ()
    enabled_by_default: bool | None = None
    platforms: tuple[str, ...] | None = None
    package: str | None = None
    version: str | None = None
    integrity: str | None = None
    force: bool = False


@dataclass(frozen=True)
class Catalog:
    runtime_version: str
    plugins: tuple[CatalogPlugin, ...]  # bundled first, then npm, each sorted by id

    def by_id(self) -> dict[str, CatalogPlugin]:
        return {plugin.native_id: plugin for plugin in self.plugins}


def _title(native_id: str) -> str:
    return " ".join(part.capitalize() for part in re.split(r"[-_.]", native_id) if part)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def bundled_from_manifest(native_id: str, manifest: Mapping[str, Any]) -> CatalogPlugin:
    if manifest.get("id", native_id) != native_id or not NATIVE_ID.fullmatch(native_id):
        raise CatalogError(f"manifest of {native_id} names another id")
    name, description = manifest.get("name"), manifest.get("description")
    platforms = _strings(manifest.get("enabledByDefaultOnPlatforms"))
    default = manifest.get("enabledByDefault")
    return CatalogPlugin(
        native_id=native_id, name=name if isinstance(name, str) and name else _title(native_id),
        description=description if isinstance(description, str) and description else None,
        categories=_strings(manifest.get("categories")), source="bundled",
        tools=_strings((manifest.get("contracts") or {}).get("tools")),
        enabled_by_default=default if isinstance(default, bool) else None,
        platforms=platforms or None,
    )


def bundled_from_runtime(extensions_dir: Path) -> list[CatalogPlugin]:
    """Every ``<id>/openclaw.plugin.json`` under the runtime's ``dist/extensions``."""
    found = []
    for manifest_path in sorted(extensions_dir.glob(f"*/{MANIFEST_NAME}")):
        found.append(bundled_from_manifest(manifest_path.parent.name, json.loads(manifest_path.read_text())))
    if not found:
        raise CatalogError(f"no plugin manifests under {extensions_dir}")
    return found


def _plugin_document(plugin: CatalogPlugin) -> dict[str, Any]:
    document: dict[str, Any] = {"id": plugin.native_id, "name": plugin.name, "description": plugin.description,
                                "categories": list(plugin.categories), "tools": list(plugin.tools)}
    if plugin.source == "bundled":
        document.update(enabledByDefault=plugin.enabled_by_default,
                        platforms=None if plugin.platforms is None else list(plugin.platforms))
    else:
        document.update(package=plugin.package, version=plugin.version, integrity=plugin.integrity,
                        force=plugin.force)
    return document


def catalog_document(runtime_version: str, bundled: Iterable[CatalogPlugin], npm: Iterable[CatalogPlugin]
                     ) -> dict[str, Any]:
    return {"runtime": {"package": "openclaw", "version": runtime_version},
            "bundled": [_plugin_document(p) for p in sorted(bundled, key=lambda p: p.native_id)],
            "npm": [_plugin_document(p) for p in sorted(npm, key=lambda p: p.native_id)]}


def _npm_plugin(document: Mapping[str, Any]) -> CatalogPlugin:
    native_id, package, version, integrity = (document.get(k) for k in ("id", "package", "version", "integrity"))
    if not (isinstance(native_id, str) and NATIVE_ID.fullmatch(native_id)
            and isinstance(package, str) and NPM_PACKAGE.fullmatch(package)
            and isinstance(version, str) and EXACT_VERSION.fullmatch(version)
            and isinstance(integrity, str) and INTEGRITY.fullmatch(integrity)):
        raise CatalogError(f"npm allowlist entry {native_id!r} needs an id, a package, an exact version "
                           "and a sha512 integrity")
    return CatalogPlugin(native_id=native_id, name=str(document.get("name") or _title(native_id)),
                         description=document.get("description"), categories=_strings(document.get("categories")),
                         source="npm", tools=_strings(document.get("tools")), package=package, version=version,
                         integrity=integrity, force=document.get("force") is True)


def catalog_from_document(document: Mapping[str, Any]) -> Catalog:
    try:
        bundled = [bundled_from_manifest(item["id"], {
            "id": item["id"], "name": item.get("name"), "description": item.get("description"),
            "categories": item.get("categories"), "contracts": {"tools": item.get("tools")},
            "enabledByDefault": item.get("enabledByDefault"), "enabledByDefaultOnPlatforms": item.get("platforms"),
        }) for item in document["bundled"]]
        npm = [_npm_plugin(item) for item in document["npm"]]
        version = document["runtime"]["version"]
    except (KeyError, TypeError) as exc:
        raise CatalogError("the catalog file is not in the shape occ_plugin_catalog writes") from exc
    ids = [p.native_id for p in bundled + npm]
    if len(ids) != len(set(ids)):
        raise CatalogError("a plugin id appears twice in the catalog")
    return Catalog(runtime_version=str(version), plugins=tuple(bundled + npm))


def load_catalog(path: Path | None = None) -> Catalog:
    return catalog_from_document(json.loads((path or CATALOG_FILE).read_text()))


def write_catalog(document: Mapping[str, Any], path: Path | None = None) -> None:
    (path or CATALOG_FILE).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def extensions_dir(openclaw_package_dir: Path) -> Path:
    return openclaw_package_dir / "dist" / "extensions"


def regenerate(openclaw_package_dir: Path, runtime_version: str, current: Mapping[str, Any] | None
               ) -> dict[str, Any]:
    """The catalog document for the runtime at ``openclaw_package_dir``: its bundled plugins
    read afresh, the npm allowlist of ``current`` (the committed document) kept as it is."""
    npm = [_npm_plugin(item) for item in (current or {}).get("npm", [])]
    return catalog_document(runtime_version, bundled_from_runtime(extensions_dir(openclaw_package_dir)), npm)
