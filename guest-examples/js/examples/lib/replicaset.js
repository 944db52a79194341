// The apps/v1 ReplicaSet controller, as kube's does it, simplified; the same code drives core/v1
// ReplicationControllers (kube's replication controller is its ReplicaSet controller too), whose
// selector is a plain map of labels (`REPLICATION_CONTROLLER`).
//
// For each ReplicaSet (not being deleted): claim Pods (adopt matching orphans, release owned Pods
// that no longer match the selector), keep exactly `spec.replicas` active Pods owned by it —
// create the missing ones from `spec.template`, delete the extras (unscheduled first, then not
// ready, then the newest) — and write `status` (replicas, fullyLabeledReplicas, readyReplicas,
// availableReplicas, observedGeneration, a ReplicaFailure condition when creating failed).
//
// Reads come from the host's informer cache. The cache may lag behind the controller's own writes,
// so, like kube, the controller keeps "expectations" per ReplicaSet (in module state: the
// instance lives across reconciles): the names of Pods it created and the uids of Pods it
// deleted that the cache has not shown yet. Until the cache catches up, created-but-unseen Pods
// count as active and deleted-but-still-seen ones do not, so it never creates or deletes twice.

import {
  api,
  events,
  log,
  cache,
  meta,
  permission,
  requeueAfter,
  selectorMatches,
  watch,
  TerminalError,
  PODS,
  REPLICASETS,
  gvr,
} from '../../sdk/turtles-controller.js';

/** What the controller manages: ReplicaSets, or ReplicationControllers. */
export const REPLICA_SET = Object.freeze({
  resource: REPLICASETS,
  apiVersion: 'apps/v1',
  group: 'apps',
  kind: 'ReplicaSet',
  resources: ['replicasets', 'replicasets/status'],
  selector: (o) => o?.spec?.selector,
});
export const REPLICATION_CONTROLLER = Object.freeze({
  resource: gvr('v1', 'replicationcontrollers'),
  apiVersion: 'v1',
  group: '',
  kind: 'ReplicationController',
  resources: ['replicationcontrollers', 'replicationcontrollers/status'],
  // A map of labels (the API defaults it to the template's labels).
  selector: (o) => (o?.spec?.selector ? { matchLabels: o.spec.selector } : undefined),
});

/** Most Pod creations or deletions in one reconcile (kube: burstReplicas 500); more: requeue. */
export const BURST = 100;
/** Expectations not met within this long are dropped (kube: 5 minutes). */
export const EXPECTATION_TTL_MS = 5 * 60 * 1000;
/** Re-check this soon while the cache has not caught up with our own writes. */
export const PENDING_RECHECK_MS = 1000;

const FAILURE = 'ReplicaFailure';

// ---------------------------------------------------------------------------------------------
// Pure helpers (unit-tested with plain node)

const time = (ts) => {
  const t = ts ? Date.parse(ts) : NaN;
  return Number.isNaN(t) ? 0 : t;
};

/** Not terminating and not finished. */
export function isActive(pod) {
  const phase = pod?.status?.phase;
  return !meta.isDeleting(pod) && phase !== 'Succeeded' && phase !== 'Failed';
}

function readyCondition(pod) {
  return (pod?.status?.conditions ?? []).find((c) => c && c.type === 'Ready');
}

/** The Pod's Ready condition is True. */
export function isReady(pod) {
  return readyCondition(pod)?.status === 'True';
}

/** Ready for at least `minReadySeconds` (at `now`, ms since the epoch). */
export function isAvailable(pod, minReadySeconds, now) {
  if (!isReady(pod)) return false;
  if (!minReadySeconds) return true;
  const since = time(readyCondition(pod).lastTransitionTime);
  return since > 0 && since + minReadySeconds * 1000 <= now;
}

/** Whether every label of the Pod template is on the Pod with the same value. */
export function fullyLabeled(pod, templateLabels) {
  const labels = meta.labels(pod);
  return Object.entries(templateLabels ?? {}).every(([k, v]) => labels[k] === v);
}

