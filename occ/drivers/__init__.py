"""Driver contracts and their implementations: how OCC reaches the outside world.

Drivers are pure: they import no model, service, selector, IAM or worker module (the
``pure-drivers`` import contract in pyproject.toml), read none of OCC's tables and keep no
state in them (the database SecretDriver's own encrypted table aside, which lives in
``occ.drivers.secrets.models``). They get everything as arguments, are idempotent, and use
deterministic names derived from our ids.
"""
