// JavaScript SDK for turtles controllers.
//
// A controller is a WebAssembly component of the world `turtles:controller/controller`
// (wit/controller.wit), built from an ES module with componentize-js. This module hides the WIT
// bindings: a controller is an object (or class instance) with `register()` and
// `reconcile(key, object)`, turned into the component's two exports by `controller(...)`:
//
//   import { controller, watch, permission, api, CONFIGMAPS } from '../sdk/turtles-controller.js';
//
//   export const { register, reconcile } = controller({
//     register() {
//       return {
//         watches: [watch(CONFIGMAPS, { labelSelector: 'turtles.dev/greet=true' })],
//         permissions: [permission('', 'configmaps', ['get', 'list', 'watch', 'patch'])],
//       };
//     },
//     reconcile(key, cm) {
//       if (!cm) return;                       // gone: nothing to do (undefined means done())
//       api.patchMerge(CONFIGMAPS.objectPath(key.namespace, key.name),
//         { metadata: { annotations: { hi: key.name } } });  // an ApiError thrown = transient error
//     },
//   });
//
// Objects cross the component boundary as JSON bytes; everything here takes and returns plain
// parsed objects. See docs/guests/javascript.md for the full reference.

import { apiCall, cacheGet, cacheList, log as hostLog, recordEvent } from 'turtles:controller/host@0.2.0';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = new Uint8Array(0);

// ---------------------------------------------------------------------------------------------
// Kinds and paths

/**
 * A kind by API version and plural resource name: `gvr('apps/v1', 'replicasets')`,
 * `gvr('v1', 'pods')` (core group). Has `group`, `version`, `resource`, `apiVersion`,
 * `path(namespace)` and `objectPath(namespace, name, subresource?)`.
 */
export function gvr(apiVersion, resource) {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  const prefix = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  return Object.freeze({
    group,
    version,
    resource,
    apiVersion,
    /** The collection path; every namespace (or a cluster-scoped kind) when `namespace` is ''. */
    path(namespace = '') {
      return namespace ? `${prefix}/namespaces/${namespace}/${resource}` : `${prefix}/${resource}`;
    },
    /** One object's path, optionally of a subresource ('status'). */
    objectPath(namespace, name, subresource) {
      const p = `${this.path(namespace)}/${name}`;
      return subresource ? `${p}/${subresource}` : p;
    },
  });
}

export const CONFIGMAPS = gvr('v1', 'configmaps');
export const SECRETS = gvr('v1', 'secrets');
export const PODS = gvr('v1', 'pods');
export const NAMESPACES = gvr('v1', 'namespaces');
export const REPLICASETS = gvr('apps/v1', 'replicasets');
export const DEPLOYMENTS = gvr('apps/v1', 'deployments');

function toGvr(kind) {
  if (kind && typeof kind === 'object' && typeof kind.resource === 'string') {
    if (typeof kind.objectPath === 'function') return kind;
    const apiVersion = kind.group ? `${kind.group}/${kind.version}` : kind.version;
    return gvr(apiVersion, kind.resource);
  }
  throw new TypeError(`expected a kind made by gvr(apiVersion, resource), got ${JSON.stringify(kind)}`);
}

/** Percent-encodes a query parameter value. */
export const queryEscape = (value) => encodeURIComponent(String(value));

// ---------------------------------------------------------------------------------------------
// Registration helpers

/**
 * One kind to watch. `kind` is a `gvr(...)` (or `watch('apps/v1', 'replicasets', opts)`).
 * Options: `namespace` (only this namespace), `labelSelector` (kube syntax string, or a
 * LabelSelector object), `ownedBy: { group, kind }` (an event reconciles the object's controller
 * owner of that kind instead of the object itself).
 */
export function watch(kind, resourceOrOptions, maybeOptions) {
  let k = kind;
  let opts = resourceOrOptions;
  if (typeof kind === 'string') {
    k = gvr(kind, resourceOrOptions);
    opts = maybeOptions;
  }
  const g = toGvr(k);
  const { namespace, labelSelector, ownedBy } = opts ?? {};
  return {
    group: g.group,
    version: g.version,
    resource: g.resource,
    namespace: namespace || undefined,
    labelSelector:
      labelSelector === undefined || labelSelector === null
        ? undefined
        : typeof labelSelector === 'string'
          ? labelSelector
          : formatSelector(labelSelector),
    mapping: ownedBy
      ? { tag: 'owner', val: { group: ownedBy.group ?? '', kind: ownedBy.kind } }
      : { tag: 'self-key' },
  };
}

