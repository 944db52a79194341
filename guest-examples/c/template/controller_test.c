/* Unit tests of controller.c, run natively (gcc, with sanitizers) against the SDK's in-memory
 * fake host (turtles_fake.h):
 *
 *     bash {{sdk}}/build.sh --project-test .
 */
#include <stdbool.h>
#include <string.h>

#include "turtles.h"
#include "turtles_fake.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *annotation(const char *ns, const char *name) {
    const json *cm = turtles_fake_get("", "v1", "configmaps", ns, name);
    return json_string(json_path(cm, "metadata", "annotations", "turtles.dev/{{name}}", NULL));
}

int main(void) {
    /* What it watches: every ConfigMap, in every namespace. */
    const json *reg = turtles_fake_registration();
    TURTLES_CHECK(json_len(json_get(reg, "watches")) == 1);
    TURTLES_CHECK_STR(json_pstr(reg, "/watches/0/group", NULL), "");
    TURTLES_CHECK_STR(json_pstr(reg, "/watches/0/resource", NULL), "configmaps");
    TURTLES_CHECK(json_is_null(json_pointer(reg, "/watches/0/namespace")));
    TURTLES_CHECK(json_is_null(json_pointer(reg, "/watches/0/labelSelector")));

    /* A ConfigMap gets the annotation (a merge patch) and the log one line. */
    turtles_fake_add("", "v1", "configmaps", json_parse_str("{\"metadata\":{\"name\":\"demo\",\"namespace\":\"default\"}}"));
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "demo"), "done");
    const char *got = annotation("default", "demo");
    TURTLES_CHECK(got && ends_with(got, " from {{name}}"));
    TURTLES_CHECK_STR(json_pstr(turtles_fake_calls(), "/1/method", NULL), "PATCH");
    TURTLES_CHECK_STR(json_pstr(turtles_fake_calls(), "/1/contentType", NULL), "application/merge-patch+json");
    TURTLES_CHECK(turtles_fake_logged("annotated default/demo"));

    /* Annotated already: no second patch. */
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "demo"), "done");
    TURTLES_CHECK(turtles_fake_call_count("PATCH") == 1);

    /* A changed annotation is set back. */
    turtles_fake_add("", "v1", "configmaps",
                     json_parse_str("{\"metadata\":{\"name\":\"demo\",\"namespace\":\"default\","
                                    "\"annotations\":{\"turtles.dev/{{name}}\":\"something else\"}}}"));
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "demo"), "done");
    got = annotation("default", "demo");
    TURTLES_CHECK(got && ends_with(got, " from {{name}}"));

    /* Gone: nothing to do. */
    TURTLES_CHECK_STR(turtles_fake_reconcile("default", "gone"), "done");
    TURTLES_CHECK(turtles_fake_call_count("PATCH") == 2);

    /* A failed API call is a transient error (retried with backoff by the host). */
    turtles_fake_add("", "v1", "configmaps", json_parse_str("{\"metadata\":{\"name\":\"other\",\"namespace\":\"apps\"}}"));
    turtles_fake_fail("PATCH", 500);
    TURTLES_CHECK_STR(turtles_fake_reconcile("apps", "other"), "transient-error: patch: 500 InternalError: injected failure");
    turtles_fake_fail("PATCH", 0);
    TURTLES_CHECK_STR(turtles_fake_reconcile("apps", "other"), "done");

    return turtles_fake_report();
}
