"""A stand-in for the whole ``openclaw`` CLI in the local driver's fast tests (not a test
module): ``plugins …`` runs ``stub_openclaw_plugins.py``, anything else ``stub_gateway.py``,
each as if it had been started itself."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent
script = "stub_openclaw_plugins.py" if sys.argv[1:2] == ["plugins"] else "stub_gateway.py"
sys.argv[0] = str(HERE / script)
runpy.run_path(str(HERE / script), run_name="__main__")
