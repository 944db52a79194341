//! What kube's workload controllers share (`pkg/controller/history`, `podutil`): the
//! ControllerRevisions that `kubectl rollout history` and `kubectl rollout undo` read, and the
//! Pod states (`Running` and `Ready`, available for `minReadySeconds`) rollouts wait for.
//!
//! A revision's data is kube's `getPatch`: `{"spec":{"template":{…,"$patch":"replace"}}}`, the
//! strategic merge patch `kubectl rollout undo` sends back. Its hash is kube's
//! `HashControllerRevision` (FNV-1 over Go's JSON encoding of the data and the collision count).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::{api, meta, ApiError};

/// `controller.kubernetes.io/hash`: a StatefulSet revision's hash.
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

// ---------------------------------------------------------------------------------------------
// Revisions

/// kube's `rand.SafeEncodeString`: each byte mapped into an alphabet without vowels.
pub fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// kube's `HashControllerRevision`: FNV-1 (32 bit) over the data and the collision count in
/// decimal, its decimal value safe-encoded.
pub fn revision_hash(data: &[u8], collision_count: i64) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for &b in data.iter().chain(collision_count.to_string().as_bytes()) {
        h = h.wrapping_mul(0x0100_0193);
        h ^= u32::from(b);
    }
    safe_encode(&h.to_string())
}

