/* turtles_fake.c - an in-memory turtles host for native unit tests of C controllers; see
 * turtles_fake.h.
 *
 * It implements the raw imports the generated bindings (controller.c of `wit-bindgen c`) call,
 * `__wasm_import_turtles_controller_host_*`, with the canonical ABI's memory layout on the native
 * target (pointer-sized string and list fields), and calls the exports through the generated
 * C-level functions, owning and freeing their arguments and results as the bindings expect.
 * Everything the fake hands to the guest is malloc'ed (cabi_realloc is realloc natively), so the
 * sanitizers see the same ownership as in wasm.
 */
#define _POSIX_C_SOURCE 200809L
#include "turtles_fake.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "turtles.h"

int turtles_fake_checks, turtles_fake_failures;

typedef struct entry {
    char *group, *resource;
    json *obj;
    struct entry *next;
} entry;

static entry *store;
static int rv = 1000, uids;
static json *calls, *logs, *events, *fails, *registration;
static char *last_outcome;

static bool verbose(void) {
    const char *v = getenv("TURTLES_FAKE_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static char *strn(const uint8_t *p, size_t n) {
    char *s = xmalloc(n + 1);
    if (n) memcpy(s, p, n);
    s[n] = 0;
    return s;
}

static void init(void) {
    if (!calls) calls = json_new_array();
    if (!logs) logs = json_new_array();
    if (!events) events = json_new_array();
    if (!fails) fails = json_new_object();
}

void turtles_fake_reset(void) {
    for (entry *e = store, *next; e; e = next) {
        next = e->next;
        free(e->group);
        free(e->resource);
        json_free(e->obj);
        free(e);
    }
    store = NULL;
    json_free(calls), json_free(logs), json_free(events), json_free(fails), json_free(registration);
    calls = logs = events = fails = registration = NULL;
    free(last_outcome);
    last_outcome = NULL;
    init();
}

/* ---- the store ------------------------------------------------------------------------ */

static entry *find(const char *group, const char *resource, const char *ns, const char *name) {
    for (entry *e = store; e; e = e->next)
        if (!strcmp(e->group, group) && !strcmp(e->resource, resource) && !strcmp(turtles_namespace(e->obj), ns) &&
            !strcmp(turtles_name(e->obj), name))
            return e;
    return NULL;
}

static void drop(entry *gone) {
    for (entry **p = &store; *p; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            free(gone->group);
            free(gone->resource);
            json_free(gone->obj);
            free(gone);
            return;
        }
}

static const char *kind_of(const char *resource) {
    static const char *const kinds[][2] = {
        {"configmaps", "ConfigMap"},   {"secrets", "Secret"},         {"pods", "Pod"},
        {"services", "Service"},       {"namespaces", "Namespace"},   {"nodes", "Node"},
        {"events", "Event"},           {"jobs", "Job"},               {"cronjobs", "CronJob"},
        {"replicasets", "ReplicaSet"}, {"deployments", "Deployment"}, {"serviceaccounts", "ServiceAccount"},
        {"leases", "Lease"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i][0], resource)) return kinds[i][1];
    return NULL;
}

static void bump(json *obj) {
    char s[24];
    snprintf(s, sizeof s, "%d", ++rv);
    json_set_str(json_set_object(obj, "metadata"), "resourceVersion", s);
}

/* What the API server fills in on create. */
static void fill(json *obj, const char *group, const char *version, const char *resource) {
    json *md = json_set_object(obj, "metadata");
    char buf[64];
    if (!json_is_string(json_get(md, "uid"))) {
        snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012d", ++uids);
        json_set_str(md, "uid", buf);
    }
    if (!json_is_string(json_get(md, "creationTimestamp"))) json_set_str(md, "creationTimestamp", turtles_now(buf));
    if (!json_is_string(json_get(obj, "apiVersion")) && version && *version) {
        char *av = *group ? turtles_strf("%s/%s", group, version) : xstrdup(version);
        json_set_str(obj, "apiVersion", av);
        free(av);
    }
    const char *kind = kind_of(resource);
    if (!json_is_string(json_get(obj, "kind")) && kind) json_set_str(obj, "kind", kind);
    bump(obj);
}

