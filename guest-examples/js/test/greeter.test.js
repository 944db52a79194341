// The js-greeter example under plain node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setHost } from '../testing/fake-host.js';
import { FakeCluster } from '../testing/fake-cluster.js';
import * as v1 from '../examples/js-greeter.js';
import * as v2 from '../examples/js-greeter-v2.js';

const bytes = (o) => new TextEncoder().encode(JSON.stringify(o));

test('greets labelled ConfigMaps, once, and each version with its greeting', () => {
  const cl = new FakeCluster();
  setHost(cl);
  const reg = v1.register();
  assert.equal(reg.watches[0].labelSelector, 'turtles.dev/greet=true');
  const cm = cl.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: 'demo', labels: { 'turtles.dev/greet': 'true' } } });
  const key = { namespace: 'default', name: 'demo' };
  assert.deepEqual(v1.reconcile(key, bytes(cm)), { tag: 'done' });
  let now = cl.object('', 'configmaps', 'default', 'demo');
  assert.equal(now.metadata.annotations['turtles.dev/greeting'], 'hello from javascript, demo');
  const writes = cl.requests.length;
  assert.deepEqual(v1.reconcile(key, bytes(now)), { tag: 'done' });
  assert.equal(cl.requests.length, writes, 'already greeted: no write');
  assert.deepEqual(v2.reconcile(key, bytes(now)), { tag: 'done' });
  now = cl.object('', 'configmaps', 'default', 'demo');
  assert.equal(now.metadata.annotations['turtles.dev/greeting'], 'hi from javascript, demo');
  // Gone, or deleted meanwhile: done.
  assert.deepEqual(v1.reconcile(key, undefined), { tag: 'done' });
  cl.table('', 'configmaps').clear();
  assert.deepEqual(v1.reconcile(key, bytes(now)), { tag: 'done' });
});
