/* node: a kwok-style fake kubelet for turtles, written in C.
 *
 * - Keeps a Node `turtle-node-1` (Ready, InternalIP 10.0.0.1, capacity, nodeInfo) in existence:
 *   registered at start (the initial key "", NAME: no pod needed), checked on every reconcile,
 *   and recreated when it is deleted (nodes are a secondary watch with self-key mapping, so a
 *   node event reconciles the cluster-scoped key "", NAME). Registering it records the Event
 *   `RegisteredNode`; binding a pod records `Scheduled`, as kube's scheduler does.
 * - Binds every Pod without spec.nodeName that fits the node (its nodeSelector, its required node
 *   affinity, the node's NoSchedule/NoExecute taints and its cordon (spec.unschedulable),
 *   against the node as cached)
 *   to it, as a scheduler does: POST pods/NAME/binding
 *   (which sets the otherwise immutable spec.nodeName and PodScheduled); then "starts" it in two
 *   status writes, one per reconcile, so that a watch sees each step:
 *     ADDED Pending -> MODIFIED bound -> MODIFIED Pending/ContainerCreating -> MODIFIED Running
 *   The Running status gets a unique pod IP 10.244.X.Y (the lowest one no other pod uses).
 *   Its volumes too, as kube's VolumeBinding plugin: its claims exist and are bound (their
 *   volumes' node affinity matching the node), or wait for their first consumer, which gets
 *   volume.kubernetes.io/selected-node (the binder and a provisioner then make and bind a volume
 *   on this node). A claim's event (key NAMESPACE/CLAIM) schedules the pods naming it again.
 *   A Pod that does not fit stays Pending with PodScheduled False (reason Unschedulable, kube's
 *   scheduler's message), and is looked at again at its next event.
 * - A Pod that runs to completion (spec.restartPolicy Never or OnFailure) finishes once it has
 *   been Running for the annotation turtles.dev/run-seconds (default 1; may be fractional), with
 *   the exit code of the annotation turtles.dev/exit-code (default 0): phase Succeeded (containers
 *   terminated, reason Completed) for 0, Failed (reason Error) otherwise, Ready False with reason
 *   PodCompleted, as a kubelet writes them. Both annotations are for tests (a Job's
 *   spec.template.metadata.annotations reach its Pods). A real kubelet restarts the failed
 *   container of an OnFailure Pod in place; this one fails the Pod. Pods of restartPolicy Always
 *   (the default) run forever.
 * - A running container reports its `resources` and `allocatedResources` (cpu and memory) as
 *   kube 1.34's kubelet does; a Pod resized in place (pods/resize) gets its containers' new
 *   resources and `status.observedGeneration` at once (every resize is accepted).
 * - An ephemeral container added to a Running Pod (`kubectl debug`) is reported running, and
 *   terminated when the Pod finishes.
 * - A Pod of this node being deleted (the API server deletes bound Pods gracefully: it sets
 *   deletionTimestamp and waits for the kubelet) has its containers "stopped" (within 1-2 s, at
 *   most its grace period) and is then deleted with grace period 0, for its uid, as a kubelet
 *   does once its containers exited. The
 *   finalizer turtles.dev/kubelet, which older versions of this controller put on the Pods they
 *   bound, is removed first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "turtles.h"

#define NODE_NAME "turtle-node-1"
#define NODE_IP "10.0.0.1"
#define FINALIZER "turtles.dev/kubelet"
#define KUBELET_VERSION "v1.33.0-turtles"
#define RUN_SECONDS_ANNOTATION "turtles.dev/run-seconds"
#define EXIT_CODE_ANNOTATION "turtles.dev/exit-code"
/* How long containers take to stop when their pod is deleted (at most its grace period). */
#define STOP_SECONDS 2
/* The key that renews the node's Lease (kube-node-lease/NODE_NAME) every LEASE_RENEW_MS, as a
 * kubelet's heartbeat: the node lifecycle controller marks a node without one Unknown. */
#define LEASE_KEY NODE_NAME ".lease"
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" NODE_NAME
#define LEASE_DURATION_SECONDS 40
#define LEASE_RENEW_MS 10000
/* After each write the pod's own watch event reconciles it again; the requeue is a fallback. */
#define NEXT_STEP_MS 100

void turtles_register(turtles_registration *reg) {
    turtles_watch_add(reg, "", "v1", "pods");  /* primary: every namespace */
    turtles_watch_add(reg, "", "v1", "nodes"); /* secondary: key ("", node name) */
    turtles_permission_add(reg, "", "pods", "get,list,watch,patch,update,delete");
    turtles_permission_add(reg, "", "pods/status", "get,patch,update");
    turtles_permission_add(reg, "", "pods/binding", "create");
    turtles_permission_add(reg, "", "nodes", "get,list,watch,create,patch,update");
    turtles_permission_add(reg, "", "nodes/status", "patch,update");
    turtles_permission_add(reg, "", "events", "create,patch");
    /* The scheduler's view of storage (kube's VolumeBinding plugin). A claim's event reconciles
     * the key NAMESPACE/CLAIM: the unscheduled pods naming that claim are looked at again (as
     * kube's scheduler retries its pods at claim events). A volume's event, a cluster-scoped
     * key, looks at every waiting pod (as a node's). Classes only fill the cache. */
    turtles_watch_add(reg, "", "v1", "persistentvolumeclaims");
    turtles_watch_add(reg, "", "v1", "persistentvolumes"); /* key ("", PV): pods waiting may fit now */
    turtles_watch_owned_by(turtles_watch_add(reg, "storage.k8s.io", "v1", "storageclasses"), "", "Pod");
    turtles_permission_add(reg, "", "persistentvolumeclaims", "get,list,watch,patch,update");
    turtles_permission_add(reg, "", "persistentvolumes", "get,list,watch,patch,update");
    turtles_permission_add(reg, "storage.k8s.io", "storageclasses", "get,list,watch");
    turtles_permission_add(reg, "coordination.k8s.io", "leases", "get,create,update");
    turtles_initial_key(reg, "", NODE_NAME); /* register the node at start, before any pod */
    turtles_initial_key(reg, "", LEASE_KEY); /* then renew its Lease every 10 s */
}

/* An Event about obj; a failure is logged, not fatal (events are best effort, as in kube). */
static void event_of(const json *obj, const char *type, const char *reason, const char *action, const char *note) {
    char *error = NULL;
    if (!turtles_record_event(obj, type, reason, action, note, &error)) {
        turtles_warn("event %s not recorded: %s", reason, error ? error : "");
        free(error);
    }
}

static void event(const json *obj, const char *reason, const char *note) { event_of(obj, "Normal", reason, "", note); }

/* ---- the node ------------------------------------------------------------------------- */

static json *node_status(const char *now) {
    return json_build(
        "{\"conditions\":["
        "{\"type\":\"MemoryPressure\",\"status\":\"False\",\"reason\":\"KubeletHasSufficientMemory\","
        "\"message\":\"kubelet has sufficient memory available\",\"lastHeartbeatTime\":%s,\"lastTransitionTime\":%s},"
        "{\"type\":\"DiskPressure\",\"status\":\"False\",\"reason\":\"KubeletHasNoDiskPressure\","
        "\"message\":\"kubelet has no disk pressure\",\"lastHeartbeatTime\":%s,\"lastTransitionTime\":%s},"
        "{\"type\":\"PIDPressure\",\"status\":\"False\",\"reason\":\"KubeletHasSufficientPID\","
        "\"message\":\"kubelet has sufficient PID available\",\"lastHeartbeatTime\":%s,\"lastTransitionTime\":%s},"
        "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
        "\"message\":\"turtles kubelet is posting ready status\",\"lastHeartbeatTime\":%s,\"lastTransitionTime\":%s}],"
        "\"addresses\":[{\"type\":\"InternalIP\",\"address\":%s},{\"type\":\"Hostname\",\"address\":%s}],"
        "\"capacity\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"110\",\"ephemeral-storage\":\"1Ti\"},"
        "\"allocatable\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"110\",\"ephemeral-storage\":\"1Ti\"},"
        "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},"
        "\"nodeInfo\":{\"kubeletVersion\":%s,\"kubeProxyVersion\":%s,\"operatingSystem\":\"linux\","
        "\"architecture\":\"amd64\",\"containerRuntimeVersion\":\"turtles://0.1.0\",\"osImage\":\"turtles fake node\","
        "\"kernelVersion\":\"wasm32\",\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\"}}",
        now, now, now, now, now, now, now, now, NODE_IP, NODE_NAME, KUBELET_VERSION, KUBELET_VERSION);
}

