/* turtles.h - the C SDK for turtles controllers.
 *
 * A controller is a WebAssembly component of the world `controller` (wit/controller.wit). With
 * this SDK a controller is one C file that defines two functions:
 *
 *     void turtles_register(turtles_registration *reg);                  // once per instance
 *     turtles_outcome turtles_reconcile(const turtles_key *key, const json *object);
 *
 * and uses the helpers below to declare watches and permissions, call the API server, read the
 * informer cache and log. The generated wit-bindgen bindings stay hidden in turtles.c.
 *
 * Memory: `object` (and the key) belong to the SDK and are freed after turtles_reconcile
 * returns. Every `json *` and `char *` a helper returns is the caller's to free (json_free,
 * free). The instance is long-lived (one per worker, reused across reconciles), so leaks add up.
 */
#ifndef TURTLES_H
#define TURTLES_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- what a controller implements ----------------------------------------------------- */

typedef struct turtles_registration turtles_registration;
typedef struct turtles_watch turtles_watch;

/* The primary object's key. namespace is "" for cluster-scoped objects. */
typedef struct {
    const char *namespace_;
    const char *name;
} turtles_key;

typedef enum {
    TURTLES_DONE,            /* reconciled; wait for the next change */
    TURTLES_REQUEUE_AFTER,   /* reconcile again after `requeue_ms` */
    TURTLES_TRANSIENT_ERROR, /* failed; retried with exponential backoff */
    TURTLES_TERMINAL_ERROR,  /* failed; not retried until the object changes */
} turtles_outcome_kind;

typedef struct {
    turtles_outcome_kind kind;
    uint32_t requeue_ms;
    char *message; /* malloc'ed; the SDK hands it to the host and frees it */
} turtles_outcome;

/* Called once per instance: fill in what to watch (the first watch is the primary kind) and
 * the permissions the API calls need. */
void turtles_register(turtles_registration *reg);

/* Bring the object named by `key` to its desired state. `object` is the cached primary, or
 * NULL if it no longer exists (or the key came from a secondary watch with self-key mapping
 * and names no primary). */
turtles_outcome turtles_reconcile(const turtles_key *key, const json *object);

/* ---- registration --------------------------------------------------------------------- */

/* Watch every object of group/version/resource ("" is the core group) in every namespace; an
 * event on it reconciles the object's own key. The returned handle refines the watch. */
turtles_watch *turtles_watch_add(turtles_registration *reg, const char *group, const char *version,
                                 const char *resource);
/* Only this namespace. */
void turtles_watch_namespace(turtles_watch *w, const char *ns);
/* Only objects matching this label selector (kube syntax, e.g. "app=web,tier!=db"). */
void turtles_watch_label_selector(turtles_watch *w, const char *selector);
/* An event reconciles the key of the object's controller owner of kind (group, kind), e.g.
 * turtles_watch_owned_by(secrets, "cert-manager.io", "Certificate"). */
void turtles_watch_owned_by(turtles_watch *w, const char *group, const char *kind);

/* An RBAC rule; each argument is a comma-separated list ("" as api_groups is the core group):
 * turtles_permission_add(reg, "", "pods,pods/status", "get,list,watch,patch"). */
void turtles_permission_add(turtles_registration *reg, const char *api_groups, const char *resources,
                            const char *verbs);
/* How many keys may reconcile at once (default 1; each worker has its own instance). */
void turtles_max_concurrent_reconciles(turtles_registration *reg, uint32_t n);
/* Reconcile every cached primary this often (default: only on changes). */
void turtles_resync_seconds(turtles_registration *reg, uint32_t seconds);
/* Reconcile this key once at start, after the informers' initial lists, even if no watched
 * change names it (ns "" for a cluster-scoped object), e.g. a Node the controller registers. */
void turtles_initial_key(turtles_registration *reg, const char *ns, const char *name);
/* Act as the ServiceAccount ns/name: API calls and cache reads are authorized by that account's
 * RoleBindings and ClusterRoleBindings; the host grants it nothing (the permissions above are
 * then documentation only). */
void turtles_service_account(turtles_registration *reg, const char *ns, const char *name);

/* ---- outcomes ------------------------------------------------------------------------- */

turtles_outcome turtles_done(void);
turtles_outcome turtles_requeue_after(uint32_t ms);
turtles_outcome turtles_transient_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
turtles_outcome turtles_terminal_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A transient error from a failed API call: "WHAT: 409 Conflict: <Status message>". */
turtles_outcome turtles_api_error(const char *what, int status, const json *response);

/* ---- API calls ------------------------------------------------------------------------ */
/* Served in-process as the controller's user `system:controller:NAME`, checked by RBAC against
 * the registered permissions. Each returns the parsed response body (NULL when it is empty or
 * not JSON; the caller frees it) and stores the HTTP status in *status (if not NULL). A non-2xx
 * answer is usually a kube Status: see turtles_status_message. */

