"""The Python `kubernetes` client's typed APIs against turtles (driven by tests/tests/clients.rs).

Usage: typed_clients.py KUBECONFIG. Prints "ok" when every check holds; raises otherwise.
"""
import json
import sys

from kubernetes import client, config

config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
apps = client.AppsV1Api()
batch = client.BatchV1Api()
net = client.NetworkingV1Api()
policy = client.PolicyV1Api()
autoscaling = client.AutoscalingV2Api()
storage = client.StorageV1Api()

NS = "pyclient"
meta = client.V1ObjectMeta
core.create_namespace(client.V1Namespace(metadata=meta(name=NS)))

pod_spec = client.V1PodSpec(
    containers=[client.V1Container(name="c", image="busybox:1.36", ports=[client.V1ContainerPort(container_port=80)])]
)
template = client.V1PodTemplateSpec(metadata=meta(labels={"app": "py"}), spec=pod_spec)
selector = client.V1LabelSelector(match_labels={"app": "py"})

svc = core.create_namespaced_service(
    NS,
    client.V1Service(
        metadata=meta(name="web"),
        spec=client.V1ServiceSpec(selector={"app": "py"}, ports=[client.V1ServicePort(port=80)]),
    ),
)
assert svc.spec.type == "ClusterIP", svc.spec
assert svc.spec.session_affinity == "None", svc.spec
assert svc.spec.ports[0].protocol == "TCP" and svc.spec.ports[0].target_port == 80, svc.spec

job = batch.create_namespaced_job(
    NS,
    client.V1Job(
        metadata=meta(name="once"),
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[client.V1Container(name="c", image="busybox")])
            )
        ),
    ),
)
assert job.spec.backoff_limit == 6 and job.spec.completions == 1, job.spec
assert job.spec.selector.match_labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid

cj = batch.create_namespaced_cron_job(
    NS,
    client.V1CronJob(
        metadata=meta(name="nightly"),
        spec=client.V1CronJobSpec(
            schedule="0 3 * * *",
            job_template=client.V1JobTemplateSpec(
                spec=client.V1JobSpec(
                    template=client.V1PodTemplateSpec(
                        spec=client.V1PodSpec(restart_policy="OnFailure", containers=[client.V1Container(name="c", image="busybox")])
                    )
                )
            ),
        ),
    ),
)
assert cj.spec.concurrency_policy == "Allow" and cj.spec.successful_jobs_history_limit == 3, cj.spec

sts = apps.create_namespaced_stateful_set(
    NS,
    client.V1StatefulSet(
        metadata=meta(name="db"),
        spec=client.V1StatefulSetSpec(service_name="db", selector=selector, template=template),
    ),
)
assert sts.spec.pod_management_policy == "OrderedReady", sts.spec
ds = apps.create_namespaced_daemon_set(
    NS, client.V1DaemonSet(metadata=meta(name="agent"), spec=client.V1DaemonSetSpec(selector=selector, template=template))
)
assert ds.spec.update_strategy.type == "RollingUpdate", ds.spec

ing = net.create_namespaced_ingress(
    NS,
    client.V1Ingress(
        metadata=meta(name="web"),
        spec=client.V1IngressSpec(
            default_backend=client.V1IngressBackend(
                service=client.V1IngressServiceBackend(name="web", port=client.V1ServiceBackendPort(number=80))
            )
        ),
    ),
)
assert ing.spec.default_backend.service.port.number == 80
pdb = policy.create_namespaced_pod_disruption_budget(
    NS, client.V1PodDisruptionBudget(metadata=meta(name="web"), spec=client.V1PodDisruptionBudgetSpec(min_available=1, selector=selector))
)
assert pdb.spec.min_available == 1
hpa = autoscaling.create_namespaced_horizontal_pod_autoscaler(
    NS,
    client.V2HorizontalPodAutoscaler(
        metadata=meta(name="web"),
        spec=client.V2HorizontalPodAutoscalerSpec(
            max_replicas=3,
            scale_target_ref=client.V2CrossVersionObjectReference(api_version="apps/v1", kind="StatefulSet", name="db"),
        ),
    ),
)
assert hpa.spec.min_replicas == 1 and hpa.spec.metrics[0].resource.name == "cpu", hpa.spec
sc = storage.create_storage_class(client.V1StorageClass(metadata=meta(name="py-fast"), provisioner="example.com/fast"))
assert sc.reclaim_policy == "Delete" and sc.volume_binding_mode == "Immediate"
pvc = core.create_namespaced_persistent_volume_claim(
    NS,
    client.V1PersistentVolumeClaim(
        metadata=meta(name="data"),
        spec=client.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"], resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"})
        ),
    ),
)
assert pvc.status.phase == "Pending" and pvc.spec.volume_mode == "Filesystem"

