/* turtles.c - the C SDK's glue between a controller (turtles.h) and the bindings wit-bindgen
 * generates from wit/controller.wit (controller.h, built by build.sh; not committed).
 *
 * Ownership rules of wit-bindgen's C bindings, which this file follows:
 * - export arguments (key, object) are owned by the callee: freed here after turtles_reconcile;
 * - export results (registration, outcome) are freed by the generated post-return functions,
 *   so everything in them is malloc'ed here;
 * - import arguments are borrowed by the host; import results are ours to free.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "turtles.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"

typedef turtles_controller_types_watch_t wit_watch;
typedef turtles_controller_types_permission_t wit_permission;

struct turtles_watch {
    char *group, *version, *resource, *ns, *selector, *owner_group, *owner_kind;
    struct turtles_watch *next;
};

typedef struct key_node {
    char *ns, *name;
    struct key_node *next;
} key_node;

typedef struct perm {
    char *groups, *resources, *verbs;
    struct perm *next;
} perm;

struct turtles_registration {
    turtles_watch *watches, *watches_tail;
    size_t n_watches;
    perm *perms, *perms_tail;
    size_t n_perms;
    uint32_t max_concurrent;
    bool has_resync;
    uint32_t resync;
    key_node *keys, *keys_tail;
    size_t n_keys;
    char *sa_ns, *sa_name;
};

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort(); /* traps the instance: the host starts a fresh one */
    return p;
}

static char *xstrdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

static char *vstrf(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = xmalloc(n > 0 ? (size_t)n + 1 : 1);
    if (n > 0)
        vsnprintf(s, (size_t)n + 1, fmt, ap2);
    else
        s[0] = 0;
    va_end(ap2);
    return s;
}

char *turtles_strf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vstrf(fmt, ap);
    va_end(ap);
    return s;
}

/* A component-model string that borrows s (for import arguments). */
static controller_string_t borrow(const char *s) {
    controller_string_t r;
    controller_string_set(&r, s ? s : "");
    return r;
}

/* A component-model string that owns a copy of s (for export results). */
static controller_string_t owned(const char *s) {
    controller_string_t r;
    controller_string_dup(&r, s ? s : "");
    return r;
}

/* ---- registration --------------------------------------------------------------------- */

turtles_watch *turtles_watch_add(turtles_registration *reg, const char *group, const char *version,
                                 const char *resource) {
    turtles_watch *w = xmalloc(sizeof *w);
    memset(w, 0, sizeof *w);
    w->group = xstrdup(group ? group : "");
    w->version = xstrdup(version);
    w->resource = xstrdup(resource);
    if (reg->watches_tail)
        reg->watches_tail->next = w;
    else
        reg->watches = w;
    reg->watches_tail = w;
    reg->n_watches++;
    return w;
}

static void replace(char **field, const char *value) {
    free(*field);
    *field = xstrdup(value);
}

void turtles_watch_namespace(turtles_watch *w, const char *ns) { replace(&w->ns, ns); }
void turtles_watch_label_selector(turtles_watch *w, const char *selector) { replace(&w->selector, selector); }
void turtles_watch_owned_by(turtles_watch *w, const char *group, const char *kind) {
    replace(&w->owner_group, group ? group : "");
    replace(&w->owner_kind, kind);
}

void turtles_permission_add(turtles_registration *reg, const char *api_groups, const char *resources,
                            const char *verbs) {
    perm *p = xmalloc(sizeof *p);
    p->groups = xstrdup(api_groups ? api_groups : "");
    p->resources = xstrdup(resources ? resources : "");
    p->verbs = xstrdup(verbs ? verbs : "");
    p->next = NULL;
    if (reg->perms_tail)
        reg->perms_tail->next = p;
    else
        reg->perms = p;
    reg->perms_tail = p;
    reg->n_perms++;
}

void turtles_max_concurrent_reconciles(turtles_registration *reg, uint32_t n) { reg->max_concurrent = n ? n : 1; }

