"""A revision's plugins on Kubernetes: what the Pod's ``plugins`` init container runs, and what
the driver reads back from it. The local driver's semantics (``occ.drivers.compute.local_plugins``):
each npm selection is installed on its own; one the runtime refuses (its normal non-zero exit) is
a per-plugin warning (``PLUGIN_INSTALL_FAILED``) with that plugin disabled and its managed tool
allowance withdrawn, and the gateway still starts; an install that did not finish (a signal) is
an ordinary startup failure. A hosted selection is ``PLUGIN_AUTH_REQUIRED`` and disabled already
in the rendered config (no Codex harness runs in a gateway Pod).

The plugin ConfigMap (``-plugins``, immutable, non-secret) holds:

- ``plugins.json``: the resolved spec;
- ``install.sh``: one ``node /app/openclaw.mjs plugins install <exact npm spec> --pin`` per
  install (the image's documented entry, ``OPENCLAW_ENTRY``; ``openclaw`` need not be on its
  PATH), each outcome noted, never ``set -e``;
- ``refusals.json``: per install, what a refusal takes out of the revision's rendered config
  (computed here from the translation itself: the config with that plugin failed, compared
  with the config without failures), and the lists that disappear once empty;
- ``effective.mjs``: applies the refusals to the revision's config, writes the gateway's
  effective config (``OCC_EFFECTIVE_CONFIG``, the Pod's own emptyDir) and the outcome as the
  container's termination message (``OCC_PLUGIN_RESULT``, ``/dev/termination-log``):
  ``{"version": 1, "spec": <sha256 of plugins.json>, "installs": ["installed"|"refused", …]}``.

The kubelet keeps that message in ``status.initContainerStatuses[].state.terminated.message``;
``outcome`` reads it, and a Pod without it (or with another spec's) cannot be called ready.
Not done here, unlike the local driver: the read-back of the runtime's install record (package,
version, integrity) after an install, and the refusal memory across revisions. One inexact
case: a tool id granted by two npm selections stays granted when both are refused (each
refusal removes only what that selection alone added); a tool id belongs to one plugin in the
catalog, so this does not arise from it.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client

from occ.documents import (
    PluginWarning,
)
from occ.drivers.plugins.base import (
    PluginRuntimeSpec,
)

SPEC_KEY, INSTALL_KEY, REFUSALS_KEY, EFFECTIVE_KEY = "plugins.json", "install.sh", "refusals.json", "effective.mjs"
CONTAINER = "plugins"
RESULT_VERSION = 1
INSTALLED, REFUSED = "installed", "refused"
# The lists a plugin's policy adds to (occ.openclaw.plugins.apply_plugin_policies), by path.
LIST_PATHS = (("plugins", "allow"), ("tools", "allow"), ("tools", "alsoAllow"), ("tools", "deny"))

EFFECTIVE_SCRIPT = """\
// Rendered by OCC: the gateway's config with the refused plugins disabled (refusals.json), and
// the installs' outcome as this container's termination message. Arguments: one outcome per
// install, in order ("installed" or "refused").
import { readFileSync, writeFileSync } from "node:fs";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const plan = JSON.parse(readFileSync(`${env("OCC_PLUGIN_DIR")}/refusals.json`, "utf8"));
const config = JSON.parse(readFileSync(env("OCC_SOURCE_CONFIG"), "utf8"));
const outcomes = process.argv.slice(2);
if (outcomes.length !== plan.installs.length || outcomes.some((o) => o !== "installed" && o !== "refused")) {
  console.error(`occ: ${outcomes.length} outcomes for ${plan.installs.length} installs`);
  process.exit(2);
}
const at = (path) => path.reduce((node, key) => (node && typeof node === "object" ? node[key] : undefined), config);
plan.installs.forEach((install, index) => {
  if (outcomes[index] !== "refused") return;
  config.plugins.entries[install.nativeId].enabled = false;
  for (const [path, items] of install.remove) {
    const list = at(path);
    if (Array.isArray(list)) at(path.slice(0, -1))[path.at(-1)] = list.filter((item) => !items.includes(item));
  }
});
for (const path of plan.dropWhenEmpty) {
  const value = at(path);
  const empty = Array.isArray(value)
    ? value.length === 0
    : value && typeof value === "object" && !Object.keys(value).length;
  if (empty) delete at(path.slice(0, -1))[path.at(-1)];
}
writeFileSync(env("OCC_EFFECTIVE_CONFIG"), JSON.stringify(config, null, 2) + "\\n", { mode: 0o600 });
writeFileSync(env("OCC_PLUGIN_RESULT"), JSON.stringify({ version: 1, spec: plan.spec, installs: outcomes }));
"""


def spec_digest(spec: PluginRuntimeSpec) -> str:
    return hashlib.sha256(spec.to_json().encode()).hexdigest()


def _at(config: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = config
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def refusals(spec: PluginRuntimeSpec, config_for: Callable[[frozenset[str]], dict[str, Any]]) -> dict[str, Any]:
    """What each install's refusal takes out of the revision's config. ``config_for(failed)`` is
    the revision's rendered config with the ``failed`` selections disabled (hosted ones always)."""
    hosted = frozenset(native.selection_id for native in spec.hosted())
    installs = spec.installs()
    base = config_for(hosted)
    every = config_for(hosted | {native.selection_id for native in installs})
    entries = []
    for native in installs:
        failed = config_for(hosted | {native.selection_id})
        remove = []
        for path in LIST_PATHS:
            present, kept = _at(base, path), _at(failed, path)
            if isinstance(present, list):
                gone = [item for item in present if item not in (kept if isinstance(kept, list) else [])]
                if gone:
                    remove.append([list(path), gone])
        entries.append({"selectionId": native.selection_id, "nativeId": native.native_id, "remove": remove})
    # A list (or the tools object) the translation created disappears again once emptied.
    drop = [list(path) for path in (*LIST_PATHS, ("tools",))
            if _at(base, path) is not None and _at(every, path) is None]
    return {"version": RESULT_VERSION, "spec": spec_digest(spec), "installs": entries, "dropWhenEmpty": drop}


