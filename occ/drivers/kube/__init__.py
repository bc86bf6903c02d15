"""The Kubernetes drivers: ``compute`` (OCC_COMPUTE_DRIVER=kubernetes) and ``secrets``
(OCC_SECRET_DRIVER=kubernetes), sharing one connection per cluster (``api``) and one naming
scheme (``names``)."""

from __future__ import annotations

from django.conf import settings

from occ.drivers.kube.api import Connection, Settings, connection_for


def configured_settings() -> Settings:
    timeout = float(settings.OCC_KUBERNETES_REQUEST_TIMEOUT_SECONDS)
    return Settings(auth=settings.OCC_KUBERNETES_AUTH, kubeconfig_path=settings.OCC_KUBERNETES_KUBECONFIG,
                    context=settings.OCC_KUBERNETES_CONTEXT, read_timeout=timeout,
                    gateway_route=settings.OCC_KUBERNETES_GATEWAY_ROUTE)


def configured_connection() -> Connection:
    """The process's connection to the configured cluster."""
    return connection_for(configured_settings())
