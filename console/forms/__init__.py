"""The console's ``django.forms`` forms, one module per area (``configurations``, ``access``).

A form normalizes what was typed and offers the choices it is given; the rules are the commands'
and the services' (the ones the API applies). Forms import no page model and no view
(pyproject.toml, contract ``console-rooms``). The Create Agent form (``console.agent_form``) and
the Slack modal's rules (``console.slack_settings``) join this package once Create Agent's rewrite
lands.
"""
