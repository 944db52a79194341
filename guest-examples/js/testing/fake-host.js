// Stand-in for the host interface `turtles:controller/host@0.2.0` under plain node (tests).
// The functions have the shapes componentize-js gives the real imports; they delegate to the
// implementation set with setHost() (e.g. a FakeCluster from ./fake-cluster.js).

let impl;

/** Routes the host imports to `host`: `{ apiCall(req), cacheGet(g, v, r, ns, name), cacheList(g, v, r, ns), log(level, msg, fields) }`. */
export function setHost(host) {
  impl = host;
}

function current() {
  if (!impl) throw new Error('fake host: call setHost(...) first');
  return impl;
}

export function apiCall(request) {
  return current().apiCall(request);
}
export function cacheGet(group, version, resource, namespace, name) {
  return current().cacheGet(group, version, resource, namespace, name);
}
export function cacheList(group, version, resource, namespace) {
  return current().cacheList(group, version, resource, namespace);
}
export function recordEvent(event) {
  const h = current();
  if (!h.recordEvent) return;
  const err = h.recordEvent(event);
  // As componentize-js surfaces a result's error: thrown, with the value as `payload`.
  if (err !== undefined) throw Object.assign(new Error(String(err)), { payload: err });
}
export function log(level, message, fields) {
  const h = current();
  if (h.log) h.log(level, message, fields);
}