static entry *store_put(const char *group, const char *version, const char *resource, json *obj) {
    entry *e = find(group, resource, turtles_namespace(obj), turtles_name(obj));
    if (e) {
        json_free(e->obj);
    } else {
        e = xmalloc(sizeof *e);
        e->group = xstrdup(group);
        e->resource = xstrdup(resource);
        e->next = NULL;
        entry **tail = &store;
        while (*tail) tail = &(*tail)->next;
        *tail = e;
    }
    fill(obj, group, version, resource);
    e->obj = obj;
    return e;
}

const json *turtles_fake_add(const char *group, const char *version, const char *resource, json *obj) {
    init();
    if (!json_is_object(obj)) {
        fprintf(stderr, "turtles_fake_add: the object is not a JSON object (a json_build or json_parse_str error?)\n");
        abort();
    }
    return store_put(group ? group : "", version, resource, obj)->obj;
}

const json *turtles_fake_get(const char *group, const char *version, const char *resource, const char *ns,
                             const char *name) {
    (void)version;
    entry *e = find(group ? group : "", resource, ns ? ns : "", name);
    return e ? e->obj : NULL;
}

void turtles_fake_remove(const char *group, const char *version, const char *resource, const char *ns,
                         const char *name) {
    (void)version;
    entry *e = find(group ? group : "", resource, ns ? ns : "", name);
    if (e) drop(e);
}

void turtles_fake_fail(const char *method, int status) {
    init();
    if (status)
        json_set_int(fails, method, status);
    else
        json_remove(fails, method);
}

const json *turtles_fake_calls(void) {
    init();
    return calls;
}

size_t turtles_fake_call_count(const char *method) {
    init();
    size_t n = 0;
    for (json *c = json_first(calls); c; c = json_next(c))
        if (!method || !strcmp(json_pstr(c, "/method", ""), method)) n++;
    return n;
}

const json *turtles_fake_logs(void) {
    init();
    return logs;
}

bool turtles_fake_logged(const char *text) {
    init();
    for (json *l = json_first(logs); l; l = json_next(l))
        if (strstr(json_pstr(l, "/message", ""), text)) return true;
    return false;
}

const json *turtles_fake_events(void) {
    init();
    return events;
}

/* ---- API paths ------------------------------------------------------------------------ */

typedef struct {
    char group[256], version[64], resource[256], ns[256], name[256], sub[64];
    char *selector; /* labelSelector, decoded (malloc'ed) or NULL */
} target;

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static char *unescape(const char *s, size_t n) {
    char *out = xmalloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            *o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i] == '+' ? ' ' : s[i];
        }
    }
    *o = 0;
    return out;
}

static bool copy_seg(char *dst, size_t cap, const char *seg) {
    if (strlen(seg) >= cap) return false;
    strcpy(dst, seg);
    return true;
}

/* /api/v1/[namespaces/NS/]RES[/NAME[/SUB]] or /apis/GROUP/VERSION/[namespaces/NS/]RES[/NAME[/SUB]] */
static bool parse_path(const char *full, target *t) {
    memset(t, 0, sizeof *t);
    const char *q = strchr(full, '?');
    size_t plen = q ? (size_t)(q - full) : strlen(full);
    if (q) {
        for (const char *p = q + 1; *p;) {
            const char *amp = strchr(p, '&');
            size_t n = amp ? (size_t)(amp - p) : strlen(p);
            if (n > 14 && !strncmp(p, "labelSelector=", 14)) {
                free(t->selector);
                t->selector = unescape(p + 14, n - 14);
            }
            p += n + (amp ? 1 : 0);
        }
    }
    char *path = strn((const uint8_t *)full, plen);
    char *segs[12];
    size_t n = 0;
    for (char *tok = strtok(path, "/"); tok && n < 12; tok = strtok(NULL, "/")) segs[n++] = tok;
    bool ok = false;
    size_t i = 0;
    if (n >= 3 && !strcmp(segs[0], "api")) {
        ok = copy_seg(t->version, sizeof t->version, segs[1]);
        i = 2;
    } else if (n >= 4 && !strcmp(segs[0], "apis")) {
        ok = copy_seg(t->group, sizeof t->group, segs[1]) && copy_seg(t->version, sizeof t->version, segs[2]);
        i = 3;
    }
    if (ok && n - i >= 3 && !strcmp(segs[i], "namespaces")) {
        ok = copy_seg(t->ns, sizeof t->ns, segs[i + 1]);
        i += 2;
    }
    if (ok && i < n) ok = copy_seg(t->resource, sizeof t->resource, segs[i++]);
    if (ok && i < n) ok = copy_seg(t->name, sizeof t->name, segs[i++]);
    if (ok && i < n) ok = copy_seg(t->sub, sizeof t->sub, segs[i++]);
    ok = ok && i == n && t->resource[0];
    free(path);
    return ok;
}

