// JavaScript SDK for turtles admission policies.
//
// A policy is a WebAssembly component of the world `turtles:admission/policy`
// (wit/admission/admission.wit), built from an ES module with componentize-js: build.sh builds a
// file with the marker line `// @turtles-world wit/admission policy` against that world. This
// module hides the WIT bindings: a policy is an object (or class) with `register()`,
// `validate(request)` and/or `mutate(request)`, turned into the component's three exports by
// `policy(...)`:
//
//   import { policy, rule, invalid } from '../sdk/turtles-admission.js';
//
//   export const { register, validate, mutate } = policy({
//     register() {
//       return {
//         rules: [rule('v1', ['configmaps'], ['CREATE', 'UPDATE'])],
//         objectSelector: 'turtles.dev/checked',   // string or LabelSelector object
//         failurePolicy: 'fail',
//       };
//     },
//     validate(req) {                              // nothing returned: allowed
//       if (!req.object.data?.owner) return invalid('data.owner is required');
//       if (req.operation === 'UPDATE') req.warn('updated');
//     },
//   });
//
// This module must not import sdk/turtles-controller.js: that one imports the controller world's
// host interface, which a policy component does not have.

import { cacheGet, cacheList, log as hostLog } from 'turtles:admission/host@0.1.0';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// ---------------------------------------------------------------------------------------------
// Kinds

/**
 * A kind by API version and plural resource name, for the cache reads: `gvr('v1', 'namespaces')`,
 * `gvr('apps/v1', 'deployments')`. Has `group`, `version`, `resource`, `apiVersion`.
 */
export function gvr(apiVersion, resource) {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  return Object.freeze({ group, version, resource, apiVersion });
}

export const CONFIGMAPS = gvr('v1', 'configmaps');
export const SECRETS = gvr('v1', 'secrets');
export const PODS = gvr('v1', 'pods');
export const NAMESPACES = gvr('v1', 'namespaces');
export const SERVICEACCOUNTS = gvr('v1', 'serviceaccounts');
export const DEPLOYMENTS = gvr('apps/v1', 'deployments');
export const REPLICASETS = gvr('apps/v1', 'replicasets');

function toGvr(kind, resource) {
  if (typeof kind === 'string') return gvr(kind, resource);
  if (kind && typeof kind === 'object' && typeof kind.resource === 'string') {
    return { group: String(kind.group ?? ''), version: String(kind.version), resource: kind.resource };
  }
  throw new TypeError(`expected a kind made by gvr(apiVersion, resource), got ${JSON.stringify(kind)}`);
}

// ---------------------------------------------------------------------------------------------
// Registration helpers

const strings = (v) => (v === undefined || v === null ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);

const OPERATIONS = { create: 'create', update: 'update', delete: 'delete' };
const SCOPES = { any: 'any', '*': 'any', '': 'any', cluster: 'cluster', namespaced: 'namespaced' };
const FAILURE_POLICIES = { fail: 'fail', ignore: 'ignore' };

function operationOf(op) {
  const o = OPERATIONS[String(op).toLowerCase()];
  if (!o) throw new TypeError(`unknown operation ${JSON.stringify(op)} (CREATE, UPDATE, DELETE; '*' or [] for all)`);
  return o;
}

function operationsOf(ops) {
  const list = strings(ops);
  return list.includes('*') ? [] : [...new Set(list.map(operationOf))];
}

function scopeOf(scope) {
  const s = SCOPES[String(scope ?? 'any').toLowerCase()];
  if (!s) throw new TypeError(`unknown scope ${JSON.stringify(scope)} ('*', 'Cluster' or 'Namespaced')`);
  return s;
}

