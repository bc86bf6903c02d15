"""The console's ``django.forms`` forms, one module per area (``configurations``, ``access``,
``agent_create`` with what the Create Agent page holds in ``agent_choices``, the plugin picker's
``plugin_picker``, the Slack modal's ``slack``; ``base``: the form a command is built from).

A form normalizes what was typed and offers the choices it is given; the rules are the commands'
and the services' (the ones the API applies). Forms import no page model and no view
(pyproject.toml, contract ``console-rooms``).
"""