/* body NULL: no body. Content type: PATCH with an array body is a JSON patch
 * (application/json-patch+json), PATCH with any other body a merge patch
 * (application/merge-patch+json), everything else application/json. */
json *turtles_api(const char *method, const char *path, const json *body, int *status);
/* The same with an explicit content type (e.g. application/strategic-merge-patch+json). */
json *turtles_api_ct(const char *method, const char *path, const char *content_type, const json *body,
                     int *status);

json *turtles_get(const char *path, int *status);
json *turtles_create(const char *collection_path, const json *object, int *status);
json *turtles_update(const char *path, const json *object, int *status);
json *turtles_patch_merge(const char *path, const json *patch, int *status);
json *turtles_patch_json(const char *path, const json *ops, int *status);
json *turtles_delete(const char *path, int *status);
/* Server-side apply: PATCH `object` (the fields this manager owns, with apiVersion, kind and
 * metadata.name) to its object path as application/apply-patch+yaml, with
 * ?fieldManager=MANAGER (and &force=true when force: take over fields others own instead of a
 * 409). Creates the object if it does not exist. */
json *turtles_apply(const char *path, const json *object, const char *field_manager, bool force, int *status);
/* The path turtles_apply calls (malloc'ed). */
char *turtles_apply_path(const char *path, const char *field_manager, bool force);

/* ---- events ---------------------------------------------------------------------------- */

/* Record an Event about `regarding` (the object's JSON: apiVersion, kind, metadata namespace,
 * name and uid are taken from it), as `kubectl describe` shows them. type: "Normal" or
 * "Warning"; reason: UpperCamelCase (at most 128 bytes); action may be ""; note is cut at 1024
 * bytes. The same event again is counted on the existing Event. Needs create and patch on
 * events. Returns true when recorded; otherwise, if error is not NULL, *error is the reason
 * (malloc'ed, the caller frees it). */
bool turtles_record_event(const json *regarding, const char *type, const char *reason, const char *action,
                          const char *note, char **error);

static inline bool turtles_ok(int status) { return status >= 200 && status < 300; }
/* The `message` of a Status body ("" when there is none). */
const char *turtles_status_message(const json *response);

/* ---- the informer cache (watched kinds only; no API call; authorized by RBAC) ------- */

/* One cached object, or NULL. namespace "" for cluster-scoped kinds. */
json *turtles_cache_get(const char *group, const char *version, const char *resource, const char *ns,
                        const char *name);
/* Every cached object in `ns` (NULL: all namespaces) as a JSON array (empty when none). */
json *turtles_cache_list(const char *group, const char *version, const char *resource, const char *ns);

/* ---- paths and strings ---------------------------------------------------------------- */

/* "/api/v1/namespaces/NS/RESOURCE/NAME" or "/apis/GROUP/VERSION/...". ns NULL or "": cluster-
 * scoped or all namespaces; name NULL: the collection. Malloc'ed. */
char *turtles_path(const char *group, const char *version, const char *resource, const char *ns,
                   const char *name);
/* A malloc'ed printf (never NULL unless out of memory). */
char *turtles_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A query parameter value, percent-encoded (malloc'ed). */
char *turtles_query_escape(const char *value);
/* The current UTC time as RFC 3339 ("2025-01-02T03:04:05Z") into out (at least 21 bytes). */
const char *turtles_now(char out[32]);

/* ---- object helpers ------------------------------------------------------------------- */

const char *turtles_name(const json *obj);      /* metadata.name or "" */
const char *turtles_namespace(const json *obj); /* metadata.namespace or "" */
bool turtles_is_deleting(const json *obj);      /* metadata.deletionTimestamp is set */
bool turtles_has_finalizer(const json *obj, const char *finalizer);

/* ---- logging (to the host, attributed to the controller) ------------------------------ */

typedef enum {
    TURTLES_TRACE,
    TURTLES_DEBUG,
    TURTLES_INFO,
    TURTLES_WARN,
    TURTLES_ERROR,
} turtles_log_level;

void turtles_log(turtles_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A message with structured fields: key, value, key, value, ..., NULL. */
void turtles_log_fields(turtles_log_level level, const char *message, ...) __attribute__((sentinel));

#define turtles_trace(...) turtles_log(TURTLES_TRACE, __VA_ARGS__)
#define turtles_debug(...) turtles_log(TURTLES_DEBUG, __VA_ARGS__)
#define turtles_info(...) turtles_log(TURTLES_INFO, __VA_ARGS__)
#define turtles_warn(...) turtles_log(TURTLES_WARN, __VA_ARGS__)
#define turtles_error(...) turtles_log(TURTLES_ERROR, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
