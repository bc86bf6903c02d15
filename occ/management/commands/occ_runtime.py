"""``manage.py occ_runtime check|install``: the OpenClaw runtime of the ``local`` ComputeDriver.

``check`` says what is installed, which versions and where (running ``node --version`` and
``openclaw --version`` for real), whether the committed config schema
(``occ/openclaw/schema/``) is what the installed openclaw prints, and exits non-zero with what
to do when something is missing or differs. ``install`` is what ``make runtime`` runs: ``npm
ci`` from the committed locks, Node first, then openclaw with that Node on ``PATH``
(already-current projects are skipped), then the export of openclaw's config schema.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from occ.openclaw.schema import export_schema, read_committed_schema, schema_path, sync_schema
from occ.runtime import Runtime, RuntimeMissing, command_version, install


class Command(BaseCommand):
    help = "Check or install the pinned OpenClaw runtime (Node 24 + openclaw) used by the local compute driver."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["check", "install"])
        parser.add_argument("--force", action="store_true", help="install: run npm ci even when current")

    def handle(self, *args: Any, **options: Any) -> None:
        runtime = Runtime.default()
        try:
            if options["action"] == "install":
                install(runtime, say=self._say, force=options["force"])
                path, changed = sync_schema(runtime)
                self._say(f"config schema: {'wrote' if changed else 'unchanged'} {path.name}"
                          + (" (commit it)" if changed else ""))
            self._check(runtime)
            if options["action"] == "check":
                self._check_schema(runtime)
        except RuntimeMissing as exc:
            raise CommandError(str(exc)) from None

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def _check(self, runtime: Runtime) -> None:
        self.stdout.write(f"runtime folder: {runtime.root}")
        problems = []
        for component in runtime.components():
            state = "ok" if component.ok else "MISSING" if component.installed is None else "OUTDATED"
            self.stdout.write(f"{component.name}: {state}  package {component.package}  pinned {component.pinned}  "
                              f"installed {component.installed or '-'}  at {component.path}")
            if not component.ok:
                problems.append(component.name)
        if problems:
            raise RuntimeMissing(f"OpenClaw runtime not installed ({', '.join(problems)}): run `make runtime`.")
        node, entry = runtime.require()
        node_version = command_version([str(node), "--version"])
        openclaw_version = command_version([str(node), str(entry), "--version"], env={"PATH": runtime.bin_path()})
        if node_version is None or openclaw_version is None:
            raise RuntimeMissing("The runtime is installed but does not run "
                                 f"(node --version: {node_version or 'failed'}; "
                                 f"openclaw --version: {openclaw_version or 'failed'}). Run `make runtime` again.")
        self.stdout.write(f"node --version: {node_version}")
        self.stdout.write(f"openclaw --version: {openclaw_version}")

    def _check_schema(self, runtime: Runtime) -> None:
        path = schema_path()
        if read_committed_schema() != export_schema(runtime):
            raise RuntimeMissing(f"{path.name} differs from `openclaw config schema` of the installed runtime: "
                                 "run `make runtime` and commit the file it writes.")
        self.stdout.write(f"config schema: ok ({path.name} is what the installed openclaw prints)")