/** The controller ownerReference a Pod of this ReplicaSet carries. */
export function ownerRefTo(rs, kind = REPLICA_SET) {
  return {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    name: rs.metadata.name,
    uid: rs.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Checks what kube's validation would: a selector, and template labels that match it. */
export function validate(rs, kind = REPLICA_SET) {
  const selector = kind.selector(rs);
  if (!selector || (!Object.keys(selector.matchLabels ?? {}).length && !(selector.matchExpressions ?? []).length)) {
    return 'spec.selector is required and must not be empty';
  }
  const labels = rs.spec.template?.metadata?.labels ?? {};
  let matches;
  try {
    matches = selectorMatches(selector, labels);
  } catch (e) {
    return `spec.selector: ${e.message}`;
  }
  if (!matches) return 'spec.template.metadata.labels do not match spec.selector';
  const replicas = rs.spec.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 0) return 'spec.replicas must be a non-negative integer';
  return undefined;
}

/** The Pod to create for this ReplicaSet, from its template. */
export function podFromTemplate(rs, kind = REPLICA_SET) {
  const template = rs.spec.template ?? {};
  const tmeta = template.metadata ?? {};
  const metadata = {
    generateName: `${rs.metadata.name}-`,
    namespace: rs.metadata.namespace,
    labels: { ...(tmeta.labels ?? {}) },
    ownerReferences: [ownerRefTo(rs, kind)],
  };
  if (tmeta.annotations && Object.keys(tmeta.annotations).length) metadata.annotations = { ...tmeta.annotations };
  if (Array.isArray(tmeta.finalizers) && tmeta.finalizers.length) metadata.finalizers = [...tmeta.finalizers];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: JSON.parse(JSON.stringify(template.spec ?? {})),
  };
}

/**
 * Sorts Pods so that the first ones are the best to delete (kube's ActivePods order, simplified):
 * unscheduled before scheduled; Pending, then Unknown, then Running; not ready before ready;
 * ready for less time before ready for longer; newer before older; then by name.
 */
export function rankForDeletion(pods) {
  const phaseRank = { Pending: 0, Unknown: 1, Running: 2 };
  return [...pods].sort((a, b) => {
    const sa = a.spec?.nodeName ? 1 : 0;
    const sb = b.spec?.nodeName ? 1 : 0;
    if (sa !== sb) return sa - sb;
    const pa = phaseRank[a.status?.phase] ?? 0;
    const pb = phaseRank[b.status?.phase] ?? 0;
    if (pa !== pb) return pa - pb;
    const ra = isReady(a) ? 1 : 0;
    const rb = isReady(b) ? 1 : 0;
    if (ra !== rb) return ra - rb;
    if (ra && rb) {
      const ta = time(readyCondition(a).lastTransitionTime);
      const tb = time(readyCondition(b).lastTransitionTime);
      if (ta !== tb) return tb - ta;
    }
    const ca = time(a.metadata?.creationTimestamp);
    const cb = time(b.metadata?.creationTimestamp);
    if (ca !== cb) return cb - ca;
    return String(a.metadata?.name).localeCompare(String(b.metadata?.name));
  });
}

/**
 * Sorts the namespace's Pods for this ReplicaSet: `owned` (controller ref to it, matching the
 * selector), `adopt` (orphans that match and are not terminating), `release` (owned but no longer
 * matching). Pods controlled by something else are ignored.
 */
export function classifyPods(rs, pods, kind = REPLICA_SET) {
  const uid = rs.metadata.uid;
  const selector = kind.selector(rs);
  const out = { owned: [], adopt: [], release: [] };
  for (const pod of pods) {
    const ref = meta.controllerRef(pod);
    const matches = selectorMatches(selector, meta.labels(pod));
    if (ref) {
      if (ref.uid !== uid) continue;
      (matches ? out.owned : out.release).push(pod);
    } else if (matches && !meta.isDeleting(pod)) {
      out.adopt.push(pod);
    }
  }
  return out;
}

/** The status for these owned Pods (conditions are added by the caller). */
export function computeStatus(rs, ownedPods, now) {
  const templateLabels = rs.spec.template?.metadata?.labels ?? {};
  const minReadySeconds = rs.spec.minReadySeconds ?? 0;
  const active = ownedPods.filter(isActive);
  return {
    replicas: active.length,
    fullyLabeledReplicas: active.filter((p) => fullyLabeled(p, templateLabels)).length,
    readyReplicas: active.filter(isReady).length,
    availableReplicas: active.filter((p) => isAvailable(p, minReadySeconds, now)).length,
    observedGeneration: rs.metadata.generation ?? 0,
  };
}

/**
 * The conditions to write: ReplicaFailure set from `createError` (or removed), others kept. As
 * kube's `calculateStatus`, a ReplicaFailure already there is kept as it is: a create that keeps
 * failing (a quota) names a new random Pod each time, and rewriting the condition with it made
 * every failure a status write, whose event queued the next attempt at once, past the backoff.
 */
export function nextConditions(current, createError, now) {
  const others = (current ?? []).filter((c) => c.type !== FAILURE);
  if (!createError) return others;
  const prev = (current ?? []).find((c) => c.type === FAILURE);
  if (prev) return current;
  return [
    ...others,
    {
      type: FAILURE,
      status: 'True',
      reason: 'FailedCreate',
      message: createError,
      lastTransitionTime: new Date(now).toISOString().replace(/\.\d+Z$/, 'Z'),
    },
  ];
}

