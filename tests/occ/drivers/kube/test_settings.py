"""The Kubernetes settings refused at start-up: a control-plane CIDR that is not one, or one that
admits every address to the gateways (each case a fresh interpreter loading project.settings)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

LOAD = "import project.settings as s; print(s.OCC_KUBERNETES_CONTROL_PLANE_CIDRS)"


def load(value: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OCC_KUBERNETES_CONTROL_PLANE_CIDRS": value}
    return subprocess.run([sys.executable, "-c", LOAD], env=env, cwd=settings.BASE_DIR, capture_output=True,
                          text=True, timeout=60, check=False)


def test_control_plane_cidrs_are_read_as_a_list():
    result = load("10.96.0.1/32,192.168.10.0/28")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['10.96.0.1/32', '192.168.10.0/28']"


@pytest.mark.parametrize(("value", "says"), [("10.0.0.0/33", "is not a CIDR"), ("apiserver", "is not a CIDR"),
                                             ("10.0.0.1/8", "is not a CIDR"), ("0.0.0.0/0", "every address"),
                                             ("::/0", "every address")])
def test_a_control_plane_cidr_that_is_none_or_admits_everyone_is_refused(value, says):
    result = load(value)
    assert result.returncode != 0
    assert "OCC_KUBERNETES_CONTROL_PLANE_CIDRS" in result.stderr
    assert says in result.stderr