/* Label selector terms: k=v, k==v, k!=v, k, !k (comma-separated; set-based terms never match). */
static bool matches(const json *obj, const char *selector) {
    if (!selector || !*selector) return true;
    const json *labels = json_pointer(obj, "/metadata/labels");
    char *sel = xstrdup(selector);
    bool ok = true;
    for (char *term = strtok(sel, ","); term && ok; term = strtok(NULL, ",")) {
        while (*term == ' ') term++;
        char *end = term + strlen(term);
        while (end > term && end[-1] == ' ') *--end = 0;
        char *op;
        if ((op = strstr(term, "!="))) {
            *op = 0;
            const char *have = json_string(json_get(labels, term));
            ok = !have || strcmp(have, op + 2) != 0;
        } else if ((op = strchr(term, '='))) {
            *op = 0;
            const char *want = op[1] == '=' ? op + 2 : op + 1;
            const char *have = json_string(json_get(labels, term));
            ok = have && !strcmp(have, want);
        } else if (strchr(term, ' ') || strchr(term, '(')) {
            ok = false; /* in / notin: not supported by the fake */
        } else if (term[0] == '!') {
            ok = json_get(labels, term + 1) == NULL;
        } else {
            ok = json_get(labels, term) != NULL;
        }
    }
    free(sel);
    return ok;
}

/* ---- patches -------------------------------------------------------------------------- */

/* RFC 7386 merge patch of target (an object) with patch (an object). */
static void merge(json *target_obj, const json *patch) {
    for (json *p = json_first(patch); p; p = json_next(p)) {
        const char *k = json_key(p);
        if (json_is_null(p))
            json_remove(target_obj, k);
        else if (json_is_object(p))
            merge(json_set_object(target_obj, k), p);
        else
            json_set(target_obj, k, json_dup(p));
    }
}

/* The parent of a JSON pointer's target and its last token (unescaped, malloc'ed). */
static json *pointer_parent(json *root, const char *pointer, char **last) {
    const char *slash = strrchr(pointer, '/');
    if (!slash) return NULL;
    char *parent_ptr = strn((const uint8_t *)pointer, (size_t)(slash - pointer));
    json *parent = json_pointer(root, parent_ptr);
    free(parent_ptr);
    char *tok = xstrdup(slash + 1), *o = tok;
    for (const char *p = slash + 1; *p; p++) {
        if (p[0] == '~' && p[1] == '1') *o++ = '/', p++;
        else if (p[0] == '~' && p[1] == '0') *o++ = '~', p++;
        else *o++ = *p;
    }
    *o = 0;
    *last = tok;
    return parent;
}

/* Array index token: "0".."len" (or "-" as len when allow_end); -1 if invalid. */
static long array_index(const json *arr, const char *tok, bool allow_end) {
    size_t len = json_len(arr);
    if (!strcmp(tok, "-")) return allow_end ? (long)len : -1;
    if (!*tok || (tok[0] == '0' && tok[1])) return -1;
    char *end;
    long i = strtol(tok, &end, 10);
    if (*end || i < 0 || (size_t)i > len || (!allow_end && (size_t)i == len)) return -1;
    return i;
}

/* Inserts v (taken) at index i of arr. */
static void array_insert(json *arr, size_t i, json *v) {
    json *rest = json_new_array();
    while (json_len(arr) > i) json_push(rest, json_take_at(arr, i));
    json_push(arr, v);
    while (json_len(rest)) json_push(arr, json_take_at(rest, 0));
    json_free(rest);
}

