"""Plugins: the PluginDriver contract, its drivers (curated and hosted catalogs, policy
validation, translation of selections into the native runtime config, install warnings) and
the registry that picks one per installation (``OCC_PLUGIN_DRIVER``).

Pure like the drivers under ``occ.drivers``: it imports nothing of OCC but ``occ.openclaw``
and the leaves (``occ.errors``, ``occ.ids``, ``occ.runtime``); services, selectors, the
worker, the compute drivers and the faces import it.
"""
