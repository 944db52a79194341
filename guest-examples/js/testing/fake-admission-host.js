// Stand-in for the host interface `turtles:admission/host@0.1.0` under plain node (tests of
// admission policies; testing/hooks.js resolves the import here). The functions have the shapes
// componentize-js gives the real imports and delegate to the host set with setAdmissionHost()
// (a FakeCluster from ./fake-cluster.js works: its cacheGet/cacheList/log). Until one is set,
// the cache is empty and log lines are kept in `logs`. Also: admissionRequest(), a WIT-shaped
// request for calling a policy's `validate` / `mutate` exports.

const encoder = new TextEncoder();

/** The log lines while no host is set: `{ level, message, fields }`. */
export const logs = [];

const nullHost = {
  cacheGet: () => undefined,
  cacheList: () => encoder.encode('[]'),
  log: (level, message, fields) => logs.push({ level, message, fields: Object.fromEntries(fields) }),
};

let impl = nullHost;

/** Routes the host imports to `host`: `{ cacheGet(g, v, r, ns, name), cacheList(g, v, r, ns), log(level, msg, fields) }` (undefined: the empty default). */
export function setAdmissionHost(host) {
  impl = host ?? nullHost;
  logs.length = 0;
}

export function cacheGet(group, version, resource, namespace, name) {
  return impl.cacheGet(group, version, resource, namespace, name);
}
export function cacheList(group, version, resource, namespace) {
  return impl.cacheList(group, version, resource, namespace);
}
export function log(level, message, fields) {
  if (impl.log) impl.log(level, message, fields);
}

const bytes = (o) => (o === undefined || o === null ? undefined : o instanceof Uint8Array ? o : encoder.encode(JSON.stringify(o)));

/**
 * The WIT `request` record (as componentize-js passes it to an export) for a write of `object`:
 * `admissionRequest({ operation: 'CREATE', object, oldObject, resource: 'configmaps', ... })`.
 * Defaults: CREATE, core v1, the kind and namespace/name from the object, user 'alice'.
 */
export function admissionRequest({
  operation = 'CREATE', object, oldObject, group = '', version = 'v1', resource = 'configmaps', kind,
  subResource = '', name, namespace, username = 'alice', groups = ['system:authenticated'], extra = {},
  dryRun = false, uid = 'uid-1',
} = {}) {
  const m = (object ?? oldObject)?.metadata ?? {};
  return {
    uid,
    kind: { group, version, kind: kind ?? (object ?? oldObject)?.kind ?? '' },
    resource: { group, version, resource },
    subResource,
    name: name ?? m.name ?? '',
    namespace: namespace ?? m.namespace ?? '',
    operation: operation.toLowerCase(),
    userInfo: { username, uid: '', groups, extra: Object.entries(extra) },
    dryRun,
    object: bytes(object),
    oldObject: bytes(oldObject),
  };
}
