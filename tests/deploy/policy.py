"""The policy checkers that live in their own environment (tools/checkov, ``make checkov``):
checkov's Kubernetes checks, and kubernetes-validate 1.28 for the test cluster's 1.20 schemas
(the 1.37 release in OCC's own lock ships 1.25 and newer only). Both run offline, as commands.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "checkov" / ".venv" / "bin"

# Each document's errors against one schema version, strict (an unknown field fails); a kind the
# version has no schema for is an error too.
_VALIDATE = """
import json, sys
import kubernetes_validate
from kubernetes_validate.utils import VersionNotSupportedError
version = sys.argv[1]
errors = []
for document in json.load(sys.stdin):
    try:
        kubernetes_validate.validate(document, version, strict=True)
        errors.append(None)
    except kubernetes_validate.ValidationError as error:
        errors.append(".".join(str(p) for p in error.path) + ": " + error.message)
    except (kubernetes_validate.SchemaNotFoundError, VersionNotSupportedError) as error:
        errors.append(error.message)
json.dump(errors, sys.stdout)
"""


def tool(name: str) -> Path:
    """A command of tools/checkov's environment; the test skips without it (fails in CI)."""
    path = TOOLS / name
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path.relative_to(ROOT)} is missing in CI: `make checkov` installs it")
        pytest.skip(f"{path.relative_to(ROOT)} is not installed: `make checkov` installs it")
    return path


def schema_errors_1_20(documents: list[dict[str, Any]]) -> list[str | None]:
    """Each document's error against the Kubernetes 1.20 schema (None: valid), strict."""
    result = subprocess.run([str(tool("python")), "-I", "-W", "ignore::DeprecationWarning", "-c", _VALIDATE, "1.20.0"],
                            input=json.dumps(documents), capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    errors: list[str | None] = json.loads(result.stdout)
    assert len(errors) == len(documents)
    return errors


def checkov(documents: list[dict[str, Any]], folder: Path, checks: list[str]) -> dict[str, list[dict[str, Any]]]:
    """checkov's ``checks`` on ``documents`` (one file each, in ``folder``), offline: its
    ``passed_checks`` and ``failed_checks``, each entry naming ``check_id`` and ``resource``
    (``Kind.namespace.name``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, document in enumerate(documents):
        (folder / f"{index:03d}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    result = subprocess.run(
        [str(tool("checkov")), "--directory", str(folder), "--framework", "kubernetes", "--check", ",".join(checks),
         "--skip-download", "--output", "json"],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode in (0, 1), result.stderr  # 1: a check failed
    report = json.loads(result.stdout)
    results: dict[str, list[dict[str, Any]]] = report["results"]
    return results
