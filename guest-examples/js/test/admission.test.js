// The admission SDK (sdk/turtles-admission.js) and the js-owner-policy example under plain node,
// against the fake admission host (run: npm test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admissionRequest, logs, setAdmissionHost } from '../testing/fake-admission-host.js';
import { FakeCluster } from '../testing/fake-cluster.js';
import {
  allow, cache, deny, invalid, jsonPatch, mutated, permission, pointer, policy, reasonFor, rule, warn,
  log, AdmissionRequest, Denied, CONFIGMAPS, NAMESPACES,
} from '../sdk/turtles-admission.js';
import * as ownerPolicy from '../examples/js-owner-policy.js';

const text = (b) => new TextDecoder().decode(b);

test('rules and permissions have the WIT shape', () => {
  assert.deepEqual(rule('v1', ['configmaps', 'secrets'], ['CREATE', 'update']), {
    operations: ['create', 'update'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'secrets'], scope: 'any',
  });
  assert.deepEqual(rule('apps/v1', 'deployments', '*', 'Namespaced'), {
    operations: [], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'], scope: 'namespaced',
  });
  assert.deepEqual(rule('*', '*/*'), { operations: [], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: 'any' });
  assert.deepEqual(rule({ apiGroups: '', apiVersions: 'v1', resources: 'pods/status', operations: ['DELETE'], scope: 'Cluster' }), {
    operations: ['delete'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'], scope: 'cluster',
  });
  assert.throws(() => rule('v1', 'pods', ['CONNECT']), TypeError);
  assert.deepEqual(permission('', 'namespaces', 'get'), { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] });
});

test('registration: defaults from the methods, selectors, failure policy', () => {
  const reg = policy({
    register: () => ({
      rules: [rule('v1', 'pods')],
      namespaceSelector: { matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'x', operator: 'DoesNotExist' }] },
      failurePolicy: 'Ignore',
      timeoutMs: 25.4,
    }),
    mutate() {},
  }).register();
  assert.deepEqual(reg, {
    validating: false,
    mutating: true,
    rules: [{ operations: [], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'any' }],
    namespaceSelector: 'env=prod,!x',
    objectSelector: undefined,
    failurePolicy: 'ignore',
    timeoutMs: 25,
    permissions: [],
  });
  assert.throws(() => policy({ register: () => ({ rules: [] }), validate() {} }).register(), TypeError);
  assert.throws(() => policy({ register: () => ({ rules: [rule('v1', 'pods')] }) }).register(), /neither validating nor mutating/);
  assert.throws(() => policy({ register: () => ({ rules: [rule('v1', 'pods')], failurePolicy: 'maybe' }), validate() {} }).register(), TypeError);
  assert.throws(() => policy({ validate() {} }), TypeError);
});

test('answers: allow, deny, invalid, warn, mutated, jsonPatch', () => {
  assert.deepEqual({ ...allow() }, { denied: undefined, patch: { tag: 'none' }, warnings: [] });
  assert.deepEqual(deny('no').denied, { code: 403, reason: 'Forbidden', message: 'no' });
  assert.deepEqual(deny('gone', { code: 410 }).denied, { code: 410, reason: 'Gone', message: 'gone' });
  assert.deepEqual(deny('odd', { code: 418, reason: 'Teapot' }).denied, { code: 418, reason: 'Teapot', message: 'odd' });
  assert.equal(deny('odd', { code: 418 }).denied.reason, '', 'no reason known: the host derives one');
  assert.throws(() => deny('ok?', { code: 200 }), RangeError);
  assert.deepEqual(invalid('bad').denied, { code: 422, reason: 'Invalid', message: 'bad' });
  assert.deepEqual(warn('a', 'b').warnings, ['a', 'b']);
  assert.deepEqual(deny('x').warn('y').warnings, ['y']);
  assert.equal(reasonFor(422), 'Invalid');
  const m = mutated({ a: 1 });
  assert.equal(m.patch.tag, 'object');
  assert.ok(m.patch.val instanceof Uint8Array);
  assert.deepEqual(JSON.parse(text(m.patch.val)), { a: 1 });
  assert.equal(pointer('metadata', 'annotations', 'turtles.dev/owner~x'), '/metadata/annotations/turtles.dev~1owner~0x');
  const p = jsonPatch([{ op: 'add', path: pointer('metadata', 'labels', 'a/b'), value: 'c' }]);
  assert.equal(p.patch.tag, 'json-patch');
  assert.deepEqual(JSON.parse(text(p.patch.val)), [{ op: 'add', path: '/metadata/labels/a~1b', value: 'c' }]);
  assert.deepEqual(jsonPatch([]).patch, { tag: 'none' });
  assert.throws(() => jsonPatch([{ op: 'merge', path: '/a' }]), TypeError);
});

test('the request: kube-style fields, objects parsed lazily and once', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'ns', name: 'a' } };
  const wit = admissionRequest({ operation: 'UPDATE', object: cm, oldObject: cm, extra: { scopes: ['x', 'y'] } });
  const req = new AdmissionRequest(wit);
  assert.equal(req.operation, 'UPDATE');
  assert.deepEqual(req.kind, { group: '', version: 'v1', kind: 'ConfigMap' });
  assert.equal(req.key, 'ns/a');
  assert.deepEqual(req.userInfo.extra, { scopes: ['x', 'y'] });
  assert.equal(req._object, undefined, 'not parsed before use');
  assert.equal(req.object, req.object);
  assert.equal(req.object.metadata.name, 'a');
  const del = new AdmissionRequest(admissionRequest({ operation: 'DELETE', oldObject: cm }));
  assert.equal(del.object, undefined);
  assert.equal(del.oldObject.kind, 'ConfigMap');
  const broken = new AdmissionRequest({ ...wit, object: new TextEncoder().encode('{nope') });
  assert.throws(() => broken.object, /not JSON/);
});

