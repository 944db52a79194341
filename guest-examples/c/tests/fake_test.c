/* A native test of the SDK's fake host (sdk/turtles_fake.c), the one projects made by
 * `turtles new --lang c` test against: the c-greeter controller driven through it, and the fake
 * API server, cache, Events and log exercised through the SDK's own calls, under ASan/LSan.
 *
 * Built and run by `build.sh --test` (needs wit-bindgen for controller.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "turtles.h"
#include "turtles_fake.h"

static const char *greeting(const char *ns, const char *name) {
    return json_string(
        json_path(turtles_fake_get("", "v1", "configmaps", ns, name), "metadata", "annotations", "turtles.dev/greeting", NULL));
}

static void greeter(void) {
    const json *reg = turtles_fake_registration();
    TURTLES_CHECK_STR(json_pstr(reg, "/watches/0/resource", NULL), "configmaps");
    TURTLES_CHECK_STR(json_pstr(reg, "/watches/0/labelSelector", NULL), "turtles.dev/greet=true");
    TURTLES_CHECK(json_is_null(json_pointer(reg, "/watches/0/namespace")));
    TURTLES_CHECK(json_is_null(json_pointer(reg, "/watches/0/owner")));
    TURTLES_CHECK(json_pint(reg, "/maxConcurrentReconciles", 0) == 1);
    TURTLES_CHECK_STR(json_pstr(reg, "/permissions/0/verbs/3", NULL), "patch");
    TURTLES_CHECK(json_is_null(json_get(reg, "serviceAccount")));

    turtles_fake_add("", "v1", "configmaps", json_parse_str("{\"metadata\":{\"name\":\"demo\",\"namespace\":\"default\"}}"));
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "demo"), "done");
    TURTLES_CHECK_STR(greeting("default", "demo"), "hello from C, demo");
    TURTLES_CHECK(turtles_fake_call_count("PATCH") == 1);
    TURTLES_CHECK_STR(json_pstr(turtles_fake_calls(), "/0/path", NULL), "/api/v1/namespaces/default/configmaps/demo");
    TURTLES_CHECK_STR(json_pstr(turtles_fake_calls(), "/0/contentType", NULL), "application/merge-patch+json");
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "demo"), "done"); /* greeted already */
    TURTLES_CHECK(turtles_fake_call_count(NULL) == 1);
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "gone"), "done"); /* no object: nothing to do */
    TURTLES_CHECK(turtles_fake_call_count(NULL) == 1);

    turtles_fake_add("", "v1", "configmaps", json_parse_str("{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"}}"));
    turtles_fake_fail("PATCH", 503);
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "x"), "transient-error: patch: 503 InternalError: injected failure");
    turtles_fake_fail("PATCH", 0);
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "x"), "done");
}