/* Whether the node's status already says Ready=True. */
static bool node_ready(const json *node) {
    for (json *c = json_first(json_pointer(node, "/status/conditions")); c; c = json_next(c))
        if (strcmp(json_pstr(c, "/type", ""), "Ready") == 0) return strcmp(json_pstr(c, "/status", ""), "True") == 0;
    return false;
}

static bool write_node_status(const char *now, turtles_outcome *err) {
    json *patch = json_build("{\"status\":%J}", node_status(now));
    int status = 0;
    json *resp = turtles_patch_merge("/api/v1/nodes/" NODE_NAME "/status", patch, &status);
    bool ok = turtles_ok(status);
    if (!ok) *err = turtles_api_error("patch node status", status, resp);
    json_free(patch);
    json_free(resp);
    return ok;
}

/* Creates the node if the cache does not have it, and makes its status Ready. */
static bool ensure_node(turtles_outcome *err) {
    json *cached = turtles_cache_get("", "v1", "nodes", "", NODE_NAME);
    bool ready = cached && node_ready(cached);
    bool exists = cached != NULL;
    json_free(cached);
    if (ready) return true;

    char now[32];
    turtles_now(now);
    if (!exists) {
        json *node = json_build(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":%s,\"labels\":{"
            "\"kubernetes.io/hostname\":%s,\"kubernetes.io/os\":\"linux\",\"kubernetes.io/arch\":\"amd64\","
            "\"type\":\"turtles-fake-kubelet\"},\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\"}},"
            "\"spec\":{\"podCIDR\":\"10.244.0.0/16\",\"podCIDRs\":[\"10.244.0.0/16\"]},\"status\":%J}",
            NODE_NAME, NODE_NAME, node_status(now));
        int status = 0;
        json *resp = turtles_create("/api/v1/nodes", node, &status);
        json_free(node);
        if (status == 201 || status == 200) {
            turtles_info("created node %s", NODE_NAME);
            event(resp, "RegisteredNode", "Node " NODE_NAME " event: Registered Node " NODE_NAME " in Controller");
            ready = node_ready(resp); /* whether the create kept the status */
        } else if (status != 409) {  /* 409: someone (an earlier call) was faster: fine */
            *err = turtles_api_error("create node " NODE_NAME, status, resp);
            json_free(resp);
            return false;
        }
        json_free(resp);
        if (ready) return true;
    }
    return write_node_status(now, err);
}

/* ---- pods ----------------------------------------------------------------------------- */

static char *pod_path(const turtles_key *key, const char *sub) {
    return turtles_strf("/api/v1/namespaces/%s/pods/%s%s", key->namespace_, key->name, sub);
}

/* A merge patch of the pod (or its status); false with *err set when it fails. */
static bool patch_pod(const turtles_key *key, const char *sub, json *patch, const char *what,
                      turtles_outcome *err) {
    char *path = pod_path(key, sub);
    int status = 0;
    json *resp = turtles_api("PATCH", path, patch, &status); /* object: merge, array: JSON patch */
    bool ok = turtles_ok(status);
    if (!ok) {
        char *ctx = turtles_strf("%s %s/%s", what, key->namespace_, key->name);
        *err = turtles_api_error(ctx, status, resp);
        free(ctx);
    }
    free(path);
    json_free(patch);
    json_free(resp);
    return ok;
}

/* A status patch as a 1.34 kubelet writes it (PodObservedGenerationTracking, beta and on): the
 * pod's generation it saw as status.observedGeneration and on each condition it sets. */
static bool patch_pod_status(const turtles_key *key, const json *pod, json *patch, const char *what,
                             turtles_outcome *err) {
    int64_t generation = json_pint(pod, "/metadata/generation", 0);
    json *status = json_get(patch, "status");
    if (generation > 0 && status) {
        json_set_int(status, "observedGeneration", generation);
        for (json *c = json_first(json_get(status, "conditions")); c; c = json_next(c))
            json_set_int(c, "observedGeneration", generation);
    }
    return patch_pod(key, "/status", patch, what, err);
}

/* Removes the finalizer older versions put on pods: test + remove at its index, so a concurrent
 * change of the list makes the patch fail (and retry) instead of removing the wrong entry. */
static turtles_outcome release(const turtles_key *key, const json *pod) {
    size_t i = 0;
    for (json *f = json_first(json_pointer(pod, "/metadata/finalizers")); f; f = json_next(f), i++) {
        if (!json_is_string(f) || strcmp(json_string(f), FINALIZER) != 0) continue;
        char *at = turtles_strf("/metadata/finalizers/%zu", i);
        json *ops = json_build("[{\"op\":\"test\",\"path\":%s,\"value\":%s},{\"op\":\"remove\",\"path\":%s}]", at,
                               FINALIZER, at);
        free(at);
        turtles_outcome err;
        if (!patch_pod(key, "", ops, "remove finalizer of", &err)) return err;
        turtles_info("released pod %s/%s", key->namespace_, key->name);
        return turtles_done();
    }
    return turtles_done();
}

static double parse_time(const char *s);

/* The last step of a graceful deletion, once the containers stopped: the pod is deleted with
 * grace period 0, for its uid (a new pod of the same name is left alone). Containers take
 * STOP_SECONDS to stop (at most the grace period), counted from when the API server marked the
 * pod (deletionTimestamp minus the grace period, to the second): as on a real node, clients
 * watching the deletion (kubectl delete --wait) see the pod terminating before it goes. */
static turtles_outcome finish(const turtles_key *key, const json *pod) {
    int64_t grace = json_pint(pod, "/metadata/deletionGracePeriodSeconds", 0);
    double deadline = parse_time(json_pstr(pod, "/metadata/deletionTimestamp", NULL));
    if (grace > 0 && deadline >= 0) {
        double stopped = deadline - (double)grace + (double)(grace < STOP_SECONDS ? grace : STOP_SECONDS);
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        double now_s = (double)ts.tv_sec + ts.tv_nsec / 1e9;
        if (now_s < stopped) return turtles_requeue_after((uint32_t)((stopped - now_s) * 1000) + 1);
    }
    if (turtles_has_finalizer(pod, FINALIZER)) {
        turtles_outcome released = release(key, pod);
        if (released.kind != TURTLES_DONE) return released;
    }
    char *path = pod_path(key, "");
    json *options = json_build("{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"gracePeriodSeconds\":0,"
                               "\"preconditions\":{\"uid\":%s}}",
                               json_pstr(pod, "/metadata/uid", ""));
    int status = 0;
    json *resp = turtles_api("DELETE", path, options, &status);
    free(path);
    json_free(options);
    /* Gone already, or another pod by now (the uid precondition failed): nothing left to do.
     * Another 409 (the API server's retries on conflicting writes ran out) is retried. */
    bool replaced = status == 409 && strstr(json_pstr(resp, "/message", ""), "Precondition failed");
    if (status == 404 || replaced || turtles_ok(status)) {
        json_free(resp);
        turtles_info("stopped pod %s/%s", key->namespace_, key->name);
        return turtles_done();
    }
    char *ctx = turtles_strf("delete pod %s/%s", key->namespace_, key->name);
    turtles_outcome err = turtles_api_error(ctx, status, resp);
    free(ctx);
    json_free(resp);
    return err;
}

/* ---- the heartbeat ---------------------------------------------------------------------- */

/* Now (less `back` seconds) as a MicroTime (RFC 3339 with microseconds), as a Lease's renewTime
 * is written: times of this one form compare as text. */
static void micro_time(char out[40], time_t back) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    ts.tv_sec -= back;
    char secs[24];
    strftime(secs, sizeof secs, "%Y-%m-%dT%H:%M:%S", gmtime(&ts.tv_sec));
    snprintf(out, 40, "%.19s.%06dZ", secs, (int)(ts.tv_nsec / 1000 % 1000000));
}