test('exports: verdicts and mutations, warnings, Denied, bugs rethrown', async () => {
  setAdmissionHost();
  const p = policy({
    register: () => ({ rules: [rule('v1', 'configmaps')] }),
    validate(req) {
      req.warn('seen');
      switch (req.name) {
        case 'deny': return deny('no').warn('really');
        case 'throwDenied': throw new Denied('bad', { code: 422 });
        case 'patch': return mutated({});
        case 'bug': throw new Error('boom');
        case 'odd': return 'yes';
        default: return undefined;
      }
    },
    async mutate(req) {
      const o = req.object;
      o.metadata.labels = { seen: 'yes' };
      return req.name === 'deny' ? deny('no') : mutated(o);
    },
  });
  const r = (name) => admissionRequest({ object: { metadata: { namespace: 'ns', name } } });
  assert.deepEqual(p.validate(r('ok')), { denied: undefined, warnings: ['seen'] });
  assert.deepEqual(p.validate(r('deny')), { denied: { code: 403, reason: 'Forbidden', message: 'no' }, warnings: ['seen', 'really'] });
  assert.deepEqual(p.validate(r('throwDenied')).denied, { code: 422, reason: 'Invalid', message: 'bad' });
  // A bug traps in the component (the failure policy decides): here the error is rethrown, after a log line.
  assert.throws(() => p.validate(r('bug')), /boom/);
  assert.equal(logs.at(-1).level, 'error');
  assert.match(logs.at(-1).message, /validate failed: boom/);
  assert.throws(() => p.validate(r('patch')), /only mutate\(\) can change/);
  assert.throws(() => p.validate(r('odd')), /not an answer/);
  const m = await p.mutate(r('x'));
  assert.equal(m.denied, undefined);
  assert.equal(m.patch.tag, 'object');
  assert.deepEqual(JSON.parse(text(m.patch.val)).metadata.labels, { seen: 'yes' });
  assert.deepEqual(await p.mutate(r('deny')), { denied: { code: 403, reason: 'Forbidden', message: 'no' }, warnings: [], patch: { tag: 'none' } });
  // No validate(): allowed.
  const onlyMutate = policy({ register: () => ({ rules: [rule('v1', 'pods')] }), mutate() {} });
  assert.deepEqual(onlyMutate.validate(r('x')), { denied: undefined, warnings: [] });
  assert.deepEqual(onlyMutate.mutate(r('x')), { denied: undefined, warnings: [], patch: { tag: 'none' } });
});

test('cache reads and logs go through the host', () => {
  const cl = new FakeCluster();
  setAdmissionHost(cl);
  cl.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'prod', name: 'limits' }, data: { max: '3' } });
  assert.equal(cache.get(CONFIGMAPS, 'prod', 'limits').data.max, '3');
  assert.equal(cache.get('v1', 'configmaps', 'prod', 'limits').data.max, '3');
  assert.equal(cache.get(CONFIGMAPS, 'prod', 'nope'), undefined);
  assert.equal(cache.list(CONFIGMAPS).length, 1);
  assert.equal(cache.list('v1', 'configmaps', 'dev').length, 0);
  assert.deepEqual(cache.list(NAMESPACES), []);
  log.info('hello', { n: 1, s: 'x' });
  assert.deepEqual(cl.logs.at(-1), { level: 'info', message: 'hello', fields: { n: '1', s: 'x' } });
  setAdmissionHost();
});

test('js-owner-policy: registration, missing owner denied, non-email owner warned', () => {
  setAdmissionHost();
  const reg = ownerPolicy.register();
  assert.deepEqual(reg.rules, [
    { operations: ['create', 'update'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'secrets'], scope: 'any' },
  ]);
  assert.equal(reg.objectSelector, 'turtles.dev/owner-policy');
  assert.equal(reg.failurePolicy, 'fail');
  assert.equal(reg.validating, true);
  assert.equal(reg.mutating, false);
  const obj = (annotations) => ({
    apiVersion: 'v1', kind: 'Secret', metadata: { namespace: 'ns', name: 's', labels: { 'turtles.dev/owner-policy': '' }, annotations },
  });
  const v = (o, op = 'CREATE') => ownerPolicy.validate(admissionRequest({ operation: op, resource: 'secrets', object: o, oldObject: op === 'UPDATE' ? obj() : undefined }));
  assert.deepEqual(v(obj()), {
    denied: { code: 422, reason: 'Invalid', message: 'annotation "turtles.dev/owner" is required' }, warnings: [],
  });
  assert.deepEqual(v(obj({ other: 'x' }), 'UPDATE').denied.code, 422);
  assert.deepEqual(v(obj({ 'turtles.dev/owner': 'bob' }), 'UPDATE'), {
    denied: undefined, warnings: ['js-owner-policy: owner "bob" is not an email address'],
  });
  assert.deepEqual(v(obj({ 'turtles.dev/owner': 'bob@example.com' })), { denied: undefined, warnings: [] });
  assert.deepEqual(v(obj({ 'turtles.dev/owner': '' })).warnings, ['js-owner-policy: owner "" is not an email address']);
  assert.equal(ownerPolicy.mutate(admissionRequest({ object: obj() })).patch.tag, 'none');
});