const list = (v) => (v === undefined || v === null ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);

/**
 * An RBAC rule: `permission('apps', ['replicasets', 'replicasets/status'], ['get', 'patch'])`.
 * Each argument is a string or an array of strings; '' is the core group.
 */
export function permission(apiGroups, resources, verbs) {
  return { apiGroups: list(apiGroups), resources: list(resources), verbs: list(verbs) };
}

function toWitRegistration(reg) {
  if (!reg || !Array.isArray(reg.watches) || reg.watches.length === 0) {
    throw new TypeError('register() must return { watches: [watch(...), ...], permissions: [...] }');
  }
  const watches = reg.watches.map((w) => {
    if (w && w.mapping && typeof w.mapping.tag === 'string') return w;
    return watch(w, w); // a plain { group, version, resource, namespace, labelSelector, ownedBy }
  });
  const resync = reg.resyncSeconds;
  const key = (k) => ({ namespace: String(k.namespace ?? ''), name: String(k.name) });
  return {
    watches,
    maxConcurrentReconciles: Math.max(1, Math.floor(reg.maxConcurrentReconciles ?? 1)),
    resyncSeconds: resync === undefined || resync === null ? undefined : clampU32(resync),
    permissions: (reg.permissions ?? []).map((p) => permission(p.apiGroups, p.resources, p.verbs)),
    // Reconciled once at start, even if no watched change names them.
    initialKeys: (reg.initialKeys ?? []).map(key),
    // Act as this ServiceAccount: its RoleBindings and ClusterRoleBindings decide.
    serviceAccount: reg.serviceAccount ? key(reg.serviceAccount) : undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Outcomes

const clampU32 = (n) => Math.min(0xffffffff, Math.max(0, Math.round(Number(n) || 0)));

/** Reconciled; wait for the next change. (Returning nothing means the same.) */
export const done = () => ({ tag: 'done' });
/** Reconcile this key again after `ms` milliseconds. */
export const requeueAfter = (ms) => ({ tag: 'requeue-after', val: clampU32(ms) });
/** Failed; retried with exponential backoff. (Throwing anything means the same.) */
export const transientError = (message) => ({ tag: 'transient-error', val: String(message) });
/** Failed in a way a retry cannot fix; wait for the next change. */
export const terminalError = (message) => ({ tag: 'terminal-error', val: String(message) });

/** Throw this from reconcile for a terminal error (anything else thrown is transient). */
export class TerminalError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TerminalError';
  }
}

const OUTCOME_TAGS = new Set(['done', 'requeue-after', 'transient-error', 'terminal-error']);

function errorMessage(err) {
  if (err instanceof Error) return err.message || err.name;
  try {
    return typeof err === 'string' ? err : JSON.stringify(err);
  } catch {
    return String(err);
  }
}

function toOutcome(result) {
  if (result === undefined || result === null) return done();
  if (typeof result === 'object' && OUTCOME_TAGS.has(result.tag)) {
    if (result.tag === 'done') return done();
    if (result.tag === 'requeue-after') return requeueAfter(result.val);
    return { tag: result.tag, val: String(result.val ?? '') };
  }
  return terminalError(`reconcile returned ${errorMessage(result)}, not an outcome`);
}

function errorOutcome(err) {
  return err instanceof TerminalError
    ? terminalError(errorMessage(err))
    : transientError(errorMessage(err));
}

// ---------------------------------------------------------------------------------------------
// The exports

/**
 * Turns a controller object (or class, or class instance) with `register()` and
 * `reconcile(key, object)` into the component's exports:
 * `export const { register, reconcile } = controller(impl)`.
 *
 * `register()` returns `{ watches, permissions, maxConcurrentReconciles?, resyncSeconds?,
 * initialKeys?, serviceAccount? }` (`initialKeys`: `[{ namespace, name }]` reconciled once at
 * start; `serviceAccount`: `{ namespace, name }` to act as).
 * `reconcile(key, object)` gets `key = { namespace, name }` and the cached primary as a parsed
 * object (undefined when it no longer exists), and returns an outcome (`done()`,
 * `requeueAfter(ms)`, `transientError(msg)`, `terminalError(msg)`) or nothing (done). A thrown
 * exception is a transient error (`TerminalError`: a terminal one).
 */