/**
 * One rule of the writes the policy sees (kube's RuleWithOperations), either
 * `rule(apiVersion, resources, operations?, scope?)` — `rule('v1', ['configmaps', 'secrets'],
 * ['CREATE', 'UPDATE'])`, `rule('apps/v1', 'deployments')`, `rule('*', '*')` — or
 * `rule({ apiGroups, apiVersions, resources, operations, scope })` (each a string or an array).
 * Operations are 'CREATE', 'UPDATE', 'DELETE' (any case); none or '*' means all. Scope is '*'
 * (default), 'Cluster' or 'Namespaced'. '' is the core group; '*' any group/version/resource.
 */
export function rule(apiVersionOrRule, resources, operations, scope) {
  if (apiVersionOrRule && typeof apiVersionOrRule === 'object') {
    const r = apiVersionOrRule;
    return {
      operations: operationsOf(r.operations),
      apiGroups: strings(r.apiGroups),
      apiVersions: strings(r.apiVersions),
      resources: strings(r.resources),
      scope: scopeOf(r.scope),
    };
  }
  const av = String(apiVersionOrRule);
  const g = av === '*' ? { group: '*', version: '*' } : gvr(av, '');
  return {
    operations: operationsOf(operations),
    apiGroups: [g.group],
    apiVersions: [g.version],
    resources: strings(resources),
    scope: scopeOf(scope),
  };
}

/**
 * An RBAC rule the cache reads need: `permission('', 'namespaces', ['get', 'list'])`. Each
 * argument is a string or an array of strings; '' is the core group.
 */
