//! kube-rs's typed `Api<K>` (k8s-openapi 1.34 types) against the real binary: an object of every
//! built-in kind turtles serves is created, read, listed, merge-patched and deleted, each answer
//! decoded into its Rust type (which fails when a field has the wrong shape or a required one is
//! missing).

use std::fmt::Debug;

use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, autoscaling::v2 as autoscaling,
    batch::v1 as batch, certificates::v1 as certificates, coordination::v1 as coordination,
    core::v1 as core, discovery::v1 as discovery, flowcontrol::v1 as flowcontrol,
    networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
    resource::v1 as resource, scheduling::v1 as scheduling, storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use k8s_openapi::serde::{de::DeserializeOwned, Serialize};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config, Resource, ResourceExt};
use turtles_tests::{example_object_in, Server};

const NS: &str = "kube-rs";

async fn round_trip<K>(api: Api<K>)
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let kind = K::kind(&());
    let name = format!("ex-{}", K::plural(&()));
    let example = example_object_in(&K::api_version(&()), &kind, &name, NS);
    let obj: K = serde_json::from_value(example.clone())
        .unwrap_or_else(|e| panic!("{kind}: the example does not fit the type: {e}\n{example}"));
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{kind}: create: {e}"));
    let name = created.name_any();
    assert!(created.uid().is_some(), "{kind}: no uid");
    let got = api
        .get(&name)
        .await
        .unwrap_or_else(|e| panic!("{kind}: get: {e}"));
    assert_eq!(got.uid(), created.uid(), "{kind}");
    // The create's revision or a later one: a built-in controller may have written the object
    // since (the ValidatingAdmissionPolicy status controller writes `typeChecking` at once).
    let rv = |o: &K| o.resource_version().and_then(|v| v.parse::<u64>().ok());
    assert!(
        rv(&created).is_some() && rv(&got) >= rv(&created),
        "{kind}: created at {:?}, read at {:?}",
        created.resource_version(),
        got.resource_version()
    );
    let listed = api
        .list(&ListParams::default().labels("walk=yes"))
        .await
        .unwrap_or_else(|e| panic!("{kind}: list: {e}"));
    assert!(
        listed.items.iter().any(|o| o.name_any() == name),
        "{kind}: not listed"
    );
    let patch = serde_json::json!({"metadata": {"labels": {"patched": "yes"}}});
    let patched = api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("{kind}: patch: {e}"));
    assert_eq!(
        patched.labels().get("patched").map(String::as_str),
        Some("yes"),
        "{kind}"
    );
    api.delete(&name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{kind}: delete: {e}"));
}