/* Removes the target of pointer from root; the removed value (caller's) or NULL. */
static json *pointer_take(json *root, const char *pointer) {
    char *last;
    json *parent = pointer_parent(root, pointer, &last);
    json *out = NULL;
    if (json_is_object(parent)) {
        out = json_take(parent, last);
    } else if (json_is_array(parent)) {
        long i = array_index(parent, last, false);
        if (i >= 0) out = json_take_at(parent, (size_t)i);
    }
    if (parent) free(last);
    return out;
}

/* Adds v (taken) at pointer; false if the parent does not exist. */
static bool pointer_add(json *root, const char *pointer, json *v) {
    char *last;
    json *parent = pointer_parent(root, pointer, &last);
    bool ok = false;
    if (json_is_object(parent)) {
        json_set(parent, last, v);
        ok = true;
    } else if (json_is_array(parent)) {
        long i = array_index(parent, last, true);
        if (i >= 0) {
            array_insert(parent, (size_t)i, v);
            ok = true;
        }
    }
    if (parent) free(last);
    if (!ok) json_free(v);
    return ok;
}

/* RFC 6902 JSON patch (add, remove, replace, move, copy, test) applied to obj; false on failure
 * (obj is then partly patched: the caller works on a copy). */
static bool json_patch(json *obj, const json *ops) {
    if (!json_is_array(ops)) return false;
    for (json *op = json_first(ops); op; op = json_next(op)) {
        const char *name = json_pstr(op, "/op", ""), *path = json_pstr(op, "/path", NULL);
        const char *from = json_pstr(op, "/from", NULL);
        const json *value = json_get(op, "value");
        if (!path) return false;
        if (!strcmp(name, "test")) {
            const json *at = *path ? json_pointer(obj, path) : obj;
            if (!at || !value || !json_equal(at, value)) return false;
        } else if (!strcmp(name, "remove")) {
            json *gone = pointer_take(obj, path);
            if (!gone) return false;
            json_free(gone);
        } else if (!strcmp(name, "add")) {
            if (!value || !pointer_add(obj, path, json_dup(value))) return false;
        } else if (!strcmp(name, "replace")) {
            json *gone = pointer_take(obj, path);
            if (!gone || !value) {
                json_free(gone);
                return false;
            }
            json_free(gone);
            if (!pointer_add(obj, path, json_dup(value))) return false;
        } else if (!strcmp(name, "move") || !strcmp(name, "copy")) {
            if (!from) return false;
            json *v = !strcmp(name, "move") ? pointer_take(obj, from) : json_dup(json_pointer(obj, from));
            if (!v || !pointer_add(obj, path, v)) return false;
        } else {
            return false;
        }
    }
    return true;
}

/* ---- the API server ------------------------------------------------------------------- */

static json *status(int code, const char *reason, const char *message) {
    return json_build("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                      "\"message\":%s,\"reason\":%s,\"code\":%d}",
                      message, reason, code);
}

typedef struct {
    int code;
    json *body; /* NULL: no body */
} response;

static response reply(int code, json *body) { return (response){code, body}; }

static response not_found(const target *t) {
    char *msg = turtles_strf("%s%s%s \"%s\" not found", t->resource, *t->group ? "." : "", t->group, t->name);
    response r = reply(404, status(404, "NotFound", msg));
    free(msg);
    return r;
}

static bool has_finalizers(const json *obj) { return json_len(json_pointer(obj, "/metadata/finalizers")) > 0; }

