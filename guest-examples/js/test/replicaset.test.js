// The replicaset controller under plain node, against the fake cluster, including a cache that
// lags behind the controller's own writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setHost } from '../testing/fake-host.js';
import { FakeCluster } from '../testing/fake-cluster.js';
import { controller } from '../sdk/turtles-controller.js';
import {
  classifyPods, computeStatus, isActive, podFromTemplate, rankForDeletion, replicaSetController, validate,
  EXPECTATION_TTL_MS,
} from '../examples/lib/replicaset.js';
import * as entry from '../examples/replicaset.js';

const enc = new TextEncoder();
const NS = 'default';

function rsObject(name, replicas, extra = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { namespace: NS, name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name, tier: 'web' }, annotations: { note: 'hi' } },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      },
      ...extra,
    },
  };
}

/** A cluster, a controller with a settable clock, and helpers. */
function setup({ burst } = {}) {
  const cl = new FakeCluster();
  setHost(cl);
  let clock = Date.parse('2030-06-01T00:00:00Z');
  const impl = replicaSetController({ now: () => clock, burst });
  const c = controller(impl);
  const h = {
    cl,
    impl,
    advance: (ms) => (clock += ms),
    /** Reconciles like the host: the primary from the cache. */
    reconcile(name) {
      const bytes = cl.cacheGet('apps', 'v1', 'replicasets', NS, name);
      return c.reconcile({ namespace: NS, name }, bytes);
    },
    rs: (name) => cl.object('apps', 'replicasets', NS, name),
    pods: () => cl.objects('', 'pods', NS),
    active: () => cl.objects('', 'pods', NS).filter(isActive),
    setPod(name, fn) {
      const p = cl.object('', 'pods', NS, name);
      fn(p);
      cl.put(p);
    },
  };
  return h;
}

const ready = (p, since = '2030-01-01T00:00:00Z') => {
  p.status = { ...(p.status ?? {}), phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: since }] };
  p.spec.nodeName = 'node-1';
};

test('registration: the watches and permissions of the brief', () => {
  const reg = entry.register();
  assert.deepEqual(reg.watches.map((w) => [w.group, w.version, w.resource, w.mapping]), [
    ['apps', 'v1', 'replicasets', { tag: 'self-key' }],
    ['', 'v1', 'pods', { tag: 'owner', val: { group: 'apps', kind: 'ReplicaSet' } }],
  ]);
  assert.deepEqual(reg.permissions, [
    { apiGroups: ['apps'], resources: ['replicasets', 'replicasets/status'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  ]);
  assert.equal(reg.maxConcurrentReconciles, 1);
});

test('creates the missing pods from the template, then writes status, idempotently', () => {
  const h = setup();
  const rs = h.cl.put(rsObject('web', 3));
  // Requeued as a safety net until the cache shows the new pods (their events come first).
  assert.deepEqual(h.reconcile('web'), { tag: 'requeue-after', val: 1000 });
  const pods = h.pods();
  assert.equal(pods.length, 3);
  // An Event per pod, as kube's ReplicaSet controller records them.
  assert.deepEqual(
    h.cl.events.map((e) => [e.involvedObject.kind, e.involvedObject.name, e.type, e.reason, e.message]).sort(),
    pods.map((p) => ['ReplicaSet', 'web', 'Normal', 'SuccessfulCreate', `Created pod: ${p.metadata.name}`]).sort(),
  );
  for (const p of pods) {
    assert.ok(p.metadata.name.startsWith('web-'));
    assert.equal(p.metadata.generateName, 'web-');
    assert.deepEqual(p.metadata.labels, { app: 'web', tier: 'web' });
    assert.deepEqual(p.metadata.annotations, { note: 'hi' });
    assert.deepEqual(p.metadata.ownerReferences, [
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: rs.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);
    assert.deepEqual(p.spec, { containers: [{ name: 'c', image: 'nginx' }] });
  }
  // Status from what the cache showed before the creates: 0 so far.
  assert.deepEqual(h.rs('web').status, { replicas: 0, fullyLabeledReplicas: 0, readyReplicas: 0, availableReplicas: 0, observedGeneration: 1 });
  // The pod events reconcile again: status catches up; nothing else changes.
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.pods().length, 3);
  assert.equal(h.rs('web').status.replicas, 3);
  assert.equal(h.rs('web').status.fullyLabeledReplicas, 3);
  const before = h.cl.requests.length;
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.cl.requests.length, before, 'converged: no writes at all');
});

test('a lagging cache never makes it create more than spec.replicas', () => {
  const h = setup();
  h.cl.put(rsObject('web', 3));
  h.cl.cacheLags = true;
  h.cl.syncCache(); // the cache shows the RS, no pods
  assert.deepEqual(h.reconcile('web'), { tag: 'requeue-after', val: 1000 });
  assert.equal(h.pods().length, 3);
  for (let i = 0; i < 5; i++) {
    // The cache still shows no pods; expectations stand in for them.
    assert.equal(h.reconcile('web').tag, 'requeue-after');
    assert.equal(h.pods().length, 3);
  }
  h.cl.syncCache();
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.pods().length, 3);
  assert.equal(h.impl.expectations.byUid.size, 0);
  assert.equal(h.rs('web').status.replicas, 3);
});