static void api_server(void) {
    turtles_fake_reset();
    int status = 0;
    /* create: generateName, namespace from the path, uid / resourceVersion / kind filled in */
    json *pod = json_parse_str("{\"metadata\":{\"generateName\":\"web-\",\"labels\":{\"app\":\"web\"},"
                               "\"finalizers\":[\"a\",\"b\"]},\"status\":{\"phase\":\"Pending\"}}");
    json *created = turtles_create("/api/v1/namespaces/apps/pods", pod, &status);
    TURTLES_CHECK(status == 201);
    const char *name = turtles_name(created);
    TURTLES_CHECK(strncmp(name, "web-", 4) == 0 && strlen(name) == 9);
    TURTLES_CHECK_STR(turtles_namespace(created), "apps");
    TURTLES_CHECK_STR(json_pstr(created, "/kind", NULL), "Pod");
    TURTLES_CHECK_STR(json_pstr(created, "/apiVersion", NULL), "v1");
    TURTLES_CHECK(*json_pstr(created, "/metadata/uid", ""));
    json *second = turtles_create("/api/v1/namespaces/apps/pods", pod, &status);
    TURTLES_CHECK(status == 201 && strcmp(turtles_name(second), name) != 0); /* another generated name */
    json_free(second);
    json *dup = json_parse_str("{\"metadata\":{\"name\":\"fixed\"}}");
    json_free(turtles_create("/api/v1/namespaces/apps/pods", dup, &status));
    json *again = turtles_create("/api/v1/namespaces/apps/pods", dup, &status);
    TURTLES_CHECK(status == 409);
    TURTLES_CHECK_STR(json_pstr(again, "/reason", NULL), "AlreadyExists");
    json_free(again);
    json_free(dup);
    json_free(pod);

    /* list with label selectors, across namespaces */
    turtles_fake_add("", "v1", "pods", json_parse_str("{\"metadata\":{\"name\":\"db\",\"namespace\":\"other\","
                                                      "\"labels\":{\"app\":\"db\"}}}"));
    json *list = turtles_get("/api/v1/pods?labelSelector=app%3Dweb", &status);
    TURTLES_CHECK(status == 200 && json_len(json_get(list, "items")) == 2);
    json_free(list);
    list = turtles_get("/api/v1/pods?labelSelector=app%21%3Dweb", &status);
    TURTLES_CHECK(json_len(json_get(list, "items")) == 2); /* "fixed" (no label) and "db" */
    json_free(list);
    list = turtles_get("/api/v1/namespaces/other/pods", &status);
    TURTLES_CHECK(json_len(json_get(list, "items")) == 1);
    json_free(list);
    list = turtles_get("/api/v1/pods?labelSelector=app", &status);
    TURTLES_CHECK(json_len(json_get(list, "items")) == 3);
    json_free(list);

    /* update: a stale resourceVersion is a conflict; status is kept from the stored object */
    char *path = turtles_path("", "v1", "pods", "apps", name);
    json *cur = turtles_get(path, &status);
    json *stale = json_dup(cur);
    json_set_str(json_get(cur, "metadata"), "uid", "changed");
    json_set(cur, "status", json_parse_str("{\"phase\":\"Running\"}"));
    json *updated = turtles_update(path, cur, &status);
    TURTLES_CHECK(status == 200);
    TURTLES_CHECK_STR(json_pstr(updated, "/status/phase", NULL), "Pending");
    TURTLES_CHECK(strcmp(json_pstr(updated, "/metadata/uid", ""), "changed") != 0);
    json_free(updated);
    json_free(turtles_update(path, stale, &status));
    TURTLES_CHECK(status == 409);
    json_free(stale);
    json_free(cur);

    /* the status subresource changes status only */
    char *status_path = turtles_strf("%s/status", path);
    json *st = json_parse_str("{\"status\":{\"phase\":\"Running\"},\"metadata\":{\"labels\":{\"app\":\"x\"}}}");
    json *patched = turtles_patch_merge(status_path, st, &status);
    TURTLES_CHECK(status == 200);
    TURTLES_CHECK_STR(json_pstr(patched, "/status/phase", NULL), "Running");
    TURTLES_CHECK_STR(json_pstr(patched, "/metadata/labels/app", NULL), "web");
    json_free(patched);
    json_free(st);

    /* JSON patch: test, add, replace, remove; a failed test is a 422 and changes nothing */
    json *ops = json_parse_str("[{\"op\":\"test\",\"path\":\"/metadata/labels/app\",\"value\":\"web\"},"
                               "{\"op\":\"add\",\"path\":\"/metadata/labels/tier\",\"value\":\"front\"},"
                               "{\"op\":\"replace\",\"path\":\"/metadata/labels/app\",\"value\":\"www\"},"
                               "{\"op\":\"add\",\"path\":\"/metadata/finalizers/1\",\"value\":\"c\"},"
                               "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]");
    patched = turtles_patch_json(path, ops, &status);
    TURTLES_CHECK(status == 200);
    TURTLES_CHECK_STR(json_pstr(patched, "/metadata/labels/tier", NULL), "front");
    TURTLES_CHECK_STR(json_pstr(patched, "/metadata/labels/app", NULL), "www");
    TURTLES_CHECK_STR(json_pstr(patched, "/metadata/finalizers/0", NULL), "c");
    TURTLES_CHECK_STR(json_pstr(patched, "/metadata/finalizers/1", NULL), "b");
    json_free(patched);
    json_free(turtles_patch_json(path, ops, &status));
    TURTLES_CHECK(status == 422);
    json_free(ops);

    /* cache: the same objects */
    json *cached = turtles_cache_get("", "v1", "pods", "apps", name);
    TURTLES_CHECK_STR(json_pstr(cached, "/metadata/labels/app", NULL), "www");
    json_free(cached);
    TURTLES_CHECK(turtles_cache_get("", "v1", "pods", "apps", "nope") == NULL);
    json *all = turtles_cache_list("", "v1", "pods", NULL), *some = turtles_cache_list("", "v1", "pods", "other");
    TURTLES_CHECK(json_len(all) == 4 && json_len(some) == 1);
    json_free(all);
    json_free(some);

    /* delete: finalizers hold the object (deletionTimestamp set) until the last one goes */
    json_free(turtles_delete(path, &status));
    TURTLES_CHECK(status == 200);
    TURTLES_CHECK(turtles_is_deleting(turtles_fake_get("", "v1", "pods", "apps", name)));
    ops = json_parse_str("{\"metadata\":{\"finalizers\":null}}");
    json_free(turtles_patch_merge(path, ops, &status));
    json_free(ops);
    TURTLES_CHECK(status == 200 && turtles_fake_get("", "v1", "pods", "apps", name) == NULL);
    json *gone = turtles_get(path, &status);
    TURTLES_CHECK(status == 404);
    TURTLES_CHECK_STR(json_pstr(gone, "/reason", NULL), "NotFound");
    json_free(gone);
    json_free(turtles_delete(path, &status));
    TURTLES_CHECK(status == 404);
    json_free(turtles_get("/nonsense", &status));
    TURTLES_CHECK(status == 404);

    /* a group's kind, cluster-scoped objects, server-side apply creating */
    json *dep = json_parse_str("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"}}");
    json *applied = turtles_apply("/apis/apps/v1/namespaces/apps/deployments/d", dep, "me", true, &status);
    TURTLES_CHECK(status == 201 && turtles_fake_get("apps", "v1", "deployments", "apps", "d") != NULL);
    const json *calls = turtles_fake_calls();
    TURTLES_CHECK_STR(json_pstr(json_at(calls, json_len(calls) - 1), "/path", NULL),
                      "/apis/apps/v1/namespaces/apps/deployments/d?fieldManager=me&force=true");
    TURTLES_CHECK_STR(json_pstr(json_at(calls, json_len(calls) - 1), "/contentType", NULL), "application/apply-patch+yaml");
    json_free(applied);
    json_free(dep);
    json *ns = json_parse_str("{\"metadata\":{\"name\":\"apps\"}}");
    json_free(turtles_create("/api/v1/namespaces", ns, &status));
    TURTLES_CHECK(status == 201 && turtles_fake_get("", "v1", "namespaces", "", "apps") != NULL);
    json_free(ns);

    /* Events and the log */
    json *regarding = json_parse_str("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                                     "\"namespace\":\"apps\",\"uid\":\"u\"}}");
    TURTLES_CHECK(turtles_record_event(regarding, "Warning", "Failed", "Pull", "no such image", NULL));
    TURTLES_CHECK_STR(json_pstr(turtles_fake_events(), "/0/reason", NULL), "Failed");
    TURTLES_CHECK_STR(json_pstr(turtles_fake_events(), "/0/type", NULL), "Warning");
    TURTLES_CHECK_STR(json_pstr(turtles_fake_events(), "/0/uid", NULL), "u");
    turtles_fake_fail("EVENT", 403);
    char *err = NULL;
    TURTLES_CHECK(!turtles_record_event(regarding, "Normal", "Ok", "", "", &err));
    TURTLES_CHECK_STR(err, "injected failure");
    free(err);
    json_free(regarding);
    turtles_log_fields(TURTLES_WARN, "careful", "key", "value", NULL);
    turtles_info("n=%d", 7);
    TURTLES_CHECK_STR(json_pstr(turtles_fake_logs(), "/0/level", NULL), "warn");
    TURTLES_CHECK_STR(json_pstr(turtles_fake_logs(), "/0/fields/key", NULL), "value");
    TURTLES_CHECK(turtles_fake_logged("n=7") && !turtles_fake_logged("n=8"));

    free(status_path);
    free(path);
    json_free(created);
    turtles_fake_reset();
}

int main(void) {
    greeter();
    api_server();
    return turtles_fake_report();
}