static response serve(const char *method, const char *path, const char *content_type, const json *body) {
    int64_t fail = 0;
    json_int(json_get(fails, method), &fail);
    if (fail) return reply(fail, status(fail, "InternalError", "injected failure"));
    target t;
    if (!parse_path(path, &t)) return reply(404, status(404, "NotFound", "the fake host does not serve this path"));
    response r;
    entry *e = t.name[0] ? find(t.group, t.resource, t.ns, t.name) : NULL;
    if (!strcmp(method, "GET") && !t.name[0]) {
        json *items = json_new_array();
        for (entry *x = store; x; x = x->next)
            if (!strcmp(x->group, t.group) && !strcmp(x->resource, t.resource) &&
                (!t.ns[0] || !strcmp(turtles_namespace(x->obj), t.ns)) && matches(x->obj, t.selector))
                json_push(items, json_dup(x->obj));
        char rvs[24];
        snprintf(rvs, sizeof rvs, "%d", rv);
        r = reply(200, json_build("{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":%s},"
                                  "\"items\":%J}",
                                  rvs, items));
    } else if (!strcmp(method, "GET")) {
        r = e ? reply(200, json_dup(e->obj)) : not_found(&t); /* a subresource: the whole object */
    } else if (!strcmp(method, "POST")) {
        if (!json_is_object(body)) {
            r = reply(400, status(400, "BadRequest", "the body is not a JSON object"));
        } else if (t.name[0]) {
            r = reply(404, status(404, "NotFound", "the fake host serves no POST subresources"));
        } else {
            json *obj = json_dup(body);
            json *md = json_set_object(obj, "metadata");
            if (!*turtles_name(obj) && *json_pstr(obj, "/metadata/generateName", "")) {
                char *name = turtles_strf("%s%05d", json_pstr(obj, "/metadata/generateName", ""), ++uids);
                json_set_str(md, "name", name);
                free(name);
            }
            if (t.ns[0]) json_set_str(md, "namespace", t.ns);
            json_remove(md, "uid");
            json_remove(md, "resourceVersion");
            json_remove(md, "creationTimestamp");
            if (!*turtles_name(obj)) {
                json_free(obj);
                r = reply(422, status(422, "Invalid", "metadata.name: Required value"));
            } else if (find(t.group, t.resource, t.ns, turtles_name(obj))) {
                char *msg = turtles_strf("%s \"%s\" already exists", t.resource, turtles_name(obj));
                json_free(obj);
                r = reply(409, status(409, "AlreadyExists", msg));
                free(msg);
            } else {
                r = reply(201, json_dup(store_put(t.group, t.version, t.resource, obj)->obj));
            }
        }
    } else if (!strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
        bool apply = content_type && !strcmp(content_type, "application/apply-patch+yaml");
        bool jsonpatch = content_type && !strcmp(content_type, "application/json-patch+json");
        if (!e && !(apply && !t.sub[0])) {
            r = not_found(&t);
        } else if (!json_is_object(body) && !(jsonpatch && json_is_array(body))) {
            r = reply(400, status(400, "BadRequest", "the body is not a JSON object"));
        } else if (!e) { /* server-side apply creates */
            json *obj = json_dup(body);
            json *md = json_set_object(obj, "metadata");
            json_set_str(md, "name", t.name);
            if (t.ns[0]) json_set_str(md, "namespace", t.ns);
            r = reply(201, json_dup(store_put(t.group, t.version, t.resource, obj)->obj));
        } else {
            const char *want = jsonpatch ? NULL : json_pstr(body, "/metadata/resourceVersion", NULL);
            json *next = NULL;
            if (want && strcmp(want, json_pstr(e->obj, "/metadata/resourceVersion", ""))) {
                char *msg = turtles_strf("Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                                         "please apply your changes to the latest version and try again",
                                         t.resource, t.name);
                r = reply(409, status(409, "Conflict", msg));
                free(msg);
            } else if (!strcmp(method, "PUT")) {
                next = json_dup(body);
            } else if (jsonpatch) {
                next = json_dup(e->obj);
                if (!json_patch(next, body)) {
                    json_free(next);
                    next = NULL;
                    r = reply(422, status(422, "Invalid", "the JSON patch does not apply"));
                }
            } else {
                next = json_dup(e->obj);
                merge(next, body);
            }
            if (next) {
                /* The status subresource changes only status, the main resource all but status:
                 * st is the status to keep (taken from the stored object, which is replaced). */
                bool status_only = !strcmp(t.sub, "status");
                json *st = json_take(status_only ? next : e->obj, "status");
                if (status_only) {
                    json_free(next);
                    next = json_dup(e->obj);
                }
                json_remove(next, "status");
                if (st) json_set(next, "status", st);
                json *md = json_set_object(next, "metadata");
                static const char *const keep[] = {"uid", "creationTimestamp", "name", "namespace", "deletionTimestamp"};
                for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
                    json *v = json_get(json_get(e->obj, "metadata"), keep[i]);
                    if (v) json_set(md, keep[i], json_dup(v));
                }
                bump(next);
                json_free(e->obj);
                e->obj = next;
                r = reply(200, json_dup(next));
                /* The last finalizer of a deleted object is gone: the object goes. */
                if (json_pointer(next, "/metadata/deletionTimestamp") && !has_finalizers(next)) drop(e);
            }
        }
    } else if (!strcmp(method, "DELETE")) {
        if (!e) {
            r = not_found(&t);
        } else if (has_finalizers(e->obj)) {
            char now[32];
            json *md = json_set_object(e->obj, "metadata");
            if (!json_get(md, "deletionTimestamp")) {
                json_set_str(md, "deletionTimestamp", turtles_now(now));
                bump(e->obj);
            }
            r = reply(200, json_dup(e->obj));
        } else {
            r = reply(200, json_dup(e->obj));
            drop(e);
        }
    } else {
        r = reply(405, status(405, "MethodNotAllowed", method));
    }
    free(t.selector);
    return r;
}