test('partially visible creates count once', () => {
  const h = setup();
  h.cl.put(rsObject('web', 3));
  h.cl.cacheLags = true;
  h.cl.syncCache();
  h.reconcile('web');
  // The cache shows one of the three new pods.
  const [first] = h.pods();
  h.cl.syncCacheObject('', 'pods', NS, first.metadata.name);
  h.reconcile('web');
  assert.equal(h.pods().length, 3);
  h.cl.syncCache();
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.pods().length, 3);
});

test('scaling down deletes the extras once: unscheduled, then not ready, then newest', () => {
  const h = setup();
  h.cl.put(rsObject('web', 4));
  h.reconcile('web');
  const names = h.pods().map((p) => p.metadata.name);
  assert.equal(names.length, 4);
  // pods[0]: ready, oldest; pods[1]: ready, newer; pods[2]: scheduled not ready; pods[3]: unscheduled.
  h.setPod(names[0], (p) => { ready(p); p.metadata.creationTimestamp = '2030-01-01T00:00:00Z'; });
  h.setPod(names[1], (p) => { ready(p); p.metadata.creationTimestamp = '2030-01-02T00:00:00Z'; });
  h.setPod(names[2], (p) => { p.spec.nodeName = 'node-1'; p.status = { phase: 'Running' }; });
  h.reconcile('web');
  assert.equal(h.rs('web').status.readyReplicas, 2);
  assert.equal(h.rs('web').status.availableReplicas, 2);

  h.cl.put({ ...h.rs('web'), spec: { ...h.rs('web').spec, replicas: 1 } });
  h.cl.cacheLags = true;
  h.cl.syncCache(); // the cache shows replicas: 1 and the four pods, and will not see the deletes
  assert.equal(h.reconcile('web').tag, 'requeue-after');
  assert.deepEqual(h.pods().map((p) => p.metadata.name), [names[0]], 'kept the oldest ready pod');
  for (let i = 0; i < 3; i++) {
    h.reconcile('web');
    assert.equal(h.pods().length, 1, 'no second round of deletes, no re-creates');
  }
  h.cl.syncCache();
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.pods().length, 1);
  assert.equal(h.rs('web').status.replicas, 1);
  assert.equal(h.impl.expectations.byUid.size, 0);
});