const STATUS_FIELDS = ['replicas', 'fullyLabeledReplicas', 'readyReplicas', 'availableReplicas', 'observedGeneration'];

/** The merge patch for `status`, or undefined when nothing changed. */
export function statusPatch(current, next, conditions) {
  const cur = current ?? {};
  const patch = {};
  for (const f of STATUS_FIELDS) {
    if ((cur[f] ?? 0) !== next[f] || !(f in cur)) patch[f] = next[f];
  }
  const curConds = cur.conditions ?? [];
  if (JSON.stringify(curConds) !== JSON.stringify(conditions)) {
    patch.conditions = conditions.length ? conditions : null;
  }
  return Object.keys(patch).length ? patch : undefined;
}

// ---------------------------------------------------------------------------------------------
// Expectations: our own writes the cache has not shown yet

/** Per ReplicaSet uid: `adds` (names of Pods created), `dels` (uids of Pods deleted), `at`. */
export class Expectations {
  constructor() {
    this.byUid = new Map();
  }
  entry(uid, key, now) {
    let e = this.byUid.get(uid);
    if (!e) {
      e = { key, adds: new Set(), dels: new Set(), at: now };
      this.byUid.set(uid, e);
    }
    e.at = now; // the TTL counts from the latest write
    return e;
  }
  /** Forgets what the cache now shows (and everything older than the TTL); returns the entry. */
  observe(uid, pods, now) {
    const e = this.byUid.get(uid);
    if (!e) return undefined;
    if (now - e.at > EXPECTATION_TTL_MS) {
      log.warn('expectations expired', { replicaset: e.key, adds: e.adds.size, deletes: e.dels.size });
      this.byUid.delete(uid);
      return undefined;
    }
    const names = new Set();
    const liveUids = new Set();
    for (const p of pods) {
      names.add(p.metadata.name);
      if (!meta.isDeleting(p)) liveUids.add(p.metadata.uid);
    }
    for (const n of e.adds) if (names.has(n)) e.adds.delete(n);
    for (const u of e.dels) if (!liveUids.has(u)) e.dels.delete(u);
    if (!e.adds.size && !e.dels.size) {
      this.byUid.delete(uid);
      return undefined;
    }
    return e;
  }
  /** Drops everything about the ReplicaSet with this key (it is gone). */
  forgetKey(key) {
    for (const [uid, e] of this.byUid) if (e.key === key) this.byUid.delete(uid);
  }
}

// ---------------------------------------------------------------------------------------------
// The controller

const isNamespaceTerminating = (e) =>
  e?.status === 403 && /being terminated|is terminating/i.test(e.statusMessage ?? e.message ?? '');

/**
 * The controller object (pass it to `controller(...)`). `now` and `burst` are injectable for
 * tests; each call makes its own expectations.
 */