/* ---- the raw imports (controller.c calls these) --------------------------------------- */

#define W sizeof(void *)

static void give(uint8_t *ret, size_t off, const json *v) {
    size_t n = 0;
    char *text = v ? json_serialize(v, &n) : NULL;
    if (v && !text) abort();
    *(uint8_t **)(ret + off) = (uint8_t *)text; /* owned by the guest now */
    *(size_t *)(ret + off + W) = n;
}

void __wasm_import_turtles_controller_host_api_call(uint8_t *m, size_t ml, uint8_t *p, size_t pl, uint8_t *h, size_t hl,
                                                    uint8_t *b, size_t bl, uint8_t *ret) {
    init();
    char *method = strn(m, ml), *path = strn(p, pl), *ct = NULL;
    for (size_t i = 0; i < hl; i++) {
        uint8_t *tuple = h + i * 4 * W;
        char *k = strn(*(uint8_t **)tuple, *(size_t *)(tuple + W));
        if (!strcmp(k, "content-type") && !ct) ct = strn(*(uint8_t **)(tuple + 2 * W), *(size_t *)(tuple + 3 * W));
        free(k);
    }
    json *body = bl ? json_parse((const char *)b, bl, NULL, 0) : NULL;
    if (verbose()) printf("  fake api: %s %s %.*s\n", method, path, (int)bl, (const char *)b);
    json_push(calls, json_build("{\"method\":%s,\"path\":%s,\"contentType\":%s,\"body\":%j}", method, path, ct, body));
    response r = bl && !body ? reply(400, status(400, "BadRequest", "the body is not JSON"))
                             : serve(method, path, ct, body);
    if (verbose()) printf("  fake api: -> %d\n", r.code);
    memset(ret, 0, 5 * W);
    *(uint16_t *)ret = (uint16_t)r.code;
    if (r.body) give(ret, 3 * W, r.body);
    json_free(r.body);
    json_free(body);
    free(method);
    free(path);
    free(ct);
}

void __wasm_import_turtles_controller_host_cache_get(uint8_t *g, size_t gl, uint8_t *v, size_t vl, uint8_t *r,
                                                     size_t rl, uint8_t *n, size_t nl, uint8_t *nm, size_t nml,
                                                     uint8_t *ret) {
    (void)v, (void)vl;
    char *group = strn(g, gl), *res = strn(r, rl), *ns = strn(n, nl), *name = strn(nm, nml);
    entry *e = find(group, res, ns, name);
    memset(ret, 0, 3 * W);
    *ret = e != NULL;
    if (e) give(ret, W, e->obj);
    free(group), free(res), free(ns), free(name);
}

void __wasm_import_turtles_controller_host_cache_list(uint8_t *g, size_t gl, uint8_t *v, size_t vl, uint8_t *r,
                                                      size_t rl, int32_t has_ns, uint8_t *n, size_t nl,
                                                      uint8_t *ret) {
    (void)v, (void)vl;
    char *group = strn(g, gl), *res = strn(r, rl), *ns = has_ns ? strn(n, nl) : NULL;
    json *items = json_new_array();
    for (entry *e = store; e; e = e->next)
        if (!strcmp(e->group, group) && !strcmp(e->resource, res) && (!ns || !strcmp(turtles_namespace(e->obj), ns)))
            json_push(items, json_dup(e->obj));
    give(ret, 0, items);
    json_free(items);
    free(group), free(res), free(ns);
}

