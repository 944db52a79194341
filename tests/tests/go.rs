//! Go controllers (issue 18), with the real binary and the real components built by
//! `guest-examples/go/build.sh` (`cargo xtask guests --lang go`): the `go-greeter` loads and
//! reconciles like the other languages' greeters; the Go `job` controller runs a batch/v1 Job as
//! kube's does (Pods up to `parallelism`, owned by the Job, counted against `completions`;
//! `kubectl wait --for=condition=complete` returns), first with the test finishing the Pods
//! through `/status`, then with the C `node` controller finishing them (a failing Job reaches
//! `Failed` after `backoffLimit`); and the Go `cronjob` controller makes a Job each minute and
//! keeps `successfulJobsHistoryLimit` of them.
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

/// A cold compile of a Go component (~4.5 MB) on a busy 2-core machine: the deadline bounds a
/// hang, not the compile's speed.
const LOAD_DEADLINE: Duration = Duration::from_secs(300);
const DEADLINE: Duration = Duration::from_secs(60);

fn wait_running(s: &Server, name: &str) -> Value {
    poll(&format!("controller {name} Running"), LOAD_DEADLINE, || {
        let list = s.http().get("/apis/turtles.dev/v1/controllers").json();
        list["items"]
            .as_array()?
            .iter()
            .find(|c| c["metadata"]["name"] == name && c["status"]["phase"] == "Running")
            .cloned()
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()))
}

