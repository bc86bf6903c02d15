"""A stand-in for ``openclaw plugins install|list`` (run as ``python this.py plugins ...``).

What each npm spec does comes from ``stub-plugins.json`` in the working directory (the Agent's
folder): ``ok`` installs as the pinned runtime does (a package folder with its ``package.json``
and ``openclaw.plugin.json`` under the state directory, and the install record and index entry
in the ``plugins.installedIndex`` row of ``state/openclaw.sqlite``, the shape the runtime
writes), ``reject`` exits 1 as the runtime does when it refuses a package, ``hang`` sleeps past
any timeout, ``crash`` dies by SIGKILL, ``garbage`` installs but leaves a row that is not JSON,
``wrong-version`` records another version than the package's. ``{"list": "disagree"}`` makes
``plugins list`` report every plugin's enablement the other way round.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

state = Path(os.environ["OPENCLAW_STATE_DIR"])
registry_path = state / "stub-registry.json"
behaviour = json.loads(Path("stub-plugins.json").read_text()) if Path("stub-plugins.json").exists() else {}
registry = json.loads(registry_path.read_text()) if registry_path.exists() else {}
args = sys.argv[1:]
calls = Path("stub-calls.log")
with calls.open("a") as log:
    log.write(" ".join(args) + "\n")

if args[:2] == ["plugins", "install"]:
    spec = args[2]
    package, version = spec.removeprefix("npm:").rsplit("@", 1)
    what = behaviour.get(spec, {}).get("do", "ok")
    if what == "reject":
        print("package.json missing openclaw.extensions")
        sys.exit(1)
    if what == "hang":
        time.sleep(600)
    if what == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    native_id = behaviour.get(spec, {}).get("id", package.split("/")[-1])
    path = state / "npm" / "projects" / native_id / "node_modules" / package
    path.mkdir(parents=True, exist_ok=True)
    (path / "package.json").write_text(json.dumps({"name": package, "version": version}))
    registry[native_id] = {"package": package, "version": "9.9.9" if what == "wrong-version" else version,
                           "integrity": behaviour.get(spec, {}).get("integrity", ""), "path": str(path),
                           "garbage": what == "garbage", "outside": what == "outside"}
    manifest_id = "not-" + native_id if what == "other-manifest" else native_id
    (path / "openclaw.plugin.json").write_text(json.dumps({"id": manifest_id, "configSchema": {}}))
    registry_path.write_text(json.dumps(registry))
    index = {"version": 1, "installRecords": {
        pid: {"source": "npm", "spec": f"{r['package']}@{r['version']}", "installPath": r["path"],
              "resolvedName": r["package"], "resolvedVersion": r["version"], "integrity": r["integrity"]}
        for pid, r in registry.items()},
        "plugins": [{"pluginId": pid, "source": ("/elsewhere" if r.get("outside") else r["path"]) + "/dist/index.js",
                     "rootDir": r["path"], "origin": "global", "enabled": True} for pid, r in registry.items()]}
    (state / "state").mkdir(parents=True, exist_ok=True)
    database = sqlite3.connect(state / "state" / "openclaw.sqlite")
    database.execute("CREATE TABLE IF NOT EXISTS config_machine_state (state_key TEXT NOT NULL PRIMARY KEY, "
                     "value_json TEXT NOT NULL, updated_at_ms INTEGER NOT NULL) STRICT")
    value = "<<not json>>" if what == "garbage" else json.dumps({"revision": 1, "index": index})
    database.execute("INSERT OR REPLACE INTO config_machine_state VALUES ('plugins.installedIndex', ?, 1)", (value,))
    database.commit()
    database.close()
    print(f"Installed plugin: {native_id}")
elif args[:2] == ["plugins", "list"]:
    config = json.loads(Path(os.environ["OPENCLAW_CONFIG_PATH"]).read_text())
    entries = (config.get("plugins") or {}).get("entries") or {}
    bundled = ["workboard", "llm-task"]
    disagree = behaviour.get("list") == "disagree"  # a runtime that reads the config otherwise
    plugins = [{"id": pid, "enabled": bool((entries.get(pid) or {}).get("enabled")) != disagree, "status": "loaded"}
               for pid in [*bundled, *registry]]
    print(json.dumps({"plugins": plugins}))
else:
    sys.exit(2)