void __wasm_import_turtles_controller_host_log(int32_t level, uint8_t *m, size_t ml, uint8_t *f, size_t fl) {
    static const char *const levels[] = {"trace", "debug", "info", "warn", "error"};
    init();
    char *msg = strn(m, ml);
    json *fields = json_new_object();
    for (size_t i = 0; i < fl; i++) {
        uint8_t *tuple = f + i * 4 * W;
        char *k = strn(*(uint8_t **)tuple, *(size_t *)(tuple + W));
        char *val = strn(*(uint8_t **)(tuple + 2 * W), *(size_t *)(tuple + 3 * W));
        json_set_str(fields, k, val);
        free(k), free(val);
    }
    const char *lvl = level >= 0 && level <= 4 ? levels[level] : "?";
    if (verbose()) printf("  fake log[%s]: %s\n", lvl, msg);
    json_push(logs, json_build("{\"level\":%s,\"message\":%s,\"fields\":%J}", lvl, msg, fields));
    free(msg);
}

/* record-event's record is lowered to memory: five strings (the reference), the type (a byte),
 * reason, action, note; the result<_, string> goes to ret (maybe the same memory: all is read
 * first). turtles_fake_fail("EVENT", code) makes it fail. */
void __wasm_import_turtles_controller_host_record_event(uint8_t *p, uint8_t *ret) {
    init();
#define FIELD(i) strn(*(uint8_t **)(p + (i) * W), *(size_t *)(p + ((i) + 1) * W))
    char *av = FIELD(0), *kind = FIELD(2), *ns = FIELD(4), *name = FIELD(6), *uid = FIELD(8), *reason = FIELD(11),
         *action = FIELD(13), *note = FIELD(15);
#undef FIELD
    int type = *(uint8_t *)(p + 10 * W);
    if (verbose()) printf("  fake event: %s %s/%s %s: %s\n", kind, ns, name, reason, note);
    if (json_get(fails, "EVENT")) {
        static const char msg[] = "injected failure";
        char *copy = xmalloc(sizeof msg - 1);
        memcpy(copy, msg, sizeof msg - 1);
        ret[0] = 1;
        *(char **)(ret + W) = copy;
        *(size_t *)(ret + 2 * W) = sizeof msg - 1;
    } else {
        json_push(events, json_build("{\"apiVersion\":%s,\"kind\":%s,\"namespace\":%s,\"name\":%s,\"uid\":%s,"
                                     "\"type\":%s,\"reason\":%s,\"action\":%s,\"note\":%s}",
                                     av, kind, ns, name, uid, type ? "Warning" : "Normal", reason, action, note));
        ret[0] = 0;
    }
    free(av), free(kind), free(ns), free(name), free(uid), free(reason), free(action), free(note);
}

/* Natively there is no controller_component_type.o (a wasm object): stand in for its symbol. */
void __component_type_object_force_link_controller(void) {}

/* ---- the exports ---------------------------------------------------------------------- */

static json *str_json(const controller_string_t *s) { return json_new_stringn((const char *)s->ptr, s->len); }

static json *strs_json(const controller_list_string_t *l) {
    json *a = json_new_array();
    for (size_t i = 0; i < l->len; i++) json_push(a, str_json(&l->ptr[i]));
    return a;
}

static json *key_json(const controller_object_key_t *k) {
    json *o = json_new_object();
    json_set(o, "namespace", str_json(&k->namespace_));
    json_set(o, "name", str_json(&k->name));
    return o;
}