void turtles_resync_seconds(turtles_registration *reg, uint32_t seconds) {
    reg->has_resync = true;
    reg->resync = seconds;
}

void turtles_initial_key(turtles_registration *reg, const char *ns, const char *name) {
    key_node *k = xmalloc(sizeof *k);
    k->ns = xstrdup(ns ? ns : "");
    k->name = xstrdup(name ? name : "");
    k->next = NULL;
    if (reg->keys_tail)
        reg->keys_tail->next = k;
    else
        reg->keys = k;
    reg->keys_tail = k;
    reg->n_keys++;
}

void turtles_service_account(turtles_registration *reg, const char *ns, const char *name) {
    free(reg->sa_ns);
    free(reg->sa_name);
    reg->sa_ns = xstrdup(ns ? ns : "");
    reg->sa_name = xstrdup(name ? name : "");
}

/* "a, b,c" -> ["a","b","c"]; "" -> [""] (the core group); spaces around items are dropped. */
static controller_list_string_t split_list(const char *csv) {
    size_t n = 1;
    for (const char *p = csv; *p; p++) n += *p == ',';
    controller_list_string_t l = {xmalloc(n * sizeof(controller_string_t)), n};
    const char *p = csv;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *a = p, *z = end;
        while (a < z && *a == ' ') a++;
        while (z > a && z[-1] == ' ') z--;
        controller_string_dup_n(&l.ptr[i], a, (size_t)(z - a));
        p = *end ? end + 1 : end;
    }
    return l;
}

static controller_option_string_t option(const char *s) {
    controller_option_string_t o = {0};
    if (s) {
        o.is_some = true;
        o.val = owned(s);
    }
    return o;
}

void exports_controller_register(controller_registration_t *ret) {
    turtles_registration reg = {0};
    reg.max_concurrent = 1;
    turtles_register(&reg);

    memset(ret, 0, sizeof *ret);
    ret->max_concurrent_reconciles = reg.max_concurrent;
    ret->resync_seconds.is_some = reg.has_resync;
    ret->resync_seconds.val = reg.resync;
    if (reg.n_watches) {
        ret->watches.ptr = xmalloc(reg.n_watches * sizeof(wit_watch));
        ret->watches.len = reg.n_watches;
    }
    size_t i = 0;
    for (turtles_watch *w = reg.watches, *next; w; w = next, i++) {
        wit_watch *o = &ret->watches.ptr[i];
        memset(o, 0, sizeof *o);
        o->group = owned(w->group);
        o->version = owned(w->version);
        o->resource = owned(w->resource);
        o->namespace_ = option(w->ns);
        o->label_selector = option(w->selector);
        if (w->owner_kind) {
            o->mapping.tag = TURTLES_CONTROLLER_TYPES_KEY_MAPPING_OWNER;
            o->mapping.val.owner.group = owned(w->owner_group);
            o->mapping.val.owner.kind = owned(w->owner_kind);
        } else {
            o->mapping.tag = TURTLES_CONTROLLER_TYPES_KEY_MAPPING_SELF_KEY;
        }
        next = w->next;
        free(w->group);
        free(w->version);
        free(w->resource);
        free(w->ns);
        free(w->selector);
        free(w->owner_group);
        free(w->owner_kind);
        free(w);
    }
    if (reg.n_perms) {
        ret->permissions.ptr = xmalloc(reg.n_perms * sizeof(wit_permission));
        ret->permissions.len = reg.n_perms;
    }
    i = 0;
    for (perm *p = reg.perms, *next; p; p = next, i++) {
        wit_permission *o = &ret->permissions.ptr[i];
        o->api_groups = split_list(p->groups);
        o->resources = split_list(p->resources);
        o->verbs = split_list(p->verbs);
        next = p->next;
        free(p->groups);
        free(p->resources);
        free(p->verbs);
        free(p);
    }
    if (reg.n_keys) {
        ret->initial_keys.ptr = xmalloc(reg.n_keys * sizeof(controller_object_key_t));
        ret->initial_keys.len = reg.n_keys;
    }
    i = 0;
    for (key_node *k = reg.keys, *next; k; k = next, i++) {
        ret->initial_keys.ptr[i].namespace_ = owned(k->ns);
        ret->initial_keys.ptr[i].name = owned(k->name);
        next = k->next;
        free(k->ns);
        free(k->name);
        free(k);
    }
    if (reg.sa_name) {
        ret->service_account.is_some = true;
        ret->service_account.val.namespace_ = owned(reg.sa_ns);
        ret->service_account.val.name = owned(reg.sa_name);
        free(reg.sa_ns);
        free(reg.sa_name);
    }
}

