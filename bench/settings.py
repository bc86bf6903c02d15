"""Settings for benchmark runs: production settings plus the bench-only routes and timing header.

Nothing here ships: ``project.settings`` never points at ``bench.urls``.
"""

from project.settings import *  # noqa: F403
from project.settings import MIDDLEWARE as _OCC_MIDDLEWARE

ROOT_URLCONF = "bench.urls"
# Outermost, so every arm pays for it equally and it times the whole Django stack.
MIDDLEWARE = ["bench.middleware.ServerTimingMiddleware", *_OCC_MIDDLEWARE]