/* kube's node lease controller: the Lease renewed (made, owned by the node, when missing). */
static turtles_outcome renew_lease(void) {
    char now[40], recent[40];
    micro_time(now, 0);
    micro_time(recent, LEASE_RENEW_MS / 2000); /* renewed since: another chain's (a reload's) */
    int status = 0;
    json *lease = turtles_get(LEASE_PATH, &status);
    json *resp = NULL;
    if (status == 404) {
        json_free(lease);
        json *node = turtles_cache_get("", "v1", "nodes", "", NODE_NAME);
        json *owners = json_new_array();
        if (node)
            json_push(owners, json_build("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":%s,\"uid\":%s}", NODE_NAME,
                                         json_pstr(node, "/metadata/uid", "")));
        json_free(node);
        lease = json_build("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
                           "\"name\":%s,\"namespace\":\"kube-node-lease\",\"ownerReferences\":%J},"
                           "\"spec\":{\"holderIdentity\":%s,\"leaseDurationSeconds\":%d,\"renewTime\":%s}}",
                           NODE_NAME, owners, NODE_NAME, LEASE_DURATION_SECONDS, now);
        resp = turtles_create("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease, &status);
    } else if (turtles_ok(status) && strcmp(json_pstr(lease, "/spec/renewTime", ""), recent) > 0) {
        json_free(lease);
        return turtles_requeue_after(LEASE_RENEW_MS);
    } else if (turtles_ok(status)) {
        json_set_str(json_set_object(lease, "spec"), "renewTime", now);
        resp = turtles_update(LEASE_PATH, lease, &status);
    }
    json_free(lease);
    turtles_outcome out = turtles_requeue_after(LEASE_RENEW_MS);
    /* 409 (renewed or made meanwhile): the next renewal reads it again. */
    if (!turtles_ok(status) && status != 409) {
        turtles_outcome err = turtles_api_error("renew the node's lease", status, resp);
        turtles_warn("%s", err.message ? err.message : "lease not renewed");
        free(err.message);
    }
    json_free(resp);
    return out;
}

/* ---- scheduling: whether a pod may run on this node -------------------------------------- */

static json *condition(const json *pod, const char *type, const char *status, const char *reason,
                       const char *now);

/* Whether `values` (a JSON array of strings) holds s. */
static bool listed(const json *values, const char *s) {
    for (json *v = json_first(values); v; v = json_next(v))
        if (json_is_string(v) && strcmp(json_string(v), s) == 0) return true;
    return false;
}

/* A node selector requirement (kube's NodeSelectorRequirement) against one value (NULL:
 * the label is absent). Gt and Lt compare integers. */
static bool requirement_holds(const json *req, const char *value) {
    const char *op = json_pstr(req, "/operator", "");
    const json *values = json_get(req, "values");
    if (strcmp(op, "In") == 0) return value && listed(values, value);
    if (strcmp(op, "NotIn") == 0) return !value || !listed(values, value);
    if (strcmp(op, "Exists") == 0) return value != NULL;
    if (strcmp(op, "DoesNotExist") == 0) return value == NULL;
    if ((strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) && value && json_len(values) == 1) {
        char *end = NULL;
        long long have = strtoll(value, &end, 10);
        if (!*value || *end) return false;
        const char *want_s = json_string(json_at(values, 0));
        if (!want_s || !*want_s) return false;
        long long want = strtoll(want_s, &end, 10);
        if (*end) return false;
        return strcmp(op, "Gt") == 0 ? have > want : have < want;
    }
    return false;
}

/* A node selector term: every expression (on the node's labels) and field (metadata.name)
 * holds; a term with neither matches nothing, as in kube. */
static bool term_matches(const json *term, const json *labels) {
    const json *exprs = json_get(term, "matchExpressions");
    const json *fields = json_get(term, "matchFields");
    if (json_len(exprs) == 0 && json_len(fields) == 0) return false;
    for (json *r = json_first(exprs); r; r = json_next(r))
        if (!requirement_holds(r, json_string(json_get(labels, json_pstr(r, "/key", ""))))) return false;
    for (json *r = json_first(fields); r; r = json_next(r)) {
        if (strcmp(json_pstr(r, "/key", ""), "metadata.name") != 0) return false;
        if (!requirement_holds(r, NODE_NAME)) return false;
    }
    return true;
}

/* Whether a toleration of the pod tolerates the taint (kube's ToleratesTaint). */
static bool tolerated(const json *pod, const json *taint) {
    const char *key = json_pstr(taint, "/key", "");
    const char *effect = json_pstr(taint, "/effect", "");
    for (json *t = json_first(json_pointer(pod, "/spec/tolerations")); t; t = json_next(t)) {
        const char *teffect = json_pstr(t, "/effect", "");
        if (*teffect && strcmp(teffect, effect) != 0) continue;
        const char *tkey = json_pstr(t, "/key", "");
        const char *op = json_pstr(t, "/operator", "");
        if (!*op) op = "Equal";
        if (*tkey && strcmp(tkey, key) != 0) continue;
        if (strcmp(op, "Exists") == 0) return true;
        if (*tkey && strcmp(op, "Equal") == 0 && strcmp(json_pstr(t, "/value", ""), json_pstr(taint, "/value", "")) == 0)
            return true;
    }
    return false;
}

/* kube's scheduler's messages: a pod-level (PreFilter) reason, or one node's reasons, followed
 * by what DefaultPreemption adds when preempting cannot help (as for every reason here). */
#define PREEMPTION " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
/* What kube's preemption says when the node is full of pods of the same priority. */
#define NO_VICTIMS " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
/* The node's allocatable pods (its status says so): kube's scheduler binds no more. */
#define MAX_PODS 110

/* Pods through the API with a field selector on spec.nodeName (`node`: this node's, or "" for
 * the unscheduled ones: what the node needs, however many Pods the cluster has), a page of at
 * most `limit` (0: all) from `cont` (NULL: the first); the response (`items`,
 * `metadata.continue`), or NULL when the API failed. */
static json *pods_on(const char *node, unsigned limit, const char *cont) {
    char *path = limit ? turtles_strf("/api/v1/pods?fieldSelector=spec.nodeName%%3D%s&limit=%u%s%s", node, limit,
                                      cont ? "&continue=" : "", cont ? cont : "")
                       : turtles_strf("/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", node);
    int status = 0;
    json *resp = turtles_api("GET", path, NULL, &status);
    free(path);
    if (!turtles_ok(status)) {
        turtles_warn("listing the pods of node \"%s\" failed (%d)", node, status);
        json_free(resp);
        return NULL;
    }
    return resp;
}

/* Whether a Pod was refused for want of a slot since the node last had one to spare: a Pod's
 * going then schedules the waiting ones (kube's scheduler requeues them on a Pod's deletion). */
static bool waiting_for_slots = false;

/* The node's slots taken: Pods bound to it that have not finished (kube's scheduler counts its
 * node's non-terminal Pods against allocatable pods); -1 when the API failed. */
static long slots_taken(void) {
    json *resp = pods_on(NODE_NAME, 0, NULL);
    if (!resp) return -1;
    long n = 0;
    for (json *p = json_first(json_get(resp, "items")); p; p = json_next(p)) {
        const char *phase = json_pstr(p, "/status/phase", "");
        if (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0) n++;
    }
    json_free(resp);
    return n;
}

/* The claim a pod volume names (an ephemeral volume's is POD-VOLUME), malloc'ed, or NULL. */
static char *volume_claim(const json *pod, const json *vol, bool *ephemeral) {
    const char *named = json_pstr(vol, "/persistentVolumeClaim/claimName", NULL);
    *ephemeral = false;
    if (named) return turtles_strf("%s", named);
    if (!json_get(vol, "ephemeral")) return NULL;
    *ephemeral = true;
    return turtles_strf("%s-%s", json_pstr(pod, "/metadata/name", ""), json_pstr(vol, "/name", ""));
}

/* Whether the claim's controller owner is the pod. */
static bool owned_by_pod(const json *claim, const json *pod) {
    for (json *r = json_first(json_pointer(claim, "/metadata/ownerReferences")); r; r = json_next(r))
        if (json_pbool(r, "/controller", false))
            return strcmp(json_pstr(r, "/uid", ""), json_pstr(pod, "/metadata/uid", "")) == 0;
    return false;
}

static bool has_annotation(const json *obj, const char *key) {
    return json_get(json_pointer(obj, "/metadata/annotations"), key) != NULL;
}

/* The class of a claim or volume (the beta annotation first, as kube's helpers read it). */
static const char *class_of(const json *obj) {
    const char *beta = json_string(json_get(json_pointer(obj, "/metadata/annotations"),
                                            "volume.beta.kubernetes.io/storage-class"));
    return beta ? beta : json_pstr(obj, "/spec/storageClassName", "");
}

/* kube's IsDelayBindingMode: the claim's class exists and waits for the first consumer. */
static bool delay_binding(const json *claim) {
    const char *name = class_of(claim);
    if (!*name) return false;
    json *class = turtles_cache_get("storage.k8s.io", "v1", "storageclasses", "", name);
    bool delayed = class && strcmp(json_pstr(class, "/volumeBindingMode", ""), "WaitForFirstConsumer") == 0;
    json_free(class);
    return delayed;
}

/* Whether a claim is fully bound (its volume named and the binding completed). */
static bool fully_bound(const json *claim) {
    return *json_pstr(claim, "/spec/volumeName", "") && has_annotation(claim, "pv.kubernetes.io/bind-completed");
}

/* kube's VolumeBinding PreFilter: a pod-level message (malloc'ed) when a claim is missing, lost,
 * being deleted or not the pod's (an ephemeral volume's), or unbound while its class binds at
 * once (the binder's work); NULL otherwise. */
static char *volume_prefilter(const json *pod) {
    const char *ns = json_pstr(pod, "/metadata/namespace", "");
    json *vols = json_pointer(pod, "/spec/volumes");
    for (json *v = json_first(vols); v; v = json_next(v)) {
        bool eph;
        char *name = volume_claim(pod, v, &eph);
        if (!name) continue;
        json *claim = turtles_cache_get("", "v1", "persistentvolumeclaims", ns, name);
        char *why = NULL;
        if (!claim)
            why = eph ? turtles_strf("waiting for ephemeral volume controller to create the persistentvolumeclaim \"%s\"",
                                     name)
                      : turtles_strf("persistentvolumeclaim \"%s\" not found", name);
        else if (strcmp(json_pstr(claim, "/status/phase", ""), "Lost") == 0)
            why = turtles_strf("persistentvolumeclaim \"%s\" bound to non-existent persistentvolume \"%s\"", name,
                               json_pstr(claim, "/spec/volumeName", ""));
        else if (turtles_is_deleting(claim))
            why = turtles_strf("persistentvolumeclaim \"%s\" is being deleted", name);
        else if (eph && !owned_by_pod(claim, pod))
            why = turtles_strf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", ns, name, ns,
                               json_pstr(pod, "/metadata/name", ""));
        json_free(claim);
        free(name);
        if (why) {
            char *msg = turtles_strf("0/1 nodes are available: %s." PREEMPTION, why);
            free(why);
            return msg;
        }
    }
    bool immediate = false;
    for (json *v = json_first(vols); v && !immediate; v = json_next(v)) {
        bool eph;
        char *name = volume_claim(pod, v, &eph);
        if (!name) continue;
        json *claim = turtles_cache_get("", "v1", "persistentvolumeclaims", ns, name);
        free(name);
        immediate = claim && !fully_bound(claim) &&
                    !(delay_binding(claim) && !*json_pstr(claim, "/spec/volumeName", ""));
        json_free(claim);
    }
    if (immediate)
        return turtles_strf("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims." PREEMPTION);
    return NULL;
}

