// The SDK under plain node, against the fake host (run: npm test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setHost } from '../testing/fake-host.js';
import { FakeCluster } from '../testing/fake-cluster.js';
import {
  api, cache, controller, done, events, formatSelector, gvr, log, meta, permission, requeueAfter,
  selectorMatches, terminalError, transientError, watch, ApiError, TerminalError, CONFIGMAPS, PODS, REPLICASETS,
} from '../sdk/turtles-controller.js';

const bytes = (o) => new TextEncoder().encode(JSON.stringify(o));

test('gvr paths', () => {
  assert.equal(PODS.path('ns'), '/api/v1/namespaces/ns/pods');
  assert.equal(PODS.path(), '/api/v1/pods');
  assert.equal(REPLICASETS.objectPath('ns', 'a', 'status'), '/apis/apps/v1/namespaces/ns/replicasets/a/status');
  assert.equal(gvr('v1', 'namespaces').objectPath('', 'x'), '/api/v1/namespaces/x');
  assert.deepEqual([REPLICASETS.group, REPLICASETS.version, REPLICASETS.resource], ['apps', 'v1', 'replicasets']);
});

test('registration has the WIT shape', () => {
  const c = controller({
    register: () => ({
      watches: [
        watch('apps/v1', 'replicasets'),
        watch(PODS, { ownedBy: { group: 'apps', kind: 'ReplicaSet' }, namespace: 'ns', labelSelector: { matchLabels: { a: 'b' } } }),
        { group: '', version: 'v1', resource: 'secrets', labelSelector: 'x=y' },
      ],
      permissions: [permission('', 'pods', ['get', 'list'])],
      resyncSeconds: 30,
    }),
    reconcile() {},
  });
  assert.deepEqual(c.register(), {
    watches: [
      { group: 'apps', version: 'v1', resource: 'replicasets', namespace: undefined, labelSelector: undefined, mapping: { tag: 'self-key' } },
      { group: '', version: 'v1', resource: 'pods', namespace: 'ns', labelSelector: 'a=b', mapping: { tag: 'owner', val: { group: 'apps', kind: 'ReplicaSet' } } },
      { group: '', version: 'v1', resource: 'secrets', namespace: undefined, labelSelector: 'x=y', mapping: { tag: 'self-key' } },
    ],
    maxConcurrentReconciles: 1,
    resyncSeconds: 30,
    permissions: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
    initialKeys: [],
    serviceAccount: undefined,
  });
  const sa = controller({
    register: () => ({ watches: [watch(PODS)], initialKeys: [{ name: 'singleton' }], serviceAccount: { namespace: 'ops', name: 'op' } }),
    reconcile() {},
  }).register();
  assert.deepEqual(sa.initialKeys, [{ namespace: '', name: 'singleton' }]);
  assert.deepEqual(sa.serviceAccount, { namespace: 'ops', name: 'op' });
  assert.throws(() => controller({ register: () => ({ watches: [] }), reconcile() {} }).register(), TypeError);
});

test('outcomes: returned, thrown, parsed object', async () => {
  let seen;
  const c = controller({
    register: () => ({ watches: [watch(CONFIGMAPS)] }),
    reconcile(key, obj) {
      seen = [key, obj];
      switch (key.name) {
        case 'none': return undefined;
        case 'requeue': return requeueAfter(1500.4);
        case 'transient': return transientError('t');
        case 'terminal': return terminalError('x');
        case 'throw': throw new Error('boom');
        case 'throwTerminal': throw new TerminalError('never');
        case 'async': return Promise.resolve(requeueAfter(5));
        case 'asyncThrow': return Promise.reject(new Error('later'));
        default: return done();
      }
    },
  });
  const k = (name) => ({ namespace: 'ns', name });
  assert.deepEqual(c.reconcile(k('none'), bytes({ a: 1 })), { tag: 'done' });
  assert.deepEqual(seen, [{ namespace: 'ns', name: 'none' }, { a: 1 }]);
  assert.deepEqual(c.reconcile(k('gone'), undefined), { tag: 'done' });
  assert.equal(seen[1], undefined);
  assert.deepEqual(c.reconcile(k('requeue'), undefined), { tag: 'requeue-after', val: 1500 });
  assert.deepEqual(c.reconcile(k('transient'), undefined), { tag: 'transient-error', val: 't' });
  assert.deepEqual(c.reconcile(k('terminal'), undefined), { tag: 'terminal-error', val: 'x' });
  assert.deepEqual(c.reconcile(k('throw'), undefined), { tag: 'transient-error', val: 'boom' });
  assert.deepEqual(c.reconcile(k('throwTerminal'), undefined), { tag: 'terminal-error', val: 'never' });
  assert.deepEqual(await c.reconcile(k('async'), undefined), { tag: 'requeue-after', val: 5 });
  assert.deepEqual(await c.reconcile(k('asyncThrow'), undefined), { tag: 'transient-error', val: 'later' });
  assert.equal(c.reconcile(k('x'), new TextEncoder().encode('{nope')).tag, 'terminal-error');
});

