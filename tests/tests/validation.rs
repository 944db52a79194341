//! kube's validation of built-in kinds, end to end with the real binary and the real kubectl:
//! ordinary manifests apply, wrong ones are refused with kube's messages, `/status` writes are
//! checked for their status only, and a Pod runs as its namespace's `default` ServiceAccount.

use serde_json::{json, Value};
use turtles_tests::Server;

/// `kubectl apply` of `manifest`: its stderr when refused, `None` when applied.
fn apply(s: &Server, manifest: &str) -> Option<String> {
    let out = s.kubectl_stdin(&["apply", "-f", "-"], manifest);
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn ordinary_manifests_apply_and_wrong_ones_get_kubes_messages() {
    let s = Server::start().unwrap();
    // What users apply every day passes as it does on kube.
    let ok = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostAliases: [{ip: "2001:DB8::1", hostnames: [db.local]}]
      containers:
      - name: web
        image: nginx:1.27
        ports: [{name: http, containerPort: 80}]
        env: [{name: MODE, value: prod}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        readinessProbe: {httpGet: {path: /, port: http}}
        livenessProbe: {tcpSocket: {port: 80}, initialDelaySeconds: 5}
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
        volumeMounts: [{name: conf, mountPath: /etc/conf}, {name: cache, mountPath: /cache}]
      volumes:
      - {name: conf, configMap: {name: web-conf}}
      - {name: cache, emptyDir: {sizeLimit: 1Gi}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}, {name: https, port: 443}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  tls: [{hosts: [shop.example.com], secretName: web-tls}]
  rules:
  - host: shop.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}], ports: [{port: 80}]}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [configmaps], resourceNames: [web-conf], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {kind: Role, name: reader}