/* A resource quantity as a number (bytes for storage); -1 when it does not parse. The API
 * server validated it: a double is precise enough to compare sizes. */
static double quantity(const char *q) {
    if (!q || !*q) return -1;
    char *end = NULL;
    double v = strtod(q, &end);
    if (end == q) return -1;
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"", 1},          {"Ki", 0x1p10},  {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50},
                 {"Ei", 0x1p60},   {"n", 1e-9},     {"u", 1e-6},    {"m", 1e-3},    {"k", 1e3},     {"M", 1e6},
                 {"G", 1e9},       {"T", 1e12},     {"P", 1e15},    {"E", 1e18}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) return v * units[i].factor;
    return -1;
}

/* A metav1.LabelSelector (matchLabels, matchExpressions) against labels; none matches all. */
static bool selector_matches(const json *sel, const json *labels) {
    for (json *kv = json_first(json_get(sel, "matchLabels")); kv; kv = json_next(kv)) {
        const char *have = json_string(json_get(labels, json_key(kv)));
        if (!have || !json_is_string(kv) || strcmp(have, json_string(kv)) != 0) return false;
    }
    for (json *r = json_first(json_get(sel, "matchExpressions")); r; r = json_next(r)) {
        const char *op = json_pstr(r, "/operator", "");
        if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) return false; /* not label-selector operators */
        if (!requirement_holds(r, json_string(json_get(labels, json_pstr(r, "/key", ""))))) return false;
    }
    return true;
}

/* Whether a volume's node affinity (none: any node) admits this node. */
static bool volume_fits_node(const json *pv, const json *labels) {
    json *terms = json_pointer(pv, "/spec/nodeAffinity/required/nodeSelectorTerms");
    if (!terms) return true;
    for (json *t = json_first(terms); t; t = json_next(t))
        if (term_matches(t, labels)) return true;
    return false;
}

/* kube's IsVolumeBoundToClaim: the volume's claimRef names the claim (and its uid, if any). */
static bool volume_bound_to(const json *pv, const json *claim) {
    const json *ref = json_pointer(pv, "/spec/claimRef");
    if (!ref) return false;
    if (strcmp(json_pstr(ref, "/name", ""), json_pstr(claim, "/metadata/name", "")) != 0 ||
        strcmp(json_pstr(ref, "/namespace", ""), json_pstr(claim, "/metadata/namespace", "")) != 0)
        return false;
    const char *uid = json_pstr(ref, "/uid", "");
    return !*uid || strcmp(uid, json_pstr(claim, "/metadata/uid", "")) == 0;
}

static const char *volume_mode(const json *obj) {
    const char *m = json_pstr(obj, "/spec/volumeMode", "");
    return *m ? m : "Filesystem";
}

/* kube's FindMatchingVolume for the scheduler (delay binding, this node): a volume pre-bound
 * to the claim, else the smallest Available one of its class that fits it and the node,
 * leaving out those in `chosen` (an object of volume names). Its name, or NULL (malloc'ed). */
static char *matching_volume(const json *claim, const json *labels, const json *chosen) {
    json *pvs = turtles_cache_list("", "v1", "persistentvolumes", NULL);
    double want = quantity(json_pstr(claim, "/spec/resources/requests/storage", "0"));
    const json *sel = json_pointer(claim, "/spec/selector");
    const json *modes = json_pointer(claim, "/spec/accessModes");
    const json *best = NULL;
    double best_size = 0;
    for (json *pv = json_first(pvs); pv; pv = json_next(pv)) {
        const char *name = json_pstr(pv, "/metadata/name", "");
        if (json_get(chosen, name)) continue;
        bool prebound = volume_bound_to(pv, claim);
        if (json_pointer(pv, "/spec/claimRef") && !prebound) continue;
        double size = quantity(json_pstr(pv, "/spec/capacity/storage", ""));
        if (size < want || strcmp(volume_mode(pv), volume_mode(claim)) != 0 || turtles_is_deleting(pv)) continue;
        if (prebound) {
            best = volume_fits_node(pv, labels) ? pv : NULL;
            break;
        }
        if (strcmp(json_pstr(pv, "/status/phase", ""), "Available") != 0) continue;
        if (sel && !selector_matches(sel, json_pointer(pv, "/metadata/labels"))) continue;
        if (strcmp(class_of(pv), class_of(claim)) != 0 || !volume_fits_node(pv, labels)) continue;
        bool modes_fit = true;
        for (json *m = json_first(modes); m && modes_fit; m = json_next(m))
            modes_fit = json_is_string(m) && listed(json_pointer(pv, "/spec/accessModes"), json_string(m));
        if (!modes_fit) continue;
        if (!best || size < best_size) {
            best = pv;
            best_size = size;
        }
    }
    char *found = best ? turtles_strf("%s", json_pstr(best, "/metadata/name", "")) : NULL;
    json_free(pvs);
    return found;
}

/* The pod's unbound claims that wait for their first consumer, smallest request first (kube
 * matches them in that order), as a JSON array of the cached claims. */
static int by_request(const void *a, const void *b) {
    double x = quantity(json_pstr(*(json *const *)a, "/spec/resources/requests/storage", "0"));
    double y = quantity(json_pstr(*(json *const *)b, "/spec/resources/requests/storage", "0"));
    return (x > y) - (x < y);
}

/* kube's VolumeBinding Filter (and its Reserve) for the delayed claims of a pod on this node:
 * `plan` (an object) gets, per claim name, the volume it is to be bound to, or "" when the
 * class's provisioner is to make one. false: a claim can be neither (kube's "didn't find
 * available persistent volumes to bind"). */
