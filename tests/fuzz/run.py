"""``make fuzz``: schemathesis against ``/api/openapi.json`` of a real OCC, for a bounded time.

Starts the Procfile's web command (gunicorn) on a loopback port over a data directory of its own
(SQLite, the embedded defaults, or an empty PostgreSQL database given), migrated and
bootstrapped, with the ``default`` Namespace made ready as the worker would and the GitHub App
repository driver pointed at a loopback fake GitHub (tests/fakes/fake_github.py: repository
options and bindings answer as in production, not the 503 of an installation without one), and runs
``schemathesis run`` with the bootstrap administrator's key. Checks: every response in the
documented status set, media type and schema
(``status_code_conformance``, ``content_type_conformance``, ``response_schema_conformance``: the
document declares the error envelope for every error status an operation answers), and no 5xx
but a documented 501 ``NOT_IMPLEMENTED``, counted from the run's HAR file. Prints the number of
requests and of 5xx responses and exits non-zero on any failure.

    python -m tests.fuzz.run --seconds 300 [--seed N] [--database-url postgres://.../empty_db]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.fake_github import FakeGitHub
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
# not_a_server_error is left to the count below: a 501 NOT_IMPLEMENTED (a documented feature not
# built yet: plugin discovery without a PluginDriver) is documented, every
# other 5xx fails the run; schemathesis would fail both.
CHECKS = "status_code_conformance,content_type_conformance,response_schema_conformance"
START_TIMEOUT_SECONDS = 120
# Marks the default Namespace ready, as the worker's namespace job would (no worker runs here).
MAKE_READY = """
from django.utils import timezone
from occ.models import ControllerWork, Namespace, NamespaceStatus
now = timezone.now()
namespace = Namespace.objects.get(name="default")
ControllerWork.objects.filter(namespace=namespace, namespace_target="ready").update(
    state="succeeded", completed_at=now, reason_code="NAMESPACE_READY", updated_at=now)
Namespace.objects.filter(pk=namespace.pk).update(status=NamespaceStatus.READY)
"""


@dataclass
class Outcome:
    returncode: int
    requests: int
    statuses: dict[int, int]
    not_implemented: int  # 501 NOT_IMPLEMENTED: documented, not a failure
    output: str

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status >= 500)

    @property
    def failures(self) -> int:
        return self.server_errors - self.not_implemented

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.failures == 0 and self.requests > 0


def read_har(path: Path) -> tuple[collections.Counter[int], int]:
    entries = json.loads(path.read_text())["log"]["entries"] if path.exists() else []
    statuses = collections.Counter(entry["response"]["status"] for entry in entries)
    not_implemented = sum(1 for entry in entries if entry["response"]["status"] == 501
                          and '"NOT_IMPLEMENTED"' in entry["response"].get("content", {}).get("text", ""))
    return statuses, not_implemented


def server_errors(path: Path) -> list[str]:
    """Each 5xx but a documented 501 of the run, as one line: method, URL, status and body."""
    entries = json.loads(path.read_text())["log"]["entries"] if path.exists() else []
    return [f"{entry['request']['method']} {entry['request']['url']} -> {entry['response']['status']} "
            f"{entry['response'].get('content', {}).get('text', '')[:500]}"
            for entry in entries if entry["response"]["status"] >= 500
            and not (entry["response"]["status"] == 501
                     and '"NOT_IMPLEMENTED"' in entry["response"].get("content", {}).get("text", ""))]



def web_command() -> str:
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    return line[line.index("exec gunicorn"):]


def github_environment(github: FakeGitHub) -> dict[str, str]:
    """The settings that point OCC's GitHub App repository driver at ``github``."""
    return {"OCC_REPOSITORY_DRIVER": "github_app", "OCC_GITHUB_API_BASE_URL": github.origin,
            "OCC_GITHUB_APP_ID": github.app_id, "OCC_GITHUB_APP_INSTALLATION_ID": github.installation_id,
            "OCC_GITHUB_APP_PRIVATE_KEY_FILE": str(github.key_file)}


def environment(data_dir: Path, port: int, database_url: str | None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in {"DATABASE_URL", "CELERY_BROKER_URL", "OCC_TEST_DATABASE_NAME", "OCC_ADMIN_PASSWORD"}}
    if database_url:
        env["DATABASE_URL"] = database_url
    env.update(OCC_DATA_DIR=str(data_dir), OCC_PORT=str(port), PYTHONUNBUFFERED="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


def healthy(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        return b" 200 " in sock.recv(1024)
    return False


def fuzz(seconds: int, *, seed: int | None = None, workdir: Path | None = None,
         database_url: str | None = None) -> Outcome:
    """One run; ``database_url`` names an empty database of its own (else SQLite in the data
    directory)."""
    with tempfile.TemporaryDirectory(prefix="occ-fuzz-") as scratch, FakeGitHub() as github:
        base = workdir or Path(scratch)
        data_dir = base / "data"
        port = free_port()
        env = {**environment(data_dir, port, database_url), **github_environment(github)}
        manage = [sys.executable, "manage.py"]
        for argv in ([sys.executable, "-m", "project.data_dir"], [*manage, "migrate", "--noinput", "-v0"],
                     [*manage, "occ_bootstrap"], [*manage, "shell", "-c", MAKE_READY]):
            subprocess.run(argv, env=env, cwd=ROOT, check=True, capture_output=True)
        key = json.loads((data_dir / "bootstrap-admin-key.json").read_text())["data"]["key"]
        log = base / "web.log"
        with log.open("wb") as out:
            web = subprocess.Popen(["bash", "-c", web_command()], env=env, cwd=ROOT, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + START_TIMEOUT_SECONDS
            while not healthy(port):
                if web.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the web process did not start:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.3)
            har = base / "fuzz.har"
            argv = [sys.executable, "-m", "schemathesis.cli", "run", f"http://127.0.0.1:{port}/api/openapi.json",
                    "--header", f"x-api-key: {key}", "--max-time", str(seconds), "--checks", CHECKS,
                    "--workers", "1", "--report", "har", "--report-har-path", str(har),
                    "--suppress-health-check", "all", "--warnings", "off", "--output-truncate", "true"]
            if seed is not None:
                argv += ["--seed", str(seed)]
            run = subprocess.run(argv, env=env, cwd=base, capture_output=True, text=True, check=False)
            statuses, not_implemented = read_har(har)
            output = run.stdout + run.stderr
            if failed := server_errors(har):
                output += "\n--- web log (tail) ---\n" + log.read_text(errors="replace")[-4000:]
                output += "\n--- 5xx responses ---\n" + "\n".join(failed[:5])
            return Outcome(run.returncode, sum(statuses.values()), dict(statuses), not_implemented, output)
        finally:
            if web.poll() is None:
                os.killpg(web.pid, signal.SIGTERM)
            try:
                web.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(web.pid, signal.SIGKILL)
                web.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--keep", type=Path, help="keep the data directory, web log and HAR file here")
    parser.add_argument("--database-url", help="an empty PostgreSQL database of its own (default: SQLite)")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    outcome = fuzz(args.seconds, seed=args.seed, workdir=args.keep, database_url=args.database_url)
    print(outcome.output)
    print(f"fuzz: {outcome.requests} requests in {args.seconds} s, {outcome.server_errors} responses of 5xx "
          f"({outcome.not_implemented} of them a documented 501 NOT_IMPLEMENTED), "
          f"statuses {dict(sorted(outcome.statuses.items()))}, schemathesis exit {outcome.returncode}")
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())
