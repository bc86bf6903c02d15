"""Plugin delivery for the ``local`` ComputeDriver: before a gateway starts on a revision.

For a revision whose snapshot selects plugins:

1. the selected PluginDriver resolves the frozen selections into a ``PluginRuntimeSpec``
   (native ids, bundled or an exact npm spec with its integrity), written to the revision's
   private folder as ``plugins.json`` (0600, non-secret);
2. each enabled npm selection is installed into the Agent's own state directory with
   ``openclaw plugins install npm:<package>@<version> --pin`` (``--force`` only where the
   catalog says the source needs it), against a throwaway config file, so enablement stays
   the translation's. The install is cached by exact spec and integrity
   (``plugins/<digest>.json``, with what the runtime recorded), so a later revision with the
   same spec reuses the installed copy;
3. the runtime's own install record is read back from where the runtime keeps it, the
   ``plugins.installedIndex`` row of its state database (``state/openclaw.sqlite``, table
   ``config_machine_state``; the runtime's docs/cli/plugins/list.md, "Plugin index"), and
   checked against the installed package's own ``package.json`` and ``openclaw.plugin.json``:
   plugin id, package, version, integrity, and that the plugin's recorded source lies inside
   the install path. These are the facts ``openclaw plugins inspect --json`` prints, from the
   same row and files, without a second cold start of the CLI (~4-8 s of Node start-up and
   plugin loading). The PluginDriver turns the outcomes into warnings (a confirmed rejection,
   i.e. the install's normal non-zero exit: ``PLUGIN_INSTALL_FAILED``) or an ordinary startup
   failure (a mismatch, a timeout, a signal, a record that does not parse);
4. a confirmed rejection is remembered by exact spec and integrity
   (``plugins/<digest>.refused.json``) for ``OCC_LOCAL_PLUGIN_REFUSAL_SECONDS``: a later
   revision with the same spec warns again at once instead of spending another install on it.
   A new spec (another version) is tried afresh; ``manage.py occ_plugin_installs --forget-refusals``
   forgets them now;
5. the revision's config is translated with the failed selections disabled (and without
   their managed tool allowance), and the effective plugin state is verified with
   ``openclaw plugins list --json`` on that very config. The compute driver runs that check
   while the gateway starts (it is a separate cold CLI start, so it costs no time beside the
   gateway's own start-up) and reports the revision ready only once it passed; a mismatch
   stops the gateway.

The outcome (warnings included) is kept in ``plugin-status.json`` beside the revision's
config, so a later prepare, activation or restart of the same revision neither installs again
nor loses the warnings it reports; the digest of the last config verified is kept there too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from occ.documents import (
    PluginWarning,
    RevisionSpec,
)
from occ.drivers.compute.base import ComputeError
from occ.drivers.compute.files import write_private
from occ.drivers.plugins.base import (
    InstalledPlugin,
    InstallOutcome,
    NativePlugin,
    PluginDriver,
    PluginRuntimeSpec,
    PluginStartupFailure,
)
from occ.drivers.plugins.registry import plugin_driver
from occ.openclaw.schema import schema_problems
from occ.runtime import Runtime, RuntimeMissing

logger = logging.getLogger(__name__)

SPEC_FILE = "plugins.json"
STATUS_FILE = "plugin-status.json"
INSTALL_CONFIG_FILE = "plugin-install.json"
CACHE_DIR = "plugins"
INSPECT_TIMEOUT_SECONDS = 120.0
STATUS_VERSION = 1
# Where the runtime keeps its install records (under OPENCLAW_STATE_DIR).
STATE_DATABASE = Path("state") / "openclaw.sqlite"
INSTALLED_INDEX_KEY = "plugins.installedIndex"
# Host settings an install needs to reach the npm registry (a proxy, its certificate authority).
PASSED_THROUGH_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
                      "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "npm_config_registry",
                      "npm_config_cache")


@dataclass(frozen=True)
class PreparedPlugins:
    """What the gateway of one revision starts with."""

    driver: PluginDriver
    spec: PluginRuntimeSpec
    failed: frozenset[str]
    warnings: tuple[PluginWarning, ...]

    def translate(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """The document with the selections' policy; it must still pass the runtime's schema."""
        translated = self.driver.translate(self.spec, document, failed=self.failed)
        if schema_problems(translated):
            raise ComputeError("PLUGIN_POLICY_INVALID", retryable=False)
        return translated


def _failure(exc: PluginStartupFailure, *, retryable: bool = False) -> ComputeError:
    return ComputeError(exc.code, retryable=retryable)


def resolve_spec(revision: RevisionSpec) -> tuple[PluginDriver, PluginRuntimeSpec] | None:
    """The revision's frozen selections resolved by the PluginDriver they were admitted with
    (``None`` when it selects no plugin); raises ``ComputeError``. Shared by the compute drivers."""
    stored, pinned = revision.plugin_selections, revision.plugin_driver
    if not stored:
        return None
    driver = plugin_driver(pinned.id) if pinned is not None else None
    if driver is None or driver.identity.pin != pinned:
        raise ComputeError("PLUGIN_DRIVER_UNAVAILABLE", retryable=False)
    try:
        return driver, driver.resolve(stored)
    except PluginStartupFailure as exc:
        raise _failure(exc) from None
    except (KeyError, TypeError, ValueError):
        raise ComputeError("PLUGIN_SELECTIONS_INVALID", retryable=False) from None


def cache_key(native: NativePlugin) -> str:
    assert native.npm is not None
    return hashlib.sha256(f"{native.npm.spec}\0{native.npm.integrity}".encode()).hexdigest()[:32]


def forget_refusals(agents_dir: Path, agent_id: str | None = None) -> int:
    """Remove the remembered install refusals (of one Agent, or of all); how many went."""
    pattern = f"{agent_id}/{CACHE_DIR}/*.refused.json" if agent_id else f"*/{CACHE_DIR}/*.refused.json"
    removed = 0
    for marker in agents_dir.glob(pattern):
        marker.unlink(missing_ok=True)
        removed += 1
    return removed


def _config_digest(config: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


class PluginDelivery:
    """Installs and verifies one Agent's plugins; everything under its folder."""

    def __init__(self, *, runtime: Runtime, agent_root: Path, state_dir: Path, home: Path, log_path: Path,
                 install_timeout: float | None = None) -> None:
        self.runtime, self.agent_root, self.state_dir, self.home = runtime, agent_root, state_dir, home
        self.log_path = log_path
        self.install_timeout = float(install_timeout or settings.OCC_LOCAL_PLUGIN_INSTALL_TIMEOUT_SECONDS)
        self.timings: dict[str, float] = {}  # the last prepare's steps, in seconds (benchmarks read them)

    # --- the whole step ----------------------------------------------------------------------
    def prepare(self, revision: RevisionSpec, revision_dir: Path) -> PreparedPlugins | None:
        """``None`` when the revision selects no plugin; raises ``ComputeError`` otherwise."""
        resolved = resolve_spec(revision)
        if resolved is None:
            return None
        driver, spec = resolved
        spec_text = spec.to_json()
        kept = self._kept_status(revision_dir, spec_text)
        if kept is not None:
            self.timings = {"install": 0.0}
            return PreparedPlugins(driver, spec, frozenset(w.plugin_id for w in kept), kept)
        write_private(revision_dir / SPEC_FILE, spec_text + "\n")
        started = time.monotonic()
        outcomes = [self._install(native, revision_dir) for native in spec.installs()]
        # A hosted (Codex) plugin runs only inside the native Codex harness signed in to ChatGPT
        # (the runtime's docs/plugins/codex-native-plugins.md, "Requirements"; codexPlugins has
        # no effect on OpenClaw-provider runs). This driver's gateways run the Agent's configured
        # model provider with an API key (the only harness credential OCC accepts), so each such
        # selection needs authentication it cannot have: PLUGIN_AUTH_REQUIRED, and disabled.
        outcomes += [InstallOutcome(native.selection_id, "auth_required") for native in spec.hosted()]
        self.timings = {"install": time.monotonic() - started}
        try:
            warnings = driver.evaluate_installs(spec, outcomes)
        except PluginStartupFailure as exc:
            raise _failure(exc) from None
        status = {"version": STATUS_VERSION, "spec": hashlib.sha256(spec_text.encode()).hexdigest(),
                  "warnings": [w.document() for w in warnings], "installSeconds": round(self.timings["install"], 3)}
        write_private(revision_dir / STATUS_FILE, json.dumps(status, sort_keys=True) + "\n")
        return PreparedPlugins(driver, spec, frozenset(w.plugin_id for w in warnings), warnings)

    @staticmethod
    def _kept_status(revision_dir: Path, spec_text: str) -> tuple[PluginWarning, ...] | None:
        try:
            status = json.loads((revision_dir / STATUS_FILE).read_text())
        except (OSError, ValueError):
            return None
        if (not isinstance(status, dict) or status.get("version") != STATUS_VERSION
                or status.get("spec") != hashlib.sha256(spec_text.encode()).hexdigest()):
            return None
        return tuple(PluginWarning.model_validate(w) for w in status.get("warnings", []))

    @staticmethod
    def warnings(revision_dir: Path) -> tuple[PluginWarning, ...]:
        """The warnings a prepared revision reports (none before it was prepared)."""
        try:
            status = json.loads((revision_dir / STATUS_FILE).read_text())
            return tuple(PluginWarning.model_validate(w) for w in status.get("warnings", []))
        except (OSError, ValueError, TypeError, AttributeError):  # pydantic's ValidationError is a ValueError
            return ()

    # --- installs ------------------------------------------------------------------------------
    def _environment(self, config_path: Path) -> dict[str, str]:
        env = {"PATH": self.runtime.bin_path(), "HOME": str(self.home), "LANG": "C.UTF-8",
               "OPENCLAW_STATE_DIR": str(self.state_dir), "OPENCLAW_CONFIG_PATH": str(config_path),
               "OPENCLAW_HIDE_BANNER": "1", "NO_COLOR": "1"}
        for name in PASSED_THROUGH_ENV:
            if os.environ.get(name):
                env[name] = os.environ[name]
        return env

    def _run(self, arguments: Sequence[str], config_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
        try:
            node, entry = self.runtime.require()
        except RuntimeMissing:
            raise ComputeError("RUNTIME_NOT_INSTALLED", retryable=True) from None
        self.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            result = subprocess.run(  # noqa: S603 - our runtime, arguments from the curated catalog
                [str(node), str(entry), *arguments], env=self._environment(config_path), cwd=self.agent_root,
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ComputeError("PLUGIN_INSTALL_TIMEOUT", retryable=True) from None
        except OSError:
            raise ComputeError("PLUGIN_INSTALL_SPAWN_FAILED", retryable=True) from None
        with self.log_path.open("a") as log:
            log.write(f"$ openclaw {' '.join(arguments)} -> {result.returncode}\n{result.stdout}{result.stderr}\n")
        return result

    def _install(self, native: NativePlugin, revision_dir: Path) -> InstallOutcome:
        assert native.npm is not None
        marker = self.agent_root / CACHE_DIR / f"{cache_key(native)}.json"
        cached = self._cached(marker, native)
        if cached is not None:
            return InstallOutcome(native.selection_id, "installed", cached)
        refused = marker.with_name(f"{cache_key(native)}.refused.json")
        if self._refused_recently(refused, native):
            self._log(f"# {native.npm.spec}: refused by the runtime before; not tried again until "
                      f"{settings.OCC_LOCAL_PLUGIN_REFUSAL_SECONDS:.0f} s after that refusal\n")
            return InstallOutcome(native.selection_id, "rejected")
        config_path = revision_dir / INSTALL_CONFIG_FILE
        write_private(config_path, "{}\n")
        arguments = ["plugins", "install", native.npm.spec, "--pin", *(["--force"] if native.npm.force else [])]
        result = self._run(arguments, config_path, self.install_timeout)
        if result.returncode < 0:
            raise ComputeError("PLUGIN_INSTALL_INTERRUPTED", retryable=True)
        if result.returncode != 0:
            logger.info("local compute: the runtime refused to install %s (exit %s)", native.npm.spec,
                        result.returncode)
            write_private(refused, json.dumps({"spec": native.npm.spec, "integrity": native.npm.integrity,
                                                "exit": result.returncode, "at": time.time()}) + "\n")
            return InstallOutcome(native.selection_id, "rejected")
        installed = self._read_back(native)
        write_private(marker, json.dumps({"spec": native.npm.spec, "integrity": native.npm.integrity,
                                           "installed": installed.__dict__}, sort_keys=True) + "\n")
        refused.unlink(missing_ok=True)
        return InstallOutcome(native.selection_id, "installed", installed)

    @staticmethod
    def _refused_recently(marker: Path, native: NativePlugin) -> bool:
        try:
            document = json.loads(marker.read_text())
            at = float(document["at"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        npm = native.npm
        if npm is None or (document.get("spec"), document.get("integrity")) != (npm.spec, npm.integrity):
            return False
        return 0 <= time.time() - at < float(settings.OCC_LOCAL_PLUGIN_REFUSAL_SECONDS)

    def _log(self, text: str) -> None:
        self.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self.log_path.open("a") as log:
            log.write(text)

    @staticmethod
    def _cached(marker: Path, native: NativePlugin) -> InstalledPlugin | None:
        try:
            document = json.loads(marker.read_text())
            installed = InstalledPlugin(**document["installed"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        npm = native.npm
        if npm is None or (document.get("spec"), document.get("integrity")) != (npm.spec, npm.integrity):
            return None
        if not (Path(installed.install_path) / "package.json").is_file():
            return None  # the copy is gone: install again
        return installed

    def _installed_index(self) -> Mapping[str, Any]:
        """The runtime's ``plugins.installedIndex`` row, read only (never written here)."""
        path = self.state_dir / STATE_DATABASE
        try:
            connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10.0)
            try:
                row = connection.execute("SELECT value_json FROM config_machine_state WHERE state_key = ?",
                                         (INSTALLED_INDEX_KEY,)).fetchone()
            finally:
                connection.close()
            document = json.loads(row[0]) if row else None
            index = document["index"] if isinstance(document, dict) else None
        except (sqlite3.Error, OSError, ValueError, KeyError, TypeError):
            raise ComputeError("PLUGIN_INSTALL_MALFORMED_OUTPUT", retryable=True) from None
        if not isinstance(index, dict):
            raise ComputeError("PLUGIN_INSTALL_MALFORMED_OUTPUT", retryable=True)
        return index

    def _read_back(self, native: NativePlugin) -> InstalledPlugin:
        """What the runtime recorded for ``native`` after its install: the install record and
        the index entry of its state database, and the installed package's own manifests."""
        index = self._installed_index()
        try:
            record = index["installRecords"][native.native_id]
            entry = next(p for p in index["plugins"] if p["pluginId"] == native.native_id)
            install_path = Path(str(record["installPath"]))
            installed = InstalledPlugin(
                native_id=str(entry["pluginId"]), package=str(record["resolvedName"]),
                version=str(record["resolvedVersion"]), integrity=str(record["integrity"]),
                install_path=str(install_path))
            package = json.loads((install_path / "package.json").read_text())
            manifest = json.loads((install_path / "openclaw.plugin.json").read_text())
            source = Path(str(entry["source"])).resolve()
            root = Path(str(entry["rootDir"])).resolve()
        except (StopIteration, OSError, ValueError, KeyError, TypeError):
            raise ComputeError("PLUGIN_INSTALL_MALFORMED_OUTPUT", retryable=True) from None
        if (record.get("source") != "npm" or not isinstance(package, dict) or not isinstance(manifest, dict)
                or (package.get("name"), package.get("version")) != (installed.package, installed.version)
                or manifest.get("id") != installed.native_id):
            raise ComputeError("PLUGIN_VERIFICATION_FAILED", retryable=False)
        resolved_path = install_path.resolve()
        if root != resolved_path or not source.is_relative_to(resolved_path):
            raise ComputeError("PLUGIN_VERIFICATION_FAILED", retryable=False)
        return installed

    # --- the effective policy --------------------------------------------------------------------
    @staticmethod
    def verified(revision_dir: Path, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` is the one this revision's effective plugin state was last
        verified on."""
        try:
            status = json.loads((revision_dir / STATUS_FILE).read_text())
        except (OSError, ValueError):
            return False
        return isinstance(status, dict) and status.get("verifiedConfig") == _config_digest(config)

    def verify(self, prepared: PreparedPlugins, config: Mapping[str, Any], config_path: Path) -> None:
        """The runtime, reading the revision's own config, enables exactly the plugins the
        translation enabled and loads each of them. Recorded in the revision's status."""
        started = time.monotonic()
        result = self._run(["plugins", "list", "--json"], config_path, INSPECT_TIMEOUT_SECONDS)
        try:
            listed = {str(p["id"]): p for p in json.loads(result.stdout)["plugins"]}
        except (ValueError, KeyError, TypeError):
            raise ComputeError("PLUGIN_POLICY_UNVERIFIED", retryable=True) from None
        entries = (config.get("plugins") or {}).get("entries") or {}
        for key, native in prepared.spec.natives.items():
            if native.source == "hosted":
                # Not a plugin of the gateway's own inventory: it would run inside a Codex
                # harness, which this driver never starts, so none may be left enabled.
                if prepared.spec.selections[key].enabled and key not in prepared.failed:
                    raise ComputeError("PLUGIN_POLICY_UNVERIFIED", retryable=False)
                continue
            expected = (entries.get(native.native_id) or {}).get("enabled") is True
            seen = listed.get(native.native_id)
            if key in prepared.failed and native.source != "bundled" and seen is None:
                continue  # never installed (or hosted, never written): nothing to disable
            if seen is None or bool(seen.get("enabled")) != expected or (expected and seen.get("status") == "error"):
                raise ComputeError("PLUGIN_POLICY_UNVERIFIED", retryable=False)
        self.timings["verify"] = time.monotonic() - started
        status_path = config_path.parent / STATUS_FILE
        try:
            status = json.loads(status_path.read_text())
        except (OSError, ValueError):
            return
        if isinstance(status, dict):
            status["verifiedConfig"] = _config_digest(config)
            write_private(status_path, json.dumps(status, sort_keys=True) + "\n")
