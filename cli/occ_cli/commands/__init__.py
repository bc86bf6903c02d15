"""The ``occ`` command groups, one module each: ``occ namespaces``, ``secrets``, ``configurations``, ``agents``."""