subjects: [{kind: User, name: alice}, {kind: ServiceAccount, name: default}]
"#;
    assert_eq!(apply(&s, ok), None);
    // kube's defaults the checks rely on are stored.
    let rb = s.kubectl_json(&["get", "rolebinding", "reader", "-o", "json"]);
    assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");

    // Wrong ones, each with kube's field path and message.
    let cases: &[(&str, &str)] = &[
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: My_App, image: nginx}]\n",
            "spec.containers[0].name: Invalid value: \"My_App\": a lowercase RFC 1123 label must consist of",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: nginx, volumeMounts: [{name: nope, mountPath: /x}]}]\n",
            "spec.containers[0].volumeMounts[0].name: Not found: \"nope\"",
        ),
        (
            "apiVersion: v1\nkind: Service\nmetadata: {name: two}\nspec:\n  selector: {app: a}\n  ports: [{port: 80}, {port: 81}]\n",
            "spec.ports[0].name: Required value",
        ),
        (
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: bad}\nspec:\n  rules: [{http: {paths: [{path: /, backend: {service: {name: web, port: {number: 80}}}}]}}]\n",
            "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
        ),
        (
            "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad}\nspec:\n  podSelector: {}\n  ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/33}}]}]\n",
            "spec.ingress[0].from[0].ipBlock.cidr: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value",
        ),
        (
            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: bad}\nspec:\n  scaleTargetRef: {kind: Deployment, name: web}\n  minReplicas: 3\n  maxReplicas: 2\n",
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        ),
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: bad}\nrules: [{apiGroups: [\"\"], resources: [pods]}]\n",
            "rules[0].verbs: Required value: verbs must contain at least one value",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers: [{name: c, image: busybox}]\n  volumes:\n  - name: scratch\n    ephemeral:\n      volumeClaimTemplate:\n        metadata: {annotations: {\"bad key!\": x}}\n        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
            "spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.annotations: Invalid value: \"bad key!\"",
        ),
    ];
    for (manifest, want) in cases {
        let err = apply(&s, manifest).unwrap_or_else(|| panic!("applied:\n{manifest}"));
        assert!(err.contains(want), "want {want:?} in:\n{err}");
    }

    // A claim's spec is immutable, but for a bound claim's requests.
    let out = s.kubectl(&[
        "patch",
        "pvc",
        "data",
        "-p",
        r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"),
        "{err}"
    );
}

#[test]
fn status_writes_are_checked_for_their_status_only() {
    let s = Server::start().unwrap();
    let http = s.http();
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    assert_eq!(http.post_json(path, &deploy).status, 201);
    let status = |body: Value| {
        http.patch(
            &format!("{path}/d/status"),
            "application/merge-patch+json",
            &body,
        )
    };
    let r = status(json!({"status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = status(json!({"status": {"replicas": -1}}));
    let st = turtles_tests::assert_status(&r, 422, "Invalid");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("status.replicas: Invalid value: -1: must be greater than or equal to 0"),
        "{st}"
    );
    let r = status(json!({"status": {"replicas": 1, "readyReplicas": 2}}));
    let st = turtles_tests::assert_status(&r, 422, "Invalid");
    assert!(
        st["message"].as_str().unwrap().contains(
            "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"
        ),
        "{st}"
    );
}

#[test]
fn a_pod_runs_as_the_default_service_account_unless_named() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["run", "a", "--image=nginx"]);
    let pod = s.kubectl_json(&["get", "pod", "a", "-o", "json"]);
    assert_eq!(pod["spec"]["serviceAccountName"], "default", "{pod}");
    assert_eq!(pod["spec"]["serviceAccount"], "default");
    // The deprecated field names it when the new one is absent (the account must exist).
    let r = s.http().post_json(
        "/api/v1/namespaces/default/serviceaccounts",
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = s.http().post_json(
        "/api/v1/namespaces/default/pods",
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"},
            "spec": {"serviceAccount": "builder", "containers": [{"name": "c", "image": "nginx"}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["spec"]["serviceAccountName"], "builder");
    // A projected token needs a ServiceAccount, which the default now is.
    let r = s.http().post_json(
        "/api/v1/namespaces/default/pods",
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}],
                "volumes": [{"name": "t", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token"}}]}}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn service_cidrs_ip_addresses_and_csi_kinds_get_kubes_checks() {
    let s = Server::start().unwrap();
    // An IPAddress is named by a canonical IP (IPv6 included) and needs a parent.
    assert_eq!(
        apply(
            &s,
            "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: \"2001:db8::7\"}\nspec:\n  parentRef: {group: \"\", resource: services, namespace: default, name: web}\n"
        ),
        None
    );
    let err = apply(
        &s,
        "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: \"2001:DB8::8\"}\nspec: {}\n",
    )
    .expect("refused");
    assert!(
        err.contains("metadata.name: Invalid value: \"2001:DB8::8\": must be in canonical form (\"2001:db8::8\")"),
        "{err}"
    );
    assert!(err.contains("spec.parentRef: Required value"), "{err}");
    // A ServiceCIDR: one CIDR per family, growing to dual-stack only.
    assert_eq!(
        apply(
            &s,
            "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.200.0.0/16]}\n"
        ),
        None
    );
    let err = apply(
        &s,
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.201.0.0/16]}\n",
    )
    .expect("refused");
    assert!(
        err.contains("spec.cidrs[0]: Invalid value: \"10.201.0.0/16\": field is immutable"),
        "{err}"
    );
    assert_eq!(
        apply(
            &s,
            "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.200.0.0/16, \"fd00:10:200::/108\"]}\n"
        ),
        None
    );
    // CSI kinds.
    let err = apply(
        &s,
        "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: cap}\nstorageClassName: Fast\ncapacity: \"-1\"\n",
    )
    .expect("refused");
    assert!(
        err.contains("capacity: Invalid value: \"-1\": must be greater than or equal to 0"),
        "{err}"
    );
    assert!(
        err.contains("storageClassName: Invalid value: \"Fast\""),
        "{err}"
    );
    let err = apply(
        &s,
        "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: node-1}\nspec:\n  drivers: [{name: ebs.csi.aws.com, nodeID: \"\"}]\n",
    )
    .expect("refused");
    assert!(
        err.contains("spec.drivers[0].nodeID: Required value"),
        "{err}"
    );
}

/// kube's apps and batch validation (`pkg/apis/apps/validation`, `pkg/apis/batch/validation`)
/// through kubectl: the manifests users write pass, and rollout, Job and CronJob fields the
/// controllers cannot act on are refused with kube's messages instead of stalling a controller.
#[test]
fn workload_specs_get_kubes_apps_and_batch_checks() {
    let s = Server::start().unwrap();
    let ok = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}
  selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 2
  backoffLimitPerIndex: 1
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "@daily"
  timeZone: Europe/Paris
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}
"#;
    assert_eq!(apply(&s, ok), None);
    let refused = [
        (
            r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad-surge}
spec:
  strategy: {rollingUpdate: {maxSurge: "x%", maxUnavailable: 0}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"#,
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: \"x%\": a valid percent string must be a numeric string followed by an ending '%'",
        ),
        (
            r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: zero-zero}
spec:
  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"#,
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
        ),
        (
            r#"
apiVersion: batch/v1
kind: Job
metadata: {name: negative}
spec:
  parallelism: -1
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
"#,
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            r#"
apiVersion: batch/v1
kind: CronJob
metadata: {name: bad-schedule}
spec:
  schedule: "61 * * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}
"#,
            "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61",
        ),
        (
            r#"
apiVersion: batch/v1
kind: CronJob
metadata: {name: tz-in-schedule}
spec:
  schedule: "TZ=UTC 0 * * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}
"#,
            "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
        (
            r#"
apiVersion: batch/v1
kind: CronJob
metadata: {name: bad-zone}
spec:
  schedule: "0 * * * *"
  timeZone: Mars/Olympus
  successfulJobsHistoryLimit: -1
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}
"#,
            "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus",
        ),
    ];
    for (manifest, message) in refused {
        let err = apply(&s, manifest).unwrap_or_else(|| panic!("accepted:\n{manifest}"));
        assert!(err.contains(message), "{message}\nnot in:\n{err}");
    }
}

/// kube's admission policy strategies authorize parameters: who writes a policy with a
/// `paramKind` must be allowed `get` on all objects of that kind, and who writes a binding with
/// a `paramRef` `get` on the object it names.
#[test]
fn policy_params_need_get_permission_on_them() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "policy-writer",
        "--verb=create,get,update",
        "--resource=validatingadmissionpolicies.admissionregistration.k8s.io,validatingadmissionpolicybindings.admissionregistration.k8s.io",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "policy-writer",
        "--clusterrole=policy-writer",
        "--user=writer",
    ]);
    let (_, token) = s.mint("writer", &[]).unwrap();
    let http = s.http_with_token(Some(&token));
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "limits"},
        "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"}]}});
    let vaps = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let r = http.post_json(vaps, &policy);
    assert_eq!(r.status, 422, "{}", r.text());
    let st = r.json();
    assert_eq!(
        st["details"]["causes"][0]["field"], "spec.paramKind",
        "{st}"
    );
    assert!(
        st["message"].as_str().unwrap().contains(
            "must have \"get\" permission on all objects of the referenced paramKind (kind=ConfigMap, apiVersion=v1)"
        ),
        "{st}"
    );
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "read-cms",
        "--verb=get",
        "--resource=configmaps",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "read-cms",
        "--clusterrole=read-cms",
        "--user=writer",
    ]);
    let r = http.post_json(vaps, &policy);
    assert_eq!(r.status, 201, "{}", r.text());
    // A binding's paramRef: `get` on that object (allowed now, through the ClusterRole).
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "limits"},
        "spec": {"policyName": "limits", "validationActions": ["Deny"],
            "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}});
    let r = http.post_json(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        &binding,
    );
    assert_eq!(r.status, 201, "{}", r.text());
}