export function controller(implOrClass) {
  const impl = typeof implOrClass === 'function' ? new implOrClass() : implOrClass;
  if (!impl || typeof impl.register !== 'function' || typeof impl.reconcile !== 'function') {
    throw new TypeError('controller(impl): impl needs register() and reconcile(key, object) methods');
  }
  return {
    register() {
      return toWitRegistration(impl.register());
    },
    reconcile(key, bytes) {
      let object;
      if (bytes !== undefined && bytes !== null) {
        try {
          object = JSON.parse(decoder.decode(bytes));
        } catch (e) {
          return terminalError(`the host passed an object that is not JSON: ${errorMessage(e)}`);
        }
      }
      const k = { namespace: key.namespace, name: key.name };
      let result;
      try {
        result = impl.reconcile(k, object);
      } catch (e) {
        return errorOutcome(e);
      }
      if (result && typeof result.then === 'function') {
        // componentize-js drives an async export's promise to completion.
        return result.then(toOutcome, errorOutcome);
      }
      return toOutcome(result);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// API calls

/** A non-2xx answer from the API server, from its Status body when it has one. */
export class ApiError extends Error {
  constructor(status, reason, message, body) {
    super(`${status} ${reason}: ${message}`);
    this.name = 'ApiError';
    /** HTTP status code, e.g. 404. */
    this.status = status;
    /** The Status reason, e.g. 'NotFound', 'Conflict', 'AlreadyExists', 'Forbidden', 'Invalid'. */
    this.reason = reason;
    /** The Status message (or the response body when it is not a Status). */
    this.statusMessage = message;
    /** The parsed Status object, when the body was JSON. */
    this.body = body;
  }
  isNotFound() {
    return this.status === 404;
  }
  /** 409: AlreadyExists or a stale resourceVersion / failed precondition. */
  isConflict() {
    return this.status === 409;
  }
  isAlreadyExists() {
    return this.status === 409 && this.reason === 'AlreadyExists';
  }
  isForbidden() {
    return this.status === 403;
  }
  isInvalid() {
    return this.status === 422;
  }
}

function queryString(query) {
  if (!query) return '';
  const parts = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    const value = k === 'labelSelector' && typeof v === 'object' ? formatSelector(v) : v;
    parts.push(`${queryEscape(k)}=${queryEscape(value)}`);
  }
  return parts.length ? `${parts.join('&')}` : '';
}

function withQuery(path, query) {
  const qs = queryString(query);
  if (!qs) return path;
  return path + (path.includes('?') ? '&' : '?') + qs;
}

/** The raw call: `{ method, path, headers: [[k, v]...], body: Uint8Array }` -> `{ status, headers, body }`. */
export function rawCall(method, path, headers = [], body = EMPTY) {
  return apiCall({ method, path, headers, body });
}

/**
 * A JSON call: `body` (an object) is serialized; returns the parsed response body on 2xx
 * (undefined when empty), throws an ApiError otherwise.
 */
export function request(method, path, { body, contentType = 'application/json', query } = {}) {
  const headers = [['accept', 'application/json']];
  let bytes = EMPTY;
  if (body !== undefined) {
    headers.push(['content-type', contentType]);
    bytes = encoder.encode(JSON.stringify(body));
  }
  const resp = apiCall({ method, path: withQuery(path, query), headers, body: bytes });
  const text = resp.body.length ? decoder.decode(resp.body) : '';
  let parsed;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      if (resp.status >= 200 && resp.status < 300) {
        throw new ApiError(resp.status, 'InvalidResponse', `response body is not JSON: ${errorMessage(e)}`);
      }
    }
  }
  if (resp.status < 200 || resp.status >= 300) {
    const reason = (parsed && typeof parsed.reason === 'string' && parsed.reason) || httpReason(resp.status);
    const message = (parsed && typeof parsed.message === 'string' && parsed.message) || text;
    throw new ApiError(resp.status, reason, message, parsed);
  }
  return parsed;
}

function httpReason(status) {
  return (
    {
      400: 'BadRequest',
      401: 'Unauthorized',
      403: 'Forbidden',
      404: 'NotFound',
      405: 'MethodNotAllowed',
      409: 'Conflict',
      410: 'Gone',
      415: 'UnsupportedMediaType',
      422: 'Invalid',
      429: 'TooManyRequests',
      500: 'InternalError',
      503: 'ServiceUnavailable',
      504: 'Timeout',
    }[status] ?? 'Unknown'
  );
}

