/* A native test of the `node` controller, the SDK and the generated bindings, under ASan/LSan:
 * a fake host implements the four raw imports (`__wasm_import_*`, the functions the generated
 * controller.c calls) over a tiny in-memory object store, and the test calls the raw exports and
 * their post-return functions exactly as the component model does. It checks the pod lifecycle
 * (bind -> ContainerCreating -> Running with a unique IP -> deleted with grace 0 once marked; Pods of
 * restartPolicy Never/OnFailure finishing as their annotations say), the
 * node (created, recreated after deletion) and, through LeakSanitizer, that nothing leaks.
 *
 * Built and run by `build.sh --test` (needs wit-bindgen for controller.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "json.h"
#include "turtles.h"

#include "check.h"

/* ---- the fake API server -------------------------------------------------------------- */

static json *node;     /* the Node or NULL */
static json *pods;     /* array of Pods */
static json *claims;   /* array of PersistentVolumeClaims */
static json *volumes;  /* array of PersistentVolumes */
static json *classes;  /* array of StorageClasses */
static json *lease;    /* the node's Lease or NULL */
static int rv = 100;   /* resourceVersion counter */
static int api_calls, api_writes;
static bool verbose;

static void bump(json *obj) {
    char s[16];
    snprintf(s, sizeof s, "%d", ++rv);
    json_set_str(json_set_object(obj, "metadata"), "resourceVersion", s);
}

/* RFC 7386 merge patch of target (an object) with patch. */
static void merge(json *target, const json *patch) {
    for (json *p = json_first(patch); p; p = json_next(p)) {
        const char *k = json_key(p);
        if (json_is_null(p)) {
            json_remove(target, k);
        } else if (json_is_object(p)) {
            merge(json_set_object(target, k), p);
        } else {
            json_set(target, k, json_dup(p));
        }
    }
}

static json *find_pod(const char *ns, const char *name) {
    for (json *p = json_first(pods); p; p = json_next(p))
        if (!strcmp(json_pstr(p, "/metadata/namespace", ""), ns) && !strcmp(json_pstr(p, "/metadata/name", ""), name))
            return p;
    return NULL;
}

/* An object of a list by namespace ("" for cluster-scoped) and name. */
static json *find_in(json *list, const char *ns, const char *name) {
    for (json *o = json_first(list); o; o = json_next(o))
        if (!strcmp(json_pstr(o, "/metadata/namespace", ""), ns) && !strcmp(json_pstr(o, "/metadata/name", ""), name))
            return o;
    return NULL;
}

static void remove_pod(json *pod) {
    size_t i = 0;
    for (json *p = json_first(pods); p; p = json_next(p), i++)
        if (p == pod) {
            json_free(json_take_at(pods, i));
            return;
        }
}

/* Applies a JSON patch of `test` and `remove` on /metadata/finalizers/N; false on a failed test. */
static bool json_patch(json *obj, const json *ops) {
    for (json *op = json_first(ops); op; op = json_next(op)) {
        const char *path = json_pstr(op, "/path", "");
        json *at = json_pointer(obj, path);
        if (!strcmp(json_pstr(op, "/op", ""), "test")) {
            if (!at || !json_equal(at, json_get(op, "value"))) return false;
        } else if (!strcmp(json_pstr(op, "/op", ""), "remove")) {
            if (strncmp(path, "/metadata/finalizers/", 21) != 0 || !at) return false;
            json_free(json_take_at(json_pointer(obj, "/metadata/finalizers"), (size_t)atoi(path + 21)));
        } else {
            return false;
        }
    }
    return true;
}

/* Status `code` with body `body` (taken; NULL: a Status). */
static void respond(uint8_t *ret, int code, json *body) {
    if (!body) body = json_build("{\"kind\":\"Status\",\"code\":%d,\"message\":\"fake\"}", code);
    size_t n;
    char *text = json_serialize(body, &n);
    json_free(body);
    memset(ret, 0, 5 * sizeof(void *));
    *(uint16_t *)ret = (uint16_t)code;
    *(uint8_t **)(ret + 3 * sizeof(void *)) = (uint8_t *)text; /* owned by the guest now */
    *(size_t *)(ret + 4 * sizeof(void *)) = n;
}