static bool plan_delayed(const json *pod, const json *labels, json *plan) {
    const char *ns = json_pstr(pod, "/metadata/namespace", "");
    json *claims[64];
    size_t n = 0;
    for (json *v = json_first(json_pointer(pod, "/spec/volumes")); v && n < 64; v = json_next(v)) {
        bool eph;
        char *name = volume_claim(pod, v, &eph);
        if (!name) continue;
        json *claim = turtles_cache_get("", "v1", "persistentvolumeclaims", ns, name);
        free(name);
        if (claim && !fully_bound(claim)) claims[n++] = claim;
        else json_free(claim);
    }
    qsort(claims, n, sizeof claims[0], by_request);
    json *chosen = json_new_object();
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        const json *claim = claims[i];
        const char *name = json_pstr(claim, "/metadata/name", "");
        const char *selected = json_string(json_get(json_pointer(claim, "/metadata/annotations"),
                                                    "volume.kubernetes.io/selected-node"));
        if (selected && strcmp(selected, NODE_NAME) != 0) {
            ok = false;
            continue;
        }
        char *pv = selected ? NULL : matching_volume(claim, labels, chosen);
        if (pv) {
            json_set_str(chosen, pv, "");
            json_set_str(plan, name, pv);
            free(pv);
            continue;
        }
        json *class = turtles_cache_get("storage.k8s.io", "v1", "storageclasses", "", class_of(claim));
        const char *prov = json_pstr(class, "/provisioner", "");
        if (!*prov || strcmp(prov, "kubernetes.io/no-provisioner") == 0) ok = false;
        else json_set_str(plan, name, "");
        json_free(class);
    }
    for (size_t i = 0; i < n; i++) json_free(claims[i]);
    json_free(chosen);
    return ok;
}

/* kube's VolumeBinding Filter for this node (after the PreFilter passed): its reasons as kube's
 * message lists them (malloc'ed), or NULL when the volumes fit. *provision: some claims wait for
 * their first consumer and are not bound yet (the scheduler binds them on this node first). */
static char *volume_filter(const json *pod, const json *labels, bool *provision) {
    *provision = false;
    const char *ns = json_pstr(pod, "/metadata/namespace", "");
    bool pv_missing = false, node_conflict = false, waiting = false;
    for (json *v = json_first(json_pointer(pod, "/spec/volumes")); v; v = json_next(v)) {
        bool eph;
        char *name = volume_claim(pod, v, &eph);
        if (!name) continue;
        json *claim = turtles_cache_get("", "v1", "persistentvolumeclaims", ns, name);
        free(name);
        if (!claim) continue;
        if (fully_bound(claim)) {
            json *pv = turtles_cache_get("", "v1", "persistentvolumes", "", json_pstr(claim, "/spec/volumeName", ""));
            if (!pv) pv_missing = true;
            else if (!volume_fits_node(pv, labels)) node_conflict = true;
            json_free(pv);
        } else {
            waiting = true; /* waits for its first consumer (the PreFilter let only those through) */
        }
        json_free(claim);
    }
    bool bind_conflict = false;
    if (waiting) {
        json *plan = json_new_object();
        bind_conflict = !plan_delayed(pod, labels, plan);
        json_free(plan);
    }
    if (!bind_conflict && !node_conflict && !pv_missing) {
        *provision = waiting;
        return NULL;
    }
    /* "1 <reason>" each, sorted as kube's histogram is. */
    char *msg = turtles_strf("0/1 nodes are available: %s%s%s%s%s%s." PREEMPTION,
                             bind_conflict ? "1 node(s) didn't find available persistent volumes to bind" : "",
                             bind_conflict && (node_conflict || pv_missing) ? ", " : "",
                             node_conflict ? "1 node(s) didn't match PersistentVolume's node affinity" : "",
                             node_conflict && pv_missing ? ", " : "",
                             pv_missing ? "1 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
                                        : "",
                             "");
    return msg;
}

/* Whether the pod's node selector and required node affinity match the node's labels. */
static bool affinity_fits(const json *pod, const json *labels) {
    json *selector = json_pointer(pod, "/spec/nodeSelector");
    for (json *kv = json_first(selector); kv; kv = json_next(kv)) {
        const char *have = json_string(json_get(labels, json_key(kv)));
        if (!have || !json_is_string(kv) || strcmp(have, json_string(kv)) != 0) return false;
    }
    json *terms = json_pointer(pod, "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                                    "nodeSelectorTerms");
    if (!terms) return true;
    for (json *t = json_first(terms); t; t = json_next(t))
        if (term_matches(t, labels)) return true;
    return false;
}

/* Why the pod cannot run here (kube's scheduler's message, malloc'ed), or NULL when it can, in
 * the order of kube's plugins: the volume PreFilter, then the Filters (the node's cordon,
 * spec.unschedulable; its NoSchedule/NoExecute taints; the pod's node selector and required
 * node affinity; its volumes), against the node as cached (so `kubectl label node` and `kubectl
 * taint node` count). *provision: as volume_filter says. */
static char *unschedulable_here(const json *pod, bool *provision, bool count_slots) {
    *provision = false;
    char *why = volume_prefilter(pod);
    if (why) return why;
    json *node = turtles_cache_get("", "v1", "nodes", "", NODE_NAME);
    const json *labels = json_pointer(node, "/metadata/labels");
    const char *reason = NULL;
    /* A cordoned node (kube's NodeUnschedulable filter): only Pods tolerating its taint. */
    if (json_pbool(node, "/spec/unschedulable", false)) {
        json *cordon = json_parse_str("{\"key\":\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"}");
        if (!tolerated(pod, cordon)) reason = "node(s) were unschedulable";
        json_free(cordon);
    }
    for (json *taint = json_first(json_pointer(node, "/spec/taints")); taint && !reason; taint = json_next(taint)) {
        const char *effect = json_pstr(taint, "/effect", "");
        if ((strcmp(effect, "NoSchedule") == 0 || strcmp(effect, "NoExecute") == 0) && !tolerated(pod, taint))
            reason = "node(s) had untolerated taint(s)";
    }
    if (!reason && !affinity_fits(pod, labels)) reason = "node(s) didn't match Pod's node affinity/selector";
    if (reason) why = turtles_strf("0/1 nodes are available: 1 %s." PREEMPTION, reason);
    else if (count_slots && slots_taken() >= MAX_PODS) {
        why = turtles_strf("0/1 nodes are available: 1 Too many pods." NO_VICTIMS);
        waiting_for_slots = true;
    }
    else why = volume_filter(pod, labels, provision);
    json_free(node);
    return why;
}

static char *unschedulable(const json *pod, bool *provision) { return unschedulable_here(pod, provision, true); }

/* The pod cannot be placed: PodScheduled False and a FailedScheduling event, as kube's scheduler
 * writes them (once per reason). */
static turtles_outcome unplaced(const turtles_key *key, const json *pod, const char *why) {
    for (json *c = json_first(json_pointer(pod, "/status/conditions")); c; c = json_next(c))
        if (strcmp(json_pstr(c, "/type", ""), "PodScheduled") == 0 &&
            strcmp(json_pstr(c, "/status", ""), "False") == 0 && strcmp(json_pstr(c, "/message", ""), why) == 0)
            return turtles_done();
    char now[32];
    turtles_now(now);
    json *cond = condition(pod, "PodScheduled", "False", "Unschedulable", now);
    json_set_str(cond, "message", why);
    json *patch = json_build("{\"status\":{\"conditions\":[%J]}}", cond);
    turtles_outcome err;
    if (!patch_pod_status(key, pod, patch, "unschedulable status of", &err)) return err;
    /* as kube's scheduler records it (`kubectl describe pod` shows why it is Pending) */
    event_of(pod, "Warning", "FailedScheduling", "Scheduling", why);
    turtles_info("pod %s/%s does not fit %s: %s", key->namespace_, key->name, NODE_NAME, why);
    return turtles_done();
}

/* The binding to this node through pods/NAME/binding, as a scheduler does. */
static turtles_outcome bind(const turtles_key *key, const json *pod) {
    turtles_outcome err;
    if (!*json_pstr(pod, "/spec/nodeName", "")) {
        char *path = pod_path(key, "/binding");
        json *binding = json_build("{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":%s},"
                                   "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":%s}}",
                                   key->name, NODE_NAME);
        int status = 0;
        json *resp = turtles_api("POST", path, binding, &status);
        free(path);
        json_free(binding);
        if (status == 409) { /* bound meanwhile, or being deleted: its next event tells */
            json_free(resp);
            return turtles_done();
        }
        if (!turtles_ok(status)) {
            char *ctx = turtles_strf("bind pod %s/%s", key->namespace_, key->name);
            err = turtles_api_error(ctx, status, resp);
            free(ctx);
            json_free(resp);
            return err;
        }
        json_free(resp);
        char *note = turtles_strf("Successfully assigned %s/%s to %s", key->namespace_, key->name, NODE_NAME);
        event(pod, "Scheduled", note);
        free(note);
    }
    turtles_info("bound pod %s/%s to %s", key->namespace_, key->name, NODE_NAME);
    return turtles_requeue_after(NEXT_STEP_MS);
}

/* kube's PreBind for claims waiting for their first consumer, as planned for this node: a
 * volume chosen for a claim gets its claimRef (and pv.kubernetes.io/bound-by-controller), for
 * the binder to finish; a claim to provision gets volume.kubernetes.io/selected-node (the
 * binder then asks the class's provisioner, which makes a volume on this node). The pod is
 * bound once every claim is: the claims' events bring it back. */