const json *turtles_fake_registration(void) {
    init();
    if (registration) return registration;
    controller_registration_t reg;
    exports_controller_register(&reg);
    json *o = json_new_object(), *watches = json_set(o, "watches", json_new_array());
    for (size_t i = 0; i < reg.watches.len; i++) {
        const turtles_controller_types_watch_t *w = &reg.watches.ptr[i];
        json *wj = json_push(watches, json_new_object());
        json_set(wj, "group", str_json(&w->group));
        json_set(wj, "version", str_json(&w->version));
        json_set(wj, "resource", str_json(&w->resource));
        json_set(wj, "namespace", w->namespace_.is_some ? str_json(&w->namespace_.val) : json_new_null());
        json_set(wj, "labelSelector", w->label_selector.is_some ? str_json(&w->label_selector.val) : json_new_null());
        if (w->mapping.tag == TURTLES_CONTROLLER_TYPES_KEY_MAPPING_OWNER) {
            json *owner = json_set(wj, "owner", json_new_object());
            json_set(owner, "group", str_json(&w->mapping.val.owner.group));
            json_set(owner, "kind", str_json(&w->mapping.val.owner.kind));
        } else {
            json_set(wj, "owner", json_new_null());
        }
    }
    json_set_int(o, "maxConcurrentReconciles", reg.max_concurrent_reconciles);
    json_set(o, "resyncSeconds", reg.resync_seconds.is_some ? json_new_int(reg.resync_seconds.val) : json_new_null());
    json *perms = json_set(o, "permissions", json_new_array());
    for (size_t i = 0; i < reg.permissions.len; i++) {
        const turtles_controller_types_permission_t *p = &reg.permissions.ptr[i];
        json *pj = json_push(perms, json_new_object());
        json_set(pj, "apiGroups", strs_json(&p->api_groups));
        json_set(pj, "resources", strs_json(&p->resources));
        json_set(pj, "verbs", strs_json(&p->verbs));
    }
    json *keys = json_set(o, "initialKeys", json_new_array());
    for (size_t i = 0; i < reg.initial_keys.len; i++) json_push(keys, key_json(&reg.initial_keys.ptr[i]));
    json_set(o, "serviceAccount", reg.service_account.is_some ? key_json(&reg.service_account.val) : json_new_null());
    controller_registration_free(&reg);
    registration = o;
    return registration;
}

const char *turtles_fake_reconcile(const char *ns, const char *name) {
    const json *reg = turtles_fake_registration();
    const json *primary = json_pointer(reg, "/watches/0");
    entry *e = primary ? find(json_pstr(primary, "/group", ""), json_pstr(primary, "/resource", ""), ns, name) : NULL;
    controller_object_key_t key;
    controller_string_dup(&key.namespace_, ns);
    controller_string_dup(&key.name, name);
    controller_list_u8_t object = {NULL, 0};
    if (e) {
        object.ptr = (uint8_t *)json_serialize(e->obj, &object.len);
        if (!object.ptr) abort();
    }
    controller_outcome_t out;
    exports_controller_reconcile(&key, e ? &object : NULL, &out); /* frees key and object */
    free(last_outcome);
    switch (out.tag) {
    case TURTLES_CONTROLLER_TYPES_OUTCOME_REQUEUE_AFTER:
        last_outcome = turtles_strf("requeue-after %ums", (unsigned)out.val.requeue_after);
        break;
    case TURTLES_CONTROLLER_TYPES_OUTCOME_TRANSIENT_ERROR:
        last_outcome = turtles_strf("transient-error: %.*s", (int)out.val.transient_error.len,
                                    (const char *)out.val.transient_error.ptr);
        break;
    case TURTLES_CONTROLLER_TYPES_OUTCOME_TERMINAL_ERROR:
        last_outcome = turtles_strf("terminal-error: %.*s", (int)out.val.terminal_error.len,
                                    (const char *)out.val.terminal_error.ptr);
        break;
    default:
        last_outcome = xstrdup("done");
    }
    controller_outcome_free(&out);
    if (verbose()) printf("  fake reconcile %s/%s: %s\n", ns, name, last_outcome);
    return last_outcome;
}

/* ---- assertions ----------------------------------------------------------------------- */

void turtles_fake_check_str(const char *file, int line, const char *expr, const char *got, const char *want) {
    turtles_fake_checks++;
    if (got && want && !strcmp(got, want)) return;
    if (!got && !want) return;
    turtles_fake_failures++;
    fprintf(stderr, "%s:%d: check failed: %s is \"%s\", want \"%s\"\n", file, line, expr, got ? got : "(null)",
            want ? want : "(null)");
}

int turtles_fake_report(void) {
    printf("checks: %d passed, %d failed\n", turtles_fake_checks - turtles_fake_failures, turtles_fake_failures);
    return turtles_fake_failures ? 1 : 0;
}