static char *str(const uint8_t *p, size_t n) {
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

void __wasm_import_turtles_controller_host_api_call(uint8_t *m, size_t ml, uint8_t *p, size_t pl, uint8_t *h, size_t hl,
                                                    uint8_t *b, size_t bl, uint8_t *ret) {
    (void)h;
    (void)hl;
    char *method = str(m, ml), *path = str(p, pl);
    json *body = bl ? json_parse((const char *)b, bl, NULL, 0) : NULL;
    api_calls++;
    if (verbose) printf("  api %s %s %.*s\n", method, path, (int)bl, (const char *)b);
    char ns[64], name[64], sub[16] = "";
    if (strstr(path, "/leases")) {
        if (!strcmp(method, "GET")) {
            respond(ret, lease ? 200 : 404, lease ? json_dup(lease) : NULL);
        } else if (!strcmp(method, "POST") && !lease) {
            api_writes++;
            lease = json_dup(body);
            bump(lease);
            respond(ret, 201, json_dup(lease));
        } else if (!strcmp(method, "PUT") && lease &&
                   !strcmp(json_pstr(body, "/metadata/resourceVersion", ""), json_pstr(lease, "/metadata/resourceVersion", ""))) {
            api_writes++;
            json_free(lease);
            lease = json_dup(body);
            bump(lease);
            respond(ret, 200, json_dup(lease));
        } else {
            respond(ret, 409, NULL);
        }
    } else if (!strcmp(method, "POST") && !strcmp(path, "/api/v1/nodes")) {
        api_writes++;
        if (node) {
            respond(ret, 409, NULL);
        } else {
            node = json_dup(body);
            bump(node);
            respond(ret, 201, json_dup(node));
        }
    } else if (!strcmp(method, "PATCH") && !strcmp(path, "/api/v1/nodes/turtle-node-1/status")) {
        api_writes++;
        if (!node) {
            respond(ret, 404, NULL);
        } else {
            json *st = json_get(body, "status");
            json_set(node, "status", json_new_object());
            merge(json_get(node, "status"), st);
            bump(node);
            respond(ret, 200, json_dup(node));
        }
    } else if (!strcmp(method, "POST") &&
               sscanf(path, "/api/v1/namespaces/%63[^/]/pods/%63[^/]/%15s", ns, name, sub) == 3 &&
               !strcmp(sub, "binding")) {
        api_writes++;
        json *pod = find_pod(ns, name);
        if (!pod) {
            respond(ret, 404, NULL);
        } else if (*json_pstr(pod, "/spec/nodeName", "")) {
            respond(ret, 409, NULL); /* already assigned */
        } else {
            json_set_str(json_get(pod, "spec"), "nodeName", json_pstr(body, "/target/name", ""));
            bump(pod);
            respond(ret, 201, NULL);
        }
    } else if (!strcmp(method, "PATCH") && sscanf(path, "/api/v1/persistentvolumes/%63s", name) == 1) {
        api_writes++;
        json *pv = find_in(volumes, "", name);
        const char *want = json_pstr(body, "/metadata/resourceVersion", NULL);
        if (!pv) {
            respond(ret, 404, NULL);
        } else if (want && strcmp(want, json_pstr(pv, "/metadata/resourceVersion", ""))) {
            respond(ret, 409, NULL);
        } else {
            json *patch = json_dup(body);
            json_remove(json_get(patch, "metadata"), "resourceVersion");
            merge(pv, patch);
            json_free(patch);
            bump(pv);
            respond(ret, 200, json_dup(pv));
        }
    } else if (!strcmp(method, "PATCH") &&
               sscanf(path, "/api/v1/namespaces/%63[^/]/persistentvolumeclaims/%63s", ns, name) == 2) {
        api_writes++;
        json *claim = find_in(claims, ns, name);
        if (!claim) {
            respond(ret, 404, NULL);
        } else {
            merge(claim, body);
            bump(claim);
            respond(ret, 200, json_dup(claim));
        }
    } else if (!strcmp(method, "PATCH") &&
               sscanf(path, "/api/v1/namespaces/%63[^/]/pods/%63[^/]/%15s", ns, name, sub) >= 2) {
        api_writes++;
        json *pod = find_pod(ns, name);
        if (!pod) {
            respond(ret, 404, NULL);
        } else if (json_is_array(body)) {
            if (!json_patch(pod, body)) {
                respond(ret, 422, NULL);
            } else {
                bump(pod);
                json *copy = json_dup(pod);
                if (json_len(json_pointer(pod, "/metadata/finalizers")) == 0 &&
                    json_pointer(pod, "/metadata/deletionTimestamp"))
                    remove_pod(pod); /* the last finalizer is gone: deleted */
                respond(ret, 200, copy);
            }
        } else {
            const char *want = json_pstr(body, "/metadata/resourceVersion", NULL);
            if (want && strcmp(want, json_pstr(pod, "/metadata/resourceVersion", ""))) {
                respond(ret, 409, NULL);
            } else {
                if (!strcmp(sub, "status")) {
                    json *st = json_get(body, "status");
                    merge(json_set_object(pod, "status"), st);
                } else {
                    json *patch = json_dup(body);
                    json_remove(json_get(patch, "metadata"), "resourceVersion");
                    json_remove(patch, "status");
                    merge(pod, patch);
                    json_free(patch);
                }
                bump(pod);
                respond(ret, 200, json_dup(pod));
            }
        }
    } else if (!strcmp(method, "GET") && !strncmp(path, "/api/v1/pods?fieldSelector=spec.nodeName%3D", 43)) {
        /* the pods of one node ("" for the unscheduled), as the API's field selector lists them
         * (one page: the fake never cuts one) */
        char node_name[64] = "";
        sscanf(path + 43, "%63[^&]", node_name);
        json *items = json_new_array();
        for (json *p = json_first(pods); p; p = json_next(p))
            if (!strcmp(json_pstr(p, "/spec/nodeName", ""), node_name)) json_push(items, json_dup(p));
        respond(ret, 200, json_build("{\"kind\":\"PodList\",\"metadata\":{},\"items\":%J}", items));
    } else if (!strcmp(method, "DELETE") &&
               sscanf(path, "/api/v1/namespaces/%63[^/]/pods/%63[^/]", ns, name) == 2) {
        api_writes++;
        json *pod = find_pod(ns, name);
        const char *want = json_pstr(body, "/preconditions/uid", NULL);
        if (!pod) {
            respond(ret, 404, NULL);
        } else if (want && strcmp(want, json_pstr(pod, "/metadata/uid", ""))) {
            respond(ret, 409, NULL);
        } else if (json_pint(body, "/gracePeriodSeconds", -1) != 0) {
            respond(ret, 422, NULL); /* the kubelet's delete is always the final one */
        } else {
            json *copy = json_dup(pod);
            remove_pod(pod);
            respond(ret, 200, copy);
        }
    } else {
        respond(ret, 404, NULL);
    }
    json_free(body);
    free(method);
    free(path);
}

static void give_bytes(uint8_t *ret, size_t off, json *v) {
    size_t n;
    char *text = json_serialize(v, &n);
    *(uint8_t **)(ret + off) = (uint8_t *)text;
    *(size_t *)(ret + off + sizeof(void *)) = n;
}

void __wasm_import_turtles_controller_host_cache_get(uint8_t *g, size_t gl, uint8_t *v, size_t vl, uint8_t *r,
                                                     size_t rl, uint8_t *n, size_t nl, uint8_t *nm, size_t nml,
                                                     uint8_t *ret) {
    (void)g, (void)gl, (void)v, (void)vl;
    char *res = str(r, rl), *ns = str(n, nl), *name = str(nm, nml);
    json *obj = NULL;
    if (!strcmp(res, "nodes") && node && !strcmp(name, "turtle-node-1")) obj = node;
    if (!strcmp(res, "pods")) obj = find_pod(ns, name);
    if (!strcmp(res, "persistentvolumeclaims")) obj = find_in(claims, ns, name);
    if (!strcmp(res, "persistentvolumes")) obj = find_in(volumes, "", name);
    if (!strcmp(res, "storageclasses")) obj = find_in(classes, "", name);
    *ret = obj != NULL;
    if (obj) give_bytes(ret, sizeof(void *), obj);
    free(res);
    free(ns);
    free(name);
}

void __wasm_import_turtles_controller_host_cache_list(uint8_t *g, size_t gl, uint8_t *v, size_t vl, uint8_t *r,
                                                      size_t rl, int32_t has_ns, uint8_t *n, size_t nl,
                                                      uint8_t *ret) {
    (void)g, (void)gl, (void)v, (void)vl, (void)has_ns, (void)n, (void)nl;
    json *empty = json_new_array();
    json *list = rl == 4 && !memcmp(r, "pods", 4) ? pods
                 : rl == 17 && !memcmp(r, "persistentvolumes", 17) ? volumes
                                                                     : empty;
    give_bytes(ret, 0, list);
    json_free(empty);
}

/* record-event: the Event record is lowered to memory (17 pointer-sized slots: five strings of
 * the reference, the type, reason, action, note); the result<_, string> goes to ret (which may be
 * the same memory: everything is read first). A reason "Refused" is refused, like a 403. */
static json *events; /* array of {kind, name, type, reason, action, note} */

void __wasm_import_turtles_controller_host_record_event(uint8_t *p, uint8_t *ret) {
    size_t w = sizeof(void *);
#define FIELD(i) str(*(uint8_t **)(p + (i) * w), *(size_t *)(p + ((i) + 1) * w))
    char *kind = FIELD(2), *name = FIELD(6), *reason = FIELD(11), *action = FIELD(13), *note = FIELD(15);
#undef FIELD
    int type = *(int8_t *)(p + 10 * w);
    if (verbose) printf("  event %s/%s %s: %s\n", kind, name, reason, note);
    if (!strcmp(reason, "Refused")) {
        static const char msg[] = "events is forbidden";
        char *copy = malloc(sizeof msg - 1);
        memcpy(copy, msg, sizeof msg - 1);
        ret[0] = 1;
        *(char **)(ret + w) = copy;
        *(size_t *)(ret + 2 * w) = sizeof msg - 1;
    } else {
        json_push(events, json_build("{\"kind\":%s,\"name\":%s,\"type\":%s,\"reason\":%s,\"action\":%s,\"note\":%s}",
                                     kind, name, type ? "Warning" : "Normal", reason, action, note));
        ret[0] = 0;
    }
    free(kind), free(name), free(reason), free(action), free(note);
}

void __wasm_import_turtles_controller_host_log(int32_t level, uint8_t *m, size_t ml, uint8_t *f, size_t fl) {
    (void)f, (void)fl;
    if (verbose) printf("  log[%d] %.*s\n", level, (int)ml, (const char *)m);
}

/* ---- driving the exports like the component model ------------------------------------- */

/* Natively there is no controller_component_type.o (a wasm object): stand in for its symbol. */
void __component_type_object_force_link_controller(void) {}
void *cabi_realloc(void *ptr, size_t old_size, size_t align, size_t new_size);

uint8_t *__wasm_export_exports_controller_reconcile(uint8_t *, size_t, uint8_t *, size_t, int32_t, uint8_t *, size_t);
void __wasm_export_exports_controller_reconcile_post_return(uint8_t *);

static uint8_t *lower(const char *s, size_t n) {
    uint8_t *p = cabi_realloc(NULL, 0, 1, n);
    if (n) memcpy(p, s, n);
    return p;
}

/* Reconciles ns/name with the stored object; returns the outcome tag (and ms in *ms). */
static int reconcile(const char *ns, const char *name, uint32_t *ms) {
    json *obj = *ns ? find_pod(ns, name) : NULL;
    size_t n = 0;
    char *text = obj ? json_serialize(obj, &n) : NULL;
    uint8_t *o = obj ? lower(text, n) : NULL;
    free(text);
    uint8_t *r = __wasm_export_exports_controller_reconcile(lower(ns, strlen(ns)), strlen(ns), lower(name, strlen(name)),
                                                           strlen(name), obj != NULL, o, n);
    int tag = *r;
    if (ms) *ms = *(uint32_t *)(r + sizeof(void *));
    if (tag >= 2)
        fprintf(stderr, "  outcome %d: %.*s\n", tag, (int)*(size_t *)(r + 2 * sizeof(void *)),
                *(char **)(r + sizeof(void *)));
    __wasm_export_exports_controller_reconcile_post_return(r);
    return tag;
}

/* Reconciles until Done (at most 10 times); returns how many reconciles that took. */
#define PREEMPTION " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."

static int settle(const char *ns, const char *name) {
    for (int i = 1; i <= 10; i++) {
        int tag = reconcile(ns, name, NULL);
        if (tag == 0) return i;
        if (tag >= 2) return -1;
    }
    return -1;
}

static void add_pod(const char *name, const char *image) {
    json *pod = json_build("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":%s,\"namespace\":\"default\","
                           "\"uid\":%s},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":%s}]},"
                           "\"status\":{\"phase\":\"Pending\"}}",
                           name, name, image);
    bump(pod);
    json_push(pods, pod);
}