/**
 * Calls to the API server, made in-process as the controller's own user
 * (`system:controller:NAME`) and authorized by RBAC against the registered permissions.
 * Paths come from `gvr(...).path(ns)` / `.objectPath(ns, name)`. Every call returns the parsed
 * response and throws an ApiError on a non-2xx status.
 */
export const api = Object.freeze({
  request,
  /** GET an object (or anything). `query` is an object of query parameters. */
  get: (path, query) => request('GET', path, { query }),
  /**
   * GET a collection: the `items` array (each with `apiVersion`/`kind` filled in). Options are
   * query parameters: `labelSelector` (string or LabelSelector object), `fieldSelector`, `limit`...
   */
  list(path, query) {
    const l = request('GET', path, { query });
    const items = (l && Array.isArray(l.items) ? l.items : []);
    const itemKind = l && typeof l.kind === 'string' && l.kind.endsWith('List') ? l.kind.slice(0, -4) : undefined;
    return items.map((o) => ({ apiVersion: l.apiVersion, kind: itemKind, ...o }));
  },
  /** POST `object` to a collection path; returns the created object. */
  create: (path, object, query) => request('POST', path, { body: object, query }),
  /** PUT `object` (full replacement; its resourceVersion makes it a compare-and-swap: 409 if stale). */
  update: (path, object, query) => request('PUT', path, { body: object, query }),
  /** PATCH with a JSON merge patch (RFC 7386): `null` deletes a key. */
  patchMerge: (path, patch, query) =>
    request('PATCH', path, { body: patch, contentType: 'application/merge-patch+json', query }),
  /** PATCH with a JSON patch (RFC 6902): an array of `{ op, path, value }`. */
  patchJson: (path, ops, query) =>
    request('PATCH', path, { body: ops, contentType: 'application/json-patch+json', query }),
  /**
   * DELETE an object; returns what the server answered. `options` is a DeleteOptions body, e.g.
   * `{ preconditions: { uid } }` or `{ propagationPolicy: 'Foreground' }`.
   */
  delete: (path, options) =>
    request('DELETE', path, options === undefined ? {} : { body: { kind: 'DeleteOptions', apiVersion: 'v1', ...options } }),
  /** PUT the whole object to its `/status` subresource (`path` is the object's path). */
  updateStatus: (path, object) => request('PUT', `${path}/status`, { body: object }),
  /** Merge-patch the `/status` subresource: `patchStatus(path, { status: { ready: 1 } })`. */
  patchStatus: (path, patch) =>
    request('PATCH', `${path}/status`, { body: patch, contentType: 'application/merge-patch+json' }),
  /**
   * Server-side apply: PATCH `object` (the fields this manager owns, with apiVersion, kind and
   * metadata.name) to its object path as `application/apply-patch+yaml` (JSON is YAML), owned
   * by `fieldManager`; `force: true` takes over fields other managers own instead of a 409.
   * Creates the object if it does not exist; returns the result.
   */
  apply: (path, object, fieldManager, { force = false } = {}) =>
    request('PATCH', path, {
      body: object,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager, force: force ? 'true' : undefined },
    }),
});

/**
 * Events, as `kubectl describe` shows them: the host records them (WIT `record-event`) as the
 * controller's identity, so the controller needs `permission('', 'events', ['create', 'patch'])`;
 * the same event again is counted on the existing Event. Best effort, as in kube: a failure is
 * logged and `record` returns false.
 */
export const events = Object.freeze({
  /** An Event about `object` (its apiVersion, kind, namespace, name, uid); type 'Normal' or 'Warning'. */
  record(object, type, reason, note, action = '') {
    const m = object?.metadata ?? {};
    try {
      recordEvent({
        regarding: {
          apiVersion: String(object?.apiVersion ?? ''),
          kind: String(object?.kind ?? ''),
          namespace: String(m.namespace ?? ''),
          name: String(m.name ?? ''),
          uid: String(m.uid ?? ''),
        },
        type: type === 'Warning' ? 'warning' : 'normal',
        reason: String(reason),
        action: String(action),
        note: String(note),
      });
      return true;
    } catch (e) {
      // componentize-js throws a result's error as an Error whose `payload` is the string.
      const why = e && e.payload !== undefined ? String(e.payload) : errorMessage(e);
      log.warn('event not recorded', { reason: String(reason), error: why });
      return false;
    }
  },
  normal: (object, reason, note, action) => events.record(object, 'Normal', reason, note, action),
  warning: (object, reason, note, action) => events.record(object, 'Warning', reason, note, action),
});

