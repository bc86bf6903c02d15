"""The ``occ`` command starts without the ``kubernetes`` client: only ``occ tui`` on a revision
that runs on the kubernetes compute driver imports it (``occ_cli.tui.ATTACHERS``). The client
costs more than a second of start-up on these machines, which every other command would pay."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from occ_cli import tui
from occ_cli.client import CliError

PROBE = """
import json, sys
import occ_cli.main
print(json.dumps(sorted(name for name in sys.modules if name == "kubernetes" or name.startswith("kubernetes."))))
"""


def imported_kubernetes_modules(code: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_the_command_line_imports_no_kubernetes_module():
    assert imported_kubernetes_modules(PROBE) == []


def test_the_kubernetes_attacher_is_the_module_that_imports_the_client():
    probe = PROBE.replace("import occ_cli.main", "import occ_cli.main, importlib; importlib.import_module("
                          f"{tui.ATTACHERS['kubernetes']!r})")
    assert "kubernetes.stream" in imported_kubernetes_modules(probe)


def test_a_revision_on_a_driver_without_a_terminal_is_refused():
    target = tui.Target(namespace_id="ns_x", agent={"id": "agt_x"}, revision={"id": "rev_x", "compute": {"id": "fake"}})
    with pytest.raises(CliError) as refused:
        tui.attach(target, tui.TuiOptions(), tui.Where(namespace={"id": "ns_x"}))
    assert refused.value.code == "TUI_UNSUPPORTED_DRIVER"