static turtles_outcome select_node(const turtles_key *key, const json *pod) {
    json *node = turtles_cache_get("", "v1", "nodes", "", NODE_NAME);
    json *plan = json_new_object();
    plan_delayed(pod, json_pointer(node, "/metadata/labels"), plan);
    json_free(node);
    turtles_outcome out = turtles_done();
    for (json *step = json_first(plan); step; step = json_next(step)) {
        const char *name = json_key(step);
        const char *pv_name = json_string(step);
        json *claim = turtles_cache_get("", "v1", "persistentvolumeclaims", key->namespace_, name);
        json *pv = *pv_name ? turtles_cache_get("", "v1", "persistentvolumes", "", pv_name) : NULL;
        char *path = NULL;
        json *patch = NULL;
        if (claim && pv && !volume_bound_to(pv, claim)) {
            path = turtles_path("", "v1", "persistentvolumes", NULL, pv_name);
            /* Only the volume as cached (its resourceVersion): another claim may take it first. */
            patch = json_build("{\"metadata\":{\"resourceVersion\":%s,\"annotations\":{"
                               "\"pv.kubernetes.io/bound-by-controller\":\"yes\"}},\"spec\":{\"claimRef\":{"
                               "\"kind\":\"PersistentVolumeClaim\",\"namespace\":%s,\"name\":%s,\"uid\":%s,"
                               "\"apiVersion\":\"v1\",\"resourceVersion\":%s}}}",
                               json_pstr(pv, "/metadata/resourceVersion", ""), key->namespace_, name,
                               json_pstr(claim, "/metadata/uid", ""), json_pstr(claim, "/metadata/resourceVersion", ""));
        } else if (claim && !*pv_name &&
                   !json_get(json_pointer(claim, "/metadata/annotations"), "volume.kubernetes.io/selected-node")) {
            path = turtles_path("", "v1", "persistentvolumeclaims", key->namespace_, name);
            patch = json_build("{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":%s}}}", NODE_NAME);
        }
        json_free(claim);
        json_free(pv);
        if (!patch) {
            free(path);
            continue;
        }
        int status = 0;
        json *resp = turtles_patch_merge(path, patch, &status);
        free(path);
        json_free(patch);
        if (!turtles_ok(status) && status != 404) {
            char *ctx = turtles_strf("bind volumes of pod %s/%s (claim %s)", key->namespace_, key->name, name);
            free(out.message);
            out = turtles_api_error(ctx, status, resp);
            free(ctx);
        } else if (turtles_ok(status)) {
            if (*pv_name) turtles_info("volume %s reserved for claim %s/%s of pod %s", pv_name, key->namespace_, name, key->name);
            else turtles_info("claim %s/%s of pod %s waits for a volume on %s", key->namespace_, name, key->name, NODE_NAME);
        }
        json_free(resp);
    }
    json_free(plan);
    return out;
}

/* Schedules an unbound pod: binds it, records why it does not fit, or waits for its volumes. */
static turtles_outcome schedule(const turtles_key *key, const json *pod) {
    bool provision = false;
    char *why = unschedulable(pod, &provision);
    turtles_outcome out;
    if (why) out = unplaced(key, pod, why);
    else if (provision) out = select_node(key, pod);
    else out = bind(key, pod);
    free(why);
    return out;
}

/* After a node event, or a Pod's leaving the node: the unscheduled pods that fit the node now are
 * scheduled, as kube's scheduler retries its unschedulable pods when a node changes or a Pod
 * goes, as many as the node has slots for. They are read a page at a time through the API, so
 * a namespace of 20,000 Pending Pods costs pages, not one list of them all. */
static turtles_outcome place_waiting(void) {
    long taken = slots_taken();
    long free_slots = taken < 0 ? MAX_PODS : MAX_PODS - taken;
    turtles_outcome out = turtles_done();
    char *cont = NULL;
    bool first = true;
    while (free_slots > 0 && (first || cont)) {
        first = false;
        json *page = pods_on("", 50, cont);
        free(cont);
        cont = NULL;
        if (!page) break;
        for (json *p = json_first(json_get(page, "items")); p && free_slots > 0; p = json_next(p)) {
            if (*json_pstr(p, "/spec/nodeName", "") || turtles_is_deleting(p)) continue;
            bool provision = false;
            char *why = unschedulable_here(p, &provision, false);
            bool fits = why == NULL;
            free(why);
            if (!fits) continue;
            turtles_key key = {json_pstr(p, "/metadata/namespace", ""), json_pstr(p, "/metadata/name", "")};
            turtles_outcome o = schedule(&key, p);
            if (o.kind == TURTLES_DONE || o.kind == TURTLES_REQUEUE_AFTER) {
                free(o.message);
                free_slots--;
                continue;
            }
            free(out.message);
            out = o;
        }
        const char *next = json_pstr(page, "/metadata/continue", "");
        if (*next) cont = turtles_strf("%s", next);
        json_free(page);
    }
    free(cont);
    if (free_slots > 0) waiting_for_slots = false; /* every waiting Pod that fits is placed */
    return out;
}

/* Whether one of the pod's volumes names the claim. */
static bool names_claim(const json *pod, const char *claim) {
    for (json *v = json_first(json_pointer(pod, "/spec/volumes")); v; v = json_next(v)) {
        bool eph;
        char *name = volume_claim(pod, v, &eph);
        bool same = name && strcmp(name, claim) == 0;
        free(name);
        if (same) return true;
    }
    return false;
}

/* A claim's event (key NAMESPACE/CLAIM): the unscheduled pods of the namespace naming it are
 * scheduled again (it may be bound, deleted or given a class now). Nothing when no claim has
 * that name (a pod's key); `skip`: a pod of that name, which its own reconcile schedules. */
static turtles_outcome claim_waiters(const turtles_key *key, const json *skip) {
    json *claim = turtles_cache_get("", "v1", "persistentvolumeclaims", key->namespace_, key->name);
    bool exists = claim != NULL;
    json_free(claim);
    turtles_outcome out = turtles_done();
    /* A claim gone leaves its waiters as they are (kept out, with the message of its deletion). */
    if (!exists) return out;
    json *pods = turtles_cache_list("", "v1", "pods", key->namespace_);
    for (json *p = json_first(pods); p; p = json_next(p)) {
        if (*json_pstr(p, "/spec/nodeName", "") || turtles_is_deleting(p) || !names_claim(p, key->name)) continue;
        if (skip && strcmp(json_pstr(p, "/metadata/name", ""), key->name) == 0) continue;
        turtles_key pk = {key->namespace_, json_pstr(p, "/metadata/name", "")};
        turtles_outcome o = schedule(&pk, p);
        if (o.kind == TURTLES_DONE || o.kind == TURTLES_REQUEUE_AFTER) {
            free(o.message);
            continue;
        }
        free(out.message);
        out = o;
    }
    json_free(pods);
    return out;
}

/* A pod condition; keeps lastTransitionTime when the existing condition has the same status. */
static json *condition(const json *pod, const char *type, const char *status, const char *reason,
                       const char *now) {
    const char *since = now;
    for (json *c = json_first(json_pointer(pod, "/status/conditions")); c; c = json_next(c))
        if (strcmp(json_pstr(c, "/type", ""), type) == 0 && strcmp(json_pstr(c, "/status", ""), status) == 0)
            since = json_pstr(c, "/lastTransitionTime", now);
    json *cond = json_build("{\"type\":%s,\"status\":%s,\"lastProbeTime\":null,\"lastTransitionTime\":%s}", type,
                            status, since);
    if (reason) json_set_str(cond, "reason", reason);
    return cond;
}

/* A fake container id from the pod's uid and the container's name (FNV-1a, 64 hex digits). */
static char *container_id(const json *pod, const char *name) {
    uint64_t h = 0xcbf29ce484222325ULL;
    const char *parts[] = {json_pstr(pod, "/metadata/uid", ""), "/", name};
    json_buf b = {0};
    json_buf_puts(&b, "containerd://");
    for (int round = 0; round < 4; round++) {
        for (int p = 0; p < 3; p++)
            for (const unsigned char *s = (const unsigned char *)parts[p]; *s; s++) h = (h ^ *s) * 0x100000001b3ULL;
        h = (h ^ (uint64_t)round) * 0x100000001b3ULL;
        json_buf_printf(&b, "%016llx", (unsigned long long)h);
    }
    return json_buf_take(&b);
}

/* The cpu and memory of a container's requests or limits (what a kubelet reports it configured),
 * a new object. */
