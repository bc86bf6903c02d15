"""``make assets``: the console's front-end assets, built from ``frontend/`` into ``static/console/build/``.

``frontend/`` is one npm project (``package.json`` + committed ``package-lock.json``): esbuild,
Open Props and Lucide today, and whatever a page adds (docs/console.md, "Front-end assets").
This installs it with ``npm ci`` from the lock, using the Node of ``runtime/node`` (what ``make
runtime`` installs) first on ``PATH``, and skips the install while the lock is unchanged (the
same stamp as the runtime's projects, ``node_modules/.occ-installed``). Then it runs
``frontend/build.mjs`` with that Node, which bundles and minifies every top-level
``frontend/src/*.css|js`` and writes the icon sprite. The output folder is gitignored; Django's
static files finders, ``collectstatic`` and WhiteNoise serve it like any other static file.

Run as ``python -m devtools.assets [--force]``; ``--sizes`` only reports what a console page
loads, gzip-compressed (docs/performance.md, "Console assets"; tests/console/test_assets.py holds
every page to its budget).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from occ.runtime import Runtime, RuntimeMissing, machine_paths, npm_ci

ROOT = Path(__file__).resolve().parent.parent
FRONTEND = ROOT / "frontend"
OUTPUT = ROOT / "static" / "console" / "build"
BUILD_TIMEOUT_SECONDS = 300
STATIC = ROOT / "static"
TEMPLATES = ROOT / "templates"
# The stylesheets and scripts a template loads itself ({% static '…' %} in a <link> or <script>).
_TEMPLATE_ASSETS = re.compile(r"<(?:link\b[^>]*\brel=\"stylesheet\"[^>]*\bhref|script\b[^>]*\bsrc)="
                              r"\"\{% static '([^']+)' %\}\"")
EVERY_PAGE = "base.html"
EDITOR = "console/components/json_editor_assets.html"
# The compiled CSS+JS of a page, gzip-compressed (issue 16): the budget of every console page, and
# the ceiling of the pages with the JSON editor, which CodeMirror alone cannot fit in.
PAGE_BUDGET_BYTES = 100_000
EDITOR_PAGE_CEILING_BYTES = 145_000


def node_env(runtime: Runtime) -> dict[str, str]:
    """This environment less npm's own variables, with runtime/node's Node first on ``PATH``."""
    node = runtime.node_binary()
    if not node.exists():
        raise RuntimeMissing(f"Node is not installed ({node} is missing): run `make runtime`.")
    env = {key: value for key, value in os.environ.items() if not key.startswith("npm_")}
    env["PATH"] = os.pathsep.join([str(node.parent), env.get("PATH", "")])
    return env


def install(runtime: Runtime, *, force: bool = False, project: Path = FRONTEND) -> bool:
    """``npm ci`` in ``project`` unless it is current; True when it ran."""
    lock = project / "package-lock.json"
    if not lock.is_file():
        raise RuntimeMissing(f"{lock} is missing: the console's assets install only from a committed lock.")
    bad = machine_paths(json.loads(lock.read_text()))
    if bad:
        raise RuntimeMissing(f"{lock} names paths of one machine ({', '.join(bad[:3])}); "
                             "regenerate it with `npm install --package-lock-only`.")
    if runtime.is_current(project) and not force:
        return False
    npm_ci(project, env=node_env(runtime), say=print)
    return True


def build(runtime: Runtime, *, project: Path = FRONTEND) -> None:
    """Run ``build.mjs`` with runtime/node's Node; its output says what it wrote and how big."""
    node = str(runtime.node_binary())
    try:
        subprocess.run([node, "build.mjs"], cwd=project, env=node_env(runtime), check=True,  # noqa: S603
                       timeout=BUILD_TIMEOUT_SECONDS)
    except subprocess.CalledProcessError as exc:
        raise RuntimeMissing(f"the console's asset build failed (exit {exc.returncode}); see above.") from None


def gzip_size(data: bytes) -> int:
    """Bytes on the wire when served gzip-compressed (level 9, as build.mjs reports)."""
    return len(gzip.compress(data, compresslevel=9, mtime=0))


def template_assets(template: str) -> list[str]:
    """The static paths of the stylesheets and scripts ``template`` loads itself."""
    return _TEMPLATE_ASSETS.findall((TEMPLATES / template).read_text())


def sizes_report() -> list[str]:
    """What every page loads (base.html) and what the JSON editor adds, each file and in all."""
    lines = []
    totals = {}
    for label, template in (("every page", EVERY_PAGE), ("the JSON editor adds", EDITOR)):
        files = template_assets(template)
        sizes = {name: gzip_size((STATIC / name).read_bytes()) for name in files}
        totals[template] = sum(sizes.values())
        lines.append(f"  {label} ({template}): {totals[template]} B gzip")
        lines += [f"    {name}: {size} B" for name, size in sizes.items()]
    with_editor = totals[EVERY_PAGE] + totals[EDITOR]
    lines.append(f"  a page with the editor: {with_editor} B gzip plus its own stylesheets "
                 f"(budget {PAGE_BUDGET_BYTES} B, ceiling with the editor {EDITOR_PAGE_CEILING_BYTES} B)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="run npm ci even when the lock is unchanged")
    parser.add_argument("--sizes", action="store_true",
                        help="only report the gzip size of what a console page loads (after a build)")
    args = parser.parse_args(argv)
    if args.sizes:
        try:
            print("assets: the CSS and JS a console page loads", *sizes_report(), sep="\n")
        except FileNotFoundError as exc:
            print(f"assets: {exc.filename} is missing: run `make assets` first", file=sys.stderr)
            return 1
        return 0
    runtime = Runtime.default()
    try:
        ran = install(runtime, force=args.force)
        print("assets: installed frontend/ from its lock" if ran
              else "assets: frontend/node_modules is current with its lock")
        build(runtime)
    except RuntimeMissing as exc:
        print(f"assets: {exc}", file=sys.stderr)
        return 1
    print(f"assets: built into {OUTPUT.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