# Reads, lists and patches through the typed APIs.
assert core.read_namespaced_service("web", NS).spec.ports[0].port == 80
assert [j.metadata.name for j in batch.list_namespaced_job(NS).items] == ["once"]
patched = apps.patch_namespaced_stateful_set("db", NS, {"spec": {"replicas": 3}})
assert patched.spec.replicas == 3 and patched.metadata.generation == 2, patched.metadata

# delete_namespaced_pod decodes the deleted Pod (kube answers the object, not a Status).
core.create_namespaced_pod(NS, client.V1Pod(metadata=meta(name="p"), spec=pod_spec))
deleted = core.delete_namespaced_pod("p", NS)
assert isinstance(deleted, client.V1Pod) and deleted.metadata.name == "p", deleted
deleted_svc = core.delete_namespaced_service("web", NS)
assert deleted_svc.metadata.name == "web" and deleted_svc.spec.type == "ClusterIP"

# A wrong type is refused with kube's message.
try:
    core.create_namespaced_config_map(NS, {"metadata": {"name": "bad"}, "data": {"x": 5}})
    raise AssertionError("a wrong-typed ConfigMap was stored")
except client.exceptions.ApiException as e:
    assert e.status == 400 and "cannot unmarshal number" in e.body, e.body

# Server-side apply through the dynamic client's server_side_apply (an apply-patch PATCH).
from kubernetes import dynamic

dyn = dynamic.DynamicClient(client.ApiClient())
deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
manifest = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "applied", "namespace": NS},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "applied"}},
        "template": {
            "metadata": {"labels": {"app": "applied"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
        },
    },
}
out = deployments.server_side_apply(body=manifest, namespace=NS, field_manager="py-apply")
assert out.spec.replicas == 2, out.spec
assert [(m.manager, m.operation) for m in out.metadata.managedFields] == [("py-apply", "Apply")], out.metadata
scaled = dict(manifest, spec={"replicas": 5, "selector": manifest["spec"]["selector"],
                              "template": manifest["spec"]["template"]})
try:
    deployments.server_side_apply(body=scaled, namespace=NS, field_manager="py-other")
    raise AssertionError("a conflicting apply was accepted")
except dynamic.exceptions.ConflictError as e:
    status = json.loads(e.body)
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "py-apply": .spec.replicas', status
out = deployments.server_side_apply(body=scaled, namespace=NS, field_manager="py-other", force_conflicts=True)
assert out.spec.replicas == 5, out.spec
# Typed reads see the managed fields kube-style.
typed = apps.read_namespaced_deployment("applied", NS)
assert {m.manager for m in typed.metadata.managed_fields} == {"py-apply", "py-other"}, typed.metadata.managed_fields

# A CertificateSigningRequest approved through its /approval subresource (a JSON PUT, where
# kubectl sends protobuf), then signed by the host's signer.
import base64
import os
import time