export function permission(apiGroups, resources, verbs) {
  return { apiGroups: strings(apiGroups), resources: strings(resources), verbs: strings(verbs) };
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

const selectorOf = (s) =>
  s === undefined || s === null ? undefined : typeof s === 'string' ? s : formatSelector(s);

const clampU32 = (n) => Math.min(0xffffffff, Math.max(0, Math.round(Number(n) || 0)));

/**
 * The WIT `registration` for what `register()` returned: `{ rules, validating?, mutating?,
 * namespaceSelector?, objectSelector?, failurePolicy?, timeoutMs?, permissions? }`.
 * `validating` / `mutating` default to whether the policy has a `validate` / `mutate` method;
 * `failurePolicy` ('fail' or 'ignore', any case) defaults to 'fail'.
 */
export function toWitRegistration(reg, impl = {}) {
  if (!reg || !Array.isArray(reg.rules) || reg.rules.length === 0) {
    throw new TypeError('register() must return { rules: [rule(...), ...], ... } with at least one rule');
  }
  const validating = reg.validating ?? typeof impl.validate === 'function';
  const mutating = reg.mutating ?? typeof impl.mutate === 'function';
  if (!validating && !mutating) {
    throw new TypeError('register(): the policy is neither validating nor mutating (give it validate() or mutate())');
  }
  const fp = FAILURE_POLICIES[String(reg.failurePolicy ?? 'fail').toLowerCase()];
  if (!fp) throw new TypeError(`unknown failurePolicy ${JSON.stringify(reg.failurePolicy)} ('fail' or 'ignore')`);
  const timeout = reg.timeoutMs;
  return {
    validating: Boolean(validating),
    mutating: Boolean(mutating),
    rules: reg.rules.map((r) => rule(r)),
    namespaceSelector: selectorOf(reg.namespaceSelector),
    objectSelector: selectorOf(reg.objectSelector),
    failurePolicy: fp,
    timeoutMs: timeout === undefined || timeout === null ? undefined : clampU32(timeout),
    permissions: (reg.permissions ?? []).map((p) => permission(p.apiGroups, p.resources, p.verbs)),
  };
}

// ---------------------------------------------------------------------------------------------
// The request

function parseJson(bytes, what) {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch (e) {
    throw new TypeError(`the host passed ${what} that is not JSON: ${errorMessage(e)}`);
  }
}

/**
 * One write as admission sees it (kube's AdmissionRequest), built from the WIT `request`:
 * `uid`, `kind` ({ group, version, kind }), `resource` ({ group, version, resource }),
 * `subResource`, `name`, `namespace`, `operation` ('CREATE', 'UPDATE', 'DELETE'), `userInfo`
 * ({ username, uid, groups, extra: { key: [values] } }), `dryRun`, and the objects, parsed on
 * first use: `object` (undefined on DELETE) and `oldObject` (undefined on CREATE); the raw JSON
 * bytes are `objectBytes` / `oldObjectBytes`. `warn(message)` adds a warning to the answer.
 */
export class AdmissionRequest {
  constructor(wit) {
    this.uid = wit.uid;
    this.kind = { group: wit.kind.group, version: wit.kind.version, kind: wit.kind.kind };
    this.resource = { group: wit.resource.group, version: wit.resource.version, resource: wit.resource.resource };
    this.subResource = wit.subResource;
    this.name = wit.name;
    this.namespace = wit.namespace;
    this.operation = String(wit.operation).toUpperCase();
    const u = wit.userInfo;
    this.userInfo = {
      username: u.username,
      uid: u.uid,
      groups: [...u.groups],
      extra: Object.fromEntries(u.extra.map(([k, v]) => [k, [...v]])),
    };
    this.dryRun = wit.dryRun;
    this.objectBytes = wit.object ?? undefined;
    this.oldObjectBytes = wit.oldObject ?? undefined;
    /** Warnings added with warn(), sent with whatever the policy answers. */
    this.warnings = [];
    this._object = undefined;
    this._oldObject = undefined;
  }
  /** The object to be stored (parsed on first use, then the same object); undefined on DELETE. */
  get object() {
    if (this._object === undefined && this.objectBytes !== undefined) {
      this._object = parseJson(this.objectBytes, 'an object');
    }
    return this._object;
  }
  /** The stored object being replaced or deleted (parsed on first use); undefined on CREATE. */
  get oldObject() {
    if (this._oldObject === undefined && this.oldObjectBytes !== undefined) {
      this._oldObject = parseJson(this.oldObjectBytes, 'an old object');
    }
    return this._oldObject;
  }
  /** `namespace/name` (or `name`), for messages; the name is '' on a create with generateName. */
  get key() {
    const name = this.name || this.object?.metadata?.generateName || '';
    return this.namespace ? `${this.namespace}/${name}` : name;
  }
  /** Adds `Warning` headers to the answer, allowed or not. */
  warn(...messages) {
    for (const m of messages) this.warnings.push(String(m));
    return this;
  }
}

// ---------------------------------------------------------------------------------------------
// Answers

const REASONS = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** kube's StatusReason for an HTTP code ('' when there is none: the host derives it). */
export const reasonFor = (code) => REASONS[code] ?? '';

/** The WIT `denial` for `deny(message, { code, reason })`: code 400-599 (default 403). */
export function denial(message, { code = 403, reason } = {}) {
  const c = Number(code);
  if (!Number.isInteger(c) || c < 400 || c > 599) throw new RangeError(`a denial's code is 400-599, not ${code}`);
  return { code: c, reason: reason === undefined || reason === null ? reasonFor(c) : String(reason), message: String(message) };
}

/** What validate() or mutate() answers; made by allow(), deny(), invalid(), warn(), mutated(), jsonPatch(). */
export class Answer {
  constructor(denied, patch) {
    /** The WIT `denial`, or undefined: allowed. */
    this.denied = denied;
    /** The WIT `patch` variant: { tag: 'none' | 'object' | 'json-patch', val?: Uint8Array }. */
    this.patch = patch;
    this.warnings = [];
  }
  /** Adds warnings to this answer; returns it. */
  warn(...messages) {
    for (const m of messages) this.warnings.push(String(m));
    return this;
  }
}

const NONE = Object.freeze({ tag: 'none' });

/** Allowed, unchanged. (Returning nothing means the same.) */
export const allow = () => new Answer(undefined, NONE);
/** Refused: HTTP `code` (default 403) with the kube `reason` (default from the code: Forbidden). */
export const deny = (message, options) => new Answer(denial(message, options), NONE);
/** Refused as invalid: 422 Invalid. */
export const invalid = (message) => deny(message, { code: 422, reason: 'Invalid' });
/** Allowed, with `Warning` headers. */
export const warn = (...messages) => allow().warn(...messages);

const jsonBytes = (v) =>
  v instanceof Uint8Array ? v : encoder.encode(typeof v === 'string' ? v : JSON.stringify(v));

/** (mutate) Allowed, and stored as `object` (the whole object: a parsed object, JSON text or bytes). */
export function mutated(object) {
  if (object === undefined || object === null) throw new TypeError('mutated(object): no object');
  return new Answer(undefined, { tag: 'object', val: jsonBytes(object) });
}

const PATCH_OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);

