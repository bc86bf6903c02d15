"""``make assets``: the console's front-end assets, built from ``frontend/`` into ``static/console/build/``.

``frontend/`` is one npm project (``package.json`` + committed ``package-lock.json``): esbuild,
Open Props and Lucide today, and whatever a page adds (docs/console.md, "Front-end assets").
This installs it with ``npm ci`` from the lock, using the Node of ``runtime/node`` (what ``make
runtime`` installs) first on ``PATH``, and skips the install while the lock is unchanged (the
same stamp as the runtime's projects, ``node_modules/.occ-installed``). Then it runs
``frontend/build.mjs`` with that Node, which bundles and minifies every top-level
``frontend/src/*.css|js`` and writes the icon sprite. The output folder is gitignored; Django's
static files finders, ``collectstatic`` and WhiteNoise serve it like any other static file.

Run as ``python -m occ.devtools.assets [--force]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from occ.runtime import Runtime, RuntimeMissing, machine_paths, npm_ci

ROOT = Path(__file__).resolve().parent.parent.parent
FRONTEND = ROOT / "frontend"
OUTPUT = ROOT / "static" / "console" / "build"
BUILD_TIMEOUT_SECONDS = 300


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="run npm ci even when the lock is unchanged")
    args = parser.parse_args(argv)
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
