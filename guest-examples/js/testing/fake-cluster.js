// A tiny in-memory API server for unit-testing controllers under plain node: enough of kube's REST
// semantics for the SDK's calls (get, list, create with generateName, update with
// resourceVersion checks, merge and JSON patches, delete with preconditions, the status
// subresource), plus an informer cache that can be made to lag behind the store.
//
//   import { setHost } from './fake-host.js';
//   const cluster = new FakeCluster();
//   setHost(cluster);
//   cluster.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: 'a' } });
//
// Not a conformance fake: no validation, no field selectors, no watch.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const KINDS = {
  pods: 'Pod',
  configmaps: 'ConfigMap',
  secrets: 'Secret',
  replicasets: 'ReplicaSet',
  deployments: 'Deployment',
  replicationcontrollers: 'ReplicationController',
};

function parsePath(fullPath) {
  const [path, qs = ''] = fullPath.split('?');
  const query = Object.fromEntries(
    qs
      .split('&')
      .filter(Boolean)
      .map((kv) => kv.split('=').map(decodeURIComponent)),
  );
  const parts = path.split('/').filter(Boolean);
  let group;
  let version;
  let rest;
  if (parts[0] === 'api') {
    group = '';
    version = parts[1];
    rest = parts.slice(2);
  } else if (parts[0] === 'apis') {
    group = parts[1];
    version = parts[2];
    rest = parts.slice(3);
  } else {
    throw new Error(`fake cluster: bad path ${fullPath}`);
  }
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  return { group, version, resource, namespace, name, subresource, query };
}