/**
 * (mutate) Allowed, with an RFC 6902 JSON Patch applied: `jsonPatch([{ op: 'add', path:
 * pointer('metadata', 'labels', 'a/b'), value: 'x' }])`. An empty patch is no change.
 */
export function jsonPatch(ops) {
  if (!Array.isArray(ops)) throw new TypeError('jsonPatch(ops): ops is an array of { op, path, ... }');
  for (const o of ops) {
    if (!o || !PATCH_OPS.has(o.op) || typeof o.path !== 'string') {
      throw new TypeError(`not a JSON Patch operation: ${JSON.stringify(o)}`);
    }
  }
  return new Answer(undefined, ops.length ? { tag: 'json-patch', val: jsonBytes(ops) } : NONE);
}

/** A JSON Pointer (RFC 6901) from path segments: pointer('metadata', 'annotations', 'a/b') is '/metadata/annotations/a~1b'. */
export const pointer = (...segments) =>
  segments.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** Throw this from validate/mutate (or anything they call) to deny: `throw new Denied('no', { code: 422 })`. */
export class Denied extends Error {
  constructor(message, options) {
    super(message);
    this.name = 'Denied';
    this.denial = denial(message, options);
  }
}

function errorMessage(err) {
  if (err instanceof Error) return err.message || err.name;
  try {
    return typeof err === 'string' ? err : JSON.stringify(err);
  } catch {
    return String(err);
  }
}

function toAnswer(result, what) {
  if (result === undefined || result === null) return allow();
  if (result instanceof Answer) return result;
  throw new TypeError(`${what} returned ${errorMessage(result)}: not an answer (allow(), deny(), warn(), mutated(), jsonPatch() or nothing)`);
}

// The WIT `verdict` / `mutation` for an answer, with the request's warnings first.
function toVerdict(req, answer) {
  if (answer.patch.tag !== 'none') {
    throw new TypeError('validate() returned a patch: only mutate() can change the object');
  }
  return { denied: answer.denied, warnings: [...req.warnings, ...answer.warnings] };
}

function toMutation(req, answer) {
  return {
    denied: answer.denied,
    warnings: [...req.warnings, ...answer.warnings],
    patch: answer.denied ? NONE : answer.patch,
  };
}

// ---------------------------------------------------------------------------------------------
// The exports

/**
 * Turns a policy object (or class, or class instance) into the component's exports:
 * `export const { register, validate, mutate } = policy(impl)`.
 *
 * `register()` returns `{ rules: [rule(...)], validating?, mutating?, namespaceSelector?,
 * objectSelector?, failurePolicy?, timeoutMs?, permissions? }` (see toWitRegistration).
 * `validate(req)` and `mutate(req)` get an AdmissionRequest and return an answer — `allow()`,
 * `deny(msg, { code, reason })`, `invalid(msg)`, `warn(msg)`, and for mutate `mutated(object)`
 * or `jsonPatch(ops)` — or nothing (allowed, unchanged); they may be async. A missing method
 * allows everything unchanged. A thrown `Denied` denies; anything else thrown is logged and
 * rethrown: the call traps and the registration's failurePolicy decides.
 */
