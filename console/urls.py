"""The console's URLs: each area's module owns its patterns; order matters only for
``agents/new`` and ``agents/start`` (before ``agents/<id>``) and the catch-all, which comes last."""

from django.urls import path

from console.views import (
    access,
    agent_chat,
    agent_create,
    agent_detail,
    agent_presets,
    agent_provisioning,
    agent_repositories,
    agent_runtime,
    agent_sharing,
    agent_writes,
    agents,
    audit,
    configurations,
    installation_principals,
    members,
    namespaces,
    plugins,
    secrets,
    service_keys,
    sessions,
    shell,
    single_sign_on,
    slack,
    usage,
)

app_name = "console"

urlpatterns = [
    *shell.urlpatterns,
    *single_sign_on.urlpatterns,
    *namespaces.urlpatterns,
    *secrets.urlpatterns,
    *configurations.urlpatterns,
    *agents.urlpatterns,
    *agent_create.urlpatterns,
    *agent_presets.urlpatterns,
    *agent_repositories.urlpatterns,
    *agent_provisioning.urlpatterns,
    *plugins.urlpatterns,
    *slack.urlpatterns,
    *agent_chat.urlpatterns,
    *agent_detail.urlpatterns,
    *agent_sharing.urlpatterns,
    *agent_writes.urlpatterns,
    *agent_runtime.urlpatterns,
    *access.urlpatterns,
    *service_keys.urlpatterns,
    *members.urlpatterns,
    *installation_principals.urlpatterns,
    *audit.urlpatterns,
    *usage.urlpatterns,
    *sessions.urlpatterns,
    path("<path:rest>", shell.not_found, name="not-found"),
]