test('terminating and finished pods are replaced; others\' pods and non-matching pods are left alone', () => {
  const h = setup();
  const rs = h.cl.put(rsObject('web', 2));
  h.reconcile('web');
  const [a, b] = h.pods().map((p) => p.metadata.name);
  h.setPod(a, (p) => { p.status = { phase: 'Failed' }; });
  h.setPod(b, (p) => { p.metadata.deletionTimestamp = '2030-01-01T00:00:00Z'; });
  // Pods of another controller that match the selector; a plain pod with other labels.
  h.cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: 'other', labels: { app: 'web' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'x', uid: 'x', controller: true }] }, spec: {} });
  h.cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: 'unrelated', labels: { app: 'db' } }, spec: {} });
  h.reconcile('web');
  const mine = h.pods().filter((p) => p.metadata.ownerReferences?.[0]?.uid === rs.metadata.uid);
  assert.equal(mine.filter(isActive).length, 2);
  assert.equal(mine.length, 4);
  assert.ok(h.cl.object('', 'pods', NS, 'other'));
  assert.equal(h.cl.object('', 'pods', NS, 'unrelated').metadata.ownerReferences, undefined);
  h.reconcile('web');
  assert.equal(h.rs('web').status.replicas, 2);
});

test('adopts matching orphans and releases pods that stopped matching', () => {
  const h = setup();
  const rs = h.cl.put(rsObject('web', 2));
  h.cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: 'orphan', labels: { app: 'web' } }, spec: {} });
  h.reconcile('web');
  assert.equal(h.cl.object('', 'pods', NS, 'orphan').metadata.ownerReferences[0].uid, rs.metadata.uid);
  assert.equal(h.pods().length, 2, 'the orphan counts: one created');
  const created = h.pods().find((p) => p.metadata.name !== 'orphan').metadata.name;
  h.setPod(created, (p) => { p.metadata.labels = { app: 'moved' }; });
  h.reconcile('web');
  assert.deepEqual(h.cl.object('', 'pods', NS, created).metadata.ownerReferences, []);
  assert.equal(h.pods().length, 3, 'a replacement for the released pod');
  // A terminating orphan is not adopted.
  h.cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: 'dying', labels: { app: 'web' }, deletionTimestamp: '2030-01-01T00:00:00Z' }, spec: {} });
  h.reconcile('web');
  assert.equal(h.cl.object('', 'pods', NS, 'dying').metadata.ownerReferences, undefined);
});

test('an adoption that races (stale resourceVersion) is retried soon, not counted', () => {
  const h = setup();
  h.cl.put(rsObject('web', 1));
  h.cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: 'orphan', labels: { app: 'web' } }, spec: {} });
  h.cl.cacheLags = true;
  h.cl.syncCache();
  h.setPod('orphan', (p) => { p.metadata.annotations = { touched: 'yes' }; }); // newer than the cache
  assert.deepEqual(h.reconcile('web'), { tag: 'requeue-after', val: 100 });
  assert.equal(h.cl.object('', 'pods', NS, 'orphan').metadata.ownerReferences, undefined);
  h.cl.syncCache();
  h.reconcile('web');
  assert.ok(h.cl.object('', 'pods', NS, 'orphan').metadata.ownerReferences);
});

test('skips a ReplicaSet being deleted; forgets a gone one', () => {
  const h = setup();
  h.cl.put({ ...rsObject('web', 2), metadata: { namespace: NS, name: 'web', deletionTimestamp: '2030-01-01T00:00:00Z' } });
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.cl.requests.length, 0);
  h.cl.table('apps', 'replicasets').clear();
  h.impl.expectations.entry('u', `${NS}/web`, 0).adds.add('x');
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.impl.expectations.byUid.size, 0);
});

test('invalid specs are terminal errors (never an endless stream of creates)', () => {
  const h = setup();
  const bad = rsObject('web', 2);
  bad.spec.template.metadata.labels = { app: 'other' };
  h.cl.put(bad);
  assert.deepEqual(h.reconcile('web'), { tag: 'terminal-error', val: 'spec.template.metadata.labels do not match spec.selector' });
  const noSel = rsObject('web2', 1);
  delete noSel.spec.selector;
  h.cl.put(noSel);
  assert.equal(h.reconcile('web2').tag, 'terminal-error');
  assert.equal(h.pods().length, 0);
  assert.equal(validate(rsObject('ok', 1)), undefined);
});