static json *cpu_memory(const json *container, const char *which) {
    json *out = json_new_object();
    json *from = json_get(json_get(container, "resources"), which);
    for (const char **r = (const char *[]){"cpu", "memory", NULL}; *r; r++) {
        json *q = json_get(from, *r);
        if (json_is_string(q)) json_set(out, *r, json_dup(q));
    }
    return out;
}

/* A running container's `resources` and `allocatedResources`, as kube 1.34's kubelet reports
 * them (in-place resize needs them): what it runs with is what the spec asks. */
static void report_resources(json *status, const json *container) {
    json *requests = cpu_memory(container, "requests"), *limits = cpu_memory(container, "limits");
    json *resources = json_new_object();
    if (json_len(requests)) json_set(resources, "requests", json_dup(requests));
    if (json_len(limits)) json_set(resources, "limits", limits);
    else json_free(limits);
    json_set(status, "resources", resources);
    if (json_len(requests)) json_set(status, "allocatedResources", requests);
    else json_free(requests);
}

/* One status per container of spec.containers (or spec.initContainers), in the given state; a
 * sidecar (an init container of restartPolicy Always, kube's KEP-753) runs for the pod's life
 * instead of completing, started and ready (kubectl's READY counts it). */
static json *container_statuses(const json *pod, const char *list, const char *in_state, const char *now) {
    json *out = json_new_array();
    for (json *c = json_first(json_pointer(pod, list)); c; c = json_next(c)) {
        const char *name = json_pstr(c, "/name", "");
        const char *image = json_pstr(c, "/image", "");
        const char *state = in_state;
        if (!strcmp(state, "terminated") && !strcmp(json_pstr(c, "/restartPolicy", ""), "Always")) state = "running";
        json *st;
        if (strcmp(state, "waiting") == 0) {
            st = json_build("{\"name\":%s,\"image\":%s,\"imageID\":\"\",\"ready\":false,\"started\":false,"
                            "\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}",
                            name, image);
        } else {
            char *id = container_id(pod, name);
            if (strcmp(state, "terminated") == 0)
                st = json_build("{\"name\":%s,\"image\":%s,\"imageID\":%s,\"containerID\":%s,\"ready\":true,"
                                "\"started\":false,\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":0,"
                                "\"reason\":\"Completed\",\"startedAt\":%s,\"finishedAt\":%s,\"containerID\":%s}}}",
                                name, image, image, id, now, now, id);
            else {
                st = json_build("{\"name\":%s,\"image\":%s,\"imageID\":%s,\"containerID\":%s,\"ready\":true,"
                                "\"started\":true,\"restartCount\":0,\"state\":{\"running\":{\"startedAt\":%s}}}",
                                name, image, image, id, now);
                report_resources(st, c);
            }
            free(id);
        }
        json_push(out, st);
    }
    return out;
}

/* Pending, scheduled, containers waiting in ContainerCreating (kubectl: STATUS ContainerCreating). */
static turtles_outcome container_creating(const turtles_key *key, const json *pod) {
    char now[32];
    turtles_now(now);
    json *conditions = json_new_array();
    json_push(conditions, condition(pod, "PodReadyToStartContainers", "False", NULL, now));
    json_push(conditions, condition(pod, "Initialized", "True", NULL, now));
    json_push(conditions, condition(pod, "Ready", "False", "ContainersNotReady", now));
    json_push(conditions, condition(pod, "ContainersReady", "False", "ContainersNotReady", now));
    json_push(conditions, condition(pod, "PodScheduled", "True", NULL, now));
    json *patch = json_build("{\"status\":{\"phase\":\"Pending\",\"conditions\":%J,\"hostIP\":%s,"
                             "\"hostIPs\":[{\"ip\":%s}],\"startTime\":%s,\"containerStatuses\":%J}}",
                             conditions, NODE_IP, NODE_IP, json_pstr(pod, "/status/startTime", now),
                             container_statuses(pod, "/spec/containers", "waiting", now));
    turtles_outcome err;
    if (!patch_pod_status(key, pod, patch, "status ContainerCreating of", &err)) return err;
    return turtles_requeue_after(NEXT_STEP_MS);
}

/* The lowest 10.244.X.Y (Y not 0/1/255) no other pod on this node has as status.podIP (the
 * node's pod CIDR; its pods are read through the API, at most its slots' worth). */
static char *allocate_ip(const turtles_key *key) {
    json *resp = pods_on(NODE_NAME, 0, NULL);
    if (!resp) return NULL;
    json *pods = json_get(resp, "items");
    enum { N = 65536 };
    unsigned char *used = calloc(N / 8, 1);
    if (!used) abort();
    for (json *p = json_first(pods); p; p = json_next(p)) {
        if (strcmp(turtles_namespace(p), key->namespace_) == 0 && strcmp(turtles_name(p), key->name) == 0) continue;
        unsigned a, b, c, d;
        char tail;
        const char *ip = json_pstr(p, "/status/podIP", "");
        if (sscanf(ip, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 10 && b == 244 && c < 256 && d < 256)
            used[(c * 256 + d) / 8] |= (unsigned char)(1u << ((c * 256 + d) % 8));
    }
    json_free(resp);
    char *ip = NULL;
    for (unsigned n = 2; n < N && !ip; n++) {
        unsigned low = n % 256;
        if (low == 0 || low == 1 || low == 255) continue;
        if (!(used[n / 8] & (1u << (n % 8)))) ip = turtles_strf("10.244.%u.%u", n / 256, low);
    }
    free(used);
    return ip;
}

static turtles_outcome running(const turtles_key *key, const json *pod) {
    char now[32];
    turtles_now(now);
    const char *existing = json_pstr(pod, "/status/podIP", NULL);
    char *ip = existing ? turtles_strf("%s", existing) : allocate_ip(key);
    if (!ip) return turtles_transient_error("no free pod IP in 10.244.0.0/16");
    json *conditions = json_new_array();
    json_push(conditions, condition(pod, "PodReadyToStartContainers", "True", NULL, now));
    json_push(conditions, condition(pod, "Initialized", "True", NULL, now));
    json_push(conditions, condition(pod, "Ready", "True", NULL, now));
    json_push(conditions, condition(pod, "ContainersReady", "True", NULL, now));
    json_push(conditions, condition(pod, "PodScheduled", "True", NULL, now));
    json *status = json_build("{\"phase\":\"Running\",\"conditions\":%J,\"hostIP\":%s,\"hostIPs\":[{\"ip\":%s}],"
                              "\"podIP\":%s,\"podIPs\":[{\"ip\":%s}],\"startTime\":%s,"
                              "\"containerStatuses\":%J}",
                              conditions, NODE_IP, NODE_IP, ip, ip, json_pstr(pod, "/status/startTime", now),
                              container_statuses(pod, "/spec/containers", "running", now));
    if (json_len(json_pointer(pod, "/spec/initContainers")))
        json_set(status, "initContainerStatuses", container_statuses(pod, "/spec/initContainers", "terminated", now));
    if (json_len(json_pointer(pod, "/spec/ephemeralContainers")))
        json_set(status, "ephemeralContainerStatuses",
                 container_statuses(pod, "/spec/ephemeralContainers", "running", now));
    turtles_outcome err;
    bool ok = patch_pod_status(key, pod, json_build("{\"status\":%J}", status), "status Running of", &err);
    if (ok) turtles_info("pod %s/%s running with IP %s", key->namespace_, key->name, ip);
    free(ip);
    return ok ? turtles_done() : err;
}

/* Seconds since the epoch of an RFC 3339 UTC time as the API writes them ("2025-01-02T03:04:05Z",
 * fractions ignored); -1 when it is not one. */
static double parse_time(const char *s) {
    int y, mo, d, h, mi, sec;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) != 6) return -1;
    /* days from 1970-01-01 of the civil date (Howard Hinnant's algorithm) */
    y -= mo <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153L * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    long days = era * 146097 + doe - 719468;
    return (double)days * 86400 + h * 3600 + mi * 60 + sec;
}

static const char *annotation(const json *pod, const char *key) {
    return json_string(json_get(json_pointer(pod, "/metadata/annotations"), key));
}