/* ---- reconcile ------------------------------------------------------------------------ */

static char *cstr(const controller_string_t *s) {
    char *c = xmalloc(s->len + 1);
    if (s->len) memcpy(c, s->ptr, s->len);
    c[s->len] = 0;
    return c;
}

void exports_controller_reconcile(controller_object_key_t *key, controller_list_u8_t *maybe_object,
                                  controller_outcome_t *ret) {
    char *ns = cstr(&key->namespace_), *name = cstr(&key->name);
    controller_object_key_free(key);
    json *obj = NULL;
    turtles_outcome out;
    bool bad = false;
    if (maybe_object) {
        char err[128];
        obj = json_parse((const char *)maybe_object->ptr, maybe_object->len, err, sizeof err);
        controller_list_u8_free(maybe_object);
        if (!obj) {
            out = turtles_terminal_error("the host passed an object that is not JSON: %s", err);
            bad = true;
        }
    }
    if (!bad) {
        turtles_key k = {ns, name};
        out = turtles_reconcile(&k, obj);
    }
    json_free(obj);
    free(ns);
    free(name);

    memset(ret, 0, sizeof *ret);
    switch (out.kind) {
    case TURTLES_REQUEUE_AFTER:
        ret->tag = TURTLES_CONTROLLER_TYPES_OUTCOME_REQUEUE_AFTER;
        ret->val.requeue_after = out.requeue_ms;
        break;
    case TURTLES_TRANSIENT_ERROR:
        ret->tag = TURTLES_CONTROLLER_TYPES_OUTCOME_TRANSIENT_ERROR;
        ret->val.transient_error = owned(out.message ? out.message : "error");
        break;
    case TURTLES_TERMINAL_ERROR:
        ret->tag = TURTLES_CONTROLLER_TYPES_OUTCOME_TERMINAL_ERROR;
        ret->val.terminal_error = owned(out.message ? out.message : "error");
        break;
    default:
        ret->tag = TURTLES_CONTROLLER_TYPES_OUTCOME_DONE;
    }
    free(out.message);
}

/* ---- outcomes ------------------------------------------------------------------------- */

turtles_outcome turtles_done(void) { return (turtles_outcome){TURTLES_DONE, 0, NULL}; }
turtles_outcome turtles_requeue_after(uint32_t ms) { return (turtles_outcome){TURTLES_REQUEUE_AFTER, ms, NULL}; }

turtles_outcome turtles_transient_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    turtles_outcome o = {TURTLES_TRANSIENT_ERROR, 0, vstrf(fmt, ap)};
    va_end(ap);
    return o;
}

turtles_outcome turtles_terminal_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    turtles_outcome o = {TURTLES_TERMINAL_ERROR, 0, vstrf(fmt, ap)};
    va_end(ap);
    return o;
}

const char *turtles_status_message(const json *response) {
    return json_pstr(response, "/message", "");
}

turtles_outcome turtles_api_error(const char *what, int status, const json *response) {
    return turtles_transient_error("%s: %d %s: %s", what ? what : "API call", status,
                                   json_pstr(response, "/reason", ""), turtles_status_message(response));
}

/* ---- API calls ------------------------------------------------------------------------ */