#[test]
fn kube_rs_typed_apis_round_trip_every_kind() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", NS]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let kubeconfig = Kubeconfig::read_from(&s.kubeconfig).unwrap();
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
        // kube-rs retries a 429 by default (15 times, backing off up to minutes): the evictions
        // below go through a client that does not, to see the 429 itself.
        let mut no_retry = config.clone();
        no_retry.default_retry = false;
        let c = Client::try_from(config).unwrap();
        let c_no_retry = Client::try_from(no_retry).unwrap();
        macro_rules! namespaced {
            ($($t:ty),* $(,)?) => {$(
                round_trip::<$t>(Api::namespaced(c.clone(), NS)).await;
            )*};
        }
        macro_rules! cluster {
            ($($t:ty),* $(,)?) => {$(
                round_trip::<$t>(Api::all(c.clone())).await;
            )*};
        }
        namespaced!(
            core::ConfigMap,
            core::Secret,
            core::ServiceAccount,
            core::Event,
            core::Pod,
            core::Service,
            core::Endpoints,
            core::LimitRange,
            core::PersistentVolumeClaim,
            core::PodTemplate,
            core::ReplicationController,
            core::ResourceQuota,
            apps::Deployment,
            apps::ReplicaSet,
            apps::StatefulSet,
            apps::DaemonSet,
            apps::ControllerRevision,
            batch::Job,
            batch::CronJob,
            autoscaling::HorizontalPodAutoscaler,
            policy::PodDisruptionBudget,
            networking::Ingress,
            networking::NetworkPolicy,
            discovery::EndpointSlice,
            storage::CSIStorageCapacity,
            coordination::Lease,
            resource::ResourceClaim,
            resource::ResourceClaimTemplate,
            rbac::Role,
            rbac::RoleBinding,
        );
        cluster!(
            core::Namespace,
            core::Node,
            core::PersistentVolume,
            networking::IngressClass,
            networking::IPAddress,
            networking::ServiceCIDR,
            storage::StorageClass,
            storage::CSIDriver,
            storage::CSINode,
            storage::VolumeAttachment,
            storage::VolumeAttributesClass,
            scheduling::PriorityClass,
            node::RuntimeClass,
            certificates::CertificateSigningRequest,
            admission::MutatingWebhookConfiguration,
            admission::ValidatingWebhookConfiguration,
            admission::ValidatingAdmissionPolicy,
            admission::ValidatingAdmissionPolicyBinding,
            apiregistration::APIService,
            flowcontrol::FlowSchema,
            flowcontrol::PriorityLevelConfiguration,
            resource::DeviceClass,
            resource::ResourceSlice,
            apiextensions::CustomResourceDefinition,
            rbac::ClusterRole,
            rbac::ClusterRoleBinding,
        );

        // Server-side apply as a kube-rs controller writes: `Patch::Apply` with
        // `PatchParams::apply(manager).force()`, creating, then changing a field another
        // manager set.
        let cms: Api<core::ConfigMap> = Api::namespaced(c.clone(), NS);
        let cm = |v: &str| -> core::ConfigMap {
            serde_json::from_value(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "ssa"}, "data": {"a": v}}))
            .unwrap()
        };
        let pp = PatchParams::apply("kube-rs-ctrl").force();
        let out = cms
            .patch("ssa", &pp, &Patch::Apply(&cm("1")))
            .await
            .unwrap();
        assert_eq!(out.data.unwrap()["a"], "1");
        let mf = out.metadata.managed_fields.unwrap();
        assert_eq!(mf.len(), 1);
        assert_eq!(mf[0].manager.as_deref(), Some("kube-rs-ctrl"));
        assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
        let other = PatchParams::apply("other");
        let err = cms
            .patch("ssa", &other, &Patch::Apply(&cm("2")))
            .await
            .unwrap_err();
        match err {
            kube::Error::Api(e) => {
                assert_eq!(e.code, 409);
                assert_eq!(
                    e.message,
                    "Apply failed with 1 conflict: conflict with \"kube-rs-ctrl\": .data.a"
                );
            }
            e => panic!("expected a conflict: {e}"),
        }
        let out = cms
            .patch("ssa", &other.force(), &Patch::Apply(&cm("2")))
            .await
            .unwrap();
        assert_eq!(out.data.unwrap()["a"], "2");
        let managers: Vec<_> = out
            .metadata
            .managed_fields
            .unwrap()
            .into_iter()
            .filter_map(|e| e.manager)
            .collect();
        assert_eq!(managers, ["other"]);

        // A CertificateSigningRequest approved as a kube-rs controller approves one:
        // `Api::patch_approval` (a merge PATCH of `/approval`), then issued by the host's signer.
        let csrs: Api<certificates::CertificateSigningRequest> = Api::all(c.clone());
        let csr: certificates::CertificateSigningRequest =
            serde_json::from_value(serde_json::json!({
                "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                "metadata": {"name": "kube-rs-client"},
                "spec": {"request": turtles_tests::EXAMPLE_CSR,
                    "signerName": "kubernetes.io/kube-apiserver-client",
                    "usages": ["client auth"]}}))
            .unwrap();
        let created = csrs.create(&PostParams::default(), &csr).await.unwrap();
        assert!(created.spec.username.is_some_and(|u| !u.is_empty()));
        let approval = serde_json::json!({"status": {"conditions": [{"type": "Approved",
            "status": "True", "reason": "KubeRsApprove", "message": "by the test"}]}});
        let approved = csrs
            .patch_approval(
                "kube-rs-client",
                &PatchParams::default(),
                &Patch::Merge(&approval),
            )
            .await
            .unwrap();
        let conds = approved.status.and_then(|s| s.conditions).unwrap();
        assert_eq!(conds[0].reason.as_deref(), Some("KubeRsApprove"));
        assert!(conds[0].last_transition_time.is_some());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let issued = loop {
            let got = csrs.get("kube-rs-client").await.unwrap();
            if let Some(cert) = got.status.and_then(|s| s.certificate) {
                break cert;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no certificate issued"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        assert!(String::from_utf8_lossy(&issued.0).starts_with("-----BEGIN CERTIFICATE-----"));

        // Evictions as a kube-rs controller sends them (`Api::<Pod>::evict`): refused with 429
        // while the budget allows no disruption, done once it allows one.
        let pods: Api<core::Pod> = Api::namespaced(c_no_retry.clone(), NS);
        let pod: core::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "evictee", "labels": {"app": "evictee"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
        let running = serde_json::json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}});
        pods.patch_status("evictee", &PatchParams::default(), &Patch::Merge(&running))
            .await
            .unwrap();
        let pdbs: Api<policy::PodDisruptionBudget> = Api::namespaced(c.clone(), NS);
        let pdb: policy::PodDisruptionBudget = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "evictee"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "evictee"}}}}))
        .unwrap();
        pdbs.create(&PostParams::default(), &pdb).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let got = pdbs.get("evictee").await.unwrap();
            if got
                .status
                .is_some_and(|s| s.observed_generation == Some(1) && s.current_healthy == 1)
            {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the budget's status");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        match pods
            .evict("evictee", &kube::api::EvictParams::default())
            .await
        {
            Err(kube::Error::Api(e)) => assert_eq!(e.code, 429, "{e:?}"),
            other => panic!("expected a 429: {other:?}"),
        }
        pdbs.patch(
            "evictee",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"minAvailable": 0}})),
        )
        .await
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let got = pdbs.get("evictee").await.unwrap();
            if got
                .status
                .is_some_and(|s| s.observed_generation == Some(2) && s.disruptions_allowed == 1)
            {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the relaxed budget's status"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let status = pods
            .evict("evictee", &kube::api::EvictParams::default())
            .await
            .unwrap();
        assert_eq!(
            status.status,
            Some(kube::core::response::StatusSummary::Success)
        );
        assert!(pods.get_opt("evictee").await.unwrap().is_none());

        // The same on a custom resource and on its status subresource, through kube-rs's
        // dynamic API: apply creates it, a second apply of the status is recorded as its own
        // `Apply` entry with `subresource: status`.
        let crds: Api<apiextensions::CustomResourceDefinition> = Api::all(c.clone());
        let crd: apiextensions::CustomResourceDefinition =
            serde_json::from_value(serde_json::json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "gadgets.ssa.example.com"},
                "spec": {"group": "ssa.example.com", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {
                                "size": {"type": "integer"},
                                "parts": {"type": "array", "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"],
                                    "items": {"type": "object", "required": ["name"],
                                        "properties": {"name": {"type": "string"},
                                                       "count": {"type": "integer"}}}}}},
                            "status": {"type": "object", "properties": {
                                "phase": {"type": "string"}}}}}}}]}}))
            .unwrap();
        crds.create(&PostParams::default(), &crd).await.unwrap();
        let gvk = kube::core::GroupVersionKind::gvk("ssa.example.com", "v1", "Gadget");
        let ar = kube::core::ApiResource::from_gvk_with_plural(&gvk, "gadgets");
        let gadgets: Api<kube::core::DynamicObject> = Api::namespaced_with(c.clone(), NS, &ar);
        let gadget = |spec: serde_json::Value| -> kube::core::DynamicObject {
            serde_json::from_value(serde_json::json!({"apiVersion": "ssa.example.com/v1",
                "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec}))
            .unwrap()
        };
        let pp = PatchParams::apply("gadget-ctrl").force();
        let mut applied = None;
        // The CRD's endpoints appear once it is established: retry its first apply until then.
        for _ in 0..100 {
            match gadgets
                .patch(
                    "g",
                    &pp,
                    &Patch::Apply(&gadget(serde_json::json!({"size": 1,
                    "parts": [{"name": "a", "count": 1}]}))),
                )
                .await
            {
                Ok(o) => {
                    applied = Some(o);
                    break;
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await
                }
                Err(e) => panic!("{e}"),
            }
        }
        let applied = applied.expect("the Gadget CRD established");
        assert_eq!(applied.data["spec"]["size"], 1);
        // Another manager adds a list-map entry; the first one's entry stays.
        let other = PatchParams::apply("parts-ctrl");
        let merged = gadgets
            .patch(
                "g",
                &other,
                &Patch::Apply(&gadget(serde_json::json!({
                "parts": [{"name": "b", "count": 2}]}))),
            )
            .await
            .unwrap();
        let parts: Vec<&str> = merged.data["spec"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(parts, ["a", "b"]);
        // The status, applied through the subresource.
        let status: kube::core::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "ssa.example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
            "status": {"phase": "Ready"}}))
        .unwrap();
        let out = gadgets
            .patch_status("g", &pp, &Patch::Apply(&status))
            .await
            .unwrap();
        assert_eq!(out.data["status"]["phase"], "Ready");
        let entries: Vec<(String, String, String)> = out
            .metadata
            .managed_fields
            .unwrap()
            .into_iter()
            .map(|e| {
                (
                    e.manager.unwrap_or_default(),
                    e.operation.unwrap_or_default(),
                    e.subresource.unwrap_or_default(),
                )
            })
            .collect();
        assert!(
            entries.contains(&("gadget-ctrl".into(), "Apply".into(), "status".into()))
                && entries.contains(&("gadget-ctrl".into(), "Apply".into(), String::new()))
                && entries.contains(&("parts-ctrl".into(), "Apply".into(), String::new())),
            "{entries:?}"
        );
    });
}
