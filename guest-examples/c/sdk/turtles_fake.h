/* turtles_fake.h - an in-memory turtles host for native unit tests of C controllers.
 *
 * A test program is linked natively (gcc or clang, no wasm) from the controller's .c files, the
 * SDK (turtles.c, json.c), this fake (turtles_fake.c) and the bindings `wit-bindgen c` generates
 * for the world `controller` (controller.c). The fake implements the host's imports over a small
 * API server (get, list with label selectors, create with generateName, update with
 * resourceVersion conflicts, merge and JSON patch, the status subresource, delete), the informer
 * cache (the same objects), Events and the log, all recorded for assertions. It calls the
 * controller's exports as the host would:
 *
 *     turtles_fake_add("", "v1", "configmaps", json_parse_str("{\"metadata\":{\"name\":\"demo\",\"namespace\":\"default\"}}"));
 *     TURTLES_CHECK_STR(turtles_fake_reconcile("default", "demo"), "done");
 *     const json *cm = turtles_fake_get("", "v1", "configmaps", "default", "demo");
 *     ...
 *     return turtles_fake_report();
 *
 * Every json * and string the fake returns is the fake's: valid until turtles_fake_reset (or,
 * for a reconcile's outcome, the next turtles_fake_reconcile); do not free it. Set the
 * environment variable TURTLES_FAKE_VERBOSE=1 to see every call, log line and Event.
 *
 * build.sh --project-test PROJECT_DIR builds and runs every PROJECT_DIR/<x>_test.c this way.
 */
#ifndef TURTLES_FAKE_H
#define TURTLES_FAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "json.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Forget every object, call, log line, Event and injected failure. */
void turtles_fake_reset(void);

/* Stores obj (taken) as an object of group/version/resource ("" is the core group), as the API
 * server would: metadata.uid, resourceVersion and creationTimestamp are filled in. Replaces an
 * object of the same namespace and name. Returns the stored object. */
const json *turtles_fake_add(const char *group, const char *version, const char *resource, json *obj);
/* The stored object, or NULL. ns "" for cluster-scoped objects. */
const json *turtles_fake_get(const char *group, const char *version, const char *resource, const char *ns,
                             const char *name);
/* Deletes a stored object (no-op if there is none). */
void turtles_fake_remove(const char *group, const char *version, const char *resource, const char *ns,
                         const char *name);

/* Every API call with this method (e.g. "PATCH") answers with this status (a Status with reason
 * InternalError, message "injected failure") until it is set to 0 again. */
void turtles_fake_fail(const char *method, int status);

/* The API calls so far, in order: [{"method","path","contentType","body"}] (body: the parsed
 * JSON, or null). */
const json *turtles_fake_calls(void);
/* How many API calls used this method (NULL: all). */
size_t turtles_fake_call_count(const char *method);
/* The log lines so far: [{"level":"info","message":"...","fields":{"k":"v"}}]. */
const json *turtles_fake_logs(void);
/* Whether a log line's message contains text. */
bool turtles_fake_logged(const char *text);
/* The Events recorded so far: [{"apiVersion","kind","namespace","name","uid","type","reason",
 * "action","note"}]. */
const json *turtles_fake_events(void);

/* What the controller's `register` returns, as JSON: {"watches":[{"group","version","resource",
 * "namespace","labelSelector","owner":{"group","kind"}}],"maxConcurrentReconciles",
 * "resyncSeconds","permissions":[{"apiGroups","resources","verbs"}],"initialKeys":[{"namespace",
 * "name"}],"serviceAccount"} (absent options are null). */
const json *turtles_fake_registration(void);

/* Reconciles the key ns/name as the host would, with the stored object of the primary kind (the
 * first watch) as the cached object (NULL when there is none), and returns the outcome:
 * "done", "requeue-after 5000ms", "transient-error: MESSAGE" or "terminal-error: MESSAGE". */
const char *turtles_fake_reconcile(const char *ns, const char *name);

/* ---- assertions for test programs ----------------------------------------------------- */

extern int turtles_fake_checks, turtles_fake_failures;

/* Counts the check; on failure prints it with file and line and goes on. */
#define TURTLES_CHECK(cond)                                                                 \
    do {                                                                                    \
        turtles_fake_checks++;                                                              \
        if (!(cond)) {                                                                      \
            turtles_fake_failures++;                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
        }                                                                                   \
    } while (0)

/* Like TURTLES_CHECK(strcmp(got, want) == 0), printing both strings on failure (NULL is "(null)"). */
#define TURTLES_CHECK_STR(got, want) turtles_fake_check_str(__FILE__, __LINE__, #got, (got), (want))
void turtles_fake_check_str(const char *file, int line, const char *expr, const char *got, const char *want);

/* Prints "checks: N passed, N failed" and returns the exit status for main: 0 when every check
 * passed. */
int turtles_fake_report(void);

#ifdef __cplusplus
}
#endif

#endif