const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** RFC 7386 JSON merge patch. */
export function mergePatch(target, patch) {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
  const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** RFC 6902 JSON patch (add, remove, replace, test); throws { status: 422 } on a failed op. */
export function jsonPatch(doc, ops) {
  let out = clone(doc);
  const fail = (msg) => {
    const e = new Error(msg);
    e.status = 422;
    throw e;
  };
  for (const op of ops) {
    const keys = op.path
      .split('/')
      .slice(1)
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop();
    let parent = out;
    for (const k of keys) {
      if (parent === null || typeof parent !== 'object' || !(k in parent)) fail(`path ${op.path} not found`);
      parent = parent[k];
    }
    const isArr = Array.isArray(parent);
    switch (op.op) {
      case 'test':
        if (JSON.stringify(parent?.[last]) !== JSON.stringify(op.value)) fail(`test failed at ${op.path}`);
        break;
      case 'add':
        if (isArr) {
          if (last === '-') parent.push(clone(op.value));
          else parent.splice(Number(last), 0, clone(op.value));
        } else parent[last] = clone(op.value);
        break;
      case 'replace':
        if (!(last in parent)) fail(`path ${op.path} not found`);
        parent[last] = clone(op.value);
        break;
      case 'remove':
        if (!(last in parent)) fail(`path ${op.path} not found`);
        if (isArr) parent.splice(Number(last), 1);
        else delete parent[last];
        break;
      default:
        fail(`unsupported op ${op.op}`);
    }
  }
  return out;
}

function status(code, reason, message) {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

export class FakeCluster {
  constructor() {
    /** `${group}/${resource}` -> Map(`${ns}/${name}` -> object) */
    this.store = new Map();
    this.rv = 0;
    this.seq = 0;
    this.clock = Date.parse('2030-01-01T00:00:00Z');
    /** When true, cache reads serve the snapshot taken by syncCache() instead of the store. */
    this.cacheLags = false;
    this.snapshot = new Map();
    /** Every API request: `{ method, path, body }`. */
    this.requests = [];
    /** Every log line: `{ level, message, fields }`. */
    this.logs = [];
    /** Optional hook: `(req) => response | undefined` to inject failures. */
    this.intercept = undefined;
    /** Every Event recorded (record-event), as the host stores it, repeats counted. */
    this.events = [];
    /** When set, record-event fails with this message (like a 403). */
    this.refuseEvents = undefined;
  }

  /** record-event, as the host does it: a v1 Event; the same event again bumps its count. */
  recordEvent(e) {
    if (this.refuseEvents !== undefined) return this.refuseEvents;
    const r = e.regarding;
    if (!r.apiVersion || !r.kind || !r.name || !e.reason) {
      return 'invalid event: regarding needs apiVersion, kind and name, and a reason';
    }
    const type = e.type === 'warning' ? 'Warning' : 'Normal';
    const same = this.events.find(
      (x) =>
        x.involvedObject.uid === r.uid && x.involvedObject.name === r.name && x.involvedObject.kind === r.kind &&
        x.type === type && x.reason === e.reason && x.action === e.action && x.message === e.note,
    );
    if (same) {
      same.count += 1;
      same.lastTimestamp = this.now();
      return undefined;
    }
    const now = this.now();
    this.events.push({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { namespace: r.namespace || 'default', name: `${r.name}.${this.events.length}` },
      involvedObject: { apiVersion: r.apiVersion, kind: r.kind, namespace: r.namespace || undefined, name: r.name, uid: r.uid },
      type,
      reason: e.reason,
      action: e.action,
      message: e.note.slice(0, 1024),
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
    });
    return undefined;
  }

  table(group, resource) {
    const k = `${group}/${resource}`;
    if (!this.store.has(k)) this.store.set(k, new Map());
    return this.store.get(k);
  }

  now() {
    this.clock += 1000;
    return new Date(this.clock).toISOString().replace(/\.\d+Z$/, 'Z');
  }

  /** Puts an object straight into the store (filling uid, resourceVersion, ...); returns it. */
  put(obj) {
    const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
    const resource = Object.entries(KINDS).find(([, k]) => k === obj.kind)?.[0];
    if (!resource) throw new Error(`fake cluster: unknown kind ${obj.kind}`);
    void version;
    const o = clone(obj);
    o.metadata.uid ??= `uid-${++this.seq}`;
    o.metadata.creationTimestamp ??= this.now();
    o.metadata.generation ??= 1;
    o.metadata.resourceVersion = String(++this.rv);
    this.table(group, resource).set(`${o.metadata.namespace ?? ''}/${o.metadata.name}`, o);
    return clone(o);
  }

  /** One stored object, or undefined. */
  object(group, resource, namespace, name) {
    return clone(this.table(group, resource).get(`${namespace}/${name}`));
  }

  /** Every stored object of a resource in a namespace ('' or undefined: all). */
  objects(group, resource, namespace) {
    return [...this.table(group, resource).values()]
      .filter((o) => !namespace || o.metadata.namespace === namespace)
      .map(clone);
  }

  /** Makes the cache show the store as it is now (with cacheLags). */
  syncCache() {
    this.snapshot = new Map([...this.store].map(([k, m]) => [k, new Map([...m].map(([kk, o]) => [kk, clone(o)]))]));
  }

  /** Makes the cache show one object as it is in the store now (gone if it is gone). */
  syncCacheObject(group, resource, namespace, name) {
    const k = `${group}/${resource}`;
    if (!this.snapshot.has(k)) this.snapshot.set(k, new Map());
    const o = this.object(group, resource, namespace, name);
    if (o) this.snapshot.get(k).set(`${namespace}/${name}`, o);
    else this.snapshot.get(k).delete(`${namespace}/${name}`);
  }

  cacheTable(group, resource) {
    const src = this.cacheLags ? this.snapshot : this.store;
    return src.get(`${group}/${resource}`) ?? new Map();
  }

  // --- the host interface ---

  cacheGet(group, _version, resource, namespace, name) {
    const o = this.cacheTable(group, resource).get(`${namespace}/${name}`);
    return o ? encoder.encode(JSON.stringify(o)) : undefined;
  }

  cacheList(group, _version, resource, namespace) {
    const items = [...this.cacheTable(group, resource).values()].filter(
      (o) => namespace === undefined || o.metadata.namespace === namespace,
    );
    return encoder.encode(JSON.stringify(items));
  }

  log(level, message, fields) {
    this.logs.push({ level, message, fields: Object.fromEntries(fields) });
  }

  apiCall(req) {
    const body = req.body.length ? JSON.parse(decoder.decode(req.body)) : undefined;
    this.requests.push({ method: req.method, path: req.path, body });
    const injected = this.intercept?.({ method: req.method, path: req.path, body });
    let code;
    let out;
    if (injected) {
      [code, out] = injected;
    } else {
      try {
        const ct = (req.headers.find(([k]) => k.toLowerCase() === 'content-type') ?? [])[1] ?? '';
        [code, out] = this.serve(req.method, req.path, body, ct);
      } catch (e) {
        [code, out] = [e.status ?? 500, status(e.status ?? 500, e.status === 422 ? 'Invalid' : 'InternalError', e.message)];
      }
    }
    return {
      status: code,
      headers: [['content-type', 'application/json']],
      body: out === undefined ? new Uint8Array(0) : encoder.encode(JSON.stringify(out)),
    };
  }

  serve(method, path, body, contentType = '') {
    const p = parsePath(path);
    const table = this.table(p.group, p.resource);
    const key = `${p.namespace}/${p.name}`;
    const notFound = () => [404, status(404, 'NotFound', `${p.resource} "${p.name}" not found`)];
    const apiVersion = p.group ? `${p.group}/${p.version}` : p.version;
    const kind = KINDS[p.resource];
    const bump = (o) => {
      o.metadata.resourceVersion = String(++this.rv);
      return o;
    };

    if (!p.name) {
      if (method === 'GET') {
        const items = this.objects(p.group, p.resource, p.namespace);
        return [200, { kind: `${kind}List`, apiVersion, metadata: { resourceVersion: String(this.rv) }, items }];
      }
      if (method === 'POST') {
        const o = clone(body);
        o.apiVersion ??= apiVersion;
        o.kind ??= kind;
        o.metadata ??= {};
        o.metadata.namespace = p.namespace;
        if (!o.metadata.name && o.metadata.generateName) {
          o.metadata.name = `${o.metadata.generateName}${(++this.seq).toString(36).padStart(5, 'x')}`;
        }
        if (table.has(`${p.namespace}/${o.metadata.name}`)) {
          return [409, status(409, 'AlreadyExists', `${p.resource} "${o.metadata.name}" already exists`)];
        }
        delete o.status;
        return [201, this.put(o)];
      }
      return [405, status(405, 'MethodNotAllowed', method)];
    }

    const current = table.get(key);
    const applying = method === 'PATCH' && contentType.startsWith('application/apply-patch+yaml');
    if (!current && applying && !p.subresource) {
      // Server-side apply creates what does not exist.
      const o = clone(body);
      o.metadata = { ...o.metadata, namespace: p.namespace || undefined };
      return [201, this.put(o)];
    }
    if (!current) return notFound();
    const onStatus = p.subresource === 'status';
    const apply = (next) => {
      // Status writes change only status; main writes never change status.
      const merged = onStatus
        ? { ...clone(current), status: next.status }
        : { ...next, status: clone(current.status) };
      merged.metadata = { ...merged.metadata, uid: current.metadata.uid, creationTimestamp: current.metadata.creationTimestamp };
      if (!onStatus && JSON.stringify(next.spec) !== JSON.stringify(current.spec)) {
        merged.metadata.generation = (current.metadata.generation ?? 1) + 1;
      }
      if (merged.status === undefined) delete merged.status;
      table.set(key, bump(merged));
      return [200, clone(merged)];
    };

    switch (method) {
      case 'GET':
        return [200, clone(current)];
      case 'PUT':
        if (body.metadata?.resourceVersion && body.metadata.resourceVersion !== current.metadata.resourceVersion) {
          return [409, status(409, 'Conflict', 'the object has been modified')];
        }
        return apply(body);
      case 'PATCH': {
        // The caller tells which patch by the body's shape (array: JSON patch).
        const next = Array.isArray(body) ? jsonPatch(current, body) : mergePatch(current, body);
        return apply(next);
      }
      case 'DELETE': {
        const pre = body?.preconditions;
        if (pre?.uid && pre.uid !== current.metadata.uid) {
          return [409, status(409, 'Conflict', 'Precondition failed: UID in precondition does not match')];
        }
        table.delete(key);
        return [200, clone(current)];
      }
      default:
        return [405, status(405, 'MethodNotAllowed', method)];
    }
  }
}
