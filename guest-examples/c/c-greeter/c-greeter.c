/* c-greeter: the minimal C controller. Every ConfigMap labelled turtles.dev/greet=true gets the
 * annotation turtles.dev/greeting: "hello from C, <name>" (a merge patch). */
#include <stdlib.h>
#include <string.h>

#include "turtles.h"

void turtles_register(turtles_registration *reg) {
    turtles_watch *cms = turtles_watch_add(reg, "", "v1", "configmaps");
    turtles_watch_label_selector(cms, "turtles.dev/greet=true");
    turtles_permission_add(reg, "", "configmaps", "get,list,watch,patch");
}

turtles_outcome turtles_reconcile(const turtles_key *key, const json *cm) {
    if (!cm) return turtles_done(); /* deleted: nothing to do */
    char *greeting = turtles_strf("hello from C, %s", key->name);
    const char *have = json_string(json_path(cm, "metadata", "annotations", "turtles.dev/greeting", NULL));
    if (have && strcmp(have, greeting) == 0) { /* greeted already */
        free(greeting);
        return turtles_done();
    }
    char *path = turtles_path("", "v1", "configmaps", key->namespace_, key->name);
    json *patch = json_build("{\"metadata\":{\"annotations\":{\"turtles.dev/greeting\":%s}}}", greeting);
    int status = 0;
    json *resp = turtles_patch_merge(path, patch, &status);
    turtles_outcome out = turtles_ok(status) ? turtles_done() : turtles_api_error("patch", status, resp);
    json_free(resp);
    json_free(patch);
    free(greeting);
    free(path);
    return out;
}