int main(int argc, char **argv) {
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    pods = json_new_array();
    claims = json_new_array();
    volumes = json_new_array();
    classes = json_new_array();
    events = json_new_array();

    /* register: what the SDK hands to the host, then freed as the post-return would */
    controller_registration_t reg;
    exports_controller_register(&reg);
    CHECK(reg.watches.len == 5);
    CHECK(reg.watches.ptr[0].resource.len == 4 && !memcmp(reg.watches.ptr[0].resource.ptr, "pods", 4));
    CHECK(reg.watches.ptr[0].mapping.tag == TURTLES_CONTROLLER_TYPES_KEY_MAPPING_SELF_KEY);
    CHECK(!reg.watches.ptr[0].namespace_.is_some);
    CHECK(reg.permissions.len == 10);
    CHECK(reg.initial_keys.len == 2 && reg.initial_keys.ptr[0].namespace_.len == 0 &&
          reg.initial_keys.ptr[0].name.len == 13 && !memcmp(reg.initial_keys.ptr[0].name.ptr, "turtle-node-1", 13));
    CHECK(!reg.service_account.is_some);
    CHECK(reg.permissions.ptr[0].verbs.len == 6 && reg.permissions.ptr[0].api_groups.len == 1 &&
          reg.permissions.ptr[0].api_groups.ptr[0].len == 0);
    CHECK(reg.max_concurrent_reconciles == 1);
    controller_registration_free(&reg);

    /* the heartbeat: the Lease made (owned by the node) and renewed every 10 s */
    CHECK(reconcile("", "turtle-node-1", NULL) == 0);
    uint32_t every = 0;
    CHECK(reconcile("", "turtle-node-1.lease", &every) == 1 && every == 10000);
    CHECK(lease && !strcmp(json_pstr(lease, "/spec/holderIdentity", ""), "turtle-node-1"));
    CHECK(json_pint(lease, "/spec/leaseDurationSeconds", 0) == 40);
    CHECK(!strcmp(json_pstr(lease, "/metadata/ownerReferences/0/kind", ""), "Node"));
    char first[64];
    snprintf(first, sizeof first, "%s", json_pstr(lease, "/spec/renewTime", ""));
    CHECK(strlen(first) == 27 && first[19] == '.' && first[26] == 'Z');
    const char *rv_before = json_pstr(lease, "/metadata/resourceVersion", "");
    char rv0[16];
    snprintf(rv0, sizeof rv0, "%s", rv_before);
    CHECK(reconcile("", "turtle-node-1.lease", &every) == 1 && every == 10000);
    CHECK(strcmp(json_pstr(lease, "/metadata/resourceVersion", ""), rv0) == 0); /* renewed just now: kept */
    json_set_str(json_get(lease, "spec"), "renewTime", "2020-01-01T00:00:00.000000Z");
    CHECK(reconcile("", "turtle-node-1.lease", &every) == 1 && every == 10000);
    CHECK(strcmp(json_pstr(lease, "/metadata/resourceVersion", ""), rv0) != 0); /* renewed */
    json_free(node);
    node = NULL;
    json_free(events);
    events = json_new_array();

    /* the initial key, before any pod: the node is registered, with an Event */
    CHECK(reconcile("", "turtle-node-1", NULL) == 0);
    CHECK(node != NULL);
    CHECK(json_len(events) == 1);
    CHECK(!strcmp(json_pstr(events, "/0/kind", ""), "Node") && !strcmp(json_pstr(events, "/0/reason", ""), "RegisteredNode"));
    json_free(node);
    node = NULL;

    /* a pod: bound (with a Scheduled event), ContainerCreating, Running */
    add_pod("a", "nginx:1.27");
    uint32_t ms = 0;
    CHECK(reconcile("default", "a", &ms) == 1 && ms > 0); /* node created, pod bound */
    CHECK(json_len(events) == 3);
    CHECK(!strcmp(json_pstr(events, "/2/reason", ""), "Scheduled"));
    CHECK(!strcmp(json_pstr(events, "/2/note", ""), "Successfully assigned default/a to turtle-node-1"));
    CHECK(!strcmp(json_pstr(events, "/2/type", ""), "Normal"));
    CHECK(node && !strcmp(json_pstr(node, "/status/conditions/3/type", ""), "Ready"));
    CHECK(!strcmp(json_pstr(node, "/status/addresses/0/address", ""), "10.0.0.1"));
    json *a = find_pod("default", "a");
    CHECK(!strcmp(json_pstr(a, "/spec/nodeName", ""), "turtle-node-1"));
    CHECK(json_pointer(a, "/metadata/finalizers") == NULL); /* a kubelet puts no finalizer */
    CHECK(json_pointer(a, "/status/containerStatuses") == NULL);
    CHECK(reconcile("default", "a", NULL) == 1);
    a = find_pod("default", "a");
    CHECK(!strcmp(json_pstr(a, "/status/phase", ""), "Pending"));
    CHECK(!strcmp(json_pstr(a, "/status/containerStatuses/0/state/waiting/reason", ""), "ContainerCreating"));
    CHECK(!strcmp(json_pstr(a, "/status/conditions/4/type", ""), "PodScheduled"));
    CHECK(reconcile("default", "a", NULL) == 0);
    a = find_pod("default", "a");
    CHECK(!strcmp(json_pstr(a, "/status/phase", ""), "Running"));
    CHECK(!strcmp(json_pstr(a, "/status/podIP", ""), "10.244.0.2"));
    CHECK(!strcmp(json_pstr(a, "/status/podIPs/0/ip", ""), "10.244.0.2"));
    CHECK(!strcmp(json_pstr(a, "/status/hostIP", ""), "10.0.0.1"));
    CHECK(json_pstr(a, "/status/startTime", NULL) != NULL);
    CHECK(json_pbool(a, "/status/containerStatuses/0/ready", false));
    CHECK(json_pbool(a, "/status/containerStatuses/0/started", false));
    CHECK(json_pint(a, "/status/containerStatuses/0/restartCount", -1) == 0);
    CHECK(!strcmp(json_pstr(a, "/status/containerStatuses/0/image", ""), "nginx:1.27"));
    int writes = api_writes;
    CHECK(reconcile("default", "a", NULL) == 0); /* steady state: no writes */
    CHECK(api_writes == writes);

    /* more pods: unique IPs */
    add_pod("b", "redis");
    add_pod("c", "busybox");
    CHECK(settle("default", "b") == 3);
    CHECK(settle("default", "c") == 3);
    CHECK(!strcmp(json_pstr(find_pod("default", "b"), "/status/podIP", ""), "10.244.0.3"));
    CHECK(!strcmp(json_pstr(find_pod("default", "c"), "/status/podIP", ""), "10.244.0.4"));

    /* delete a (the API server marked it): deleted with grace period 0, and gone */
    json_set_str(json_get(find_pod("default", "a"), "metadata"), "deletionTimestamp", "2025-01-01T00:00:30Z");
    CHECK(reconcile("default", "a", NULL) == 0);
    CHECK(find_pod("default", "a") == NULL);
    CHECK(reconcile("default", "a", NULL) == 0); /* gone: nothing to do */


    /* a graceful deletion just marked: the containers take up to 2 s to stop, then it goes */
    {
        time_t t = time(NULL) + 30;
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        json *bm = json_get(find_pod("default", "b"), "metadata");
        json_set_str(bm, "deletionTimestamp", stamp);
        json_set(bm, "deletionGracePeriodSeconds", json_parse_str("30"));
        ms = 0;
        CHECK(reconcile("default", "b", &ms) == 1 && ms > 0 && ms <= 2001);
        CHECK(find_pod("default", "b") != NULL);
        t -= 3; /* marked three seconds ago */
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        json_set_str(bm, "deletionTimestamp", stamp);
        CHECK(reconcile("default", "b", NULL) == 0);
        CHECK(find_pod("default", "b") == NULL);
    }

    /* a new pod reuses the free IP */
    add_pod("d", "nginx");
    CHECK(settle("default", "d") == 3);
    CHECK(!strcmp(json_pstr(find_pod("default", "d"), "/status/podIP", ""), "10.244.0.2"));
    add_pod("b", "redis"); /* b again, for what follows */
    CHECK(settle("default", "b") == 3);

    /* the node deleted: a node event (cluster-scoped key) recreates it */
    json_free(node);
    node = NULL;
    CHECK(reconcile("", "turtle-node-1", NULL) == 0);
    CHECK(node != NULL);

    /* a pod bound to another node is left alone */
    add_pod("e", "nginx");
    json_set_str(json_get(find_pod("default", "e"), "spec"), "nodeName", "other");
    writes = api_writes;
    CHECK(reconcile("default", "e", NULL) == 0 && api_writes == writes);

    /* bound meanwhile (the guest sees the pod before its binding): the binding's 409 is no
     * error, the bound pod's own event brings it back */
    add_pod("f", "nginx");
    json *f = find_pod("default", "f");
    char *text = json_serialize(f, NULL);
    json_set_str(json_get(f, "spec"), "nodeName", "turtle-node-1");
    bump(f); /* the stored pod moves on; the guest gets the old one */
    json *stale = json_parse_str(text);
    free(text);
    size_t n;
    text = json_serialize(stale, &n);
    json_free(stale);
    uint8_t *r = __wasm_export_exports_controller_reconcile(lower("default", 7), 7, lower("f", 1), 1, 1,
                                                           lower(text, n), n);
    free(text);
    CHECK(*r == TURTLES_CONTROLLER_TYPES_OUTCOME_DONE);
    __wasm_export_exports_controller_reconcile_post_return(r);
    CHECK(settle("default", "f") == 2);

    /* the SDK's event error path and the server-side apply path */
    char *error = NULL;
    CHECK(!turtles_record_event(node, "Warning", "Refused", "", "x", &error));
    CHECK(error && !strcmp(error, "events is forbidden"));
    free(error);
    size_t before = json_len(events);
    CHECK(turtles_record_event(node, "Warning", "Checked", "Checking", "ok", NULL));
    CHECK(json_len(events) == before + 1);
    char last[32];
    snprintf(last, sizeof last, "/%zu", before);
    json *ev = json_pointer(events, last);
    CHECK(!strcmp(json_pstr(ev, "/type", ""), "Warning") && !strcmp(json_pstr(ev, "/action", ""), "Checking"));
    char *ap = turtles_apply_path("/api/v1/nodes/n", "my manager", true);
    CHECK(!strcmp(ap, "/api/v1/nodes/n?fieldManager=my%20manager&force=true"));
    free(ap);
    ap = turtles_apply_path("/api/v1/nodes/n?dryRun=All", "m", false);
    CHECK(!strcmp(ap, "/api/v1/nodes/n?dryRun=All&fieldManager=m"));
    free(ap);

    /* init containers complete; a sidecar (restartPolicy Always) runs on, started and ready */
    add_pod("s", "app");
    json_set(json_get(find_pod("default", "s"), "spec"), "initContainers",
             json_build("[{\"name\":\"setup\",\"image\":\"busybox\"},"
                        "{\"name\":\"proxy\",\"image\":\"envoy\",\"restartPolicy\":\"Always\"}]"));
    json_set_int(json_get(find_pod("default", "s"), "metadata"), "generation", 3);
    CHECK(settle("default", "s") > 0);
    json *sp = find_pod("default", "s");
    /* a 1.34 kubelet reports the generation it saw, on the status and each condition */
    CHECK(json_pint(sp, "/status/observedGeneration", 0) == 3);
    CHECK(json_pint(sp, "/status/conditions/0/observedGeneration", 0) == 3);
    CHECK(json_pint(sp, "/status/conditions/4/observedGeneration", 0) == 3);
    CHECK(!strcmp(json_pstr(sp, "/status/phase", ""), "Running"));
    CHECK(!strcmp(json_pstr(sp, "/status/initContainerStatuses/0/state/terminated/reason", ""), "Completed"));
    CHECK(json_pointer(sp, "/status/initContainerStatuses/1/state/running/startedAt") != NULL);
    CHECK(json_pbool(sp, "/status/initContainerStatuses/1/started", false));
    CHECK(json_pbool(sp, "/status/initContainerStatuses/1/ready", false));

    /* pods that run to completion: restartPolicy Never/OnFailure finish after turtles.dev/run-seconds
     * with turtles.dev/exit-code; Always (the default, pods b, c, d above) run on */
    add_pod("g", "perl");
    json_set_str(json_get(find_pod("default", "g"), "spec"), "restartPolicy", "Never");
    json *ga = json_set_object(json_get(find_pod("default", "g"), "metadata"), "annotations");
    json_set_str(ga, "turtles.dev/run-seconds", "0");
    CHECK(settle("default", "g") == 3);
    CHECK(!strcmp(json_pstr(find_pod("default", "g"), "/status/phase", ""), "Running"));
    CHECK(reconcile("default", "g", NULL) == 0);
    json *g = find_pod("default", "g");
    CHECK(!strcmp(json_pstr(g, "/status/phase", ""), "Succeeded"));
    CHECK(json_pint(g, "/status/containerStatuses/0/state/terminated/exitCode", -1) == 0);
    CHECK(!strcmp(json_pstr(g, "/status/containerStatuses/0/state/terminated/reason", ""), "Completed"));
    CHECK(!json_pbool(g, "/status/containerStatuses/0/ready", true));
    CHECK(!strcmp(json_pstr(g, "/status/conditions/2/type", ""), "Ready"));
    CHECK(!strcmp(json_pstr(g, "/status/conditions/2/status", ""), "False"));
    CHECK(!strcmp(json_pstr(g, "/status/conditions/2/reason", ""), "PodCompleted"));
    CHECK(!strncmp(json_pstr(g, "/status/podIP", ""), "10.244.", 7)); /* kept */
    writes = api_writes;
    CHECK(reconcile("default", "g", NULL) == 0 && api_writes == writes); /* finished: left alone */

    add_pod("h", "perl");
    json_set_str(json_get(find_pod("default", "h"), "spec"), "restartPolicy", "OnFailure");
    json *ha = json_set_object(json_get(find_pod("default", "h"), "metadata"), "annotations");
    json_set_str(ha, "turtles.dev/run-seconds", "0");
    json_set_str(ha, "turtles.dev/exit-code", "3");
    CHECK(settle("default", "h") == 3);
    CHECK(reconcile("default", "h", NULL) == 0);
    json *h = find_pod("default", "h");
    CHECK(!strcmp(json_pstr(h, "/status/phase", ""), "Failed"));
    CHECK(json_pint(h, "/status/containerStatuses/0/state/terminated/exitCode", -1) == 3);
    CHECK(!strcmp(json_pstr(h, "/status/containerStatuses/0/state/terminated/reason", ""), "Error"));

    /* not yet: requeued for the rest of its run time (default 1 s; here an hour) */
    add_pod("i", "perl");
    json_set_str(json_get(find_pod("default", "i"), "spec"), "restartPolicy", "Never");
    json_set_str(json_set_object(json_get(find_pod("default", "i"), "metadata"), "annotations"),
                 "turtles.dev/run-seconds", "3600");
    CHECK(settle("default", "i") == 3);
    writes = api_writes;
    ms = 0;
    CHECK(reconcile("default", "i", &ms) == 1 && ms > 3590000 && ms <= 3600000);
    CHECK(api_writes == writes);
    CHECK(!strcmp(json_pstr(find_pod("default", "i"), "/status/phase", ""), "Running"));

    /* a pod an older version bound carries its finalizer: released first, then deleted */
    add_pod("old", "nginx");
    CHECK(settle("default", "old") == 3);
    json *old = find_pod("default", "old");
    json *fin = json_set_object(old, "metadata");
    json_set(fin, "finalizers", json_parse("[\"turtles.dev/kubelet\"]", 22, NULL, 0));
    json_set_str(fin, "deletionTimestamp", "2025-01-01T00:00:30Z");
    CHECK(reconcile("default", "old", NULL) == 0);
    CHECK(find_pod("default", "old") == NULL);

    /* scheduling: a pod whose node selector the node does not match stays unbound, with kube's
     * scheduler's condition; labelling the node (a node event) binds it */
    add_pod("sel", "nginx");
    json_set(json_get(find_pod("default", "sel"), "spec"), "nodeSelector",
             json_parse("{\"disk\":\"ssd\"}", 14, NULL, 0));
    size_t events_before = json_len(events);
    CHECK(reconcile("default", "sel", NULL) == 0);
    json *sel = find_pod("default", "sel");
    /* and the scheduler's Warning, which `kubectl describe pod` shows */
    CHECK(json_len(events) == events_before + 1);
    char at[32];
    snprintf(at, sizeof at, "/%zu", events_before);
    json *failed = json_pointer(events, at);
    CHECK(!strcmp(json_pstr(failed, "/type", ""), "Warning") &&
          !strcmp(json_pstr(failed, "/reason", ""), "FailedScheduling") &&
          !strcmp(json_pstr(failed, "/action", ""), "Scheduling"));
    CHECK(!strcmp(json_pstr(failed, "/note", ""),
                  "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector." PREEMPTION));
    CHECK(!*json_pstr(sel, "/spec/nodeName", ""));
    CHECK(!strcmp(json_pstr(sel, "/status/conditions/0/reason", ""), "Unschedulable"));
    CHECK(!strcmp(json_pstr(sel, "/status/conditions/0/message", ""),
                  "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector." PREEMPTION));
    writes = api_writes;
    CHECK(reconcile("default", "sel", NULL) == 0 && api_writes == writes); /* written once */
    json_set_str(json_set_object(json_get(node, "metadata"), "labels"), "disk", "ssd");
    CHECK(reconcile("", "turtle-node-1", NULL) == 0);
    CHECK(!strcmp(json_pstr(find_pod("default", "sel"), "/spec/nodeName", ""), "turtle-node-1"));

    /* required node affinity: a DaemonSet's pod for this node is bound, one for another is not */
    const char *affinity = "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                           "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
                           "\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}";
    const char *targets[] = {"turtle-node-1", "other-node"};
    for (int i = 0; i < 2; i++) {
        char name[16], text_aff[512];
        snprintf(name, sizeof name, "ds%d", i);
        snprintf(text_aff, sizeof text_aff, affinity, targets[i]);
        add_pod(name, "agent");
        json_set(json_get(find_pod("default", name), "spec"), "affinity", json_parse_str(text_aff));
        CHECK(reconcile("default", name, NULL) == (i == 0 ? 1 : 0));
        CHECK(!strcmp(json_pstr(find_pod("default", name), "/spec/nodeName", ""), i == 0 ? "turtle-node-1" : ""));
    }

    /* a NoSchedule taint keeps out pods that do not tolerate it */
    json_set(json_get(node, "spec"), "taints",
             json_parse_str("[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoSchedule\"}]"));
    add_pod("t1", "nginx");
    add_pod("t2", "nginx");
    json_set(json_get(find_pod("default", "t2"), "spec"), "tolerations",
             json_parse_str("[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"db\"}]"));
    CHECK(reconcile("default", "t1", NULL) == 0 && !*json_pstr(find_pod("default", "t1"), "/spec/nodeName", ""));
    CHECK(!strcmp(json_pstr(find_pod("default", "t1"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: 1 node(s) had untolerated taint(s)." PREEMPTION));
    CHECK(reconcile("default", "t2", NULL) == 1);
    CHECK(!strcmp(json_pstr(find_pod("default", "t2"), "/spec/nodeName", ""), "turtle-node-1"));
    json_remove(json_get(node, "spec"), "taints");

    /* a cordoned node takes only pods that tolerate node.kubernetes.io/unschedulable */
    json_set(json_get(node, "spec"), "unschedulable", json_parse_str("true"));
    add_pod("c1", "nginx");
    add_pod("c2", "agent");
    json_set(json_get(find_pod("default", "c2"), "spec"), "tolerations",
             json_parse_str("[{\"key\":\"node.kubernetes.io/unschedulable\",\"operator\":\"\","
                            "\"effect\":\"NoSchedule\"}]"));
    CHECK(reconcile("default", "c1", NULL) == 0 && !*json_pstr(find_pod("default", "c1"), "/spec/nodeName", ""));
    CHECK(!strcmp(json_pstr(find_pod("default", "c1"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: 1 node(s) were unschedulable." PREEMPTION));
    CHECK(reconcile("default", "c2", NULL) == 1); /* operator "" is Equal; no value matches none */
    json_remove(json_get(node, "spec"), "unschedulable");
    CHECK(reconcile("", "turtle-node-1", NULL) == 0); /* uncordoned: c1 is bound now */
    CHECK(!strcmp(json_pstr(find_pod("default", "c1"), "/spec/nodeName", ""), "turtle-node-1"));

    /* volumes, as kube's VolumeBinding plugin: a claim that does not exist */
    add_pod("v1", "db");
    json_set(json_get(find_pod("default", "v1"), "spec"), "volumes",
             json_parse_str("[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"data\"}}]"));
    CHECK(reconcile("default", "v1", NULL) == 0 && !*json_pstr(find_pod("default", "v1"), "/spec/nodeName", ""));
    CHECK(!strcmp(json_pstr(find_pod("default", "v1"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: persistentvolumeclaim \"data\" not found." PREEMPTION));
    /* ... unbound, of no class (bound at once by the binder): wait for it */
    json *claim = json_parse_str("{\"metadata\":{\"name\":\"data\",\"namespace\":\"default\"},"
                                 "\"spec\":{\"storageClassName\":\"\"},\"status\":{\"phase\":\"Pending\"}}");
    bump(claim);
    json_push(claims, claim);
    /* the claim's event (its key) looks at the pods naming it again */
    CHECK(reconcile("default", "data", NULL) == 0);
    CHECK(!strcmp(json_pstr(find_pod("default", "v1"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims." PREEMPTION));
    /* ... of a class that waits for its first consumer: the claim is given this node, the pod
     * waits (polling) until the binder has bound it */
    json_push(classes, json_parse_str("{\"metadata\":{\"name\":\"standard\"},\"provisioner\":\"turtles.dev/host-path\","
                                      "\"volumeBindingMode\":\"WaitForFirstConsumer\"}"));
    json_set_str(json_get(claim, "spec"), "storageClassName", "standard");
    CHECK(reconcile("default", "data", NULL) == 0);
    CHECK(!strcmp(json_pstr(claim, "/metadata/annotations/volume.kubernetes.io~1selected-node", ""), "turtle-node-1"));
    CHECK(!*json_pstr(find_pod("default", "v1"), "/spec/nodeName", ""));
    writes = api_writes;
    CHECK(reconcile("default", "v1", NULL) == 0 && api_writes == writes); /* annotated once */
    /* ... bound to a volume pinned to another node: does not fit */
    json_push(volumes, json_parse_str("{\"metadata\":{\"name\":\"pvc-1\"},\"spec\":{\"nodeAffinity\":{\"required\":{"
                                      "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\","
                                      "\"operator\":\"In\",\"values\":[\"elsewhere\"]}]}]}}}}"));
    json_set_str(json_get(claim, "spec"), "volumeName", "pvc-1");
    json_set_str(json_get(json_get(claim, "metadata"), "annotations"), "pv.kubernetes.io/bind-completed", "yes");
    CHECK(reconcile("default", "data", NULL) == 0);
    CHECK(!strcmp(json_pstr(find_pod("default", "v1"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity." PREEMPTION));
    /* ... pinned here (by the hostname label the node registered with): bound */
    json_remove(json_pointer(volumes, "/0/spec"), "nodeAffinity");
    json_set(json_pointer(volumes, "/0/spec"), "nodeAffinity",
             json_parse_str("{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
                            "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"turtle-node-1\"]}]}]}}"));
    CHECK(reconcile("default", "data", NULL) == 0);
    CHECK(!strcmp(json_pstr(find_pod("default", "v1"), "/spec/nodeName", ""), "turtle-node-1"));
    /* a claim being deleted keeps new pods out */
    add_pod("v2", "db");
    json_set(json_get(find_pod("default", "v2"), "spec"), "volumes",
             json_parse_str("[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"data\"}}]"));
    json_set_str(json_get(claim, "metadata"), "deletionTimestamp", "2025-01-01T00:00:00Z");
    CHECK(reconcile("default", "v2", NULL) == 0);
    /* a pod's own key with no claim of its name: no other pod is looked at */
    writes = api_writes;
    CHECK(reconcile("default", "v2", NULL) == 0 && api_writes == writes);
    CHECK(!strcmp(json_pstr(find_pod("default", "v2"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: persistentvolumeclaim \"data\" is being deleted." PREEMPTION));

    /* local volumes of a class without a provisioner: the smallest that fits, on this node,
     * gets the claim (the binder finishes); a claim nothing fits keeps its pod out */
    json_push(classes, json_parse_str("{\"metadata\":{\"name\":\"local\"},\"provisioner\":\"kubernetes.io/no-provisioner\","
                                      "\"volumeBindingMode\":\"WaitForFirstConsumer\"}"));
    const char *local_pv = "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"1\"},\"spec\":{\"capacity\":{\"storage\":\"%s\"},"
                           "\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":\"local\",\"nodeAffinity\":{\"required\":{"
                           "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","
                           "\"values\":[\"%s\"]}]}]}}},\"status\":{\"phase\":\"Available\"}}";
    const char *locals[][3] = {{"local-big", "100Gi", "turtle-node-1"}, {"local-small", "10Gi", "turtle-node-1"},
                               {"local-tiny", "1Gi", "turtle-node-1"}, {"local-there", "10Gi", "elsewhere"}};
    for (int i = 0; i < 4; i++) {
        char text_pv[1024];
        snprintf(text_pv, sizeof text_pv, local_pv, locals[i][0], locals[i][1], locals[i][2]);
        json_push(volumes, json_parse_str(text_pv));
    }
    json *lclaim = json_parse_str("{\"metadata\":{\"name\":\"ldata\",\"namespace\":\"default\",\"uid\":\"lu\"},"
                                  "\"spec\":{\"storageClassName\":\"local\",\"accessModes\":[\"ReadWriteOnce\"],"
                                  "\"resources\":{\"requests\":{\"storage\":\"5Gi\"}}},\"status\":{\"phase\":\"Pending\"}}");
    bump(lclaim);
    json_push(claims, lclaim);
    add_pod("l1", "db");
    json_set(json_get(find_pod("default", "l1"), "spec"), "volumes",
             json_parse_str("[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"ldata\"}}]"));
    CHECK(reconcile("default", "l1", NULL) == 0);
    CHECK(!*json_pstr(find_pod("default", "l1"), "/spec/nodeName", ""));
    CHECK(!strcmp(json_pstr(find_in(volumes, "", "local-small"), "/spec/claimRef/uid", ""), "lu"));
    CHECK(!strcmp(json_pstr(find_in(volumes, "", "local-small"),
                            "/metadata/annotations/pv.kubernetes.io~1bound-by-controller", ""), "yes"));
    CHECK(!json_pointer(find_in(volumes, "", "local-big"), "/spec/claimRef"));
    CHECK(!json_pointer(lclaim, "/metadata/annotations/volume.kubernetes.io~1selected-node"));
    writes = api_writes;
    CHECK(reconcile("default", "l1", NULL) == 0 && api_writes == writes); /* reserved once */
    /* the binder binds them: the claim's event binds the pod */
    json_set_str(json_get(lclaim, "spec"), "volumeName", "local-small");
    json_set(json_get(lclaim, "metadata"), "annotations", json_parse_str("{\"pv.kubernetes.io/bind-completed\":\"yes\"}"));
    CHECK(reconcile("default", "ldata", NULL) == 0);
    CHECK(!strcmp(json_pstr(find_pod("default", "l1"), "/spec/nodeName", ""), "turtle-node-1"));
    /* nothing fits 500Gi here: kept out */
    json *huge = json_parse_str("{\"metadata\":{\"name\":\"huge\",\"namespace\":\"default\",\"uid\":\"hu\"},"
                                "\"spec\":{\"storageClassName\":\"local\",\"accessModes\":[\"ReadWriteOnce\"],"
                                "\"resources\":{\"requests\":{\"storage\":\"500Gi\"}}},\"status\":{\"phase\":\"Pending\"}}");
    bump(huge);
    json_push(claims, huge);
    add_pod("l2", "db");
    json_set(json_get(find_pod("default", "l2"), "spec"), "volumes",
             json_parse_str("[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"huge\"}}]"));
    CHECK(reconcile("default", "l2", NULL) == 0);
    CHECK(!strcmp(json_pstr(find_pod("default", "l2"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind." PREEMPTION));

    /* the node's 110 slots (its allocatable pods): a full node takes no more Pods, as kube's
     * scheduler says; a Pod's going lets the waiting one in */
    int running_here = 0;
    for (json *p = json_first(pods); p; p = json_next(p)) {
        const char *phase = json_pstr(p, "/status/phase", "");
        if (!strcmp(json_pstr(p, "/spec/nodeName", ""), "turtle-node-1") && strcmp(phase, "Succeeded") &&
            strcmp(phase, "Failed"))
            running_here++;
    }
    for (int i = running_here; i < 110; i++) {
        char filler[32];
        snprintf(filler, sizeof filler, "filler-%03d", i);
        add_pod(filler, "pause");
        json_set_str(json_get(find_pod("default", filler), "spec"), "nodeName", "turtle-node-1");
        json_set_str(json_get(find_pod("default", filler), "status"), "phase", "Running");
    }
    add_pod("late", "nginx");
    CHECK(reconcile("default", "late", NULL) == 0);
    CHECK(!*json_pstr(find_pod("default", "late"), "/spec/nodeName", ""));
    CHECK(!strcmp(json_pstr(find_pod("default", "late"), "/status/conditions/0/message", ""),
                  "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption "
                  "victims found for incoming pod."));
    remove_pod(find_pod("default", "filler-109"));
    CHECK(reconcile("default", "filler-109", NULL) == 0); /* gone: its slot goes to the waiting Pod */
    CHECK(!strcmp(json_pstr(find_pod("default", "late"), "/spec/nodeName", ""), "turtle-node-1"));

    /* many reconciles: steady memory (LeakSanitizer reports anything left at exit) */
    for (int i = 0; i < 2000; i++) reconcile("default", "b", NULL);

    json_free(pods);
    json_free(claims);
    json_free(volumes);
    json_free(classes);
    json_free(lease);
    json_free(node);
    json_free(events);
    if (failures) {
        fprintf(stderr, "node_test: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("node_test: all %d checks passed (%d API calls)\n", checks, api_calls);
    return 0;
}