test('a class works as the controller', () => {
  class Greeter {
    constructor() { this.greeting = 'hey'; }
    register() { return { watches: [watch(CONFIGMAPS)] }; }
    reconcile(key) { return transientError(`${this.greeting} ${key.name}`); }
  }
  for (const c of [controller(Greeter), controller(new Greeter())]) {
    assert.equal(c.register().watches[0].resource, 'configmaps');
    assert.deepEqual(c.reconcile({ namespace: '', name: 'x' }, undefined), { tag: 'transient-error', val: 'hey x' });
  }
});

test('api calls: methods, content types, parsed results, ApiError', () => {
  const cl = new FakeCluster();
  setHost(cl);
  const created = api.create(CONFIGMAPS.path('ns'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { k: 'v' } });
  assert.equal(created.metadata.name, 'a');
  assert.ok(created.metadata.uid);
  const path = CONFIGMAPS.objectPath('ns', 'a');
  assert.equal(api.get(path).data.k, 'v');
  assert.equal(api.patchMerge(path, { data: { k: 'w' } }).data.k, 'w');
  assert.equal(api.patchJson(path, [{ op: 'add', path: '/data/z', value: '1' }]).data.z, '1');
  const items = api.list(CONFIGMAPS.path('ns'), { labelSelector: { matchLabels: { a: 'b' } } });
  assert.equal(items.length, 1);
  assert.equal(items[0].kind, 'ConfigMap');
  const last = cl.requests.at(-1);
  assert.equal(last.path, '/api/v1/namespaces/ns/configmaps?labelSelector=a%3Db');
  const cur = api.get(path);
  assert.equal(api.update(path, { ...cur, data: { only: 'x' } }).data.only, 'x');
  try {
    api.update(path, cur); // stale resourceVersion
    assert.fail('expected a conflict');
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.ok(e.isConflict());
    assert.equal(e.status, 409);
    assert.equal(e.reason, 'Conflict');
  }
  api.delete(path, { preconditions: { uid: created.metadata.uid } });
  assert.deepEqual(cl.requests.at(-1).body, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: created.metadata.uid } });
  const err = (() => { try { api.get(path); } catch (e) { return e; } })();
  assert.ok(err.isNotFound());
  assert.equal(err.reason, 'NotFound');
  assert.match(err.message, /^404 NotFound: /);
  // A non-Status error body still gives a reason from the status code.
  cl.intercept = () => [403, undefined];
  const e403 = (() => { try { api.get(path); } catch (e) { return e; } })();
  assert.ok(e403.isForbidden());
  assert.equal(e403.reason, 'Forbidden');
  cl.intercept = undefined;
});

test('status subresource helpers', () => {
  const cl = new FakeCluster();
  setHost(cl);
  cl.put({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { namespace: 'ns', name: 'r' }, spec: { replicas: 1 } });
  const path = REPLICASETS.objectPath('ns', 'r');
  api.patchStatus(path, { status: { replicas: 2 } });
  assert.equal(cl.requests.at(-1).path, `${path}/status`);
  const rs = api.get(path);
  assert.equal(rs.status.replicas, 2);
  api.updateStatus(path, { ...rs, spec: { replicas: 9 }, status: { replicas: 3 } });
  const after = api.get(path);
  assert.equal(after.status.replicas, 3);
  assert.equal(after.spec.replicas, 1, 'a status write leaves spec alone');
});