/// JSON as Go's `json.Marshal` writes a `map[string]interface{}`: compact, keys sorted, and
/// `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn go_json(value: &Value) -> String {
    // serde_json's map (without `preserve_order`) is a BTreeMap: keys come out sorted.
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The data of a revision of a workload (kube's `getPatch`): its Pod template, as a strategic
/// merge patch that replaces the template.
pub fn template_patch(workload: &Value) -> Value {
    let mut template = workload
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(t) = template.as_object_mut() {
        t.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// The Pod template a revision holds (its data without the patch directive).
pub fn revision_template(revision: &Value) -> Value {
    let mut template = revision
        .pointer("/data/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(t) = template.as_object_mut() {
        t.remove("$patch");
    }
    template
}

/// A controller reference to `owner` (kube's `metav1.NewControllerRef`).
pub fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": str_at(owner, "/metadata/name"),
        "uid": str_at(owner, "/metadata/uid"),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// A new ControllerRevision of `owner` (kube's `NewControllerRevision`): named `OWNER-HASH`
/// (the prefix cut to 223 characters), labelled with the template's labels and
/// `hash_label: HASH`, every annotation of the owner, owned by it.
pub fn new_revision(
    owner: &Value,
    api_version: &str,
    kind: &str,
    hash_label: &str,
    revision: i64,
    collision_count: i64,
) -> Value {
    let data = template_patch(owner);
    let hash = revision_hash(go_json(&data).as_bytes(), collision_count);
    let prefix: String = str_at(owner, "/metadata/name").chars().take(223).collect();
    let mut labels = owner
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(hash_label.into(), json!(hash));
    let mut metadata = json!({
        "name": format!("{prefix}-{hash}"),
        "namespace": str_at(owner, "/metadata/namespace"),
        "labels": labels,
        "ownerReferences": [controller_ref(owner, api_version, kind)],
    });
    if let Some(a) = owner
        .pointer("/metadata/annotations")
        .filter(|a| a.is_object())
    {
        metadata["annotations"] = a.clone();
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": metadata,
        "data": data,
        "revision": revision,
    })
}

/// The hash a revision was named with: the part of its name after the owner's name.
pub fn revision_name_hash(revision: &Value) -> &str {
    let name = str_at(revision, "/metadata/name");
    name.rsplit_once('-').map_or(name, |(_, h)| h)
}

/// kube's `EqualRevision`: hash labels that differ mean different; otherwise the data decides
/// (compared as JSON values: the store may order keys differently from how they were sent).
pub fn equal_revision(a: &Value, b: &Value) -> bool {
    let hash = |r: &Value| {
        meta::label(r, HASH_LABEL).and_then(|h| h.parse::<i32>().ok().map(|_| h.to_owned()))
    };
    if let (Some(x), Some(y)) = (hash(a), hash(b)) {
        if x != y {
            return false;
        }
    }
    a.get("data") == b.get("data")
}

/// The `.revision` number of a ControllerRevision.
pub fn revision_number(rev: &Value) -> i64 {
    rev["revision"].as_i64().unwrap_or(0)
}

/// Sorted as kube's `SortControllerRevisions`: by revision, then creation time, then name.
pub fn sort_revisions(revisions: &mut [Value]) {
    revisions.sort_by(|a, b| {
        revision_number(a)
            .cmp(&revision_number(b))
            .then_with(|| {
                str_at(a, "/metadata/creationTimestamp")
                    .cmp(str_at(b, "/metadata/creationTimestamp"))
            })
            .then_with(|| str_at(a, "/metadata/name").cmp(str_at(b, "/metadata/name")))
    });
}

/// The number of the next revision after `revisions` (sorted).
pub fn next_revision_number(revisions: &[Value]) -> i64 {
    revisions
        .last()
        .map_or(1, |r| revision_number(r).saturating_add(1))
}

/// What to do about the update revision, given the revisions sorted by [`sort_revisions`] and
/// the `candidate` made with [`next_revision_number`].
#[derive(Debug, PartialEq)]
pub enum UpdateRevision {
    /// The newest revision already holds the template.
    Newest(usize),
    /// An older one does (a rollback): bump its `.revision` to the given number.
    Bump(usize, i64),
    /// None does: create the candidate.
    Create(Value),
}

/// kube's choice of the update revision (`getStatefulSetRevisions`, `constructHistory`).
pub fn choose_update_revision(candidate: Value, revisions: &[Value]) -> UpdateRevision {
    let equal = revisions
        .iter()
        .rposition(|r| equal_revision(r, &candidate));
    match equal {
        Some(i) if i + 1 == revisions.len() => UpdateRevision::Newest(i),
        Some(i) => UpdateRevision::Bump(i, revision_number(&candidate)),
        None => UpdateRevision::Create(candidate),
    }
}

/// The revisions to delete (kube's `truncateHistory`): the oldest of those that are not live,
/// beyond `limit` (`revisionHistoryLimit`; a negative one keeps everything).
pub fn history_to_delete(
    limit: i64,
    revisions: &[Value],
    live: impl Fn(&Value) -> bool,
) -> Vec<&Value> {
    if limit < 0 {
        return Vec::new();
    }
    let history: Vec<&Value> = revisions.iter().filter(|r| !live(r)).collect();
    let excess = history.len().saturating_sub(limit as usize);
    history.into_iter().take(excess).collect()
}

// ---------------------------------------------------------------------------------------------
// Owner references

/// Writes an object's `ownerReferences` for the version the caller read (its uid and
/// resourceVersion as preconditions, in a merge patch): a list someone changed meanwhile is not
/// overwritten, the write fails with 409 instead (kube's adoption and release patches carry the
/// uid the same way).
pub fn set_owner_references(path: &str, obj: &Value, refs: Vec<Value>) -> Result<Value, ApiError> {
    api::patch_merge(
        path,
        &json!({"metadata": {
            "ownerReferences": refs,
            "uid": str_at(obj, "/metadata/uid"),
            "resourceVersion": obj["metadata"]["resourceVersion"],
        }}),
    )
}

/// kube's `RecheckDeletionTimestamp`: before the first adoption of a sync, the owner is read
/// from the API (not the cache); orphans are adopted only if it is the same object and not being
/// deleted (an owner deleted with `--cascade=orphan` never takes its dependents back).
pub struct AdoptionCheck<'a> {
    owner: &'a Value,
    path: String,
    verdict: Option<bool>,
}

impl<'a> AdoptionCheck<'a> {
    /// For `owner`, whose API path is `path`.
    pub fn new(owner: &'a Value, path: String) -> Self {
        AdoptionCheck {
            owner,
            path,
            verdict: None,
        }
    }

    /// Whether orphans may be adopted (one read of the owner per check).
    pub fn may_adopt(&mut self) -> Result<bool, ApiError> {
        if let Some(v) = self.verdict {
            return Ok(v);
        }
        let verdict = match api::get(&self.path) {
            Ok(live) => {
                str_at(&live, "/metadata/uid") == str_at(self.owner, "/metadata/uid")
                    && !meta::is_deleting(&live)
            }
            Err(e) if e.is_not_found() => false,
            Err(e) => return Err(e),
        };
        self.verdict = Some(verdict);
        Ok(verdict)
    }
}

// ---------------------------------------------------------------------------------------------
// Pod states

fn ready_condition(pod: &Value) -> Option<&Value> {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == "Ready")
}

/// kube's `IsPodReady`: the `Ready` condition is `True`.
pub fn pod_ready(pod: &Value) -> bool {
    ready_condition(pod).is_some_and(|c| c["status"] == "True")
}

/// Running with the `Ready` condition `True` (kube's `isRunningAndReady`).
pub fn running_and_ready(pod: &Value) -> bool {
    str_at(pod, "/status/phase") == "Running" && pod_ready(pod)
}

