"""The OpenClaw configuration document (``openclaw.json``), owned in one place.

- ``document``: the template the console starts from and reading it (the primary model, its
  provider, custom providers);
- ``render``: the runtime config a compute driver writes (the document with the driver-owned
  keys forced);
- ``slack``: merging the Slack channel settings into a document;
- ``validation``: OCC's own rules (shape, driver-owned keys, secret bindings) and, through
  ``schema``, the pinned OpenClaw runtime's own config schema.

Pure: no models, services, selectors or worker. Drivers, services and the console import it.
"""