certs = client.CertificatesV1Api()
csr = certs.create_certificate_signing_request(
    client.V1CertificateSigningRequest(
        metadata=meta(name="py-client"),
        spec=client.V1CertificateSigningRequestSpec(
            request=os.environ["TURTLES_CSR"],
            signer_name="kubernetes.io/kube-apiserver-client",
            usages=["client auth"],
            expiration_seconds=3600,
        ),
    )
)
assert csr.spec.username, csr.spec
assert not csr.status.conditions and not csr.status.certificate, csr.status
csr.status.conditions = [
    client.V1CertificateSigningRequestCondition(type="Approved", status="True", reason="PyApprove", message="by the test")
]
approved = certs.replace_certificate_signing_request_approval("py-client", csr)
cond = approved.status.conditions[0]
assert (cond.type, cond.reason) == ("Approved", "PyApprove") and cond.last_transition_time, cond
deadline = time.monotonic() + 15
while True:
    got = certs.read_certificate_signing_request("py-client")
    if got.status.certificate:
        break
    assert time.monotonic() < deadline, got.status
    time.sleep(0.05)
pem = base64.b64decode(got.status.certificate).decode()
assert pem.startswith("-----BEGIN CERTIFICATE-----"), pem

# An eviction, as a Python controller sends one (create_namespaced_pod_eviction): refused with
# 429 while the budget `web` (minAvailable 1, selecting app=py) allows no disruption.
core.create_namespaced_pod(NS, client.V1Pod(metadata=meta(name="evictee", labels={"app": "py"}), spec=pod_spec))
core.patch_namespaced_pod_status(
    "evictee", NS, {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
)
deadline = time.monotonic() + 15
while True:
    st = policy.read_namespaced_pod_disruption_budget("web", NS).status
    if st and st.current_healthy == 1 and st.disruptions_allowed == 0:
        break
    assert time.monotonic() < deadline, st
    time.sleep(0.05)
eviction = client.V1Eviction(metadata=meta(name="evictee", namespace=NS))
try:
    core.create_namespaced_pod_eviction("evictee", NS, eviction)
    raise AssertionError("the eviction should have been refused")
except client.exceptions.ApiException as e:
    assert e.status == 429, e
    assert "disruption budget" in e.body, e.body
policy.patch_namespaced_pod_disruption_budget("web", NS, {"spec": {"minAvailable": 0}})
deadline = time.monotonic() + 15
while True:
    st = policy.read_namespaced_pod_disruption_budget("web", NS).status
    if st.disruptions_allowed == 1:
        break
    assert time.monotonic() < deadline, st
    time.sleep(0.05)
core.create_namespaced_pod_eviction("evictee", NS, eviction)
assert "evictee" not in [p.metadata.name for p in core.list_namespaced_pod(NS).items]

# The client escapes every path parameter (`quote(name, safe='')`: `system:node` goes as
# `system%3Anode`); the server reads the names decoded, as Go's server decodes the path.
rbac = client.RbacAuthorizationV1Api()
assert rbac.read_cluster_role("system:node").metadata.name == "system:node"
rule = client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get"])
for name in ["weird role", "r\u00f4le", "py:a@b"]:
    rbac.create_cluster_role(client.V1ClusterRole(metadata=meta(name=name), rules=[rule]))
    assert rbac.read_cluster_role(name).metadata.name == name
    rbac.delete_cluster_role(name)
    try:
        rbac.read_cluster_role(name)
        raise AssertionError(name + " should be gone")
    except client.exceptions.ApiException as e:
        assert e.status == 404, e
        message = json.loads(e.body)["message"]
        assert message == 'clusterroles.rbac.authorization.k8s.io "%s" not found' % name, message

# A `null` in a map[string]string (what a Helm chart's unset value gives) is "", as Go's decoder
# leaves it: a label selector `blank=` selects the object, and the models read "" (not None).
cm = core.create_namespaced_config_map(
    NS,
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nulls", "labels": {"blank": None}, "annotations": {"n": None}},
        "data": {"k": None},
    },
)
assert cm.metadata.labels == {"blank": ""} and cm.metadata.annotations == {"n": ""}, cm.metadata
assert cm.data == {"k": ""}, cm.data
assert [c.metadata.name for c in core.list_namespaced_config_map(NS, label_selector="blank=").items] == ["nulls"]

print("ok")