#[test]
fn go_greeter_loads_and_reconciles() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("go-greeter", &guest("go-greeter"))
        .unwrap();
    let c = wait_running(&s, "go-greeter");
    assert_eq!(c["status"]["wit"], "turtles:controller@0.2.0", "{c}");
    assert_eq!(c["status"]["user"], "system:controller:go-greeter", "{c}");
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "gopher", "labels": {"turtles.dev/greet": "true"}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // Unlabelled: not watched, never greeted.
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "quiet"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    poll("gopher greeted from Go", DEADLINE, || {
        let cm = s
            .http()
            .get("/api/v1/namespaces/default/configmaps/gopher")
            .json();
        (cm["metadata"]["annotations"]["turtles.dev/greeting"] == "hello from Go, gopher")
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    let quiet = s
        .http()
        .get("/api/v1/namespaces/default/configmaps/quiet")
        .json();
    assert!(
        quiet["metadata"]["annotations"]["turtles.dev/greeting"].is_null(),
        "{quiet}"
    );
}

/// The Job's Pods (by the label kube's defaulting puts on the template), sorted by name.
fn job_pods(s: &Server, job: &str) -> Vec<Value> {
    let list = s.http().get(&format!(
        "/api/v1/namespaces/default/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3D{job}"
    ));
    assert_eq!(list.status, 200, "{}", list.text());
    let mut items = list.json()["items"].as_array().cloned().unwrap_or_default();
    items.sort_by_key(|p| {
        p["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    items
}

/// Finish a Pod as a kubelet would: phase Succeeded through the status subresource (retried on
/// a conflict with a concurrent writer).
fn succeed(s: &Server, name: &str) {
    let path = format!("/api/v1/namespaces/default/pods/{name}");
    poll(&format!("{name} set Succeeded"), DEADLINE, || {
        let mut pod = s.http().get(&path).json();
        pod["status"]["phase"] = json!("Succeeded");
        pod["status"]["conditions"] =
            json!([{"type": "Ready", "status": "False", "reason": "PodCompleted"}]);
        let r = s.http().put_json(&format!("{path}/status"), &pod);
        match r.status {
            200 => Some(()),
            409 => None,
            other => panic!("PUT {path}/status: {other} {}", r.text()),
        }
    })
    .unwrap();
}

#[test]
fn go_job_controller_runs_a_job_to_completion() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("job", &guest("job")).unwrap();
    wait_running(&s, "job");
    let r = s.http().post_json(
        "/apis/batch/v1/namespaces/default/jobs",
        &json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "pi"},
            "spec": {
                "completions": 3,
                "parallelism": 2,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "pi", "image": "perl", "command": ["perl", "-e", "1"]}]
                }}
            }
        }),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let job_uid = r.json()["metadata"]["uid"].as_str().unwrap().to_owned();

    // parallelism 2: two Pods, owned by the Job, and status.active 2.
    let pods = poll("two pods and status.active 2", DEADLINE, || {
        let pods = job_pods(&s, "pi");
        let job = s
            .http()
            .get("/apis/batch/v1/namespaces/default/jobs/pi")
            .json();
        (pods.len() == 2 && job["status"]["active"] == 2 && job["status"]["startTime"].is_string())
            .then_some(pods)
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}\n{}",
            s.kubectl_ok(&["get", "jobs,pods", "-o", "yaml"]),
            s.log()
        )
    });
    for p in &pods {
        let name = p["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("pi-"), "{p}");
        assert_eq!(p["metadata"]["generateName"], "pi-", "{p}");
        let refs = p["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 1, "{p}");
        assert_eq!(refs[0]["kind"], "Job");
        assert_eq!(refs[0]["name"], "pi");
        assert_eq!(refs[0]["uid"], job_uid.as_str());
        assert_eq!(refs[0]["controller"], true);
        let labels = &p["metadata"]["labels"];
        assert_eq!(labels["job-name"], "pi", "{p}");
        assert_eq!(labels["controller-uid"], job_uid.as_str(), "{p}");
        assert_eq!(
            labels["batch.kubernetes.io/controller-uid"],
            job_uid.as_str(),
            "{p}"
        );
    }

    // Both succeed: one more Pod for the third completion, never more than that.
    for p in &pods {
        succeed(&s, p["metadata"]["name"].as_str().unwrap());
    }
    let third = poll("a third pod and status.succeeded 2", DEADLINE, || {
        let pods = job_pods(&s, "pi");
        let job = s
            .http()
            .get("/apis/batch/v1/namespaces/default/jobs/pi")
            .json();
        (pods.len() == 3 && job["status"]["succeeded"] == 2 && job["status"]["active"] == 1).then(
            || {
                pods.into_iter()
                    .find(|p| p["status"]["phase"] != "Succeeded")
                    .unwrap()
            },
        )
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "jobs,pods", "-o", "yaml"])));
    succeed(&s, third["metadata"]["name"].as_str().unwrap());

    let out = s.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/pi",
        "--timeout=60s",
    ]);
    assert!(
        out.status.success(),
        "kubectl wait: {}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.kubectl_ok(&["get", "job", "pi", "-o", "yaml"]),
        s.log()
    );
    let job = s
        .http()
        .get("/apis/batch/v1/namespaces/default/jobs/pi")
        .json();
    assert_eq!(job["status"]["succeeded"], 3, "{job}");
    // `active` and `failed` are `omitempty` int32s: kube writes neither at 0.
    assert_eq!(job["status"].get("active"), None, "{job}");
    // What kube's job controller always writes: the terminating count (a pointer: 0 kept) and
    // an empty uncountedTerminatedPods.
    assert_eq!(job["status"]["terminating"], 0, "{job}");
    assert_eq!(job["status"]["uncountedTerminatedPods"], json!({}), "{job}");
    assert!(job["status"]["completionTime"].is_string(), "{job}");
    let conditions: Vec<(String, String, String)> = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or_default().to_owned(),
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let want = |t: &str| {
        (
            t.to_owned(),
            "True".to_owned(),
            "CompletionsReached".to_owned(),
        )
    };
    assert_eq!(
        conditions,
        [want("SuccessCriteriaMet"), want("Complete")],
        "{job}"
    );
    assert_eq!(job_pods(&s, "pi").len(), 3, "no pod beyond completions");
    let row = s.kubectl_ok(&["get", "job", "pi", "--no-headers"]);
    assert!(
        row.contains("Complete") && row.contains("3/3"),
        "kubectl get job: {row}"
    );
    let described = s.kubectl_ok(&["describe", "job", "pi"]);
    assert!(described.contains("SuccessfulCreate"), "{described}");
    assert!(described.contains("Completed"), "{described}");
}