test('a failed create sets ReplicaFailure and is a transient error; success clears it', () => {
  const h = setup();
  h.cl.put(rsObject('web', 2));
  h.cl.intercept = (r) => (r.method === 'POST' ? [403, { kind: 'Status', code: 403, reason: 'Forbidden', message: 'quota exceeded' }] : undefined);
  const out = h.reconcile('web');
  assert.equal(out.tag, 'transient-error');
  assert.match(out.val, /quota exceeded/);
  const cond = h.rs('web').status.conditions;
  assert.equal(cond.length, 1);
  assert.equal(cond[0].type, 'ReplicaFailure');
  assert.equal(cond[0].reason, 'FailedCreate');
  assert.equal(h.cl.requests.filter((r) => r.method === 'POST').length, 1, 'stops at the first failure');
  assert.equal(cond[0].message, 'quota exceeded', "the API's message, as kube's");
  // Failing again: the condition is kept as it is (no status write, whose event would queue
  // the next attempt at once, past the backoff).
  const patches = h.cl.requests.filter((r) => r.method === 'PATCH').length;
  assert.equal(h.reconcile('web').tag, 'transient-error');
  assert.equal(h.cl.requests.filter((r) => r.method === 'PATCH').length, patches, 'no status write');
  h.cl.intercept = undefined;
  h.reconcile('web');
  h.reconcile('web');
  assert.equal(h.pods().length, 2);
  assert.equal(h.rs('web').status.conditions, undefined);
});

test('404 and 409 on delete count as deleted', () => {
  const h = setup();
  h.cl.put(rsObject('web', 3));
  h.reconcile('web');
  h.cl.put({ ...h.rs('web'), spec: { ...h.rs('web').spec, replicas: 1 } });
  let n = 0;
  h.cl.intercept = (r) => (r.method === 'DELETE' && n++ === 0 ? [404, { kind: 'Status', code: 404, reason: 'NotFound', message: 'gone' }] : undefined);
  assert.equal(h.reconcile('web').tag, 'requeue-after');
  h.cl.intercept = undefined;
  assert.equal(h.pods().length, 2, 'one delete was a (simulated) 404, one real');
  // The 404'd pod is still in the store: once the cache shows it alive, it is deleted for real.
  h.reconcile('web');
  assert.equal(h.pods().length, 1);
});

test('burst: at most `burst` creates per reconcile, then requeue', () => {
  const h = setup({ burst: 5 });
  h.cl.put(rsObject('web', 12));
  assert.deepEqual(h.reconcile('web'), { tag: 'requeue-after', val: 100 });
  assert.equal(h.pods().length, 5);
  h.reconcile('web');
  h.reconcile('web');
  assert.equal(h.pods().length, 12);
  h.reconcile('web');
  assert.equal(h.pods().length, 12);
});

test('expectations expire after the TTL', () => {
  const h = setup();
  h.cl.put(rsObject('web', 2));
  h.cl.cacheLags = true;
  h.cl.syncCache();
  h.reconcile('web');
  assert.equal(h.pods().length, 2);
  h.advance(EXPECTATION_TTL_MS + 1);
  h.reconcile('web'); // the cache never showed them: after the TTL, trust the cache
  assert.equal(h.pods().length, 4);
  assert.ok(h.cl.logs.some((l) => l.message === 'expectations expired'));
});

test('minReadySeconds: available only after that long, with a requeue for it', () => {
  const h = setup();
  h.cl.put(rsObject('web', 1, { minReadySeconds: 10 }));
  h.reconcile('web');
  const [name] = h.pods().map((p) => p.metadata.name);
  const now = Date.parse('2030-06-01T00:00:00Z');
  h.setPod(name, (p) => ready(p, new Date(now - 4000).toISOString()));
  const out = h.reconcile('web');
  assert.equal(h.rs('web').status.readyReplicas, 1);
  assert.equal(h.rs('web').status.availableReplicas, 0);
  assert.deepEqual(out, { tag: 'requeue-after', val: 6050 });
  h.advance(6050);
  assert.deepEqual(h.reconcile('web'), { tag: 'done' });
  assert.equal(h.rs('web').status.availableReplicas, 1);
});