export function replicaSetController({ now = () => Date.now(), burst = BURST, kind = REPLICA_SET } = {}) {
  const expectations = new Expectations();

  return {
    expectations,

    register() {
      return {
        watches: [watch(kind.resource), watch(PODS, { ownedBy: { group: kind.group, kind: kind.kind } })],
        // Expectations live in the instance: one worker keeps them consistent per key.
        maxConcurrentReconciles: 1,
        // Orphan Pods raise no event for a ReplicaSet; a resync lets it adopt them.
        resyncSeconds: 30,
        permissions: [
          permission(kind.group, kind.resources, ['get', 'list', 'watch', 'update', 'patch']),
          permission('', 'pods', ['get', 'list', 'watch', 'create', 'delete', 'patch']),
          permission('', 'events', ['create', 'patch']),
        ],
      };
    },

    reconcile(key, rs) {
      const keyStr = `${key.namespace}/${key.name}`;
      if (!rs) {
        expectations.forgetKey(keyStr);
        return;
      }
      if (meta.isDeleting(rs)) return;
      const invalid = validate(rs, kind);
      if (invalid) throw new TerminalError(invalid);

      const t = now();
      const ns = key.namespace;
      const uid = rs.metadata.uid;
      const rsPath = kind.resource.objectPath(ns, key.name);
      const pods = cache.list(PODS, ns);
      const { owned, adopt, release } = classifyPods(rs, pods, kind);
      let retrySoon = false;

      // Claim: adopt matching orphans, release owned Pods that stopped matching.
      for (const pod of adopt) {
        const refs = pod.metadata.ownerReferences;
        const ops = [{ op: 'test', path: '/metadata/resourceVersion', value: pod.metadata.resourceVersion }];
        ops.push(
          Array.isArray(refs)
            ? { op: 'add', path: '/metadata/ownerReferences/-', value: ownerRefTo(rs, kind) }
            : { op: 'add', path: '/metadata/ownerReferences', value: [ownerRefTo(rs, kind)] },
        );
        try {
          owned.push(api.patchJson(PODS.objectPath(ns, pod.metadata.name), ops));
          log.info('adopted pod', { replicaset: keyStr, pod: pod.metadata.name });
        } catch (e) {
          if (!(e.isNotFound?.() || e.isConflict?.() || e.isInvalid?.())) throw e;
          retrySoon = true; // changed or gone meanwhile: look again soon
        }
      }
      for (const pod of release) {
        const i = pod.metadata.ownerReferences.findIndex((r) => r.controller === true && r.uid === uid);
        try {
          api.patchJson(PODS.objectPath(ns, pod.metadata.name), [
            { op: 'test', path: `/metadata/ownerReferences/${i}/uid`, value: uid },
            { op: 'remove', path: `/metadata/ownerReferences/${i}` },
          ]);
          log.info('released pod', { replicaset: keyStr, pod: pod.metadata.name });
        } catch (e) {
          if (!(e.isNotFound?.() || e.isConflict?.() || e.isInvalid?.())) throw e;
          retrySoon = true;
        }
      }

      // Count: what the cache shows, corrected by our writes it has not shown yet.
      const exp = expectations.observe(uid, pods, t);
      const pendingDels = exp?.dels ?? new Set();
      const pendingAdds = exp?.adds?.size ?? 0;
      const active = owned.filter((p) => isActive(p) && !pendingDels.has(p.metadata.uid));
      const want = rs.spec.replicas ?? 1;
      const diff = active.length + pendingAdds - want;

      let createError;
      let manageError;
      if (diff < 0) {
        const n = Math.min(-diff, burst);
        if (-diff > burst) retrySoon = true;
        const body = podFromTemplate(rs, kind);
        for (let i = 0; i < n; i++) {
          try {
            const pod = api.create(PODS.path(ns), body);
            expectations.entry(uid, keyStr, t).adds.add(pod.metadata.name);
            log.info('created pod', { replicaset: keyStr, pod: pod.metadata.name });
            // As kube's ReplicaSet controller records it (kubectl describe rs shows it).
            events.normal(rs, 'SuccessfulCreate', `Created pod: ${pod.metadata.name}`);
          } catch (e) {
            if (isNamespaceTerminating(e)) break; // nothing to do until the namespace is gone
            events.warning(rs, 'FailedCreate', `Error creating: ${e.statusMessage ?? e.message}`);
            // kube's condition message is the API's own (`pods "x" is forbidden: ...`).
            createError = e.statusMessage ?? e.message;
            manageError = e;
            break; // like kube's slow start: stop at the first failure
          }
        }
      } else if (diff > 0) {
        const victims = rankForDeletion(active).slice(0, Math.min(diff, burst));
        if (diff > burst) retrySoon = true;
        for (const pod of victims) {
          try {
            api.delete(PODS.objectPath(ns, pod.metadata.name), { preconditions: { uid: pod.metadata.uid } });
            expectations.entry(uid, keyStr, t).dels.add(pod.metadata.uid);
            log.info('deleted pod', { replicaset: keyStr, pod: pod.metadata.name });
            events.normal(rs, 'SuccessfulDelete', `Deleted pod: ${pod.metadata.name}`);
          } catch (e) {
            // 404: already gone; 409: the name now belongs to another Pod (ours is gone). Either
            // way the cache will show it gone: nothing to expect.
            if (!(e.isNotFound?.() || e.isConflict?.())) {
              manageError = e;
              break;
            }
          }
        }
      }

      // Status, from what the cache shows (like kube: the next events bring the rest).
      const next = computeStatus(rs, owned, t);
      const conditions = nextConditions(rs.status?.conditions, createError, t);
      const patch = statusPatch(rs.status, next, conditions);
      if (patch) {
        try {
          api.patchStatus(rsPath, { status: patch });
        } catch (e) {
          if (e.isNotFound?.()) return; // the ReplicaSet is gone
          if (!manageError) throw e;
        }
      }
      if (manageError) throw manageError;

      if (retrySoon) return requeueAfter(100);
      if (expectations.byUid.has(uid)) return requeueAfter(PENDING_RECHECK_MS);
      // Ready but not yet available (minReadySeconds): look again when they become available.
      const mrs = rs.spec.minReadySeconds ?? 0;
      if (mrs > 0 && next.readyReplicas > next.availableReplicas) {
        const soonest = owned
          .filter((p) => isActive(p) && isReady(p) && !isAvailable(p, mrs, t))
          .map((p) => time(readyCondition(p).lastTransitionTime) + mrs * 1000 - t);
        return requeueAfter(Math.max(100, Math.min(...soonest) + 50));
      }
      return undefined;
    },
  };
}
