# turtles-world: policy
"""`py-defaults`: a mutating admission policy (world `policy` of wit/admission, see build.sh).

On core v1 Pods (CREATE) and apps/v1 Deployments (CREATE, UPDATE; their pod template):
- every container (and init container) gets the resource requests it lacks among
  `cpu: 100m` and `memory: 128Mi` (only the missing keys; a key with a limit but no request gets
  the limit, as kube would default it, so the request never exceeds the limit);
- the object gets the label `team` when it has none: its Namespace's `team` label, read from the
  host's index (permission get/list namespaces), else `unassigned`.
It answers with a JSON patch and the warning `py-defaults: set ...` when it changed something.
"""

from turtles_admission import CREATE, FAIL, UPDATE, Permission, Policy, Registration, Rule, cache, log

DEFAULT_REQUESTS = {"cpu": "100m", "memory": "128Mi"}
TEAM = "team"
UNASSIGNED = "unassigned"


def pod_spec(request):
    """The pod spec of the written object: the pod's own, or a Deployment's template's."""
    spec = request.object.get("spec") or {}
    if request.is_resource("apps/v1/deployments"):
        spec = (spec.get("template") or {}).get("spec") or {}
    return spec


def default_requests(spec):
    """Fill in the missing requests of every container of `spec` (in place); what was set, as text."""
    done = []
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            resources = c.get("resources") or {}
            requests = resources.get("requests") or {}
            limits = resources.get("limits") or {}
            missing = [k for k in DEFAULT_REQUESTS if k not in requests]
            if not missing:
                continue
            for k in missing:
                requests[k] = limits.get(k, DEFAULT_REQUESTS[k])
            resources["requests"] = requests
            c["resources"] = resources
            done.append(f"container {c.get('name')} requests " + " ".join(f"{k}={requests[k]}" for k in missing))
    return done


def namespace_team(namespace):
    """The `team` label of the Namespace, or `unassigned` (no such label, Namespace not found)."""
    ns = cache.get("v1/namespaces", None, namespace) if namespace else None
    labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(TEAM) or UNASSIGNED


class Defaults(Policy):
    def register(self):
        return Registration(
            [Rule("v1/pods", CREATE), Rule("apps/v1/deployments", [CREATE, UPDATE])],
            validating=False,
            mutating=True,
            failure_policy=FAIL,
            permissions=[Permission.core("namespaces", ["get", "list"])],
        )

    def mutate(self, request):
        obj = request.object
        if obj is None or request.sub_resource:
            return None  # a delete, or a subresource: nothing to default
        done = default_requests(pod_spec(request))
        meta = obj.setdefault("metadata", {})
        labels = meta.get("labels") or {}
        if TEAM not in labels:
            labels[TEAM] = namespace_team(request.namespace or meta.get("namespace") or "")
            meta["labels"] = labels
            done.insert(0, f"label {TEAM}={labels[TEAM]}")
        if not done:
            return None
        log.info("defaulted", resource=request.resource, namespace=request.namespace, name=request.name or "-",
                 set="; ".join(done))
        return request.patch("py-defaults: set " + "; ".join(done))


WitWorld = Defaults.export()
