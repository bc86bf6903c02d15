"""The Kubernetes SecretDriver: one Opaque Secret per OCC Secret, in the Namespace's tenant
namespace, holding the value under the fixed key ``value``.

The backend name is ``<kubernetes namespace>/<namespaceId>/<secretId>``, derived from OCC's ids
only (``backend_name``): the tenant namespace of the Namespace (``oce-<sha256[:15]>``, or its
adopted ``existingNamespace``) and the Secret ``occ-<secret id>``. The Secret carries the
ownership labels (managed-by, the Namespace id, the Secret id); a Secret of that name without
them is never read, overwritten or deleted. Values are written to Secrets only, never to a
ConfigMap, a label or an annotation, and never appear in an error or a log line.

A create whose answer was lost is settled by reading back (``Connection.create_or_adopt``);
the service compensates (deletes) only when its own transaction is known to have failed.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from kubernetes import client
from kubernetes.client.rest import ApiException

from occ.drivers.kube import configured_connection, names
from occ.drivers.kube.api import Connection, KubeRefused, KubeUnavailable, NotOwned, OutcomeUnknown
from occ.drivers.secrets.base import SecretDriver, SecretDriverError, SecretValueMissing
from occ.ids import IdPrefix, is_valid_id

T = TypeVar("T")
VALUE_KEY = "value"


class BackendName:
    def __init__(self, backend_name: str) -> None:
        parts = backend_name.split("/")
        if len(parts) != 3 or not is_valid_id(parts[1], IdPrefix.NAMESPACE) or not is_valid_id(
                parts[2], IdPrefix.SECRET):
            raise SecretDriverError("Not a Kubernetes secret backend name.")
        self.kube_namespace, self.namespace_id, self.secret_id = parts
        self.name = names.occ_secret_name(self.secret_id)

    @property
    def labels(self) -> dict[str, str]:
        return {**names.owner_labels(self.namespace_id), names.SECRET_LABEL: self.secret_id}


def secret_body(target: BackendName, encoded: str) -> client.V1Secret:
    """The Secret that holds one value (base64 ``encoded``) of the Kubernetes SecretDriver: what
    ``put`` creates."""
    return client.V1Secret(
        metadata=client.V1ObjectMeta(name=target.name, namespace=target.kube_namespace, labels=target.labels,
                                     annotations=names.owner_annotations(target.namespace_id)),
        type="Opaque", data={VALUE_KEY: encoded})


class KubernetesSecretDriver(SecretDriver):
    driver_id = "kubernetes"

    def __init__(self, connection: Connection | None = None) -> None:
        self._connection = connection

    @property
    def connection(self) -> Connection:
        if self._connection is None:
            self._connection = configured_connection()
        return self._connection

    def backend_name(self, secret_id: str, *, namespace_id: str, existing_namespace: str | None = None) -> str:
        if not is_valid_id(secret_id, IdPrefix.SECRET) or not is_valid_id(namespace_id, IdPrefix.NAMESPACE):
            raise ValueError("backend names derive from OCC ids only")
        kube_namespace = existing_namespace or names.tenant_namespace(namespace_id)
        return f"{kube_namespace}/{namespace_id}/{secret_id}"

    # --- the contract -----------------------------------------------------------------------------
    def put(self, backend_name: str, value: str) -> None:
        target = BackendName(backend_name)
        encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
        body = secret_body(target, encoded)
        core = self.connection.core
        with _errors():
            _, created = self.connection.create_or_adopt(
                create=core.create_namespaced_secret, args=(target.kube_namespace,), body=body,
                read=lambda: self._read(target), owner=target.labels)
            if not created:
                # Ours already (an earlier value, or our own create whose answer was lost): set the value.
                self.connection.patch(core.patch_namespaced_secret, target.name, target.kube_namespace,
                                     {"data": {VALUE_KEY: encoded}})

    def delete(self, backend_name: str) -> None:
        target = BackendName(backend_name)
        with _errors():
            found = self.connection.read_owned(lambda: self._read(target), target.labels)
            if found is None:
                return
            self.connection.delete(self.connection.core.delete_namespaced_secret, target.name,
                                   target.kube_namespace, uid=found.metadata.uid)

    def with_value(self, backend_name: str, consumer: Callable[[str], T]) -> T:
        target = BackendName(backend_name)
        with _errors():
            found = self.connection.read_owned(lambda: self._read(target), target.labels)
        encoded = (found.data or {}).get(VALUE_KEY) if found is not None else None
        if encoded is None:
            raise SecretValueMissing()
        return consumer(base64.b64decode(encoded).decode("utf-8"))

    def _read(self, target: BackendName) -> client.V1Secret | None:
        return self.connection.read(self.connection.core.read_namespaced_secret, target.name, target.kube_namespace)


@contextmanager
def _errors() -> Iterator[None]:
    """Kubernetes failures as SecretDriverError, with safe messages only."""
    try:
        yield
    except SecretDriverError:
        raise
    except NotOwned:
        raise SecretDriverError("A Kubernetes Secret of that name exists but is not OCC's.") from None
    except OutcomeUnknown:
        raise SecretDriverError("The secret store did not confirm the write. Try again.") from None
    except KubeUnavailable:
        raise SecretDriverError() from None
    except (KubeRefused, ApiException) as exc:
        status = getattr(exc, "status", None)
        raise SecretDriverError(f"The Kubernetes API refused the secret operation (HTTP {status}).") from None