export function policy(implOrClass) {
  const impl = typeof implOrClass === 'function' ? new implOrClass() : implOrClass;
  if (!impl || typeof impl.register !== 'function') {
    throw new TypeError('policy(impl): impl needs a register() method (and validate(req) and/or mutate(req))');
  }
  const call = (method, wit, finish) => {
    const req = new AdmissionRequest(wit);
    const fail = (e) => {
      if (e instanceof Denied) return finish(req, new Answer(e.denial, NONE));
      log.error(`${method} failed: ${errorMessage(e)}`, { uid: req.uid, stack: e?.stack ?? '' });
      throw e;
    };
    if (typeof impl[method] !== 'function') return finish(req, allow());
    let result;
    try {
      result = impl[method](req);
    } catch (e) {
      return fail(e);
    }
    if (result && typeof result.then === 'function') {
      // componentize-js drives an async export's promise to completion within the call.
      return result.then((r) => finish(req, toAnswer(r, `${method}()`))).catch(fail);
    }
    try {
      return finish(req, toAnswer(result, `${method}()`));
    } catch (e) {
      return fail(e);
    }
  };
  return {
    register() {
      return toWitRegistration(impl.register(), impl);
    },
    validate(request) {
      return call('validate', request, toVerdict);
    },
    mutate(request) {
      return call('mutate', request, toMutation);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The host: cache reads and logging

/**
 * The host's index, read as the policy's identity (`system:controller:NAME`) with the
 * registration's `permissions`: objects it may not read are simply not there.
 */
export const cache = Object.freeze({
  /** One object, or undefined: `cache.get(NAMESPACES, '', 'default')`, `cache.get('v1', 'configmaps', ns, name)`. */
  get(kind, ...rest) {
    const [g, namespace, name] = typeof kind === 'string' ? [toGvr(kind, rest[0]), rest[1], rest[2]] : [toGvr(kind), rest[0], rest[1]];
    const bytes = cacheGet(g.group, g.version, g.resource, namespace ?? '', String(name));
    if (bytes === undefined || bytes === null) return undefined;
    try {
      return JSON.parse(decoder.decode(bytes));
    } catch {
      return undefined;
    }
  },
  /** Every object of a kind in `namespace` (undefined or '': all namespaces): `cache.list(PODS, ns)`. */
  list(kind, ...rest) {
    const [g, namespace] = typeof kind === 'string' ? [toGvr(kind, rest[0]), rest[1]] : [toGvr(kind), rest[0]];
    const bytes = cacheList(g.group, g.version, g.resource, namespace ? String(namespace) : undefined);
    try {
      const items = JSON.parse(decoder.decode(bytes));
      return Array.isArray(items) ? items : [];
    } catch {
      return [];
    }
  },
});

function fieldsOf(fields) {
  if (!fields) return [];
  return Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v) ?? String(v)]);
}

/** Structured logging attributed to the policy: `log.info('denied', { uid: req.uid })`. */
export const log = Object.freeze({
  trace: (message, fields) => hostLog('trace', String(message), fieldsOf(fields)),
  debug: (message, fields) => hostLog('debug', String(message), fieldsOf(fields)),
  info: (message, fields) => hostLog('info', String(message), fieldsOf(fields)),
  warn: (message, fields) => hostLog('warn', String(message), fieldsOf(fields)),
  error: (message, fields) => hostLog('error', String(message), fieldsOf(fields)),
});

// ---------------------------------------------------------------------------------------------
// Object helpers

/** Small accessors over an object's metadata (undefined-safe). */
export const meta = Object.freeze({
  name: (obj) => obj?.metadata?.name,
  namespace: (obj) => obj?.metadata?.namespace ?? '',
  labels: (obj) => obj?.metadata?.labels ?? {},
  annotations: (obj) => obj?.metadata?.annotations ?? {},
  label: (obj, key) => obj?.metadata?.labels?.[key],
  annotation: (obj, key) => obj?.metadata?.annotations?.[key],
});
