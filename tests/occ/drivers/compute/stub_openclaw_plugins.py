"""A stand-in for ``openclaw plugins install|inspect|list`` (run as ``python this.py plugins ...``).

What each npm spec does comes from ``stub-plugins.json`` in the working directory (the Agent's
folder): ``ok`` installs (a package folder under the state directory, recorded in
``stub-registry.json``), ``reject`` exits 1 as the runtime does when it refuses a package,
``hang`` sleeps past any timeout, ``crash`` dies by SIGKILL, ``garbage`` installs but
``inspect`` prints something that is not JSON, ``wrong-version`` records another version.
"""

from __future__ import annotations

import json
import os
import signal
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
                           "garbage": what == "garbage"}
    registry_path.write_text(json.dumps(registry))
    print(f"Installed plugin: {native_id}")
elif args[:2] == ["plugins", "inspect"]:
    record = registry.get(args[2])
    if record is None:
        print("not found")
        sys.exit(1)
    if record["garbage"]:
        print("<<not json>>")
        sys.exit(0)
    print(json.dumps({"plugin": {"id": args[2], "source": record["path"] + "/dist/index.js"},
                      "install": {"source": "npm", "resolvedName": record["package"],
                                  "resolvedVersion": record["version"], "integrity": record["integrity"],
                                  "installPath": record["path"]}}))
elif args[:2] == ["plugins", "list"]:
    config = json.loads(Path(os.environ["OPENCLAW_CONFIG_PATH"]).read_text())
    entries = (config.get("plugins") or {}).get("entries") or {}
    bundled = ["workboard", "llm-task"]
    plugins = [{"id": pid, "enabled": bool((entries.get(pid) or {}).get("enabled")), "status": "loaded"}
               for pid in [*bundled, *registry]]
    print(json.dumps({"plugins": plugins}))
else:
    sys.exit(2)