test('pure helpers', () => {
  const rs = { metadata: { name: 'r', namespace: 'n', uid: 'u', generation: 4 }, spec: { selector: { matchLabels: { a: '1' } }, template: { metadata: { labels: { a: '1', b: '2' } }, spec: {} } } };
  const pod = (name, extra = {}) => ({ metadata: { name, labels: { a: '1' }, ownerReferences: [{ uid: 'u', controller: true }], creationTimestamp: '2030-01-01T00:00:00Z', ...extra.metadata }, spec: { ...extra.spec }, status: extra.status });
  const p1 = pod('p1', { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }, spec: { nodeName: 'n' } });
  const p2 = pod('p2', { metadata: { labels: { a: '1', b: '2' } } });
  const p3 = pod('p3', { status: { phase: 'Succeeded' } });
  const p4 = pod('p4', { metadata: { labels: { a: '2' } } });
  const { owned, adopt, release } = classifyPods(rs, [p1, p2, p3, p4]);
  assert.deepEqual(owned.map((p) => p.metadata.name), ['p1', 'p2', 'p3']);
  assert.deepEqual(release.map((p) => p.metadata.name), ['p4']);
  assert.deepEqual(adopt, []);
  assert.deepEqual(computeStatus(rs, owned, 0), { replicas: 2, fullyLabeledReplicas: 1, readyReplicas: 1, availableReplicas: 1, observedGeneration: 4 });
  const newer = pod('new', { metadata: { creationTimestamp: '2030-02-01T00:00:00Z' }, spec: { nodeName: 'n' }, status: { phase: 'Running' } });
  const older = pod('old', { spec: { nodeName: 'n' }, status: { phase: 'Running' } });
  assert.deepEqual(rankForDeletion([p1, older, newer, p2]).map((p) => p.metadata.name), ['p2', 'new', 'old', 'p1']);
  assert.equal(podFromTemplate(rs).metadata.annotations, undefined);
});

test('the same controller keeps a ReplicationController (a plain-map selector)', async () => {
  const { REPLICATION_CONTROLLER } = await import('../examples/lib/replicaset.js');
  const rcEntry = await import('../examples/replicationcontroller.js');
  const reg = rcEntry.register();
  assert.deepEqual(reg.watches.map((w) => [w.group, w.version, w.resource, w.mapping]), [
    ['', 'v1', 'replicationcontrollers', { tag: 'self-key' }],
    ['', 'v1', 'pods', { tag: 'owner', val: { group: '', kind: 'ReplicationController' } }],
  ]);
  assert.deepEqual(reg.permissions[0], {
    apiGroups: [''],
    resources: ['replicationcontrollers', 'replicationcontrollers/status'],
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
  });
  const cl = new FakeCluster();
  setHost(cl);
  const c = controller(replicaSetController({ kind: REPLICATION_CONTROLLER }));
  const rc = cl.put({
    apiVersion: 'v1',
    kind: 'ReplicationController',
    metadata: { namespace: NS, name: 'old' },
    spec: {
      replicas: 2,
      selector: { app: 'old' },
      template: { metadata: { labels: { app: 'old' } }, spec: { containers: [{ name: 'c', image: 'redis' }] } },
    },
  });
  // An orphan the selector matches is adopted; the other one is made.
  cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: 'stray', labels: { app: 'old' } }, spec: {} });
  const reconcile = () => c.reconcile({ namespace: NS, name: 'old' }, cl.cacheGet('', 'v1', 'replicationcontrollers', NS, 'old'));
  reconcile();
  const pods = cl.objects('', 'pods', NS);
  assert.equal(pods.length, 2);
  for (const p of pods) {
    assert.deepEqual(p.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'ReplicationController', name: 'old', uid: rc.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);
  }
  reconcile();
  assert.equal(cl.object('', 'replicationcontrollers', NS, 'old').status.replicas, 2);
  // Without a selector (the API defaults one), nothing is made.
  assert.equal(validate({ spec: { template: {} } }, REPLICATION_CONTROLLER), 'spec.selector is required and must not be empty');
});