test('cache and log', () => {
  const cl = new FakeCluster();
  setHost(cl);
  cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'a', name: 'p1' } });
  cl.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'b', name: 'p2' } });
  assert.equal(cache.get(PODS, 'a', 'p1').metadata.name, 'p1');
  assert.equal(cache.get(PODS, 'a', 'nope'), undefined);
  assert.equal(cache.list(PODS).length, 2);
  assert.deepEqual(cache.list(PODS, 'b').map(meta.name), ['p2']);
  log.info('hello', { n: 1, s: 'x' });
  assert.deepEqual(cl.logs.at(-1), { level: 'info', message: 'hello', fields: { n: '1', s: 'x' } });
});

test('label selectors', () => {
  const sel = { matchLabels: { app: 'web' }, matchExpressions: [
    { key: 'tier', operator: 'In', values: ['b', 'a'] },
    { key: 'env', operator: 'NotIn', values: ['prod'] },
    { key: 'x', operator: 'Exists' },
    { key: 'legacy', operator: 'DoesNotExist' },
  ] };
  assert.equal(formatSelector(sel), 'app=web,tier in (a,b),env notin (prod),x,!legacy');
  assert.ok(selectorMatches(sel, { app: 'web', tier: 'a', x: '' }));
  assert.ok(!selectorMatches(sel, { app: 'web', tier: 'c', x: '' }));
  assert.ok(!selectorMatches(sel, { app: 'web', tier: 'a', x: '', env: 'prod' }));
  assert.ok(!selectorMatches(sel, { app: 'web', tier: 'a' }));
  assert.ok(!selectorMatches(sel, { app: 'web', tier: 'a', x: '', legacy: '1' }));
  assert.ok(selectorMatches({}, { any: 'thing' }), 'empty selector matches everything');
  assert.ok(!selectorMatches(undefined, {}), 'no selector matches nothing');
  assert.throws(() => selectorMatches({ matchExpressions: [{ key: 'a', operator: 'Near' }] }, {}), TypeError);
});

test('meta helpers', () => {
  const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'r', uid: 'u' } };
  const pod = { metadata: { name: 'p', labels: { a: 'b' }, ownerReferences: [{ uid: 'x' }, meta.ownerReference(owner)], deletionTimestamp: '2030-01-01T00:00:00Z' } };
  assert.equal(meta.controllerRef(pod).uid, 'u');
  assert.ok(meta.isDeleting(pod));
  assert.equal(meta.label(pod, 'a'), 'b');
  assert.deepEqual(meta.annotations(pod), {});
});

test('server-side apply: content type, fieldManager and force; creates what is missing', () => {
  const c = new FakeCluster();
  setHost(c);
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'ns' }, data: { k: 'v' } };
  const created = api.apply(CONFIGMAPS.objectPath('ns', 'a'), cm, 'my manager');
  assert.equal(created.data.k, 'v');
  api.apply(CONFIGMAPS.objectPath('ns', 'a'), { ...cm, data: { k2: 'w' } }, 'mgr', { force: true });
  assert.deepEqual(c.object('', 'configmaps', 'ns', 'a').data, { k: 'v', k2: 'w' });
  assert.deepEqual(c.requests.map((r) => r.path), [
    '/api/v1/namespaces/ns/configmaps/a?fieldManager=my%20manager',
    '/api/v1/namespaces/ns/configmaps/a?fieldManager=mgr&force=true',
  ]);
});

test('events go to the host, repeats are counted, a refusal is logged not thrown', () => {
  const c = new FakeCluster();
  setHost(c);
  const rs = { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'web', namespace: 'ns', uid: 'u1' } };
  assert.equal(events.normal(rs, 'SuccessfulCreate', 'Created pod: web-1'), true);
  assert.equal(events.normal(rs, 'SuccessfulCreate', 'Created pod: web-1'), true);
  assert.equal(events.warning(rs, 'FailedCreate', 'Error creating: x', 'Create'), true);
  assert.equal(c.events.length, 2);
  assert.equal(c.events[0].count, 2);
  assert.deepEqual(c.events[0].involvedObject, { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'ns', name: 'web', uid: 'u1' });
  assert.equal(c.events[1].type, 'Warning');
  assert.equal(c.events[1].action, 'Create');
  assert.equal(c.requests.length, 0);
  c.refuseEvents = 'events is forbidden';
  assert.equal(events.normal(rs, 'X', 'y'), false);
  assert.ok(c.logs.some((l) => l.message === 'event not recorded' && l.fields.error === 'events is forbidden'));
});
