"""Driver contracts and their implementations: how OCC reaches the outside world.

Drivers keep no state in OCC's tables (the database SecretDriver's own encrypted table
aside), are idempotent, and use deterministic names derived from our ids.
"""