/* A Running pod of restartPolicy Never/OnFailure: finished after its run time, else requeued. */
static turtles_outcome run_to_completion(const turtles_key *key, const json *pod) {
    const char *run_text = annotation(pod, RUN_SECONDS_ANNOTATION);
    const char *exit_text = annotation(pod, EXIT_CODE_ANNOTATION);
    double run = run_text ? atof(run_text) : 1.0;
    long exit_code = exit_text ? atol(exit_text) : 0;
    double started = parse_time(json_pstr(pod, "/status/containerStatuses/0/state/running/startedAt", NULL));
    if (started < 0) started = parse_time(json_pstr(pod, "/status/startTime", NULL));
    struct timespec ts;
    timespec_get(&ts, TIME_UTC); /* C11 */
    double now_s = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    if (started >= 0 && now_s < started + run) {
        double wait_ms = (started + run - now_s) * 1000 + 1;
        return turtles_requeue_after(wait_ms > 3600000 ? 3600000 : (uint32_t)wait_ms);
    }
    char now[32];
    turtles_now(now);
    const char *reason = exit_code == 0 ? "Completed" : "Error";
    json *statuses = json_new_array();
    for (json *c = json_first(json_pointer(pod, "/spec/containers")); c; c = json_next(c)) {
        const char *name = json_pstr(c, "/name", "");
        char *id = container_id(pod, name);
        char path[64];
        snprintf(path, sizeof path, "/status/containerStatuses/%zu/state/running/startedAt", json_len(statuses));
        json_push(statuses,
                  json_build("{\"name\":%s,\"image\":%s,\"imageID\":%s,\"containerID\":%s,\"ready\":false,"
                             "\"started\":false,\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":%d,"
                             "\"reason\":%s,\"startedAt\":%s,\"finishedAt\":%s,\"containerID\":%s}}}",
                             name, json_pstr(c, "/image", ""), json_pstr(c, "/image", ""), id, (int)exit_code, reason,
                             json_pstr(pod, path, now), now, id));
        free(id);
    }
    json *conditions = json_new_array();
    json_push(conditions, condition(pod, "PodReadyToStartContainers", "False", NULL, now));
    json_push(conditions, condition(pod, "Initialized", "True", NULL, now));
    json_push(conditions, condition(pod, "Ready", "False", "PodCompleted", now));
    json_push(conditions, condition(pod, "ContainersReady", "False", "PodCompleted", now));
    json_push(conditions, condition(pod, "PodScheduled", "True", NULL, now));
    const char *phase = exit_code == 0 ? "Succeeded" : "Failed";
    json *patch = json_build("{\"status\":{\"phase\":%s,\"conditions\":%J,\"containerStatuses\":%J}}", phase,
                             conditions, statuses);
    /* Its ephemeral containers (kubectl debug) stop with it. */
    if (json_len(json_pointer(pod, "/spec/ephemeralContainers")))
        json_set(json_get(patch, "status"), "ephemeralContainerStatuses",
                 container_statuses(pod, "/spec/ephemeralContainers", "terminated", now));
    turtles_outcome err;
    if (!patch_pod_status(key, pod, patch, "status finished of", &err)) return err;
    turtles_info("pod %s/%s %s (exit code %ld)", key->namespace_, key->name, phase, exit_code);
    return turtles_done();
}

/* Whether a running container's reported resources differ from what its spec asks (an in-place
 * resize through pods/resize). */
static bool resized(const json *pod) {
    /* Once reported, observedGeneration follows every spec change (kstatus-style tools wait
     * for it). */
    json *observed = json_pointer(pod, "/status/observedGeneration");
    if (json_is_number(observed) && !json_equal(observed, json_pointer(pod, "/metadata/generation")))
        return true;
    json *statuses = json_pointer(pod, "/status/containerStatuses");
    for (json *c = json_first(json_pointer(pod, "/spec/containers")); c; c = json_next(c)) {
        const char *name = json_pstr(c, "/name", "");
        for (json *st = json_first(statuses); st; st = json_next(st)) {
            if (strcmp(json_pstr(st, "/name", ""), name) != 0) continue;
            json *want = json_new_object();
            report_resources(want, c);
            bool same = json_equal(json_get(want, "resources"), json_get(st, "resources")) &&
                        json_equal(json_get(want, "allocatedResources"), json_get(st, "allocatedResources"));
            json_free(want);
            if (!same) return true;
        }
    }
    return false;
}

/* kube 1.34's kubelet after an accepted resize: each container's resources and
 * allocatedResources as asked, and status.observedGeneration the Pod's generation. */
static turtles_outcome apply_resize(const turtles_key *key, const json *pod) {
    json *statuses = json_dup(json_pointer(pod, "/status/containerStatuses"));
    for (json *st = json_first(statuses); st; st = json_next(st)) {
        const char *name = json_pstr(st, "/name", "");
        for (json *c = json_first(json_pointer(pod, "/spec/containers")); c; c = json_next(c)) {
            if (strcmp(json_pstr(c, "/name", ""), name) != 0) continue;
            json_remove(st, "resources");
            json_remove(st, "allocatedResources");
            report_resources(st, c);
        }
    }
    json *patch = json_build("{\"status\":{\"containerStatuses\":%J}}", statuses);
    json *generation = json_pointer(pod, "/metadata/generation");
    if (json_is_number(generation)) json_set(json_get(patch, "status"), "observedGeneration", json_dup(generation));
    turtles_outcome err;
    if (!patch_pod_status(key, pod, patch, "resized status of", &err)) return err;
    turtles_info("pod %s/%s resized", key->namespace_, key->name);
    return turtles_done();
}

/* The ephemeral containers' statuses, each running (kubectl debug waits for its container). */
static turtles_outcome ephemeral_started(const turtles_key *key, const json *pod) {
    char now[32];
    turtles_now(now);
    json *patch = json_build("{\"status\":{\"ephemeralContainerStatuses\":%J}}",
                             container_statuses(pod, "/spec/ephemeralContainers", "running", now));
    turtles_outcome err;
    if (!patch_pod_status(key, pod, patch, "ephemeral container status of", &err)) return err;
    return turtles_done();
}

/* Whether every container status is in the given state ("waiting" / "running"). */
static bool containers_in(const json *pod, const char *state) {
    json *statuses = json_pointer(pod, "/status/containerStatuses");
    if (json_len(statuses) == 0 || json_len(statuses) != json_len(json_pointer(pod, "/spec/containers"))) return false;
    for (json *s = json_first(statuses); s; s = json_next(s))
        if (!json_get(json_get(s, "state"), state)) return false;
    return true;
}

static turtles_outcome reconcile_pod(const turtles_key *key, const json *pod);

turtles_outcome turtles_reconcile(const turtles_key *key, const json *pod) {
    turtles_outcome err;
    if (!ensure_node(&err)) return err;
    if (!*key->namespace_ && strcmp(key->name, LEASE_KEY) == 0) return renew_lease();
    if (!*key->namespace_) return place_waiting(); /* a node event: its labels or taints may have changed */
    /* A claim's event: the pods waiting for it (a pod of the same name is reconciled below). */
    turtles_outcome waiters = claim_waiters(key, pod);
    if (!pod) {
        /* a claim's key, or a pod that is gone: its slot may be what a waiting Pod needs */
        if (!waiting_for_slots) return waiters;
        free(waiters.message);
        return place_waiting();
    }
    turtles_outcome out = reconcile_pod(key, pod);
    if (waiters.kind >= TURTLES_TRANSIENT_ERROR && out.kind < TURTLES_TRANSIENT_ERROR) {
        free(out.message);
        return waiters;
    }
    free(waiters.message);
    return out;
}

/* One pod: schedule it, start it, finish it or stop it. */
static turtles_outcome reconcile_pod(const turtles_key *key, const json *pod) {
    const char *node = json_pstr(pod, "/spec/nodeName", "");
    if (turtles_is_deleting(pod)) {
        /* Ours to stop; an unscheduled one is the API server's (or the pod GC's) to remove. */
        return strcmp(node, NODE_NAME) == 0 ? finish(key, pod) : turtles_done();
    }
    if (*node && strcmp(node, NODE_NAME) != 0) return turtles_done(); /* another kubelet's pod */
    if (!*node) return schedule(key, pod);

    const char *phase = json_pstr(pod, "/status/phase", "");
    if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0) return turtles_done();
    if (strcmp(phase, "Running") == 0 && containers_in(pod, "running") && json_pstr(pod, "/status/podIP", NULL)) {
        /* An ephemeral container added since (kubectl debug): started at once. */
        if (json_len(json_pointer(pod, "/status/ephemeralContainerStatuses")) !=
            json_len(json_pointer(pod, "/spec/ephemeralContainers")))
            return ephemeral_started(key, pod);
        /* Resized in place (pods/resize): the containers run with their new resources. */
        if (resized(pod)) return apply_resize(key, pod);
        const char *restart = json_pstr(pod, "/spec/restartPolicy", "Always");
        if (strcmp(restart, "Never") == 0 || strcmp(restart, "OnFailure") == 0) return run_to_completion(key, pod);
        return turtles_done(); /* already up, for good */
    }
    if (strcmp(phase, "Pending") == 0 && containers_in(pod, "waiting")) return running(key, pod);
    return container_creating(key, pod);
}