/// Whether `pod` is Running and has been Ready for more than `min_ready` seconds at `now`
/// (kube's `podutil.IsPodAvailable`). `Err(secs)`: not yet, and how many seconds until it may
/// be (0 when it is not even Ready).
pub fn available(pod: &Value, min_ready: i64, now: i64) -> Result<(), i64> {
    if !running_and_ready(pod) {
        return Err(0);
    }
    if min_ready <= 0 {
        return Ok(());
    }
    let since = ready_condition(pod)
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(parse_rfc3339);
    match since {
        Some(t) if t.saturating_add(min_ready) < now => Ok(()),
        Some(t) => Err(t.saturating_add(min_ready) - now + 1),
        None => Err(min_ready),
    }
}

/// Unix seconds as kube writes a time: RFC 3339 in UTC, to the second
/// (`2026-01-02T03:04:05Z`); the inverse of [`parse_rfc3339`].
pub fn format_rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // The civil date of a day count (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Unix seconds of an RFC 3339 timestamp (`2024-01-02T03:04:05Z`, fractions and offsets too).
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = text.get(19..)?;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = frac.get(digits..)?;
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(rest.as_bytes()[0], b'+' | b'-') => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            let hours = rest.get(1..3)?.parse::<i64>().ok()?;
            let minutes = rest.get(4..6)?.parse::<i64>().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_hashes_are_kubes() {
        // kube's own compatibility data (pkg/controller/statefulset/testdata), 1.33 and 1.34.
        let v133 = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;
        assert_eq!(revision_hash(v133.as_bytes(), 0), "c77f6d978");
        let v134 = v133.replace("\"creationTimestamp\":null,", "");
        assert_eq!(revision_hash(v134.as_bytes(), 0), "776999688b");
        // The same bytes from the object: Go's encoding (sorted keys, compact).
        let template: Value = serde_json::from_str(&v134).unwrap();
        let owner = json!({"metadata": {"name": "foo", "uid": "u"},
            "spec": {"template": template["spec"]["template"].clone()}});
        assert_eq!(go_json(&template_patch(&owner)), v134);
        let rev = new_revision(&owner, "apps/v1", "StatefulSet", HASH_LABEL, 1, 0);
        assert_eq!(rev["metadata"]["name"], "foo-776999688b");
        assert_eq!(rev["metadata"]["labels"][HASH_LABEL], "776999688b");
        assert_eq!(revision_name_hash(&rev), "776999688b");
        assert_eq!(revision_template(&rev)["metadata"]["labels"]["app"], "foo");
        assert_eq!(
            go_json(&json!({"a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e"}"#
        );
        assert_ne!(revision_hash(b"x", 0), revision_hash(b"x", 1));
    }

    #[test]
    fn the_update_revision_is_the_newest_an_older_one_bumped_or_new() {
        let owner = |v: &str| {
            json!({"metadata": {"name": "web", "uid": "u"},
                "spec": {"template": {"metadata": {"labels": {"v": v}}}}})
        };
        let rev =
            |v: &str, n: i64| new_revision(&owner(v), "apps/v1", "StatefulSet", HASH_LABEL, n, 0);
        let revs = [rev("1", 1), rev("2", 2)];
        let candidate = |v: &str| rev(v, next_revision_number(&revs));
        assert_eq!(
            choose_update_revision(candidate("2"), &revs),
            UpdateRevision::Newest(1)
        );
        assert_eq!(
            choose_update_revision(candidate("1"), &revs),
            UpdateRevision::Bump(0, 3)
        );
        match choose_update_revision(candidate("3"), &revs) {
            UpdateRevision::Create(c) => assert_eq!(c["revision"], 3),
            u => panic!("{u:?}"),
        }
        let many: Vec<Value> = (1..=4).map(|n| rev(&n.to_string(), n)).collect();
        let gone: Vec<i64> = history_to_delete(1, &many, |r| revision_number(r) == 4)
            .into_iter()
            .map(revision_number)
            .collect();
        assert_eq!(gone, [1, 2]);
        assert!(history_to_delete(-1, &many, |_| false).is_empty());
    }

    #[test]
    fn pods_are_available_after_min_ready_seconds() {
        let pod = json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2027-01-15T08:00:00Z"}]}});
        let t = parse_rfc3339("2027-01-15T08:00:00Z").unwrap();
        assert_eq!(available(&pod, 0, t), Ok(()));
        assert_eq!(available(&pod, 30, t + 10), Err(21));
        assert_eq!(available(&pod, 30, t + 31), Ok(()));
        assert_eq!(
            available(&json!({"status": {"phase": "Pending"}}), 0, t),
            Err(0)
        );
    }

    #[test]
    fn rfc3339_timestamps_parse() {
        for t in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-12-06T01:02:03Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(format_rfc3339(parse_rfc3339(t).unwrap()), t);
        }
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2000-03-01T00:00:01Z"), Some(951_868_801));
        assert_eq!(
            parse_rfc3339("2000-03-01T01:00:01.5+01:00"),
            Some(951_868_801)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2000-03-01T00:00:01+é1:00"), None);
    }
}