json *turtles_api_ct(const char *method, const char *path, const char *content_type, const json *body,
                     int *status) {
    controller_tuple2_string_string_t headers[2];
    turtles_controller_host_http_request_t req;
    memset(&req, 0, sizeof req);
    req.method = borrow(method);
    req.path = borrow(path);
    headers[0].f0 = borrow("accept");
    headers[0].f1 = borrow("application/json");
    req.headers.ptr = headers;
    req.headers.len = 1;
    char *text = NULL;
    if (body) {
        size_t n = 0;
        text = json_serialize(body, &n);
        if (!text) abort();
        headers[1].f0 = borrow("content-type");
        headers[1].f1 = borrow(content_type ? content_type : "application/json");
        req.headers.len = 2;
        req.body.ptr = (uint8_t *)text;
        req.body.len = n;
    }
    turtles_controller_host_http_response_t resp;
    turtles_controller_host_api_call(&req, &resp);
    free(text);
    if (status) *status = resp.status;
    json *out = resp.body.len ? json_parse((const char *)resp.body.ptr, resp.body.len, NULL, 0) : NULL;
    turtles_controller_host_http_response_free(&resp);
    return out;
}

json *turtles_api(const char *method, const char *path, const json *body, int *status) {
    const char *ct = "application/json";
    if (body && method && strcmp(method, "PATCH") == 0)
        ct = json_is_array(body) ? "application/json-patch+json" : "application/merge-patch+json";
    return turtles_api_ct(method, path, ct, body, status);
}

json *turtles_get(const char *path, int *status) { return turtles_api("GET", path, NULL, status); }
json *turtles_create(const char *path, const json *object, int *status) { return turtles_api("POST", path, object, status); }
json *turtles_update(const char *path, const json *object, int *status) { return turtles_api("PUT", path, object, status); }
json *turtles_patch_merge(const char *path, const json *patch, int *status) {
    return turtles_api_ct("PATCH", path, "application/merge-patch+json", patch, status);
}
json *turtles_patch_json(const char *path, const json *ops, int *status) {
    return turtles_api_ct("PATCH", path, "application/json-patch+json", ops, status);
}
json *turtles_delete(const char *path, int *status) { return turtles_api("DELETE", path, NULL, status); }

char *turtles_apply_path(const char *path, const char *field_manager, bool force) {
    char *manager = turtles_query_escape(field_manager ? field_manager : "");
    char *p = turtles_strf("%s%cfieldManager=%s%s", path, strchr(path, '?') ? '&' : '?', manager,
                           force ? "&force=true" : "");
    free(manager);
    return p;
}

json *turtles_apply(const char *path, const json *object, const char *field_manager, bool force, int *status) {
    char *p = turtles_apply_path(path, field_manager, force);
    json *out = turtles_api_ct("PATCH", p, "application/apply-patch+yaml", object, status);
    free(p);
    return out;
}

/* ---- events --------------------------------------------------------------------------- */

bool turtles_record_event(const json *regarding, const char *type, const char *reason, const char *action,
                          const char *note, char **error) {
    turtles_controller_host_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.regarding.api_version = borrow(json_pstr(regarding, "/apiVersion", ""));
    ev.regarding.kind = borrow(json_pstr(regarding, "/kind", ""));
    ev.regarding.namespace_ = borrow(json_pstr(regarding, "/metadata/namespace", ""));
    ev.regarding.name = borrow(json_pstr(regarding, "/metadata/name", ""));
    ev.regarding.uid = borrow(json_pstr(regarding, "/metadata/uid", ""));
    ev.type = (type && strcmp(type, "Warning") == 0) ? TURTLES_CONTROLLER_TYPES_EVENT_TYPE_WARNING
                                                     : TURTLES_CONTROLLER_TYPES_EVENT_TYPE_NORMAL;
    ev.reason = borrow(reason);
    ev.action = borrow(action);
    ev.note = borrow(note);
    controller_string_t err;
    memset(&err, 0, sizeof err);
    bool ok = turtles_controller_host_record_event(&ev, &err);
    if (!ok) {
        if (error) *error = cstr(&err);
        controller_string_free(&err);
    } else if (error) {
        *error = NULL;
    }
    return ok;
}