def install_script(spec: PluginRuntimeSpec, *, install_config: str) -> str:
    lines = [
        "#!/bin/sh",
        "# The revision's plugin installs, rendered by OCC from plugins.json. Each stands alone: one the",
        "# runtime refuses (a normal non-zero exit) is noted, not the Pod's failure; one that did not",
        "# finish (a signal) is. effective.mjs then writes the gateway's config and the outcome.",
        "set -u",
        f"printf '{{}}\\n' > {install_config}",
        'outcomes=""',
        "install() {",
        '  node "$OPENCLAW_ENTRY" plugins install "$@" </dev/null',
        "  code=$?",
        '  if [ "$code" -eq 0 ]; then outcomes="$outcomes installed"',
        '  elif [ "$code" -lt 128 ]; then outcomes="$outcomes refused"',
        '    echo "occ: the runtime refused $1 (exit $code)" >&2',
        '  else echo "occ: the install of $1 did not finish (exit $code)" >&2; exit "$code"; fi',
        "}",
    ]
    for native in spec.installs():
        assert native.npm is not None
        lines.append(" ".join(["install", shlex.quote(native.npm.spec), "--pin",
                               *(["--force"] if native.npm.force else [])]))
    lines.append(f'exec node "$OCC_PLUGIN_DIR/{EFFECTIVE_KEY}" $outcomes')
    return "\n".join(lines) + "\n"


def files(spec: PluginRuntimeSpec, config_for: Callable[[frozenset[str]], dict[str, Any]], *,
          install_config: str) -> dict[str, str]:
    """The plugin ConfigMap's data."""
    return {SPEC_KEY: spec.to_json() + "\n", INSTALL_KEY: install_script(spec, install_config=install_config),
            REFUSALS_KEY: json.dumps(refusals(spec, config_for), indent=2, sort_keys=True) + "\n",
            EFFECTIVE_KEY: EFFECTIVE_SCRIPT}


def outcome(pod: client.V1Pod, spec: PluginRuntimeSpec) -> tuple[str, ...] | None:
    """The installs' outcomes the Pod's init container reported for ``spec``, in install order;
    ``None`` when there is none (not finished, another spec's, or not in this shape)."""
    for status in (pod.status.init_container_statuses if pod.status else None) or []:
        if status.name != CONTAINER:
            continue
        terminated = status.state.terminated if status.state else None
        if terminated is None or terminated.exit_code != 0 or not terminated.message:
            return None
        try:
            result = json.loads(terminated.message)
        except ValueError:
            return None
        installs = result.get("installs") if isinstance(result, dict) else None
        if (result.get("version") != RESULT_VERSION or result.get("spec") != spec_digest(spec)
                or not isinstance(installs, list) or len(installs) != len(spec.installs())
                or any(item not in (INSTALLED, REFUSED) for item in installs)):
            return None
        return tuple(installs)
    return None


def warnings(spec: PluginRuntimeSpec, outcomes: tuple[str, ...]) -> tuple[PluginWarning, ...]:
    """The local driver's warnings, in its order: refused installs, then hosted selections."""
    found = [PluginWarning(plugin_id=native.selection_id, code="PLUGIN_INSTALL_FAILED")
             for native, result in zip(spec.installs(), outcomes, strict=True) if result == REFUSED]
    found += [PluginWarning(plugin_id=native.selection_id, code="PLUGIN_AUTH_REQUIRED") for native in spec.hosted()]
    return tuple(found)
