"""Kinds by group/version/resource, and their API paths."""

from urllib.parse import quote


class Resource:
    """A kind by API group, version and plural resource name (group "" is the core group).

    Anywhere the SDK takes a resource it also takes a string: "v1/configmaps" (core group) or
    "apps/v1/deployments".
    """

    __slots__ = ("group", "version", "resource")

    def __init__(self, group, version, resource):
        self.group = group
        self.version = version
        self.resource = resource

    @classmethod
    def parse(cls, spec):
        """"v1/configmaps" -> core v1 configmaps; "apps/v1/deployments" -> apps v1 deployments."""
        parts = spec.strip("/").split("/")
        if len(parts) == 2:
            return cls("", parts[0], parts[1])
        if len(parts) == 3:
            return cls(parts[0], parts[1], parts[2])
        raise ValueError(f"not a resource: {spec!r} (want 'v1/configmaps' or 'apps/v1/deployments')")

    @property
    def api_version(self):
        """The apiVersion of its objects: "v1", "apps/v1"."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace=None):
        """The collection path; every namespace (or a cluster-scoped kind) when namespace is empty."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace:
            return f"{prefix}/namespaces/{quote(namespace, safe='')}/{self.resource}"
        return f"{prefix}/{self.resource}"

    def object_path(self, namespace, name, subresource=None):
        """One object's path (namespace "" or None: cluster-scoped), optionally a subresource."""
        path = f"{self.path(namespace)}/{quote(name, safe='')}"
        return f"{path}/{subresource}" if subresource else path

    def __eq__(self, other):
        return isinstance(other, Resource) and (self.group, self.version, self.resource) == (
            other.group,
            other.version,
            other.resource,
        )

    def __hash__(self):
        return hash((self.group, self.version, self.resource))

    def __repr__(self):
        return f"Resource({self.api_version}/{self.resource})"

    def __str__(self):
        return f"{self.api_version}/{self.resource}"


def resource(spec):
    """A Resource from a Resource or a "group/version/resource" string."""
    if isinstance(spec, Resource):
        return spec
    if isinstance(spec, str):
        return Resource.parse(spec)
    raise TypeError(f"not a resource: {spec!r}")


CONFIGMAPS = Resource("", "v1", "configmaps")
SECRETS = Resource("", "v1", "secrets")
NAMESPACES = Resource("", "v1", "namespaces")
PODS = Resource("", "v1", "pods")
SERVICES = Resource("", "v1", "services")
EVENTS = Resource("", "v1", "events")
DEPLOYMENTS = Resource("apps", "v1", "deployments")
REPLICASETS = Resource("apps", "v1", "replicasets")
