/* {{name}}: a turtles controller in C. Every ConfigMap, in every namespace, gets the annotation
 * turtles.dev/{{name}} (a JSON merge patch); the host hot-swaps the component when it is rebuilt.
 *
 * turtles_register declares what the controller watches and the permissions its API calls need;
 * turtles_reconcile brings one ConfigMap to its desired state. The SDK: turtles.h and json.h. */
#include <stdlib.h>
#include <string.h>

#include "turtles.h"

#define ANNOTATION "turtles.dev/{{name}}"
#define GREETING "hello from {{name}}"

void turtles_register(turtles_registration *reg) {
    turtles_watch_add(reg, "", "v1", "configmaps"); /* every ConfigMap, in every namespace */
    turtles_permission_add(reg, "", "configmaps", "get,list,watch,patch");
}

turtles_outcome turtles_reconcile(const turtles_key *key, const json *cached) {
    (void)cached; /* the informer's copy; this controller reads the object from the API server */
    char *path = turtles_path("", "v1", "configmaps", key->namespace_, key->name);
    int status = 0;
    json *cm = turtles_get(path, &status);
    turtles_outcome out;
    if (status == 404) {
        out = turtles_done(); /* deleted: nothing to do */
    } else if (!turtles_ok(status)) {
        out = turtles_api_error("get", status, cm); /* retried with backoff */
    } else {
        const char *have = json_string(json_path(cm, "metadata", "annotations", ANNOTATION, NULL));
        if (have && strcmp(have, GREETING) == 0) {
            out = turtles_done(); /* annotated already */
        } else {
            json *patch = json_build("{\"metadata\":{\"annotations\":{%s:%s}}}", ANNOTATION, GREETING);
            json *resp = turtles_patch_merge(path, patch, &status);
            if (turtles_ok(status)) {
                turtles_info("annotated %s/%s", key->namespace_, key->name);
                out = turtles_done();
            } else {
                out = turtles_api_error("patch", status, resp);
            }
            json_free(resp);
            json_free(patch);
        }
    }
    json_free(cm);
    free(path);
    return out;
}