// ---------------------------------------------------------------------------------------------
// The informer cache

/**
 * The host's informer cache of the watched kinds: no API call; the read is authorized by RBAC as the controller's user, in memory. Only kinds the
 * controller watches (and objects matching the watch's namespace/label filters) are there.
 */
export const cache = Object.freeze({
  /** One cached object, or undefined. */
  get(kind, namespace, name) {
    const g = toGvr(kind);
    const bytes = cacheGet(g.group, g.version, g.resource, namespace ?? '', name);
    if (bytes === undefined || bytes === null) return undefined;
    try {
      return JSON.parse(decoder.decode(bytes));
    } catch {
      return undefined;
    }
  },
  /** Every cached object of `kind` in `namespace` (undefined or '': all namespaces). */
  list(kind, namespace) {
    const g = toGvr(kind);
    const bytes = cacheList(g.group, g.version, g.resource, namespace ? namespace : undefined);
    try {
      const items = JSON.parse(decoder.decode(bytes));
      return Array.isArray(items) ? items : [];
    } catch {
      return [];
    }
  },
});

// ---------------------------------------------------------------------------------------------
// Logging

function fieldsOf(fields) {
  if (!fields) return [];
  return Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v) ?? String(v)]);
}

/** Structured logging attributed to the controller: `log.info('created pod', { pod: name })`. */
export const log = Object.freeze({
  trace: (message, fields) => hostLog('trace', String(message), fieldsOf(fields)),
  debug: (message, fields) => hostLog('debug', String(message), fieldsOf(fields)),
  info: (message, fields) => hostLog('info', String(message), fieldsOf(fields)),
  warn: (message, fields) => hostLog('warn', String(message), fieldsOf(fields)),
  error: (message, fields) => hostLog('error', String(message), fieldsOf(fields)),
});

// ---------------------------------------------------------------------------------------------
// Object helpers

/** Small accessors over an object's metadata. */
export const meta = Object.freeze({
  name: (obj) => obj?.metadata?.name,
  namespace: (obj) => obj?.metadata?.namespace ?? '',
  uid: (obj) => obj?.metadata?.uid,
  labels: (obj) => obj?.metadata?.labels ?? {},
  annotations: (obj) => obj?.metadata?.annotations ?? {},
  label: (obj, key) => obj?.metadata?.labels?.[key],
  annotation: (obj, key) => obj?.metadata?.annotations?.[key],
  /** Whether metadata.deletionTimestamp is set. */
  isDeleting: (obj) => obj?.metadata?.deletionTimestamp != null,
  /** The ownerReference with `controller: true`, or undefined. */
  controllerRef: (obj) => (obj?.metadata?.ownerReferences ?? []).find((r) => r && r.controller === true),
  /** An ownerReference to `owner` (which needs apiVersion, kind, metadata.name/uid). */
  ownerReference: (owner, { controller = true, blockOwnerDeletion = true } = {}) => ({
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller,
    blockOwnerDeletion,
  }),
});

// ---------------------------------------------------------------------------------------------
// Label selectors

/**
 * Whether `labels` (an object) match a LabelSelector object (`matchLabels`, `matchExpressions`
 * with In, NotIn, Exists, DoesNotExist). An empty selector matches everything; a null/undefined
 * selector matches nothing (kube's convention for controllers). Throws on an unknown operator.
 */
export function selectorMatches(selector, labels) {
  if (selector === undefined || selector === null) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    if (l[k] !== v) return false;
  }
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(l, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!has || !values.includes(l[e.key])) return false;
        break;
      case 'NotIn':
        if (has && values.includes(l[e.key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        throw new TypeError(`unknown label selector operator ${JSON.stringify(e.operator)}`);
    }
  }
  return true;
}

/** A LabelSelector object in kube's string syntax, e.g. `app=web,tier in (a,b),!legacy`. */
export function formatSelector(selector) {
  const parts = [];
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) parts.push(`${k}=${v}`);
  for (const e of selector?.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',');
    switch (e.operator) {
      case 'In':
        parts.push(`${e.key} in (${values})`);
        break;
      case 'NotIn':
        parts.push(`${e.key} notin (${values})`);
        break;
      case 'Exists':
        parts.push(e.key);
        break;
      case 'DoesNotExist':
        parts.push(`!${e.key}`);
        break;
      default:
        throw new TypeError(`unknown label selector operator ${JSON.stringify(e.operator)}`);
    }
  }
  return parts.join(',');
}