/// With the C `node` controller as the kubelet, a Job's Pods run and finish by themselves (their
/// annotations `turtles.dev/run-seconds` / `turtles.dev/exit-code`, defaults 1 s and 0): `kubectl
/// create job` completes, and a Job whose Pods fail reaches `Failed` after `backoffLimit`.
#[test]
fn go_job_controller_with_the_node_controller_completes_and_fails_jobs() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("node", &guest("node")).unwrap();
    s.drop_controller("job", &guest("job")).unwrap();
    wait_running(&s, "node");
    wait_running(&s, "job");

    s.kubectl_ok(&[
        "create",
        "job",
        "pi",
        "--image=perl",
        "--",
        "perl",
        "-e",
        "1",
    ]);
    // backoffLimit 1: the second failed Pod fails the Job (after kube's 10 s pod back-off).
    let r = s.http().post_json(
        "/apis/batch/v1/namespaces/default/jobs",
        &json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "bad"},
            "spec": {
                "backoffLimit": 1,
                "template": {
                    "metadata": {"annotations": {"turtles.dev/exit-code": "1", "turtles.dev/run-seconds": "0"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox", "command": ["false"]}]
                    }
                }
            }
        }),
    );
    assert_eq!(r.status, 201, "{}", r.text());

    let out = s.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/pi",
        "--timeout=120s",
    ]);
    assert!(
        out.status.success(),
        "kubectl wait complete: {}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.kubectl_ok(&["get", "jobs,pods", "-o", "yaml"]),
        s.log()
    );
    let job = s
        .http()
        .get("/apis/batch/v1/namespaces/default/jobs/pi")
        .json();
    assert_eq!(job["status"]["succeeded"], 1, "{job}");
    assert_eq!(job["status"].get("failed"), None, "{job}");
    let pods = job_pods(&s, "pi");
    assert_eq!(pods.len(), 1, "{pods:?}");
    assert_eq!(pods[0]["status"]["phase"], "Succeeded", "{pods:?}");
    assert_eq!(
        pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );

    let out = s.kubectl(&[
        "wait",
        "--for=condition=failed",
        "job/bad",
        "--timeout=120s",
    ]);
    assert!(
        out.status.success(),
        "kubectl wait failed: {}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.kubectl_ok(&["get", "jobs,pods", "-o", "yaml"]),
        s.log()
    );
    let job = s
        .http()
        .get("/apis/batch/v1/namespaces/default/jobs/bad")
        .json();
    assert_eq!(job["status"]["failed"], 2, "{job}");
    // `succeeded` and `active` are `omitempty` int32s: kube writes neither at 0.
    assert_eq!(job["status"].get("succeeded"), None, "{job}");
    assert_eq!(job["status"].get("active"), None, "{job}");
    let failed = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "True")
        .map(|c| {
            format!(
                "{}/{}/{}",
                c["type"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(
        failed,
        [
            "FailureTarget/BackoffLimitExceeded/Job has reached the specified backoff limit",
            "Failed/BackoffLimitExceeded/Job has reached the specified backoff limit"
        ],
        "{job}"
    );
    assert!(job["status"]["completionTime"].is_null(), "{job}");
    let pods = job_pods(&s, "bad");
    assert_eq!(pods.len(), 2, "{pods:?}");
    assert!(
        pods.iter().all(|p| p["status"]["phase"] == "Failed"),
        "{pods:?}"
    );
    let described = s.kubectl_ok(&["describe", "job", "bad"]);
    assert!(described.contains("BackoffLimitExceeded"), "{described}");
}

/// The Go `cronjob` controller with `job` and `node`: `kubectl create cronjob` makes a Job for
/// the next minute (named as kube names it, owned by the CronJob) within 61 s, the Job runs to
/// completion, and the CronJob records it (`lastScheduleTime`, then `lastSuccessfulTime` and an
/// empty `active`).
#[test]
fn go_cronjob_controller_creates_a_job_each_minute() {
    let s = Server::start_with_controllers(&[]).unwrap();
    for name in ["node", "job", "cronjob"] {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    for name in ["node", "job", "cronjob"] {
        wait_running(&s, name);
    }
    s.kubectl_ok(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/1 * * * *",
    ]);
    let cj = s
        .http()
        .get("/apis/batch/v1/namespaces/default/cronjobs/tick")
        .json();
    let cj_uid = cj["metadata"]["uid"].as_str().unwrap().to_owned();
    let job = poll(
        "a Job of the CronJob within 61 s",
        Duration::from_secs(61),
        || {
            let jobs = s
                .http()
                .get("/apis/batch/v1/namespaces/default/jobs")
                .json();
            jobs["items"]
                .as_array()?
                .iter()
                .find(|j| j["metadata"]["ownerReferences"][0]["uid"] == cj_uid.as_str())
                .cloned()
        },
    )
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}\n{}",
            s.kubectl_ok(&["get", "cronjobs,jobs", "-o", "yaml"]),
            s.log()
        )
    });
    let name = job["metadata"]["name"].as_str().unwrap().to_owned();
    let scheduled = job["metadata"]["annotations"]
        ["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .unwrap_or_else(|| panic!("no scheduled-timestamp annotation: {job}"))
        .to_owned();
    // kube's name: the CronJob's and the scheduled time in minutes since the epoch.
    let minutes: i64 = name
        .strip_prefix("tick-")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("job name {name}"));
    assert!(scheduled.ends_with(":00Z"), "{scheduled}");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(job["metadata"]["ownerReferences"][0]["controller"], true);
    let out = s.kubectl(&[
        "wait",
        "--for=condition=complete",
        &format!("job/{name}"),
        "--timeout=60s",
    ]);
    assert!(
        out.status.success(),
        "kubectl wait: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.kubectl_ok(&["get", "cronjobs,jobs,pods", "-o", "yaml"])
    );
    let cj = poll("the CronJob to record the finished Job", DEADLINE, || {
        let cj = s
            .http()
            .get("/apis/batch/v1/namespaces/default/cronjobs/tick")
            .json();
        (cj["status"]["lastSuccessfulTime"].is_string()
            && cj["status"]["active"]
                .as_array()
                .is_none_or(|a| a.iter().all(|r| r["name"] != name.as_str())))
        .then_some(cj)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "cronjobs", "-o", "yaml"])));
    let last = cj["status"]["lastScheduleTime"]
        .as_str()
        .unwrap_or_default();
    assert!(last.ends_with(":00Z"), "{cj}");
    // lastScheduleTime is the scheduled time of this Job or of a later one.
    assert!(last >= scheduled.as_str(), "{cj}");
    assert!(minutes * 60 > 1_700_000_000, "{name}");
    let described = s.kubectl_ok(&["describe", "cronjob", "tick"]);
    assert!(described.contains("SuccessfulCreate"), "{described}");
    assert!(described.contains("SawCompletedJob"), "{described}");

    // successfulJobsHistoryLimit 1: once the next minute's Job has completed, this one goes.
    s.kubectl_ok(&[
        "patch",
        "cronjob",
        "tick",
        "--type=merge",
        "-p",
        r#"{"spec":{"successfulJobsHistoryLimit":1}}"#,
    ]);
    let kept = poll(
        "the first Job removed by the history limit",
        Duration::from_secs(150),
        || {
            let jobs = s
                .http()
                .get("/apis/batch/v1/namespaces/default/jobs")
                .json();
            let names: Vec<String> = jobs["items"]
                .as_array()?
                .iter()
                .filter(|j| j["metadata"]["ownerReferences"][0]["uid"] == cj_uid.as_str())
                .filter_map(|j| j["metadata"]["name"].as_str().map(str::to_owned))
                .collect();
            (!names.contains(&name) && !names.is_empty()).then_some(names)
        },
    )
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            s.kubectl_ok(&["get", "cronjobs,jobs", "-o", "yaml"])
        )
    });
    assert!(
        kept.iter().all(|n| n.as_str() > name.as_str()),
        "{kept:?} after {name}"
    );
}
