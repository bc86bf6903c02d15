"""``occ tui`` on the ``local`` compute driver, with a real OpenClaw gateway.

OCC runs as ``make run`` runs it with the ``local`` driver; the Agent's model is the loopback
fake (``tests/fakes/fake_openai.py``). The CLI deploys the Agent, then ``occ tui`` waits until
the revision is active, reads the gateway's address and password through ``manage.py
occ_gateway info`` (its audited read) and runs ``openclaw tui`` on a pseudo-terminal with a
client state directory of its own. The test reads the fake model's reply on that terminal,
leaves with Ctrl+D, and checks that the TUI exited 0, that the gateway still serves, and that
the password was in no argv and no output. One gateway (~1.2 GB); run it under
``flock /tmp/occ-heavy.lock``.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.files import GATEWAY_TITLES, GatewayRecord
from tests.e2e.stack import OccStack, stack_database, wait_until
from tests.e2e.test_gateway_api import (
    NAMESPACE_READY_SECONDS,
    fake_model_configuration,
    gateway_password,
    runtime,  # noqa: F401 (fixture)
    stop_gateways,
)
from tests.fakes.fake_openai import REPLY, FakeOpenAI
from tests.occ.drivers.compute.local_support import port_range

pytestmark = [pytest.mark.gateway, pytest.mark.slow]

OCC = Path(sys.executable).with_name("occ")
MODEL_KEY = "sk-tui-local-model-key-4d1e"
# Generous: a gateway takes 20-40 s of two idle cores to start and its first reply a few more;
# several times that on a loaded machine.
REPLY_SECONDS = 300
EXIT_SECONDS = 90


def run_cli(env: dict[str, str], *args: str, stdin: str | None = None) -> dict:
    done = subprocess.run([str(OCC), *args, "--json"], input=stdin, capture_output=True, text=True, env=env,
                          timeout=900, check=False)
    assert done.returncode == 0, f"occ {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return json.loads(done.stdout)


def processes_with_state_dir(state_dir: Path) -> list[tuple[int, list[str], dict[str, str]]]:
    """Processes whose OPENCLAW_STATE_DIR lies in ``state_dir``: pid, argv, environment (from /proc).
    (Found by environment: the runtime rewrites its process title, so its argv changes.)"""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            environ = dict(item.split("=", 1) for item in
                           (entry / "environ").read_bytes().decode(errors="replace").split("\0") if "=" in item)
            if environ.get("OPENCLAW_STATE_DIR", "").startswith(str(state_dir)):
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                found.append((int(entry.name), [a for a in argv if a], environ))
    return found


def test_occ_tui_attaches_to_the_local_gateway_and_ctrl_d_leaves_it_serving(runtime, tmp_path,  # noqa: F811
                                                                            settings, django_db_blocker):
    secret_key = Fernet.generate_key().decode()
    settings.OCC_SECRET_KEYS = [secret_key]  # to read the stack's gateway password, as the driver does
    model = FakeOpenAI().start()
    gateways: list[supervisor.ProcessIdentity] = []
    with contextlib.ExitStack() as cleanup, django_db_blocker.unblock():
        cleanup.callback(model.stop)
        database = cleanup.enter_context(stack_database(tmp_path / "stack" / "data", suffix="tui"))
        stack = OccStack(tmp_path / "stack", database=database, secret_key=secret_key, gateway_ports=port_range())
        cleanup.callback(stop_gateways, stack.data_dir, gateways)
        cleanup.callback(stack.stop)
        stack.start()
        client_state = tmp_path / "tui-client"
        env = {**stack.env, "OCC_URL": stack.base_url, "OCC_TUI_STATE_DIR": str(client_state),
               "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}

        wait_until(lambda: run_cli(env, "namespaces", "show", "default")["status"] == "ready",
                   timeout=NAMESPACE_READY_SECONDS, what="the default Namespace", diagnose=stack.tails)
        secret = run_cli(env, "secrets", "create", "model-key", "-n", "default", stdin=MODEL_KEY)
        body = tmp_path / "configuration.json"
        body.write_text(json.dumps({"kind": "agent", "values": fake_model_configuration(model.base_url)}))
        configuration = run_cli(env, "configurations", "create", "-n", "default", "-f", str(body))
        agent = run_cli(env, "agents", "create", "tui-agent", "-n", "default", "-c", configuration["id"],
                        "--model-secret", secret["id"])
        deployed = run_cli(env, "agents", "deploy", "tui-agent", "-n", "default")
        revision_id = deployed["revision"]["id"]
        assert deployed["agent"]["activeRevisionId"] == revision_id
        record = GatewayRecord.read(stack.data_dir / "agents" / agent["id"] / "gateway.json")
        assert record is not None
        assert record.process is not None
        gateways.append(record.process)
        password = gateway_password(database, agent["id"])

        # The TUI on a terminal of its own: it sends a first message and shows the reply.
        master, slave = pty.openpty()
        process = subprocess.Popen([str(OCC), "tui", "--namespace", "default", "--agent", "tui-agent",
                                    "--revision", revision_id, "--session", "tuitest", "--message", "hello from tui"],
                                   stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                                   close_fds=True)
        os.close(slave)
        cleanup.callback(os.close, master)
        cleanup.callback(lambda: process.poll() is None and process.kill())
        seen = bytearray()

        def shown(wanted: bytes, seconds: float) -> bool:
            deadline = time.monotonic() + seconds
            while wanted not in seen and time.monotonic() < deadline:
                if select.select([master], [], [], 1.0)[0]:
                    try:
                        seen.extend(os.read(master, 65536))
                    except OSError:
                        break
            return wanted in seen

        assert shown(REPLY.encode(), REPLY_SECONDS), f"no reply on the TUI's terminal:\n{seen[-3000:]!r}\n" \
                                                     f"{stack.tails()}"
        attached = processes_with_state_dir(client_state)
        assert attached, "the TUI runs with its own state folder"
        for _pid, argv, environ in attached:
            assert not any(password in arg for arg in argv), "the gateway password is in an argv"
            assert environ["OPENCLAW_GATEWAY_PASSWORD"] == password  # the environment carries it
            assert MODEL_KEY not in "\0".join(environ.values())

        # Ctrl+D leaves the TUI (sent again if a busy machine swallowed the first one).
        for _attempt in range(3):
            os.write(master, b"\x04")
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=EXIT_SECONDS / 3)
                break
        assert process.wait(timeout=EXIT_SECONDS) == 0
        shown(b"\0", 1.0)  # collect what is left on the terminal

        # The gateway keeps serving, the same process; the password was never shown.
        assert supervisor.is_same_process(record.process, titles=GATEWAY_TITLES)
        assert httpx.get(f"http://127.0.0.1:{record.port}/readyz", timeout=30).status_code == 200
        assert password.encode() not in seen
        assert MODEL_KEY.encode() not in seen

        run_cli(env, "agents", "delete", "tui-agent", "-n", "default")
