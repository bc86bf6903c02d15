"""``manage.py occ_plugin_catalog [--check]``: the ``openclaw`` PluginDriver's curated catalog.

Rewrites ``occ/drivers/plugins/data/openclaw-catalog.json`` from the pinned runtime's bundled plugin
manifests, keeping the committed npm allowlist; ``--check`` writes nothing and exits non-zero
when the committed file differs from what the installed runtime gives (after a runtime bump:
run it without ``--check`` and commit the file).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from occ.drivers.plugins.catalog import CATALOG_FILE, CatalogError, regenerate, write_catalog
from occ.runtime import OPENCLAW_PACKAGE, Runtime


class Command(BaseCommand):
    help = "Regenerate (or --check) the openclaw plugin driver's catalog from the pinned runtime."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="compare only; exit 1 when it differs")

    def handle(self, *args: Any, **options: Any) -> None:
        runtime = Runtime.default()
        package_dir = runtime.openclaw_project / "node_modules" / OPENCLAW_PACKAGE
        version = runtime.installed(runtime.openclaw_project, OPENCLAW_PACKAGE)
        if version is None:
            raise CommandError(f"openclaw is not installed under {runtime.root}: run `make runtime`")
        try:
            current = json.loads(CATALOG_FILE.read_text()) if CATALOG_FILE.exists() else None
            document = regenerate(package_dir, version, current)
        except (CatalogError, OSError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        summary = f"{len(document['bundled'])} bundled, {len(document['npm'])} npm (openclaw {version})"
        if options["check"]:
            if document != current:
                raise CommandError(f"{CATALOG_FILE.name} differs from the installed runtime ({summary}): "
                                   "run `manage.py occ_plugin_catalog` and commit it")
            self.stdout.write(f"{CATALOG_FILE.name}: current, {summary}")
            return
        write_catalog(document)
        self.stdout.write(f"wrote {CATALOG_FILE.name}: {summary}")