/* ---- cache ---------------------------------------------------------------------------- */

json *turtles_cache_get(const char *group, const char *version, const char *resource, const char *ns,
                        const char *name) {
    controller_string_t g = borrow(group), v = borrow(version), r = borrow(resource), n = borrow(ns),
                        nm = borrow(name);
    controller_list_u8_t bytes;
    if (!turtles_controller_host_cache_get(&g, &v, &r, &n, &nm, &bytes)) return NULL;
    json *out = json_parse((const char *)bytes.ptr, bytes.len, NULL, 0);
    controller_list_u8_free(&bytes);
    return out;
}

json *turtles_cache_list(const char *group, const char *version, const char *resource, const char *ns) {
    controller_string_t g = borrow(group), v = borrow(version), r = borrow(resource), n = borrow(ns);
    controller_list_u8_t bytes;
    turtles_controller_host_cache_list(&g, &v, &r, ns ? &n : NULL, &bytes);
    json *out = json_parse((const char *)bytes.ptr, bytes.len, NULL, 0);
    controller_list_u8_free(&bytes);
    if (!json_is_array(out)) {
        json_free(out);
        out = json_new_array();
    }
    return out;
}

/* ---- paths and strings ---------------------------------------------------------------- */

char *turtles_path(const char *group, const char *version, const char *resource, const char *ns,
                   const char *name) {
    json_buf b = {0};
    if (!group || !*group)
        json_buf_printf(&b, "/api/%s", version);
    else
        json_buf_printf(&b, "/apis/%s/%s", group, version);
    if (ns && *ns) json_buf_printf(&b, "/namespaces/%s", ns);
    json_buf_printf(&b, "/%s", resource);
    if (name) json_buf_printf(&b, "/%s", name);
    if (b.oom) abort();
    return json_buf_take(&b);
}

char *turtles_query_escape(const char *value) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(value);
    char *out = xmalloc(3 * n + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        unsigned char c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = 0;
    return out;
}

const char *turtles_now(char out[32]) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

/* ---- object helpers ------------------------------------------------------------------- */

const char *turtles_name(const json *obj) { return json_pstr(obj, "/metadata/name", ""); }
const char *turtles_namespace(const json *obj) { return json_pstr(obj, "/metadata/namespace", ""); }

bool turtles_is_deleting(const json *obj) {
    return !json_is_null(json_pointer(obj, "/metadata/deletionTimestamp"));
}

bool turtles_has_finalizer(const json *obj, const char *finalizer) {
    for (json *f = json_first(json_pointer(obj, "/metadata/finalizers")); f; f = json_next(f)) {
        const char *s = json_string(f);
        if (s && strcmp(s, finalizer) == 0) return true;
    }
    return false;
}

/* ---- logging -------------------------------------------------------------------------- */

static void log_raw(turtles_log_level level, const char *message, controller_list_tuple2_string_string_t *fields) {
    controller_string_t m = borrow(message);
    turtles_controller_host_log((turtles_controller_host_log_level_t)level, &m, fields);
}

void turtles_log(turtles_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = vstrf(fmt, ap);
    va_end(ap);
    controller_list_tuple2_string_string_t none = {NULL, 0};
    log_raw(level, msg, &none);
    free(msg);
}

void turtles_log_fields(turtles_log_level level, const char *message, ...) {
    va_list ap;
    size_t n = 0;
    va_start(ap, message);
    while (va_arg(ap, const char *)) n++;
    va_end(ap);
    n /= 2;
    controller_tuple2_string_string_t *pairs = n ? xmalloc(n * sizeof *pairs) : NULL;
    va_start(ap, message);
    for (size_t i = 0; i < n; i++) {
        pairs[i].f0 = borrow(va_arg(ap, const char *));
        pairs[i].f1 = borrow(va_arg(ap, const char *));
    }
    va_end(ap);
    controller_list_tuple2_string_string_t fields = {pairs, n};
    log_raw(level, message, &fields);
    free(pairs);
}
