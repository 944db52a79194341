//! Resource endpoints: parse the path into a target, pick the verb, decode, call the service,
//! encode the answer (JSON, Table or metadata-only).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Value};

use super::error::{json_response, object_json_response, yaml_response};
use super::negotiation::{self, Endpoint, Media};
use super::request_info::RequestInfo;
use super::{discovery, table, watch, AppState, MAX_BODY};
use crate::model::{ApiError, ResourceInfo};
use crate::patch::PatchType;
use crate::service::{
    DeleteOptions, Deleted, FieldValidation, ListOptions, ListResult, Propagation, Service,
    Subresource, WriteOptions,
};
use crate::store::StoredObject;

pub use super::request_info::Query;

/// What a resource URL names.
#[derive(Debug)]
pub struct Target {
    pub ri: Arc<ResourceInfo>,
    /// The namespace in the path (none for cluster-scoped resources and all-namespace lists).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Subresource,
    /// The `scale` subresource of a custom resource.
    pub scale: bool,
    /// A Pod's `binding` subresource.
    pub binding: bool,
    /// A Pod's `eviction` subresource.
    pub eviction: bool,
    /// A ServiceAccount's `token` subresource (TokenRequest).
    pub token: bool,
    /// A Controller's `log` subresource.
    pub log: bool,
    /// A Pod's `log`, `exec`, `attach` or `portforward` (the kubelet's subresources).
    pub pod_stream: Option<super::pod_streams::PodStream>,
}

pub async fn dispatch(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let deprecated = req.extensions().get::<Arc<RequestInfo>>().and_then(|info| {
        deprecation(info)
            .map(str::to_owned)
            .or_else(|| custom_deprecation(&state, info))
    });
    let served = match heavy_write(&state, &req) {
        Some(why) => {
            // The body is read here, on the workers: on HTTP/1.1 the connection's task is the
            // one that runs the handler and feeds it the body, so it cannot be blocked first.
            // (A body that dribbles in holds no thread and no turn off the workers.)
            let deadline = deadline_of(&req);
            // The sender's share of the turns (none for `system:masters`, or a request that
            // was not authenticated).
            let flow = req
                .extensions()
                .get::<super::inflight::Sender>()
                .and_then(|s| s.share().cloned());
            let (parts, body) = req.into_parts();
            let mut head = Request::new(body);
            *head.headers_mut() = parts.headers.clone();
            match read_body(head, state.options.request_body_timeout).await {
                Ok(bytes) => {
                    let mut req = Request::from_parts(parts, Body::from(bytes));
                    req.extensions_mut().insert(super::offload::OffWorkers);
                    let st = state.clone();
                    state
                        .offload
                        .run(why, flow.as_ref(), deadline, async move {
                            handle(&st, req).await
                        })
                        .await
                        .map_err(ApiError::from)
                        .and_then(|r| r)
                }
                Err(e) => Err(e),
            }
        }
        None => handle(&state, req).await,
    };
    let mut resp = match served {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    // kube's deprecation warning goes with every answer about a deprecated resource, before
    // any the handler adds (kube adds it before the handler runs).
    if let Some(w) = deprecated {
        let later: Vec<header::HeaderValue> = resp
            .headers()
            .get_all(header::WARNING)
            .iter()
            .cloned()
            .collect();
        resp.headers_mut().remove(header::WARNING);
        add_warnings(&mut resp, &[w]);
        for v in later {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// Whether `req` is a write to serve off the async workers, and why (`api/offload.rs`): its CPU
/// grows with the larger of its body and the object it changes (a tiny merge patch of a 737 KB
/// Deployment costs what a 737 KB create does), server-side apply's several times as fast, and
/// a `deletecollection`'s with the whole collection. Both sizes are known before any work: the
/// body's as the body knows it (a client's `Content-Length`, an in-process call's whole body; a
/// streamed body of unknown size counts as big), the stored object's from the store's index.
/// Writes a remote APIService answers are proxied as they come, never buffered here.
fn heavy_write(state: &AppState, req: &Request) -> Option<super::offload::Heavy> {
    use super::offload::{Heavy, APPLY_BYTES, HEAVY_BYTES};
    use hyper::body::Body as _;
    if !matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return None;
    }
    let apply =
        *req.method() == Method::PATCH && matches!(patch_type(req.headers()), Ok(PatchType::Apply));
    let (limit, body_reason, stored_reason) = if apply {
        (APPLY_BYTES, Heavy::Apply, Heavy::Apply)
    } else {
        (HEAVY_BYTES, Heavy::Body, Heavy::Stored)
    };
    let big_body = req.body().size_hint().exact().is_none_or(|n| n > limit);
    // The request as it is routed (a path that does not decode is refused before its body is
    // read); without one (a test driving the handlers alone), its body decides.
    let Some(info) = req.extensions().get::<Arc<RequestInfo>>() else {
        return big_body.then_some(body_reason);
    };
    if state
        .aggregator
        .route(&state.registry, &info.path)
        .is_some()
    {
        return None;
    }
    if info.verb == "deletecollection" {
        return Some(Heavy::Collection);
    }
    if big_body {
        return Some(body_reason);
    }
    // The object the path names (or the one its subresource changes), as stored: a lookup in
    // the index, nothing parsed. A path that names nothing stored is answered on the workers.
    let target = resolve(state, info).ok()?;
    let name = target.name.as_deref()?;
    let stored = state
        .service
        .get(&target.ri, target.namespace.as_deref().unwrap_or(""), name)
        .ok()?;
    (u64::try_from(stored.json.len()).unwrap_or(u64::MAX) > limit).then_some(stored_reason)
}

/// kube's deprecation warning for a request to a deprecated built-in resource (kube 1.34:
/// core v1 Endpoints, deprecated in 1.33 for EndpointSlices, and ComponentStatuses).
fn deprecation(info: &RequestInfo) -> Option<&'static str> {
    if !(info.resource_request && info.api_group.is_empty() && info.api_version == "v1") {
        return None;
    }
    match info.resource.as_str() {
        "endpoints" => {
            Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        }
        "componentstatuses" => Some("v1 ComponentStatus is deprecated in v1.19+"),
        _ => None,
    }
}

/// The deprecation warning of a request to a custom resource's version that its CRD marks
/// `deprecated` (`crd::resources` has its text). kube's CRD handler adds it to every request it
/// serves for that version, whatever the verb, subresource or outcome; not to those it hands
/// on, as to no handler (a 404): a namespace-scoped path to a cluster-scoped resource, or a
/// path without a namespace to a namespaced resource but for a list or watch
/// (`crdHandler.ServeHTTP`).
fn custom_deprecation(state: &AppState, info: &RequestInfo) -> Option<String> {
    if !info.resource_request || info.api_group.is_empty() {
        return None;
    }
    let ri = state
        .registry
        .lookup(&info.api_group, &info.api_version, &info.resource)?;
    let warning = ri.custom.as_ref()?.deprecation_warning.clone()?;
    let namespaced_request = !info.namespace.is_empty();
    if ri.namespaced() != namespaced_request
        && (namespaced_request || !matches!(info.verb.as_str(), "list" | "watch"))
    {
        return None;
    }
    Some(warning)
}

async fn handle(state: &Arc<AppState>, req: Request) -> Result<Response, ApiError> {
    // The request as the access middleware parsed (and authorized) it.
    let info = match req.extensions().get::<Arc<RequestInfo>>() {
        Some(info) => info.clone(),
        None => Arc::new(RequestInfo::parse(req.method(), req.uri())?),
    };
    // A remote APIService's group version: its extension server answers.
    if let Some((api, discovery)) = state.aggregator.route(&state.registry, &info.path) {
        let mut resp = crate::aggregator::proxy::serve(
            &state.aggregator,
            &*state.service.store,
            &api,
            discovery,
            req,
        )
        .await;
        // The extension server laid its answer out itself.
        resp.extensions_mut().insert(super::pretty::AsIs);
        return Ok(resp);
    }
    let query = &info.query;
    if !info.resource_request {
        let segs: Vec<&str> = info
            .path
            .trim_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        return match segs.as_slice() {
            ["apis", group] => only_get(req.method()).and_then(|_| discovery::group(state, group)),
            ["api", version] => {
                only_get(req.method())?;
                discovery::resource_list(state, "", version)
            }
            ["apis", group, version] => {
                only_get(req.method())?;
                discovery::resource_list(state, group, version)
            }
            _ => Err(ApiError::path_not_found()),
        };
    }
    let target = resolve(state, &info)?;
    if info.legacy_watch && target.ri.computed {
        return super::components::serve(
            state,
            &target,
            req.method(),
            req.headers(),
            &info.query,
            true,
        );
    }
    if info.legacy_watch {
        let (method, headers) = (req.method().clone(), req.headers().clone());
        let user = principal(&req);
        let turns = turns_of(state, &req);
        return legacy_watch(
            state,
            &info,
            &target,
            &method,
            &headers,
            user.as_ref(),
            turns,
        )
        .await;
    }
    if target.ri.computed {
        return super::components::serve(
            state,
            &target,
            req.method(),
            req.headers(),
            &info.query,
            info.is_watch(),
        );
    }
    if target.ri.create_only {
        if req.method() != Method::POST || target.name.is_some() {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        let user = req
            .extensions()
            .get::<crate::auth::Principal>()
            .map(|p| p.0.clone())
            .ok_or_else(|| ApiError::new(401, "Unauthorized", "Unauthorized"))?;
        let headers = req.headers().clone();
        let deadline = deadline_of(&req);
        let out = output(&headers, &target.ri)?;
        let body = read_body(req, state.options.request_body_timeout).await?;
        let review = decode_object(&headers, &body)?;
        if target.ri.group.is_empty() && target.ri.resource == "bindings" {
            let ns = target.namespace.clone().unwrap_or_default();
            let mut review = review;
            same_namespace(&review, &ns)?;
            let name = review
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if name.is_empty() {
                return Err(ApiError::invalid(
                    "",
                    "Binding",
                    "",
                    vec![crate::model::Cause::new(
                        "FieldValueRequired",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    )],
                ));
            }
            let dry = dry_run(&info.dry_run, "CreateOptions")?;
            let kind = ["", "v1", "Binding"];
            let at = SubresourceCreate {
                ri: &target.ri,
                ns: &ns,
                name: &name,
                sub: "",
                kind,
            };
            admit_subresource_create(state, &at, Some(&user), dry, deadline, &mut review).await?;
            state.service.bind_pod(&ns, &name, &review, dry).await?;
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Success", "code": 201});
            return Ok(value_response(out.media, StatusCode::CREATED, &status));
        }
        return super::reviews::handle(
            state,
            &target.ri,
            target.namespace.as_deref(),
            &user,
            review,
            out.media,
        );
    }
    if target.scale {
        return scale(state, &target, req, &info).await;
    }
    // `finalize` is only written (kube's FinalizeREST is an Updater alone).
    if target.sub == Subresource::Finalize && req.method() != Method::PUT {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    // `/status` and `/approval` are read and written, never created, deleted or watched.
    if target.sub != Subresource::Main
        && !matches!(*req.method(), Method::GET | Method::PUT | Method::PATCH)
    {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    if target.binding {
        let user = principal(&req);
        let deadline = deadline_of(&req);
        let out = output(req.headers(), &target.ri)?;
        let mut binding = posted_object(state, req).await?;
        let ns = target.namespace.clone().unwrap_or_default();
        let name = target.name.clone().unwrap_or_default();
        same_namespace(&binding, &ns)?;
        let dry = dry_run(&info.dry_run, "CreateOptions")?;
        let kind = ["", "v1", "Binding"];
        let at = SubresourceCreate {
            ri: &target.ri,
            ns: &ns,
            name: &name,
            sub: "binding",
            kind,
        };
        admit_subresource_create(state, &at, user.as_ref(), dry, deadline, &mut binding).await?;
        state.service.bind_pod(&ns, &name, &binding, dry).await?;
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success", "code": 201});
        return Ok(value_response(out.media, StatusCode::CREATED, &status));
    }
    if target.eviction {
        let user = principal(&req);
        let deadline = deadline_of(&req);
        let out = output(req.headers(), &target.ri)?;
        let mut eviction = posted_object(state, req).await?;
        let ns = target.namespace.clone().unwrap_or_default();
        let name = target.name.clone().unwrap_or_default();
        let opts = eviction_options(&eviction, &ns, &name, &info.dry_run)?;
        // Admission sees the Eviction as kube's create handler shows it: a CREATE of
        // `pods/eviction` whose object is a policy/v1 Eviction.
        let kind = ["policy", "v1", "Eviction"];
        let at = SubresourceCreate {
            ri: &target.ri,
            ns: &ns,
            name: &name,
            sub: "eviction",
            kind,
        };
        admit_subresource_create(
            state,
            &at,
            user.as_ref(),
            opts.dry_run,
            deadline,
            &mut eviction,
        )
        .await?;
        let opts = eviction_options(&eviction, &ns, &name, &info.dry_run)?;
        crate::builtin::disruption::evict(&state.service, &ns, &name, opts).await?;
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success", "code": 201});
        return Ok(value_response(out.media, StatusCode::CREATED, &status));
    }
    if target.log {
        only_get(req.method())?;
        return controller_log(state, &target, query);
    }
    if let Some(stream) = target.pod_stream {
        let user = principal(&req).map(|u| u.name).unwrap_or_default();
        let request = super::pod_streams::StreamRequest {
            kind: stream,
            method: req.method(),
            headers: req.headers(),
            query,
            user: &user,
        };
        return super::pod_streams::serve(state, &target, request).await;
    }
    if target.token {
        let user = principal(&req);
        let deadline = deadline_of(&req);
        let out = output(req.headers(), &target.ri)?;
        let mut request = posted_object(state, req).await?;
        // Admission sees a CREATE of `serviceaccounts/token` whose object is an
        // authentication.k8s.io/v1 TokenRequest, as kube's create handler shows it (policies
        // limit tokens' durations and audiences that way).
        let ns = target.namespace.clone().unwrap_or_default();
        let name = target.name.clone().unwrap_or_default();
        let at = SubresourceCreate {
            ri: &target.ri,
            ns: &ns,
            name: &name,
            sub: "token",
            kind: ["authentication.k8s.io", "v1", "TokenRequest"],
        };
        let dry = dry_run(&info.dry_run, "CreateOptions")?;
        admit_subresource_create(state, &at, user.as_ref(), dry, deadline, &mut request).await?;
        let answer = token_request(state, &target, request)?;
        return Ok(value_response(out.media, StatusCode::CREATED, &answer));
    }
    if target.ri.is_controllers() && req.method() != Method::GET {
        return Err(ApiError::method_not_allowed(
            "controllers are managed by the host: add, replace or remove a .wasm file in the controllers folder",
        ));
    }
    let method = req.method().clone();
    let headers = req.headers().clone();
    let ri = target.ri.clone();
    // RBAC objects are written subject to kube's escalation checks, as the requesting user.
    let principal = req
        .extensions()
        .get::<crate::auth::Principal>()
        .map(|p| p.0.clone());
    let user = principal.clone();
    let deadline = deadline_of(&req);
    // What a list's body or a watch's events render after this returns takes turns off the
    // workers as this request would.
    let turns = turns_of(state, &req);
    let guard = if crate::builtin::csr::is_csrs(&ri) {
        crate::auth::csr::guard(&state.authz, &ri, principal, target.sub)
    } else {
        crate::auth::escalation::guard(&state.authz, &ri, principal)
    };
    let ns = target.namespace.clone().unwrap_or_default();
    let svc = &state.service;
    let is_crd = ri.group == crate::crd::GROUP && ri.resource == crate::crd::RESOURCE;
    // A Service's write reserves cluster IPs and node ports before it is stored and settles
    // them after: it runs to its end on its own task, so a client that goes away mid-write
    // (a dropped HTTP/2 stream) cannot leave its values reserved for nothing.
    // (A write off the workers runs to its end already, on its thread; spawned, it would run
    // on the workers again.)
    let detach = ri.group.is_empty()
        && ri.resource == "services"
        && req
            .extensions()
            .get::<super::offload::OffWorkers>()
            .is_none();
    // kube's handlers negotiate the answer's media type before anything else (a 406 before a
    // write is made); a method the resource does not serve has no handler (its 405 first).
    let served = match (&method, &target.name) {
        (&Method::GET, _) | (&Method::POST, None) => true,
        (&Method::PUT | &Method::PATCH | &Method::DELETE, Some(_)) => true,
        (&Method::DELETE, None) => ri.verbs().contains(&"deletecollection"),
        _ => false,
    };
    let out = if served {
        output(&headers, &ri)?
    } else {
        Output::JSON
    };
    match (&method, &target.name) {
        (&Method::GET, None) if info.is_watch() => {
            watch::serve(
                state.clone(),
                &target,
                query,
                out.repr,
                stream_output(&headers, &ri).err(),
                user.as_ref(),
                turns,
            )
            .await
        }
        (&Method::GET, None) => {
            validate_list_options(query, false)?;
            let opts = list_options(query)?;
            let mut page = svc.list(&ri, target.namespace.as_deref(), &opts).await?;
            page.items = svc.served(&ri, page.items).await?;
            list_response(&ri, &headers, query, page, Some(turns))
        }
        (&Method::GET, Some(name)) => {
            match query.get("resourceVersion").filter(|rv| !rv.is_empty()) {
                // Unset: a consistent read (kube's quorum read).
                None => svc
                    .store
                    .sync()
                    .await
                    .map_err(|e| crate::service::store_error(&ri, name, e))?,
                // Set: read once the store has reached it (kube's watch cache), or a 504.
                Some(rv) => svc.await_get_revision(rv).await?,
            }
            let obj = svc.served_one(&ri, svc.get(&ri, &ns, name)?).await?;
            // A large object parsed to answer (a Table, metadata, YAML, another version) is
            // rendered off the workers, in a turn, as a list's chunks of them are.
            if obj.json.len() as u64 > super::offload::HEAVY_BYTES
                && (out.repr != Representation::Full
                    || out.media == Media::Yaml
                    || !Service::presents_as_stored(&ri, &obj))
            {
                let (ri, query) = (ri.clone(), query.clone());
                return Ok(turns
                    .run(super::offload::Heavy::Get, move || {
                        object_response(&ri, &headers, &query, StatusCode::OK, obj)
                    })
                    .await?);
            }
            Ok(object_response(&ri, &headers, query, StatusCode::OK, obj))
        }
        (&Method::POST, None) => {
            let ns = required_namespace(&target)?;
            let mut opts = write_options(
                &info,
                &state.authz,
                &guard,
                &user,
                &headers,
                deadline,
                Write::Create,
            )?;
            let body = read_body(req, state.options.request_body_timeout).await?;
            let (obj, duplicates) = decode_written(&ri, &headers, &body, opts.field_validation)?;
            opts.duplicates = duplicates;
            opts.custom_kind_validated = true;
            let mut written = if detach {
                let (s, ri, ns, opts) =
                    (state.service.clone(), ri.clone(), ns.clone(), opts.clone());
                detached(async move { s.create(&ri, &ns, obj, &opts).await }).await?
            } else {
                svc.create(&ri, &ns, obj, &opts).await?
            };
            if is_crd && !opts.dry_run {
                written.object = crd_settled(state, &ri, &written.object).await?;
            }
            written_response(svc, &ri, &headers, query, StatusCode::CREATED, written).await
        }
        (&Method::PUT, Some(name)) => {
            let mut opts = write_options(
                &info,
                &state.authz,
                &guard,
                &user,
                &headers,
                deadline,
                Write::Update,
            )?;
            let body = read_body(req, state.options.request_body_timeout).await?;
            let (obj, duplicates) = decode_written(&ri, &headers, &body, opts.field_validation)?;
            opts.duplicates = duplicates;
            opts.custom_kind_validated = true;
            let mut written = if detach {
                let (s, ri, ns, opts, name, sub) = (
                    state.service.clone(),
                    ri.clone(),
                    ns.clone(),
                    opts.clone(),
                    name.clone(),
                    target.sub,
                );
                detached(async move { s.update(&ri, &ns, &name, obj, sub, &opts).await }).await?
            } else {
                svc.update(&ri, &ns, name, obj, target.sub, &opts).await?
            };
            if is_crd && !opts.dry_run {
                written.object = crd_settled(state, &ri, &written.object).await?;
            }
            let code = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            written_response(svc, &ri, &headers, query, code, written).await
        }
        (&Method::PATCH, Some(name)) => {
            let patch_type = patch_type(&headers)?;
            let opts = write_options(
                &info,
                &state.authz,
                &guard,
                &user,
                &headers,
                deadline,
                Write::Patch(patch_type),
            )?;
            let body = read_body(req, state.options.request_body_timeout).await?;
            let mut written = if detach {
                let (s, ri, ns, opts, name, sub) = (
                    state.service.clone(),
                    ri.clone(),
                    ns.clone(),
                    opts.clone(),
                    name.clone(),
                    target.sub,
                );
                detached(async move {
                    s.patch(&ri, &ns, &name, patch_type, &body, sub, &opts)
                        .await
                })
                .await?
            } else {
                svc.patch(&ri, &ns, name, patch_type, &body, target.sub, &opts)
                    .await?
            };
            if is_crd && !opts.dry_run {
                written.object = crd_settled(state, &ri, &written.object).await?;
            }
            let code = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            written_response(svc, &ri, &headers, query, code, written).await
        }
        (&Method::DELETE, Some(name)) => {
            let body = read_body(req, state.options.request_body_timeout).await?;
            let mut opts = delete_options(query, &info.dry_run, &body)?;
            opts.user = user.clone();
            opts.deadline = deadline;
            let (outcome, warnings) = svc.delete_warned(&ri, &ns, name, &opts).await?;
            if is_crd && !opts.dry_run {
                state.crds.reconcile(name).await?;
            }
            let mut resp = match outcome {
                Deleted::Pending(obj) => {
                    let obj = svc.served_one(&ri, obj).await?;
                    object_response(&ri, &headers, query, StatusCode::OK, obj)
                }
                Deleted::Gone(obj) if ri.delete_returns_object => {
                    object_response(&ri, &headers, query, StatusCode::OK, obj)
                }
                Deleted::Gone(obj) => {
                    let uid = crate::model::meta::meta_str(obj.head(), "uid").unwrap_or("");
                    let status =
                        crate::model::status::success_status(&ri.group, &ri.resource, name, uid);
                    value_response(out.media, StatusCode::OK, &status)
                }
            };
            add_warnings(&mut resp, &warnings);
            Ok(resp)
        }
        (&Method::DELETE, None) if !ri.verbs().contains(&"deletecollection") => {
            Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ))
        }
        (&Method::DELETE, None) => {
            let body = read_body(req, state.options.request_body_timeout).await?;
            let mut opts = delete_options(query, &info.dry_run, &body)?;
            opts.user = user.clone();
            opts.deadline = deadline;
            validate_list_options(query, false)?;
            let list = list_options(query)?;
            let page = svc
                .delete_collection(&ri, target.namespace.as_deref(), &list, &opts)
                .await?;
            if is_crd && !opts.dry_run {
                for o in &page.items {
                    state
                        .crds
                        .reconcile(crate::model::meta::name(o.head()))
                        .await?;
                }
            }
            let mut page = page;
            page.items = svc.served(&ri, page.items).await?;
            list_response(&ri, &headers, query, page, Some(turns))
        }
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {m}"
        ))),
    }
}

fn patch_type(headers: &HeaderMap) -> Result<PatchType, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    PatchType::from_content_type(ct)
}

/// After a write to a CRD: reconcile it (names, conditions, serving) and answer with its state.
async fn crd_settled(
    state: &AppState,
    ri: &ResourceInfo,
    obj: &StoredObject,
) -> Result<Arc<StoredObject>, ApiError> {
    let name = crate::model::meta::name(obj.head()).to_owned();
    state.crds.reconcile(&name).await?;
    state.service.get(ri, "", &name)
}

/// The `scale` subresource of a custom resource: GET, PUT and PATCH of an autoscaling/v1 Scale.
async fn scale(
    state: &AppState,
    target: &Target,
    req: Request,
    info: &RequestInfo,
) -> Result<Response, ApiError> {
    let query = &info.query;
    let ri = &target.ri;
    let ns = target.namespace.clone().unwrap_or_default();
    let name = target.name.clone().unwrap_or_default();
    let svc = &state.service;
    let method = req.method().clone();
    let headers = req.headers().clone();
    // Who asks: their scale writes are admitted (validating admission sees the Scale).
    let user = req
        .extensions()
        .get::<crate::auth::Principal>()
        .map(|p| p.0.clone());
    let deadline = deadline_of(&req);
    let guard = None;
    // Negotiated first (kube's get, update and patch handlers); another method has none.
    let out = match method {
        Method::GET | Method::PUT | Method::PATCH => output(&headers, ri)?,
        _ => Output::JSON,
    };
    // kube's ScaleREST of a built-in kind names the subresource in its 404
    // (`deployments/scale.apps "web" not found`, its `scaleUpdatedObjectInfo` on a write too);
    // a custom resource's is the object's.
    let scale_404 = |e: ApiError| {
        if e.code == 404 && ri.custom.is_none() {
            ApiError::not_found(&ri.group, &format!("{}/scale", ri.resource), &name)
        } else {
            e
        }
    };
    let written = match method {
        Method::GET => {
            // The Scale is read from the object, with its `resourceVersion` (kube's ScaleREST
            // gets it from the same storage).
            if let Some(rv) = query.get("resourceVersion").filter(|rv| !rv.is_empty()) {
                svc.await_get_revision(rv).await?;
            }
            let stored = svc.get(ri, &ns, &name).map_err(scale_404)?;
            let obj = svc.served_one(ri, stored).await?;
            let scale = crate::service::Service::scale_of(ri, &obj)?;
            // `kubectl get deploy web --subresource=scale` asks for a Table: kube's Scale columns.
            if let Representation::Table(version) = out.repr {
                if let Ok(mut o) = StoredObject::unstored(scale.clone()) {
                    o.rv = obj.rv;
                    let mut t = table::render_columns(
                        crate::api::printers::scale_columns(),
                        &[Arc::new(o)],
                        &obj.rv.to_string(),
                        query,
                    );
                    table_in(version, &mut t);
                    return Ok(value_response(out.media, StatusCode::OK, &t));
                }
            }
            return Ok(value_response(out.media, StatusCode::OK, &scale));
        }
        Method::PUT => {
            let opts = write_options(
                info,
                &state.authz,
                &guard,
                &user,
                &headers,
                deadline,
                Write::Update,
            )?;
            let body = read_body(req, state.options.request_body_timeout).await?;
            // Decoded as kube's update handler decodes the Scale, before its name is checked.
            let (wanted, duplicates) = if is_json(&body_media_type(&headers)) {
                let (v, found) = parse_json(
                    "Scale",
                    &body,
                    opts.field_validation != FieldValidation::Ignore,
                )?;
                super::body::check_scale(&v, &body)?;
                (null_as_empty(v), found)
            } else {
                decode_json_with(&body, opts.field_validation != FieldValidation::Ignore)?
            };
            let mut wanted = wanted;
            let warnings = crate::service::Service::decode_scale(&mut wanted, &duplicates, &opts)?;
            check_name(&wanted, &ns, &name)?;
            svc.update_scale(ri, &ns, &name, &opts, |_| {
                Ok((wanted.clone(), warnings.clone()))
            })
            .await
            .map_err(scale_404)?
        }
        Method::PATCH => {
            let pt = patch_type(&headers)?;
            let opts = write_options(
                info,
                &state.authz,
                &guard,
                &user,
                &headers,
                deadline,
                Write::Patch(pt),
            )?;
            let body = read_body(req, state.options.request_body_timeout).await?;
            if pt == PatchType::Apply {
                let written = svc
                    .apply_scale(ri, &ns, &name, &body, &opts)
                    .await
                    .map_err(scale_404)?;
                let obj = svc.served_one(ri, written.object.clone()).await?;
                let scale = crate::service::Service::scale_of(ri, &obj)?;
                let mut resp = value_response(out.media, StatusCode::OK, &scale);
                add_warnings(&mut resp, &written.warnings);
                return Ok(resp);
            }
            svc.patch_scale(ri, &ns, &name, pt, &body, &opts)
                .await
                .map_err(scale_404)?
        }
        m => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {m}"
            )))
        }
    };
    let obj = svc.served_one(ri, written.object.clone()).await?;
    let scale = crate::service::Service::scale_of(ri, &obj)?;
    let mut resp = value_response(out.media, StatusCode::OK, &scale);
    add_warnings(&mut resp, &written.warnings);
    Ok(resp)
}

fn add_warnings(resp: &mut Response, warnings: &[String]) {
    for w in warning_texts(warnings) {
        // apimachinery's `NewWarningHeader`: the text quoted with `"` and `\` escaped, the rest
        // (UTF-8 included) as it is.
        let mut text = String::with_capacity(w.len() + 8);
        text.push_str("299 - \"");
        for c in w.chars() {
            if matches!(c, '"' | '\\') {
                text.push('\\');
            }
            text.push(c);
        }
        text.push('"');
        if let Ok(v) = header::HeaderValue::from_bytes(text.as_bytes()) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}

/// kube's warning recorder (`endpoints/filters/warning.go`): warnings are sent whole while the
/// text stays within 4 Ki characters; the first that does not fit turns on truncation: every
/// warning so far is sent again cut to 256 characters, and later ones (cut) are added until 4 Ki
/// are written. The same text is sent once.
const WARNINGS_TOTAL_CHARS: usize = 4 * 1024;
const WARNING_ITEM_CHARS: usize = 256;

fn warning_texts(warnings: &[String]) -> Vec<String> {
    let cut = |w: &str| -> (String, usize) {
        let n = w.chars().count();
        if n > WARNING_ITEM_CHARS {
            (
                w.chars().take(WARNING_ITEM_CHARS).collect(),
                WARNING_ITEM_CHARS,
            )
        } else {
            (w.to_owned(), n)
        }
    };
    let mut seen = std::collections::HashSet::new();
    let mut ordered: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    let (mut written, mut truncating) = (0, false);
    for w in warnings.iter().map(String::as_str) {
        if truncating && written >= WARNINGS_TOTAL_CHARS {
            break;
        }
        // kube's recorder drops a text `NewWarningHeader` refuses: one with a control
        // character.
        if w.is_empty() || w.chars().any(char::is_control) || !seen.insert(w) {
            continue;
        }
        ordered.push(w);
        let (text, n) = if truncating {
            cut(w)
        } else {
            (w.to_owned(), w.chars().count())
        };
        if written + n <= WARNINGS_TOTAL_CHARS || truncating {
            written += n;
            out.push(text);
            continue;
        }
        // Over the limit for the first time: start again with every warning cut.
        truncating = true;
        written = 0;
        out.clear();
        for o in &ordered {
            let (text, n) = cut(o);
            written += n;
            out.push(text);
        }
    }
    out
}

/// The answer to a write: the object as the request's version shows it (converted by a CRD's
/// webhook where it has one), with the write's warnings.
async fn written_response(
    svc: &crate::service::Service,
    ri: &ResourceInfo,
    headers: &HeaderMap,
    query: &Query,
    code: StatusCode,
    written: crate::service::Written,
) -> Result<Response, ApiError> {
    let obj = svc.served_one(ri, written.object).await?;
    let mut resp = object_response(ri, headers, query, code, obj);
    add_warnings(&mut resp, &written.warnings);
    Ok(resp)
}

fn only_get(m: &Method) -> Result<(), ApiError> {
    if m == Method::GET {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ))
    }
}

/// The resource, namespace, name and subresource a request's path names (as parsed once in its
/// [`RequestInfo`]).
fn resolve(state: &AppState, info: &RequestInfo) -> Result<Target, ApiError> {
    let parts: Vec<&str> = info.parts.iter().map(String::as_str).collect();
    let [res, tail @ ..] = parts.as_slice() else {
        return Err(ApiError::path_not_found());
    };
    let ri = state
        .registry
        .lookup(&info.api_group, &info.api_version, res)
        .ok_or_else(ApiError::path_not_found)?;
    let namespace = if info.namespace_scoped {
        if !ri.namespaced() {
            return Err(ApiError::path_not_found());
        }
        Some(info.namespace.clone())
    } else {
        // A namespaced resource without a namespace: only the all-namespace collection.
        if ri.namespaced() && !tail.is_empty() {
            return Err(ApiError::path_not_found());
        }
        None
    };
    let has_scale = ri.scale.is_some();
    let is_pods = ri.group.is_empty() && ri.resource == "pods";
    let is_sa = ri.group.is_empty() && ri.resource == "serviceaccounts";
    let is_controllers = ri.is_controllers();
    let mut token = false;
    let mut log = false;
    let mut eviction = false;
    let mut pod_stream = None;
    let (name, sub, scale, binding) = match tail {
        [] => (None, Subresource::Main, false, false),
        [name] => (Some((*name).to_owned()), Subresource::Main, false, false),
        [name, "status"] if ri.status_subresource => {
            (Some((*name).to_owned()), Subresource::Status, false, false)
        }
        [name, "scale"] if has_scale => (Some((*name).to_owned()), Subresource::Main, true, false),
        [name, "finalize"] if ri.group.is_empty() && ri.resource == "namespaces" => (
            Some((*name).to_owned()),
            Subresource::Finalize,
            false,
            false,
        ),
        [name, "approval"] if crate::builtin::csr::is_csrs(&ri) => (
            Some((*name).to_owned()),
            Subresource::Approval,
            false,
            false,
        ),
        [name, "binding"] if is_pods && namespace.is_some() => {
            (Some((*name).to_owned()), Subresource::Main, false, true)
        }
        [name, "ephemeralcontainers"] if is_pods && namespace.is_some() => (
            Some((*name).to_owned()),
            Subresource::EphemeralContainers,
            false,
            false,
        ),
        [name, "resize"] if is_pods && namespace.is_some() => {
            (Some((*name).to_owned()), Subresource::Resize, false, false)
        }
        [name, "eviction"] if is_pods && namespace.is_some() => {
            eviction = true;
            (Some((*name).to_owned()), Subresource::Main, false, false)
        }
        [name, "token"] if is_sa && namespace.is_some() => {
            token = true;
            (Some((*name).to_owned()), Subresource::Main, false, false)
        }
        [name, "log"] if is_controllers => {
            log = true;
            (Some((*name).to_owned()), Subresource::Main, false, false)
        }
        [name, sub]
            if is_pods
                && namespace.is_some()
                && super::pod_streams::PodStream::from_subresource(sub).is_some() =>
        {
            pod_stream = super::pod_streams::PodStream::from_subresource(sub);
            (Some((*name).to_owned()), Subresource::Main, false, false)
        }
        _ => return Err(ApiError::path_not_found()),
    };
    Ok(Target {
        ri,
        namespace,
        name,
        sub,
        scale,
        binding,
        eviction,
        token,
        log,
        pod_stream,
    })
}

/// `GET .../controllers/NAME/log`: the controller's recent log lines as `text/plain`, with a
/// Pod log's options: `tailLines`, `limitBytes`, `timestamps`, and `follow` (streams new lines
/// until the client goes, the limit is reached, the controller is unloaded or the server stops).
fn controller_log(
    state: &Arc<AppState>,
    target: &Target,
    query: &super::request_info::Query,
) -> Result<Response, ApiError> {
    let name = target.name.clone().unwrap_or_default();
    // The Controller must exist, as a Pod must for its log.
    state.service.get(&target.ri, "", &name)?;
    let number = |param: &str| -> Result<Option<usize>, ApiError> {
        match query.get(param) {
            None => Ok(None),
            Some(v) => v.parse::<usize>().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "{param}: Invalid value: {}: must be a non-negative integer",
                    crate::auth::rbac::go_quote(v)
                ))
            }),
        }
    };
    let tail = number("tailLines")?;
    let mut remaining = number("limitBytes")?.unwrap_or(usize::MAX);
    if remaining == 0 {
        return Err(ApiError::bad_request(
            "limitBytes: Invalid value: 0: must be greater than 0",
        ));
    }
    // Go's strconv.ParseBool, as kube reads the options.
    let flag = |param: &str| -> Result<bool, ApiError> {
        match query.get(param).map(String::as_str) {
            None | Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(false),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!(
                "{param}: Invalid value: {}: must be a boolean",
                crate::auth::rbac::go_quote(v)
            ))),
        }
    };
    let timestamps = flag("timestamps")?;
    let follow = flag("follow")?;
    let Some(folder) = state.controllers.get() else {
        return Ok(text_response(Body::empty()));
    };
    let logs = &folder.host().runtime.logs;
    // Made here if the controller has logged nothing yet (still compiling): bounded, as the
    // Controller object exists.
    let buffer = logs.buffer(&name);
    let (lines, rx) = buffer.snapshot(tail);
    let mut text = String::new();
    for line in &lines {
        line.render(timestamps, &mut text);
    }
    let first = cap(text, &mut remaining);
    if !follow || remaining == 0 {
        return Ok(text_response(Body::from(first)));
    }
    let permit = logs.follow_permit().ok_or_else(|| {
        ApiError::new(
            429,
            "TooManyRequests",
            format!(
                "too many controller log streams are open (at most {})",
                crate::runtime::logs::MAX_FOLLOWERS
            ),
        )
    })?;
    let stop = state.shutdown.clone();
    let closed = Box::pin(buffer.closed());
    let stream = futures::stream::unfold(
        (Some(first), rx, closed, stop, remaining, permit),
        move |(first, mut rx, mut closed, mut stop, mut remaining, permit)| async move {
            if let Some(first) = first.filter(|f| !f.is_empty()) {
                let next = (None, rx, closed, stop, remaining, permit);
                return Some((Ok::<_, std::convert::Infallible>(first), next));
            }
            if remaining == 0 {
                return None;
            }
            let mut text = String::new();
            tokio::select! {
                r = rx.recv() => match r {
                    Ok(line) => line.render(timestamps, &mut text),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        crate::runtime::logs::Line {
                            time: chrono::Utc::now(),
                            text: format!("... {n} lines skipped: this reader fell behind").into(),
                        }
                        .render(timestamps, &mut text);
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                },
                _ = &mut closed => return None,
                _ = stop.wait_for(|s| *s) => return None,
            }
            let chunk = cap(text, &mut remaining);
            Some((Ok(chunk), (None, rx, closed, stop, remaining, permit)))
        },
    );
    Ok(text_response(Body::from_stream(stream)))
}

/// `text` as bytes, cut to what `limitBytes` leaves (and that much less left).
fn cap(text: String, remaining: &mut usize) -> Bytes {
    let mut bytes = Bytes::from(text);
    if bytes.len() >= *remaining {
        bytes.truncate(*remaining);
        *remaining = 0;
    } else {
        *remaining -= bytes.len();
    }
    bytes
}

fn text_response(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The body of a POST-only subresource (`binding`, `token`); another method is 405.
async fn posted_object(state: &AppState, req: Request) -> Result<Value, ApiError> {
    if req.method() != Method::POST {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let headers = req.headers().clone();
    let body = read_body(req, state.options.request_body_timeout).await?;
    decode_object(&headers, &body)
}

/// The authenticated user of a request.
fn principal(req: &Request) -> Option<crate::auth::rbac::UserInfo> {
    req.extensions()
        .get::<crate::auth::Principal>()
        .map(|p| p.0.clone())
}

/// When the request must be answered (`api::access` sets it on every request that is not
/// long-running).
fn deadline_of(req: &Request) -> Option<tokio::time::Instant> {
    req.extensions()
        .get::<super::access::RequestDeadline>()
        .map(|d| d.0)
}

/// The turns off the workers that `req`'s answer takes for what it renders after the handler
/// has returned (a list's chunks, a watch's events: `offload.rs`): its sender's share (none for
/// `system:masters`, or a request that was not authenticated), within its deadline (a watch,
/// long-running, has none).
fn turns_of(state: &AppState, req: &Request) -> super::offload::Turns {
    super::offload::Turns {
        offload: state.offload.clone(),
        flow: req
            .extensions()
            .get::<super::inflight::Sender>()
            .and_then(|s| s.share().cloned()),
        deadline: deadline_of(req),
    }
}

/// kube's create handler: an object whose `metadata.namespace` is not the URL's is refused.
fn same_namespace(obj: &Value, ns: &str) -> Result<(), ApiError> {
    let given = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !given.is_empty() && given != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// kube's update handler on the object it decoded (`endpoints/handlers/update.go`), for a write
/// whose body is not the stored kind (a Scale): a namespace other than the request's is
/// refused (`rest.EnsureObjectNamespaceMatchesRequestNamespace`; a cluster-scoped object's is
/// cleared), then the name must be the URL's (`checkName`, `endpoints/handlers/rest.go`; an
/// empty one is not taken as the URL's).
fn check_name(obj: &Value, ns: &str, name: &str) -> Result<(), ApiError> {
    if !ns.is_empty() {
        same_namespace(obj, ns)?;
    }
    let given = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if given.is_empty() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        )));
    }
    if given != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({given}) does not match the name on the URL ({name})"
        )));
    }
    Ok(())
}

/// Where a create-only subresource (or the `bindings` collection) is written: admission sees
/// a CREATE of `ri`'s `sub` whose object is of `kind`.
struct SubresourceCreate<'a> {
    ri: &'a ResourceInfo,
    ns: &'a str,
    name: &'a str,
    sub: &'a str,
    kind: [&'a str; 3],
}

/// Run a write on its own task and wait for it: dropping the request does not cancel it.
async fn detached<T: Send + 'static>(
    write: impl std::future::Future<Output = Result<T, ApiError>> + Send + 'static,
) -> Result<T, ApiError> {
    /// Detached writes at once: a client that drops its requests frees its in-flight slots,
    /// not these, so they are bounded on their own.
    static SLOTS: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    let slots = SLOTS
        .get_or_init(|| Arc::new(tokio::sync::Semaphore::new(64)))
        .clone();
    let permit = slots
        .acquire_owned()
        .await
        .map_err(|e| ApiError::internal(format!("the write could not start: {e}")))?;
    tokio::spawn(async move {
        let r = write.await;
        drop(permit);
        r
    })
    .await
    .unwrap_or_else(|e| Err(ApiError::internal(format!("the write did not finish: {e}"))))
}

/// Mutating then validating admission of such a create, as the requesting user (the host's
/// own writes carry none).
async fn admit_subresource_create(
    state: &AppState,
    at: &SubresourceCreate<'_>,
    user: Option<&crate::auth::rbac::UserInfo>,
    dry_run: bool,
    deadline: Option<tokio::time::Instant>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let Some(user) = user else {
        return Ok(());
    };
    let admission = &state.service.admission;
    let req = crate::admission::Request {
        ri: at.ri,
        operation: crate::admission::Operation::Create,
        namespace: at.ns,
        name: at.name,
        subresource: at.sub,
        user,
        dry_run,
        old_object: None,
        requested: None,
        delete_options: None,
        kind: Some(at.kind),
        deadline,
    };
    admission.mutate(&req, obj).await?;
    admission.validate(&req, Some(obj)).await?;
    Ok(())
}

/// An Eviction's checks (kube's `EvictionREST.Create` and the create handler's) and its
/// `deleteOptions`, with the request's `dryRun` merged in as kube's `propagateDryRun` does.
fn eviction_options(
    eviction: &Value,
    ns: &str,
    name: &str,
    in_query: &[String],
) -> Result<DeleteOptions, ApiError> {
    let api_version = eviction.get("apiVersion").and_then(Value::as_str);
    let kind = eviction.get("kind").and_then(Value::as_str);
    // Without type information the body is taken as the endpoint's kind, as kube's decoder
    // defaults it (kube-rs sends neither).
    if !matches!(api_version, None | Some("policy/v1" | "policy/v1beta1"))
        || !matches!(kind, None | Some("Eviction"))
    {
        return Err(ApiError::bad_request(format!(
            "not a Eviction object: {}/{}",
            api_version.unwrap_or_default(),
            kind.unwrap_or_default()
        )));
    }
    let body_ns = eviction
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !body_ns.is_empty() && body_ns != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if eviction.pointer("/metadata/name").and_then(Value::as_str) != Some(name) {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    // The create's own options first (kube's create handler validates `CreateOptions`).
    dry_run(in_query, "CreateOptions")?;
    let mut delete = eviction
        .get("deleteOptions")
        .filter(|d| !d.is_null())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let in_body: Vec<&str> = delete
        .get("dryRun")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !in_query.is_empty()
        && !in_body.is_empty()
        && !in_body
            .iter()
            .copied()
            .eq(in_query.iter().map(String::as_str))
    {
        return Err(ApiError::internal(format!(
            "Non-matching dry-run options in request and content: [{}] and [{}]",
            in_query.join(" "),
            in_body.join(" ")
        )));
    }
    // An empty `dryRun` of the body takes the query's (kube's `propagateDryRun`); the result is
    // validated with the other delete options, before anything changes (an unknown value would
    // otherwise count as a dry run for the budget and fail at the delete).
    if in_body.is_empty() {
        if let Some(d) = delete.as_object_mut() {
            d.remove("dryRun");
        }
    }
    let bytes = serde_json::to_vec(&delete)
        .map_err(|e| ApiError::internal(format!("encoding deleteOptions: {e}")))?;
    delete_options(&Query::default(), in_query, &bytes)
}

/// TokenRequest: a token for the service account, as kube's `serviceaccount/storage/token.go`
/// (audiences default to the API server's; `expirationSeconds` at least 10 minutes, default an
/// hour; `boundObjectRef` to a Pod, Secret or Node in the claims).
fn token_request(state: &AppState, target: &Target, mut req: Value) -> Result<Value, ApiError> {
    use crate::auth::serviceaccount::{DEFAULT_EXPIRATION, ISSUER, MIN_EXPIRATION};
    let ns = target.namespace.clone().unwrap_or_default();
    let name = target.name.clone().unwrap_or_default();
    let sa = state.service.get(&target.ri, &ns, &name)?;
    let issuer = state
        .authn
        .service_accounts()
        .ok_or_else(|| ApiError::internal("service account tokens are not configured"))?;
    let invalid = |field: &str, msg: String| {
        ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            &name,
            vec![crate::model::Cause::new("FieldValueInvalid", field, msg)],
        )
    };
    let spec = req.get("spec").cloned().unwrap_or_else(|| json!({}));
    let seconds = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_EXPIRATION);
    if seconds < MIN_EXPIRATION {
        return Err(invalid(
            "spec.expirationSeconds",
            format!("Invalid value: {seconds}: may not specify a duration less than 10 minutes"),
        ));
    }
    // kube's ValidateTokenRequest: at most 2^32 seconds (so the expiry never overflows).
    if seconds > 1 << 32 {
        return Err(invalid(
            "spec.expirationSeconds",
            format!(
                "Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds"
            ),
        ));
    }
    let bound_ref = spec.get("boundObjectRef").filter(|b| !b.is_null()).cloned();
    let bound = match &bound_ref {
        Some(r) => bind_token(state, &ns, r)?,
        None => Default::default(),
    };
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| vec![ISSUER.to_owned()]);
    let uid = crate::model::meta::meta_str(sa.head(), "uid").unwrap_or("");
    let (token, exp) = issuer
        .issue(&ns, &name, uid, &audiences, seconds, &bound)
        .ok_or_else(|| ApiError::internal("signing the token failed"))?;
    let expires = chrono::DateTime::from_timestamp(exp, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    if let Some(m) = req.as_object_mut() {
        m.insert("kind".into(), json!("TokenRequest"));
        m.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
        let meta = m.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), json!(name));
            meta.insert("namespace".into(), json!(ns));
            meta.insert("creationTimestamp".into(), Value::Null);
        }
        m.insert(
            "spec".into(),
            json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": bound_ref}),
        );
        m.insert(
            "status".into(),
            json!({"token": token, "expirationTimestamp": expires}),
        );
    }
    Ok(req)
}

/// The objects a TokenRequest's `boundObjectRef` binds the token to, as kube's token REST checks
/// them: a core/v1 Pod or Secret in the account's namespace, or a Node; it must exist (404) and
/// have the given uid if one is given (409); a Pod's Node is recorded too when it exists.
fn bind_token(
    state: &AppState,
    ns: &str,
    r: &Value,
) -> Result<crate::auth::serviceaccount::Bound, ApiError> {
    use crate::auth::serviceaccount::{Bound, BoundRef};
    let api_version = r["apiVersion"].as_str().unwrap_or("");
    let kind = r["kind"].as_str().unwrap_or("");
    let name = r["name"].as_str().unwrap_or("");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (resource, namespace) = match (group, kind) {
        ("", "Pod") => ("pods", ns),
        ("", "Secret") => ("secrets", ns),
        ("", "Node") => ("nodes", ""),
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )))
        }
    };
    let get = |resource: &str, namespace: &str, name: &str| {
        state
            .service
            .store
            .get(&crate::model::ObjectKey::new(resource, namespace, name))
    };
    let obj =
        get(resource, namespace, name).ok_or_else(|| ApiError::not_found("", resource, name))?;
    let uid = crate::model::meta::meta_str(obj.head(), "uid")
        .unwrap_or("")
        .to_owned();
    if let Some(want) = r["uid"].as_str().filter(|u| !u.is_empty()) {
        if want != uid {
            return Err(ApiError::conflict_message(
                "",
                kind,
                name,
                &format!(
                    "the UID in the bound object reference ({want}) does not match the UID in \
                     record ({uid}). The object might have been deleted and then recreated"
                ),
            ));
        }
    }
    let this = Some(BoundRef {
        name: name.to_owned(),
        uid,
    });
    Ok(match kind {
        "Pod" => {
            let node = obj
                .parse()
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .and_then(|n| {
                    let node = get("nodes", "", n)?;
                    Some(BoundRef {
                        name: n.to_owned(),
                        uid: crate::model::meta::meta_str(node.head(), "uid")?.to_owned(),
                    })
                });
            Bound {
                pod: this,
                node,
                ..Bound::default()
            }
        }
        "Secret" => Bound {
            secret: this,
            ..Bound::default()
        },
        _ => Bound {
            node: this,
            ..Bound::default()
        },
    })
}

fn required_namespace(t: &Target) -> Result<String, ApiError> {
    match (&t.namespace, t.ri.namespaced()) {
        (Some(ns), _) => Ok(ns.clone()),
        (None, false) => Ok(String::new()),
        (None, true) => Err(ApiError::method_not_allowed(
            "a namespaced resource must be created in a namespace: POST /api/v1/namespaces/NS/...",
        )),
    }
}

/// kube's `Timeout` Status for a request that did not complete in time.
fn body_timeout(limit: std::time::Duration) -> ApiError {
    ApiError::timeout(format!(
        "Timeout: request did not complete within {}",
        go_duration(limit)
    ))
}

/// A duration as Go prints it (`1m0s`, `2s`, `1.5s`), as kube's messages show them.
fn go_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis() as u64;
    let (h, m, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let secs = if frac == 0 {
        format!("{s}s")
    } else {
        format!("{s}.{}s", format!("{frac:03}").trim_end_matches('0'))
    };
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

/// The request body, at most [`MAX_BODY`] bytes (else 413), arriving within `limit` (else 504).
async fn read_body(req: Request, limit: std::time::Duration) -> Result<Bytes, ApiError> {
    match tokio::time::timeout(limit, read_body_unbounded(req)).await {
        Ok(body) => body,
        Err(_) => Err(body_timeout(limit)),
    }
}

async fn read_body_unbounded(req: Request) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::too_large(format!(
            "Request entity too large: limit is {MAX_BODY} bytes"
        ))
    };
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        if len > MAX_BODY {
            // Read (and drop) what the client is sending, so it gets our answer rather than a
            // reset connection; give up on bodies far beyond the limit.
            // Frame by frame, nothing kept: many such requests at once hold no memory.
            if len <= 8 * MAX_BODY {
                use http_body_util::BodyExt;
                let mut body = req.into_body();
                while let Some(Ok(_)) = body.frame().await {}
            }
            return Err(too_large());
        }
    }
    axum::body::to_bytes(req.into_body(), MAX_BODY)
        .await
        .map_err(|e| {
            let mut source: Option<&dyn std::error::Error> = Some(&e);
            while let Some(s) = source {
                if s.is::<http_body_util::LengthLimitError>() {
                    return too_large();
                }
                source = s.source();
            }
            ApiError::bad_request(format!("error reading the request body: {e}"))
        })
}

/// A request body's media type, lowercase, without parameters (JSON when unsaid).
fn body_media_type(headers: &HeaderMap) -> String {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    ct.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether a body of this media type is decoded as JSON.
fn is_json(essence: &str) -> bool {
    matches!(essence, "application/json" | "" | "*/*")
}

/// A create's or update's body for the endpoint `ri` ([`decode_object`]; a JSON body as kube's
/// handlers read it, [`super::body`]) and, for a JSON body whose `fieldValidation` is not
/// `Ignore`, the keys it repeats: kube's strict JSON decoder reports them (its non-strict one,
/// for `Ignore`, does not look).
fn decode_written(
    ri: &ResourceInfo,
    headers: &HeaderMap,
    body: &[u8],
    validation: FieldValidation,
) -> Result<(Value, Vec<crate::model::json::DuplicateField>), ApiError> {
    if !is_json(&body_media_type(headers)) {
        return Ok((decode_object(headers, body)?, Vec::new()));
    }
    let (v, found) = parse_json(&ri.kind, body, validation != FieldValidation::Ignore)?;
    super::body::check(ri, &v, body)?;
    Ok((null_as_empty(v), found))
}

/// A `null` body decodes into the empty object of the endpoint's type, as Go's decoder leaves
/// a struct it is given `null` for.
fn null_as_empty(v: Value) -> Value {
    match v {
        Value::Null => Value::Object(serde_json::Map::new()),
        v => v,
    }
}

/// A create's or update's JSON body for an endpoint of `kind`, parsed (with the keys it repeats
/// when `duplicates` is asked for; `-0` an integer). A body that is not JSON is refused in Go's
/// words ([`super::body::check_syntax`]: serde_json takes no document Go's scanner refuses, so
/// the scanner runs only when serde_json refused it). Go also takes invalid UTF-8 inside
/// strings, each such byte a U+FFFD, and a lone surrogate escape as U+FFFD; what serde_json
/// refuses beyond that (a number beyond `f64`, nesting past 128) is turtles' 400.
fn parse_json(
    kind: &str,
    body: &[u8],
    duplicates: bool,
) -> Result<(Value, Vec<crate::model::json::DuplicateField>), ApiError> {
    let parse = |bytes: &[u8]| -> Result<(Value, Vec<_>), serde_json::Error> {
        let bytes = crate::model::json::negative_zero_as_zero(bytes);
        if duplicates {
            crate::model::json::from_slice(&bytes)
        } else {
            serde_json::from_slice::<Value>(&bytes).map(|v| (v, Vec::new()))
        }
    };
    let e = match parse(body) {
        Ok(parsed) => return Ok(parsed),
        Err(e) => e,
    };
    super::body::check_syntax(kind, body)?;
    let invalid = |e: serde_json::Error| {
        ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
    };
    // Go reads a lone surrogate escape as U+FFFD, and invalid UTF-8 likewise.
    let replaced = super::body::lone_surrogates_replaced(body);
    let body = replaced.as_deref().unwrap_or(body);
    if std::str::from_utf8(body).is_ok() {
        return match replaced {
            Some(_) => parse(body).map_err(invalid),
            None => Err(invalid(e)),
        };
    }
    parse(super::body::go_string(body).as_bytes()).map_err(invalid)
}

/// Decode a create/update body by its Content-Type.
fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let essence = body_media_type(headers);
    match essence.as_str() {
        e if is_json(e) => decode_json(body),
        // A body that does not decode is kube's 400 (`transformDecodeError`); 415 is for a
        // media type the server does not take.
        "application/vnd.kubernetes.protobuf" => {
            super::protobuf::decode(body).map_err(|e| ApiError::bad_request(e.to_string()))
        }
        // kube's serializers take YAML bodies too (what `curl --data-binary @x.yaml` sends);
        // read as server-side apply reads them, aliases bounded.
        "application/yaml" => {
            let v = crate::apply::yaml_to_json(body).map_err(|e| {
                ApiError::bad_request(format!("error converting YAML to JSON: {e}"))
            })?;
            if !v.is_object() {
                return Err(ApiError::bad_request(
                    "the request body must be a YAML mapping",
                ));
            }
            Ok(v)
        }
        _ => Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {essence})"
        ))),
    }
}

/// A JSON body as kube's decoder reads it: an object, `-0` an integer
/// (`model::json::negative_zero_as_zero`).
pub(crate) fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    decode_json_with(body, false).map(|(v, _)| v)
}

/// [`decode_json`], with the keys the body repeats when `duplicates` is asked for
/// (`model::json::from_slice`).
fn decode_json_with(
    body: &[u8],
    duplicates: bool,
) -> Result<(Value, Vec<crate::model::json::DuplicateField>), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "the request body is empty; a JSON object is required",
        ));
    }
    let body = crate::model::json::negative_zero_as_zero(body);
    let invalid = |e: serde_json::Error| {
        ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
    };
    let (v, found) = if duplicates {
        crate::model::json::from_slice(&body).map_err(invalid)?
    } else {
        (
            serde_json::from_slice::<Value>(&body).map_err(invalid)?,
            Vec::new(),
        )
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok((v, found))
}

/// apimachinery's `ValidateDryRun`: every value of an options' `dryRun` (a `[]string`: all
/// the query's values, or the body's list) must be `All`; kube reports the whole list
/// (`["All","x"]`), an empty value included.
fn dry_run_cause(values: &[String]) -> Option<crate::model::Cause> {
    values.iter().any(|v| v != "All").then(|| {
        crate::model::Cause::new(
            "FieldValueNotSupported",
            "dryRun",
            format!(
                "Unsupported value: {}: supported values: \"All\"",
                crate::builtin::validation::field::json_value(&json!(values))
            ),
        )
    })
}

/// Whether `values` (the request's `dryRun`) make a dry run, or kube's 422 on the options of
/// `kind` (`CreateOptions`, ...) that hold them.
fn dry_run(values: &[String], kind: &str) -> Result<bool, ApiError> {
    match dry_run_cause(values) {
        Some(cause) => Err(ApiError::invalid("meta.k8s.io", kind, "", vec![cause])),
        None => Ok(!values.is_empty()),
    }
}

/// The `fieldValidation` option, or apimachinery's `ValidateFieldValidation` cause.
fn field_validation(q: &Query) -> Result<FieldValidation, crate::model::Cause> {
    match q.get("fieldValidation").map(String::as_str) {
        None | Some("" | "Warn") => Ok(FieldValidation::Warn),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some(other) => Err(crate::model::Cause::new(
            "FieldValueNotSupported",
            "fieldValidation",
            format!(
                "Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                crate::builtin::validation::field::json_value(&json!(other))
            ),
        )),
    }
}

/// A create's, update's or patch's options from the query ([`checked_write_options`]).
fn write_options(
    info: &RequestInfo,
    authz: &Arc<crate::auth::Authorizer>,
    guard: &Option<Arc<dyn crate::service::WriteGuard>>,
    user: &Option<crate::auth::rbac::UserInfo>,
    headers: &HeaderMap,
    deadline: Option<tokio::time::Instant>,
    write: Write,
) -> Result<WriteOptions, ApiError> {
    let checked = checked_write_options(info, write)?;
    let field_manager = info.query.get("fieldManager").map(String::as_str);
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    Ok(WriteOptions {
        dry_run: checked.dry_run,
        field_validation: checked.field_validation,
        guard: guard.clone(),
        user: user.clone(),
        manager: Some(crate::apply::manager_name(field_manager, user_agent)),
        force: checked.force,
        authorizer: Some(authz.clone()),
        deadline,
        ..Default::default()
    })
}

/// What a write's query options decide, once checked.
#[derive(Debug, PartialEq)]
struct CheckedWriteOptions {
    dry_run: bool,
    field_validation: FieldValidation,
    force: bool,
}

/// A write's query options, checked as kube's `ValidateCreateOptions`/`ValidateUpdateOptions`/
/// `ValidatePatchOptions` check them: the field manager (and apply's `force`), `dryRun` (every
/// value given), `fieldValidation`, every cause in one 422 on the options' kind.
fn checked_write_options(
    info: &RequestInfo,
    write: Write,
) -> Result<CheckedWriteOptions, ApiError> {
    let q = &info.query;
    let field_manager = q.get("fieldManager").map(String::as_str);
    let force = match q.get("force").map(String::as_str) {
        None => None,
        Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Some(true),
        Some("" | "0" | "f" | "F" | "false" | "FALSE" | "False") => Some(false),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "force: Invalid value: \"{other}\": not a boolean"
            )))
        }
    };
    let (kind, apply) = match write {
        Write::Create => ("CreateOptions", false),
        Write::Update => ("UpdateOptions", false),
        Write::Patch(pt) => ("PatchOptions", pt == PatchType::Apply),
    };
    let mut causes = crate::apply::option_causes(kind, field_manager, apply, force);
    causes.extend(dry_run_cause(&info.dry_run));
    let field_validation = match field_validation(q) {
        Ok(v) => v,
        Err(cause) => {
            causes.push(cause);
            FieldValidation::Warn
        }
    };
    if !causes.is_empty() {
        return Err(ApiError::invalid("meta.k8s.io", kind, "", causes));
    }
    Ok(CheckedWriteOptions {
        dry_run: !info.dry_run.is_empty(),
        field_validation,
        force: force.unwrap_or(false),
    })
}

/// Which write a request is, for its options.
#[derive(Clone, Copy)]
enum Write {
    Create,
    Update,
    Patch(PatchType),
}

/// kube's `ValidateDeleteOptions` for the deprecated `orphanDependents` beside a
/// `propagationPolicy` (the `*DeletionPropagation` printed as its JSON).
fn both_orphan_and_policy(policy: &str) -> crate::model::Cause {
    crate::model::Cause::new(
        "FieldValueInvalid",
        "propagationPolicy",
        format!(
            "Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
            crate::builtin::validation::field::json_value(&json!(policy))
        ),
    )
}

/// A DELETE's (or deletecollection's) options: its query (`dry_run`, every `dryRun` value it
/// gave) and its body's `DeleteOptions`, a field in both the body's. Checked as kube's
/// `ValidateDeleteOptions` checks them, every cause in one 422 on `DeleteOptions`: the
/// orphanDependents beside a policy, the policy, `dryRun`.
pub(crate) fn delete_options(
    q: &Query,
    dry_run: &[String],
    body: &[u8],
) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions::default();
    let mut causes = Vec::new();
    let set_policy = |p: &str, opts: &mut DeleteOptions, causes: &mut Vec<crate::model::Cause>| {
        match Propagation::parse(p) {
            Ok(policy) => opts.propagation = Some(policy),
            // `Propagation::parse`'s 422 carries its one cause.
            Err(e) => causes.extend(e.causes),
        }
    };
    let q_policy = q.get("propagationPolicy").filter(|p| !p.is_empty());
    // Present but empty is Go's ParseInt error too (kube converts every value given).
    if let Some(g) = q.get("gracePeriodSeconds") {
        opts.grace_period = Some(go_parse_int(g)?);
    }
    if let (Some(_), Some(p)) = (q.get("orphanDependents"), q_policy) {
        causes.push(both_orphan_and_policy(p));
    }
    if let Some(p) = q_policy {
        set_policy(p, &mut opts, &mut causes);
    }
    if let Some(o) = q.get("orphanDependents").filter(|_| q_policy.is_none()) {
        opts.propagation = Some(if o == "true" {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
    }
    let mut in_body: Option<Vec<String>> = None;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let body = crate::model::json::negative_zero_as_zero(body);
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?;
        if let Some(pre) = v.get("preconditions") {
            opts.precondition_uid = pre.get("uid").and_then(Value::as_str).map(str::to_owned);
            opts.precondition_rv = pre
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let unmarshal = |field: &str, v: &Value, of: &str| {
            ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go struct field DeleteOptions.{field} of type {of}",
                crate::schema::objectmeta::go_type_name(v)
            ))
        };
        match v.get("gracePeriodSeconds") {
            None | Some(Value::Null) => {}
            Some(g) => {
                opts.grace_period = Some(
                    g.as_i64()
                        .ok_or_else(|| unmarshal("gracePeriodSeconds", g, "int64"))?,
                );
            }
        }
        match v.get("dryRun") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                let values = items
                    .iter()
                    .map(|d| {
                        d.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| unmarshal("dryRun", d, "string"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                in_body = Some(values);
            }
            Some(other) => return Err(unmarshal("dryRun", other, "[]string")),
        }
        let orphan = v.get("orphanDependents").and_then(Value::as_bool);
        let policy = v.get("propagationPolicy").and_then(Value::as_str);
        if let (Some(_), Some(p)) = (orphan, policy) {
            causes.push(both_orphan_and_policy(p));
        }
        if let Some(p) = policy {
            set_policy(p, &mut opts, &mut causes);
        }
        if let Some(o) = orphan {
            opts.propagation = Some(if o {
                Propagation::Orphan
            } else {
                Propagation::Background
            });
        }
    }
    // The body's `dryRun` when it has one, else the query's: validated whole, as kube does.
    let dry = in_body.as_deref().unwrap_or(dry_run);
    causes.extend(dry_run_cause(dry));
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            causes,
        ));
    }
    opts.dry_run = !dry.is_empty();
    Ok(opts)
}

/// kube's deprecated `/watch/` paths (`.../watch/namespaces/NS/RESOURCE[/NAME]`): GET only,
/// always a watch, of the collection or of one name, which is `fieldSelector=metadata.name=NAME`
/// (a selector naming another is a 400, as kube's list handler answers).
async fn legacy_watch(
    state: &Arc<AppState>,
    info: &RequestInfo,
    target: &Target,
    method: &Method,
    headers: &HeaderMap,
    user: Option<&crate::auth::rbac::UserInfo>,
    turns: super::offload::Turns,
) -> Result<Response, ApiError> {
    if !info.subresource.is_empty() || target.ri.create_only {
        return Err(ApiError::path_not_found());
    }
    if method != Method::GET {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let out = output(headers, &target.ri)?;
    let mut q = info.query.clone();
    if let Some(name) = &target.name {
        match q.get("fieldSelector").filter(|f| !f.is_empty()) {
            Some(fs) => {
                let same = crate::selector::FieldSelector::parse_any(fs)
                    .ok()
                    .is_some_and(|sel| sel.exact("metadata.name") == Some(name.as_str()));
                if !same {
                    return Err(ApiError::bad_request(
                        "fieldSelector metadata.name doesn't match requested name",
                    ));
                }
            }
            None => {
                q.insert("fieldSelector".into(), format!("metadata.name={name}"));
            }
        }
    }
    let stream = stream_output(headers, &target.ri).err();
    watch::serve(state.clone(), target, &q, out.repr, stream, user, turns).await
}

/// kube's `ValidateListOptions` (and `validateWatchOptions` for a watch), clause for clause in
/// its order: every problem is a cause of one 422 on `ListOptions.meta.k8s.io`. The WatchList
/// feature is on, as in kube 1.34.
pub fn validate_list_options(q: &Query, watch: bool) -> Result<(), ApiError> {
    use crate::builtin::validation::field::{forbidden, not_supported};
    // kube converts the query into ListOptions first (a 400 for what does not convert).
    list_integers(q)?;
    let given = |k: &str| q.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let rv_match = given("resourceVersionMatch");
    let send_initial = q.contains_key("sendInitialEvents");
    let cont = given("continue").is_some();
    let path = "resourceVersionMatch";
    let mut causes = Vec::new();
    if watch {
        if send_initial && rv_match != Some("NotOlderThan") {
            causes.push(forbidden(
                path,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = rv_match {
            if !send_initial {
                causes.push(forbidden(
                    path,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                causes.push(not_supported(path, &Value::from(m), &["NotOlderThan"]));
            }
            if cont {
                causes.push(forbidden(
                    path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if let Some(m) = rv_match {
            if given("resourceVersion").is_none() {
                causes.push(forbidden(
                    path,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if cont {
                causes.push(forbidden(
                    path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                causes.push(not_supported(
                    path,
                    &Value::from(m),
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if m == "Exact" && given("resourceVersion") == Some("0") {
                causes.push(forbidden(
                    path,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if send_initial {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", causes))
    }
}

/// The integers of kube's `ListOptions` as its parameter codec converts the query
/// (`autoConvert_url_Values_To_v1_ListOptions`, in the struct's order: `timeoutSeconds`, then
/// `limit`), before `ValidateListOptions`: each with Go's `strconv.ParseInt`, present but empty
/// included; the first that does not parse is a 400 with Go's error. Returns them in that
/// order.
pub fn list_integers(q: &Query) -> Result<(Option<i64>, Option<i64>), ApiError> {
    let timeout = int_param(q, "timeoutSeconds")?;
    let limit = int_param(q, "limit")?;
    Ok((timeout, limit))
}

/// An int64 query parameter ([`go_parse_int`]), if given.
fn int_param(q: &Query, name: &str) -> Result<Option<i64>, ApiError> {
    q.get(name).map(|v| go_parse_int(v)).transpose()
}

/// Go's `strconv.ParseInt(v, 10, 64)`, its error as kube's parameter decoding answers it: a 400
/// `strconv.ParseInt: parsing "abc": invalid syntax` (or `value out of range`).
pub(crate) fn go_parse_int(v: &str) -> Result<i64, ApiError> {
    v.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!(
            "strconv.ParseInt: parsing {}: {why}",
            crate::auth::rbac::go_quote(v)
        ))
    })
}

pub fn list_options(q: &Query) -> Result<ListOptions, ApiError> {
    let (_, limit) = list_integers(q)?;
    let limit = limit.filter(|l| *l > 0).map(|l| l as usize);
    Ok(ListOptions {
        label_selector: q.get("labelSelector").cloned(),
        field_selector: q.get("fieldSelector").cloned(),
        limit,
        continue_token: q.get("continue").cloned(),
        resource_version: q.get("resourceVersion").cloned(),
        resource_version_match: q.get("resourceVersionMatch").cloned(),
    })
}

/// The `meta.k8s.io` version a transformed answer is written in: kube serves its Table,
/// PartialObjectMetadata and PartialObjectMetadataList in `v1` and `v1beta1` alike (the same
/// shapes; `AllowsMediaTypeTransform`), each in the version asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaVersion {
    V1,
    V1beta1,
}

impl MetaVersion {
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// What representation the client asked for in `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    Full,
    Table(MetaVersion),
    /// `as=PartialObjectMetadata`: an object's metadata (a list asked for so is refused).
    PartialMetadata(MetaVersion),
    /// `as=PartialObjectMetadataList`: a list's (one object asked for so is refused).
    PartialMetadataList(MetaVersion),
}

/// What an answer is written as: the negotiated media type and representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    pub media: Media,
    pub repr: Representation,
}

impl Output {
    const JSON: Output = Output {
        media: Media::Json,
        repr: Representation::Full,
    };
}

/// The request's `Accept` as Go's `Header.Get` hands it over: the first one, or empty.
pub(crate) fn accept_header(headers: &HeaderMap) -> std::borrow::Cow<'_, str> {
    headers
        .get(header::ACCEPT)
        .map_or(std::borrow::Cow::Borrowed(""), |v| {
            String::from_utf8_lossy(v.as_bytes())
        })
}

/// kube's `NegotiateOutputMediaType` for `ri`'s handlers (`api::negotiation`): the media type
/// and the transform (`Table`, `PartialObjectMetadata` or `PartialObjectMetadataList`, in
/// `meta.k8s.io` `v1` or `v1beta1`) of the first clause of `Accept` that fits, in goautoneg's
/// order; none is kube's 406. Every resource handler asks before it does anything else.
pub fn output(headers: &HeaderMap, ri: &ResourceInfo) -> Result<Output, ApiError> {
    let endpoint = Endpoint::Resource {
        custom: ri.is_custom(),
    };
    let n = negotiation::negotiate(&accept_header(headers), endpoint)
        .ok_or_else(|| ApiError::not_acceptable(negotiation::NOT_ACCEPTABLE))?;
    let repr = match &n.convert {
        None => Representation::Full,
        Some(c) => {
            let version = match c.meta_version() {
                Some("v1beta1") => MetaVersion::V1beta1,
                _ => MetaVersion::V1,
            };
            match c.kind.as_str() {
                "Table" => Representation::Table(version),
                "PartialObjectMetadata" => Representation::PartialMetadata(version),
                _ => Representation::PartialMetadataList(version),
            }
        }
    };
    Ok(Output {
        media: n.media,
        repr,
    })
}

/// The output of a request whose handler [`output`] let through (plain JSON, should it not).
pub fn output_or_json(headers: &HeaderMap, ri: &ResourceInfo) -> Output {
    output(headers, ri).unwrap_or(Output::JSON)
}

/// kube's `NegotiateOutputMediaTypeStream` for a watch of `ri`, after [`output`]: the media
/// type must have a stream serializer (YAML has none), or it is kube's 406 naming the
/// streaming types.
pub fn stream_output(headers: &HeaderMap, ri: &ResourceInfo) -> Result<(), ApiError> {
    let endpoint = Endpoint::Resource {
        custom: ri.is_custom(),
    };
    negotiation::negotiate_stream(&accept_header(headers), endpoint)
        .map(|_| ())
        .ok_or_else(|| ApiError::not_acceptable(negotiation::NOT_ACCEPTABLE_STREAM))
}

/// An API object (a Table, a Scale, a review, a Status) in the negotiated media type.
pub(crate) fn value_response(media: Media, code: StatusCode, v: &Value) -> Response {
    match media {
        Media::Yaml => yaml_response(code, super::yaml::to_yaml(v)),
        // Protobuf is negotiated as kube does, and answered as JSON.
        Media::Json | Media::Protobuf => object_json_response(code, v.to_string().as_bytes()),
    }
}

fn partial_metadata(obj: &StoredObject, version: MetaVersion) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": version.api_version(),
        "metadata": obj.parse().get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A Table (and the PartialObjectMetadata its rows carry) in the version asked for: kube's
/// `asTable` sets both to it. Tables are rendered as `meta.k8s.io/v1`.
pub(crate) fn table_in(version: MetaVersion, table: &mut Value) {
    if version == MetaVersion::V1 {
        return;
    }
    if let Some(t) = table.as_object_mut() {
        t.insert("apiVersion".into(), version.api_version().into());
    }
    for row in table
        .get_mut("rows")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        row_in(version, row);
    }
}

/// A Table row's PartialObjectMetadata in the version asked for (an object included whole
/// keeps its own).
fn row_in(version: MetaVersion, row: &mut Value) {
    if let Some(o) = row.get_mut("object").and_then(Value::as_object_mut) {
        if o.get("kind").and_then(Value::as_str) == Some("PartialObjectMetadata") {
            o.insert("apiVersion".into(), version.api_version().into());
        }
    }
}

/// The Go type kube's handlers name in a 406 for an object (`list`: its list) of `ri` as its
/// REST storage hands it over: the internal type (`*core.ConfigMap`, `*apps.DeploymentList`),
/// or unstructured for custom resources.
fn go_type(ri: &ResourceInfo, list: bool) -> String {
    if ri.is_custom() {
        return if list {
            "*unstructured.UnstructuredList".into()
        } else {
            "*unstructured.Unstructured".into()
        };
    }
    // The package of the internal types: events.k8s.io Events are core Events.
    let package = match ri.group.as_str() {
        "" | "events.k8s.io" => "core",
        "rbac.authorization.k8s.io" => "rbac",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        group => group.split('.').next().unwrap_or(group),
    };
    let kind = if list { &ri.list_kind } else { &ri.kind };
    format!("*{package}.{kind}")
}

/// kube's 406 for a transform that does not fit the answer (`asPartialObjectMetadata`,
/// `asPartialObjectMetadataList`).
fn not_acceptable_for(ri: &ResourceInfo, list: bool) -> ApiError {
    if list {
        ApiError::not_acceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type(ri, true)
        ))
    } else {
        ApiError::not_acceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(ri, false)
        ))
    }
}

/// One object as `Accept` asks for it. A PartialObjectMetadataList of one object is kube's
/// 406 (answered after a write has been made, as kube transforms the answer after the write).
pub fn object_response(
    ri: &ResourceInfo,
    headers: &HeaderMap,
    query: &Query,
    code: StatusCode,
    obj: Arc<StoredObject>,
) -> Response {
    let obj = Service::present(ri, obj);
    let out = output_or_json(headers, ri);
    match out.repr {
        Representation::Full if out.media == Media::Yaml => {
            yaml_response(code, super::yaml::to_yaml(&obj.parse()))
        }
        Representation::Full => object_json_response(code, &obj.json),
        Representation::PartialMetadata(v) => {
            value_response(out.media, code, &partial_metadata(&obj, v))
        }
        Representation::PartialMetadataList(_) => not_acceptable_for(ri, false).into_response(),
        Representation::Table(v) => {
            let rv = obj.rv.to_string();
            let mut t = table::render(ri, std::slice::from_ref(&obj), &rv, None, query);
            table_in(v, &mut t);
            value_response(out.media, code, &t)
        }
    }
}

/// A list's answer, its items written as the client reads them. `turns`: the turns off the
/// workers its chunks that parse large objects take (`None`: rendered on the workers, for a
/// few computed objects and the unit tests).
pub(super) fn list_response(
    ri: &ResourceInfo,
    headers: &HeaderMap,
    query: &Query,
    page: ListResult,
    turns: Option<super::offload::Turns>,
) -> Result<Response, ApiError> {
    let mut page = page;
    if ri.is_custom() || ri.conversion.is_some() {
        page.items = page
            .items
            .into_iter()
            .map(|o| Service::present(ri, o))
            .collect();
    }
    let rv = page.rv.to_string();
    // A computed list (ComponentStatuses) has no revision: kube's `metadata` is empty.
    let mut meta = if ri.computed {
        json!({})
    } else {
        json!({"resourceVersion": rv})
    };
    if let Some(c) = &page.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(n) = page.remaining {
        meta["remainingItemCount"] = json!(n);
    }
    let out = output_or_json(headers, ri);
    // The envelope (its items, or a Table's rows, empty and last) and how the items follow.
    let (envelope, items_key, encoding) = match out.repr {
        Representation::PartialMetadata(_) => return Err(not_acceptable_for(ri, true)),
        Representation::Table(version) => {
            // kube's table conversion refuses an unknown `includeObject` (on the first row).
            if let Some(v) = query
                .get("includeObject")
                .filter(|v| !matches!(v.as_str(), "" | "None" | "Object" | "Metadata"))
            {
                if !page.items.is_empty() {
                    return Err(ApiError::bad_request(format!(
                        "unrecognized includeObject value: {}",
                        crate::auth::rbac::go_quote(v)
                    )));
                }
            }
            // The envelope (columns and metadata) without rows; the rows follow, a chunk at a
            // time.
            let mut t = table::render(ri, &[], &rv, page.continue_token.as_deref(), query);
            table_in(version, &mut t);
            // As kube's table conversion and `asPartialObjectMetadataList` copy it.
            if let (Some(n), Some(m)) = (
                page.remaining,
                t.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                m.insert("remainingItemCount".into(), json!(n));
            }
            (
                t,
                "rows",
                ListEncoding::Table {
                    ri: Arc::new(ri.clone()),
                    query: query.clone(),
                    version,
                },
            )
        }
        Representation::PartialMetadataList(version) => (
            json!({"kind": "PartialObjectMetadataList", "apiVersion": version.api_version(),
                   "metadata": meta, "items": []}),
            "items",
            ListEncoding::Metadata(version),
        ),
        // The stored bytes are spliced: a list never re-serializes its objects.
        Representation::Full => (
            json!({"kind": ri.list_kind, "apiVersion": ri.api_version(), "metadata": meta,
                   "items": []}),
            "items",
            ListEncoding::Stored,
        ),
    };
    let (head, yaml) = if out.media == Media::Yaml {
        let (head, tail) = YamlTail::start(&envelope, items_key, page.items.is_empty());
        (head, Some(tail))
    } else {
        let text = envelope.to_string();
        let Some(head) = text
            .strip_suffix("[]}")
            .map(|h| &text[..h.len() + 1])
            .filter(|h| h.ends_with(&format!("\"{items_key}\":[")))
        else {
            return Err(ApiError::internal("a list's items are not its last field"));
        };
        (head.to_owned(), None)
    };
    let body = ListBody {
        head: Some(Bytes::from(head)),
        items: page.items.into_iter(),
        first: true,
        encoding,
        done: false,
        yaml,
        turns,
    };
    // The body between pieces; `None` once it is cut (a chunk that could not be rendered: the
    // stream's error, on which hyper aborts the response).
    let pieces = futures::stream::unfold(Some(body), |body| async move {
        let body = body?;
        match body.advance().await {
            Ok(Some((piece, body))) => Some((Ok(piece), Some(body))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    let mut resp = json_response(StatusCode::OK, Body::from_stream(pieces));
    if out.media == Media::Yaml {
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/yaml"),
        );
    }
    resp.extensions_mut().insert(super::inflight::HoldsSlot);
    Ok(resp)
}

/// A list written as YAML: the emitter between chunks, and the envelope's fields that go
/// after the items (go-yaml writes a map's keys in its order: `apiVersion`, `items`, `kind`,
/// `metadata`; a Table's `rows` last).
struct YamlTail {
    emitter: super::yaml::Emitter,
    empty: bool,
    after: Vec<(String, Value)>,
}

impl YamlTail {
    /// The YAML up to the items (`items:`, or `items: []` for none) and what follows them.
    fn start(envelope: &Value, items_key: &str, empty: bool) -> (String, YamlTail) {
        let mut emitter = super::yaml::Emitter::new();
        let mut after = Vec::new();
        emitter.begin_mapping();
        if let Some(m) = envelope.as_object() {
            let mut past = false;
            for k in super::yaml::sorted_keys(m) {
                let v = m.get(k).unwrap_or(&Value::Null);
                if k == items_key {
                    emitter.key(k);
                    emitter.begin_items(empty);
                    past = true;
                } else if past {
                    after.push((k.clone(), v.clone()));
                } else {
                    emitter.key(k);
                    emitter.value(v);
                }
            }
        }
        let head = emitter.take();
        (
            head,
            YamlTail {
                emitter,
                empty,
                after,
            },
        )
    }

    fn item(&mut self, buf: &mut BytesMut, v: &Value) {
        self.emitter.item(v);
        buf.put_slice(self.emitter.take().as_bytes());
    }

    /// The end of the document: the items closed, the fields after them.
    fn finish(&mut self) -> Bytes {
        if !self.empty {
            self.emitter.end_items();
        }
        for (k, v) in std::mem::take(&mut self.after) {
            self.emitter.key(&k);
            self.emitter.value(&v);
        }
        self.emitter.end_mapping();
        self.emitter.end_document();
        Bytes::from(self.emitter.take())
    }
}

/// How a streamed list writes its items.
enum ListEncoding {
    /// As stored (their JSON spliced).
    Stored,
    /// As `PartialObjectMetadata` (of this version).
    Metadata(MetaVersion),
    /// As Table rows (their PartialObjectMetadata of this version).
    Table {
        ri: Arc<ResourceInfo>,
        query: Query,
        version: MetaVersion,
    },
}

/// Bytes of items a list writes at once. A chunk that parses its objects (Table rows, metadata,
/// YAML) stops once it has taken this many stored bytes of them: a big object is a chunk of its
/// own.
const LIST_CHUNK: usize = 64 * 1024;
/// Table rows rendered at once.
const TABLE_ROWS: usize = 64;

/// A list response written as the connection takes it (kube's streaming collection encoding):
/// the envelope, then the items a chunk at a time, then the end. A client that reads slowly
/// holds the page's pointers (the objects are the store's), not the encoded list; Table rows,
/// metadata and YAML are rendered a chunk at a time, between other requests' work.
///
/// Those parse their objects, and their output is small (a Table row, a `PartialObjectMetadata`
/// of a 1.3 MB ConfigMap is a few dozen bytes): the socket never pushes back, so nothing else
/// makes the body give its worker up between chunks. One Table LIST of 300 such ConfigMaps held
/// a worker for 4.7 s, and two of them kept an administrator's GET waiting for 12 s. So a chunk
/// that parses more than [`super::offload::HEAVY_BYTES`] of objects is rendered on a blocking
/// thread, in a turn off the workers (`offload.rs`, its request's share, within its deadline),
/// and any other that parses is rendered after a yield to the scheduler: the workers then hold
/// at most some 64 KiB of parsing (under a millisecond) of a list at a time. Plain JSON items are
/// spliced as stored, nothing parsed; the socket paces them.
struct ListBody {
    head: Option<Bytes>,
    items: std::vec::IntoIter<Arc<StoredObject>>,
    first: bool,
    encoding: ListEncoding,
    done: bool,
    /// Written as YAML (`Accept: application/yaml`), an item at a time too.
    yaml: Option<YamlTail>,
    /// The turns off the workers its heavy chunks take (`None`: all rendered here).
    turns: Option<super::offload::Turns>,
}

/// How many of `items` a chunk that parses them takes, and their stored bytes: up to `rows` of
/// them, stopping once they reach [`LIST_CHUNK`] bytes.
fn parse_chunk(items: &[Arc<StoredObject>], rows: usize) -> (usize, usize) {
    let (mut n, mut bytes) = (0, 0);
    for o in items.iter().take(rows) {
        if bytes >= LIST_CHUNK {
            break;
        }
        bytes += o.json.len();
        n += 1;
    }
    (n, bytes)
}

impl ListBody {
    /// The rows its next chunk takes at most, and why it would be rendered off the workers, if
    /// it parses its objects (`None`: its items are spliced as stored).
    fn parses(&self) -> Option<(usize, super::offload::Heavy)> {
        use super::offload::Heavy;
        match (&self.encoding, &self.yaml) {
            (ListEncoding::Table { .. }, _) => Some((TABLE_ROWS, Heavy::ListTable)),
            (ListEncoding::Metadata(_), _) => Some((usize::MAX, Heavy::ListMetadata)),
            (ListEncoding::Stored, Some(_)) => Some((usize::MAX, Heavy::ListYaml)),
            (ListEncoding::Stored, None) => None,
        }
    }

    /// The body's next piece and the body, `None` after its end. `Err` when a chunk could not be
    /// rendered (its wait for a turn passed the request's deadline, or its thread failed): the
    /// body is cut there, as kube's timeout cuts a list it is still writing.
    async fn advance(mut self) -> Result<Option<(Bytes, ListBody)>, super::offload::OffloadError> {
        let parses = match self.parses() {
            Some((rows, why)) if self.head.is_none() && !self.done => {
                Some((parse_chunk(self.items.as_slice(), rows).1, why))
            }
            _ => None,
        };
        let heavy = match parses {
            Some((bytes, why))
                if u64::try_from(bytes).unwrap_or(u64::MAX) > super::offload::HEAVY_BYTES =>
            {
                Some(why)
            }
            _ => None,
        };
        if let Some(why) = heavy {
            if let Some(turns) = self.turns.clone() {
                // The body goes to the thread and comes back with the chunk (the YAML emitter
                // and the items are its state).
                let (piece, body) = turns
                    .run(why, move || {
                        let piece = self.next_chunk();
                        (piece, self)
                    })
                    .await?;
                return Ok(piece.map(|p| (p, body)));
            }
        }
        if parses.is_some() {
            // Other requests' work first: chunks of small objects, one after another, would
            // otherwise hold the worker for the whole list.
            tokio::task::yield_now().await;
        }
        Ok(self.next_chunk().map(|p| (p, self)))
    }

    fn next_chunk(&mut self) -> Option<Bytes> {
        if let Some(h) = self.head.take() {
            return Some(h);
        }
        if self.done {
            return None;
        }
        let mut buf = BytesMut::new();
        match self.parses() {
            None => {
                while buf.len() < LIST_CHUNK {
                    let Some(o) = self.items.next() else { break };
                    if !std::mem::take(&mut self.first) {
                        buf.put_u8(b',');
                    }
                    buf.put_slice(&o.json);
                }
            }
            Some((rows, _)) => {
                let (n, _) = parse_chunk(self.items.as_slice(), rows);
                let chunk: Vec<Arc<StoredObject>> = self.items.by_ref().take(n).collect();
                self.render(&mut buf, &chunk);
            }
        }
        if buf.is_empty() {
            self.done = true;
            return Some(match &mut self.yaml {
                Some(y) => y.finish(),
                None => Bytes::from_static(b"]}\n"),
            });
        }
        Some(buf.freeze())
    }

    /// `chunk`'s items as the list writes them, parsed: Table rows, `PartialObjectMetadata`, or
    /// YAML.
    fn render(&mut self, buf: &mut BytesMut, chunk: &[Arc<StoredObject>]) {
        /// The comma before every item but the first.
        fn sep(buf: &mut BytesMut, first: &mut bool) {
            if !std::mem::take(first) {
                buf.put_u8(b',');
            }
        }
        match &self.encoding {
            ListEncoding::Stored | ListEncoding::Metadata(_) => {
                for o in chunk {
                    match (&mut self.yaml, &self.encoding) {
                        (Some(y), ListEncoding::Metadata(v)) => {
                            y.item(buf, &partial_metadata(o, *v))
                        }
                        (Some(y), _) => y.item(buf, &o.parse()),
                        (None, ListEncoding::Metadata(v)) => {
                            sep(buf, &mut self.first);
                            buf.put_slice(partial_metadata(o, *v).to_string().as_bytes())
                        }
                        (None, _) => {
                            sep(buf, &mut self.first);
                            buf.put_slice(&o.json)
                        }
                    }
                }
            }
            ListEncoding::Table { ri, query, version } => {
                if !chunk.is_empty() {
                    let mut t = table::render(ri, chunk, "", None, query);
                    for row in t["rows"].as_array_mut().into_iter().flatten() {
                        row_in(*version, row);
                        match &mut self.yaml {
                            Some(y) => y.item(buf, row),
                            None => {
                                sep(buf, &mut self.first);
                                buf.put_slice(row.to_string().as_bytes());
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The representation `Accept` asks of a built-in resource (plain, should nothing fit).
    fn representation(headers: &HeaderMap) -> Representation {
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        output_or_json(headers, &ri).repr
    }

    async fn body_text(resp: Response) -> (StatusCode, String, String) {
        use http_body_util::BodyExt;
        let code = resp.status();
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        (code, ct, String::from_utf8(bytes.to_vec()).expect("UTF-8"))
    }

    /// `Accept: application/yaml`: one object, a Table and a list (streamed an item at a time)
    /// as kube's YAML serializer writes them.
    #[tokio::test]
    async fn yaml_is_served_for_objects_tables_and_lists() {
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        let q = Query::new();
        let yaml = accepting("application/yaml");
        let (code, ct, text) = body_text(object_response(
            &ri,
            &yaml,
            &q,
            StatusCode::CREATED,
            configmap("a"),
        ))
        .await;
        assert_eq!(
            (code, ct.as_str()),
            (StatusCode::CREATED, "application/yaml")
        );
        assert_eq!(
            text,
            "apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  resourceVersion: \"7\"\n"
        );
        let table = accepting("application/yaml;as=Table;g=meta.k8s.io;v=v1");
        let (_, ct, text) = body_text(object_response(
            &ri,
            &table,
            &q,
            StatusCode::OK,
            configmap("a"),
        ))
        .await;
        assert_eq!(ct, "application/yaml");
        assert!(
            text.starts_with("apiVersion: meta.k8s.io/v1\ncolumnDefinitions:\n- "),
            "{text}"
        );
        assert!(text.contains("\nkind: Table\n"), "{text}");
        async fn listed(
            accept: &str,
            items: Vec<Arc<StoredObject>>,
        ) -> (StatusCode, String, String) {
            let reg = crate::model::Registry::with_builtins();
            let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
            let page = ListResult {
                rv: 9,
                items,
                continue_token: None,
                remaining: None,
            };
            let resp = list_response(&ri, &accepting(accept), &Query::new(), page, None)
                .map_err(|e| e.message)
                .expect("a list");
            body_text(resp).await
        }
        let (_, ct, text) = listed("application/yaml", vec![configmap("a"), configmap("b")]).await;
        assert_eq!(ct, "application/yaml");
        let item = |n: &str| {
            format!("- apiVersion: v1\n  data:\n    k: v\n  kind: ConfigMap\n  metadata:\n    name: {n}\n    namespace: ns\n    resourceVersion: \"7\"\n")
        };
        assert_eq!(
            text,
            format!(
                "apiVersion: v1\nitems:\n{}{}kind: ConfigMapList\nmetadata:\n  resourceVersion: \"9\"\n",
                item("a"),
                item("b")
            )
        );
        // The same as the whole list converted at once.
        let (_, _, json_text) =
            listed("application/json", vec![configmap("a"), configmap("b")]).await;
        let whole: Value = serde_json::from_str(&json_text).expect("JSON");
        assert_eq!(text, crate::api::yaml::to_yaml(&whole));
        let (_, _, text) = listed("application/yaml", vec![]).await;
        assert_eq!(
            text,
            "apiVersion: v1\nitems: []\nkind: ConfigMapList\nmetadata:\n  resourceVersion: \"9\"\n"
        );
        let (_, _, text) = listed(
            "application/yaml;as=Table;g=meta.k8s.io;v=v1",
            vec![configmap("a")],
        )
        .await;
        let (_, _, json_text) = listed(
            "application/json;as=Table;g=meta.k8s.io;v=v1",
            vec![configmap("a")],
        )
        .await;
        let whole: Value = serde_json::from_str(&json_text).expect("JSON");
        assert_eq!(text, crate::api::yaml::to_yaml(&whole));
        let (_, _, text) = listed(
            "application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            vec![configmap("a")],
        )
        .await;
        assert!(
            text.contains("\nkind: PartialObjectMetadataList\n"),
            "{text}"
        );
    }

    /// q-values order the alternatives (goautoneg), and a header nothing fits is kube's 406.
    #[test]
    fn accept_is_negotiated_by_q() {
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        let media = |accept: &str| output(&accepting(accept), &ri).map(|o| o.media);
        assert_eq!(
            media("application/json;q=0.5, application/yaml").ok(),
            Some(Media::Yaml)
        );
        assert_eq!(
            media("application/yaml;q=0.5, application/json").ok(),
            Some(Media::Json)
        );
        let e = media("text/html").expect_err("406");
        assert_eq!((e.code, e.reason), (406, "NotAcceptable"));
        assert_eq!(e.message, negotiation::NOT_ACCEPTABLE);
        let e = stream_output(&accepting("application/yaml"), &ri).expect_err("406");
        assert_eq!(
            e.message,
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        );
        assert!(stream_output(&accepting("application/json"), &ri).is_ok());
    }

    /// ConfigMaps named `cm{i}`, of `sizes[i]` bytes of data each.
    fn configmaps_of(sizes: &[usize]) -> Vec<Arc<StoredObject>> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm{i}"), "namespace": "ns", "resourceVersion": "7",
                                 "labels": {"app": "x"}},
                    "data": {"k": "x".repeat(*n)}});
                Arc::new(StoredObject::new(7, v).expect("object"))
            })
            .collect()
    }

    /// The body of a list of `items` as `accept` asks, its chunks rendered as `turns` allows.
    async fn list_body(
        accept: &str,
        query: &Query,
        items: Vec<Arc<StoredObject>>,
        turns: Option<super::super::offload::Turns>,
    ) -> Result<Vec<u8>, String> {
        use http_body_util::BodyExt;
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        let page = ListResult {
            rv: 9,
            items,
            continue_token: Some("next".into()),
            remaining: Some(3),
        };
        let resp = list_response(&ri, &accepting(accept), query, page, turns)
            .map_err(|e| e.message)
            .expect("a list");
        match resp.into_body().collect().await {
            Ok(b) => Ok(b.to_bytes().to_vec()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// A Table or metadata list streamed a chunk at a time is, byte for byte, the whole list
    /// rendered at once (what the list was before its chunks could go off the workers), small
    /// or of many chunks, in JSON and in YAML.
    #[tokio::test]
    async fn table_and_metadata_lists_are_the_whole_list_rendered_at_once() {
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        // Small; and many chunks: 64-row chunks of small objects, and big ones of their own.
        let mut sizes: Vec<usize> = (0..70).map(|i| 10 + i).collect();
        sizes.extend([100_000, 70_000, 200]);
        sizes.extend((70..150).map(|i| 10 + i));
        for items in [configmaps_of(&[5, 6]), configmaps_of(&sizes)] {
            for include in [None, Some("None"), Some("Object")] {
                let mut query = Query::new();
                if let Some(i) = include {
                    query.insert("includeObject".into(), i.into());
                }
                for version in [MetaVersion::V1, MetaVersion::V1beta1] {
                    let v = match version {
                        MetaVersion::V1 => "v1",
                        MetaVersion::V1beta1 => "v1beta1",
                    };
                    let mut whole = table::render(&ri, &items, "9", Some("next"), &query);
                    table_in(version, &mut whole);
                    whole["metadata"]["remainingItemCount"] = json!(3);
                    let want = format!("{whole}\n");
                    let accept = format!("application/json;as=Table;g=meta.k8s.io;v={v}");
                    let got = list_body(&accept, &query, items.clone(), None)
                        .await
                        .expect("a body");
                    assert_eq!(String::from_utf8(got).expect("UTF-8"), want, "{accept}");
                    let accept = format!("application/yaml;as=Table;g=meta.k8s.io;v={v}");
                    let got = list_body(&accept, &query, items.clone(), None)
                        .await
                        .expect("a body");
                    assert_eq!(
                        String::from_utf8(got).expect("UTF-8"),
                        crate::api::yaml::to_yaml(&whole),
                        "{accept}"
                    );
                }
            }
            for version in [MetaVersion::V1, MetaVersion::V1beta1] {
                let whole = json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": version.api_version(),
                    "metadata": {"resourceVersion": "9", "continue": "next", "remainingItemCount": 3},
                    "items": items.iter().map(|o| partial_metadata(o, version)).collect::<Vec<_>>(),
                });
                let v = version.api_version().trim_start_matches("meta.k8s.io/");
                let accept =
                    format!("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v={v}");
                let got = list_body(&accept, &Query::new(), items.clone(), None)
                    .await
                    .expect("a body");
                assert_eq!(
                    String::from_utf8(got).expect("UTF-8"),
                    format!("{whole}\n"),
                    "{accept}"
                );
                let accept =
                    format!("application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v={v}");
                let got = list_body(&accept, &Query::new(), items.clone(), None)
                    .await
                    .expect("a body");
                assert_eq!(
                    String::from_utf8(got).expect("UTF-8"),
                    crate::api::yaml::to_yaml(&whole),
                    "{accept}"
                );
            }
        }
    }

    /// A chunk that parses more than `HEAVY_BYTES` of objects is rendered off the workers (one
    /// turn each, counted by what it renders), and the body is the same as one rendered on the
    /// workers; a plain JSON list parses nothing and takes no turn.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heavy_list_chunks_are_rendered_off_the_workers() {
        use super::super::offload::{Heavy, Offload, Turns};
        // 50 small objects and a big one make the first chunk, then a big one alone (a chunk of
        // its own), another, then 50 small: three heavy chunks.
        let mut sizes = vec![100; 50];
        sizes.extend([100_000, 80_000, 70_000]);
        sizes.extend(vec![100; 50]);
        let items = configmaps_of(&sizes);
        let off = Arc::new(Offload::new(4));
        let turns = Some(Turns {
            offload: off.clone(),
            flow: Some(super::super::inflight::Flow::User("tenant".into())),
            deadline: None,
        });
        let mut none = Query::new();
        none.insert("includeObject".into(), "None".into());
        for (accept, query, why) in [
            (
                "application/json;as=Table;v=v1;g=meta.k8s.io",
                &none,
                Heavy::ListTable,
            ),
            (
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
                &Query::new(),
                Heavy::ListMetadata,
            ),
            ("application/yaml", &Query::new(), Heavy::ListYaml),
        ] {
            let here = list_body(accept, query, items.clone(), None)
                .await
                .expect("a body");
            let before = off.total(why);
            let off_workers = list_body(accept, query, items.clone(), turns.clone())
                .await
                .expect("a body");
            assert_eq!(off.total(why) - before, 3, "{accept}");
            assert!(here == off_workers, "{accept}: the same body");
        }
        let reads = |off: &Offload| {
            [Heavy::ListTable, Heavy::ListMetadata, Heavy::ListYaml].map(|h| off.total(h))
        };
        let before = reads(&off);
        let plain = list_body("application/json", &Query::new(), items, turns).await;
        assert!(plain.is_ok());
        assert_eq!(reads(&off), before, "a plain list parses nothing");
        let mut out = String::new();
        off.render(&mut out);
        assert!(
            out.contains("turtles_api_reads_off_workers_total{reason=\"list_table\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("turtles_api_writes_off_workers_total{reason=\"stored\"} 0\n"),
            "{out}"
        );
    }

    /// A heavy chunk that cannot get a turn before its request's deadline cuts the body (kube's
    /// timeout cuts a list it is still writing): the client sees a failed response, not a short
    /// list.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_heavy_chunk_past_its_deadline_cuts_the_list() {
        use super::super::offload::{Heavy, Offload, Turns};
        let off = Arc::new(Offload::new(1));
        // The one turn, held until the gate opens.
        let (go, gate) = tokio::sync::watch::channel(false);
        let held = {
            let (off, mut gate) = (off.clone(), gate.clone());
            tokio::spawn(async move {
                off.run(Heavy::Stored, None, None, async move {
                    let _ = gate.wait_for(|open| *open).await;
                })
                .await
            })
        };
        let started = tokio::time::Instant::now();
        loop {
            let mut out = String::new();
            off.render(&mut out);
            if out.contains("turtles_api_writes_off_workers 1\n") {
                break;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(10));
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let turns = Some(Turns {
            offload: off.clone(),
            flow: None,
            deadline: Some(tokio::time::Instant::now() + std::time::Duration::from_millis(50)),
        });
        let body = list_body(
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            &Query::new(),
            configmaps_of(&[100_000]),
            turns,
        )
        .await;
        assert!(body.is_err(), "the list was cut");
        assert_eq!(
            off.total(Heavy::ListTable),
            0,
            "what never ran is not counted"
        );
        go.send(true).expect("open the gate");
        held.await.expect("joined").expect("ran");
    }

    /// A list is written a bounded chunk at a time, and the chunks make the list kube writes.
    #[tokio::test]
    async fn lists_stream_in_bounded_chunks() {
        use http_body_util::BodyExt;
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        let items: Vec<Arc<StoredObject>> = (0..40)
            .map(|i| {
                let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm{i}"), "namespace": "ns", "resourceVersion": "7"},
                    "data": {"k": "x".repeat(10_000)}});
                Arc::new(StoredObject::new(7, v).expect("object"))
            })
            .collect();
        for accept in [
            "application/json",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, accept.parse().expect("header"));
            let page = ListResult {
                rv: 9,
                items: items.clone(),
                continue_token: Some("next".into()),
                remaining: Some(3),
            };
            let resp = list_response(&ri, &headers, &Query::new(), page, None).expect("a list");
            let mut body = resp.into_body();
            let mut whole = Vec::new();
            let mut chunks = 0;
            while let Some(frame) = body.frame().await {
                let data = frame.expect("a frame").into_data().expect("data");
                assert!(
                    data.len() <= LIST_CHUNK + 20_000,
                    "{accept}: {}",
                    data.len()
                );
                whole.extend_from_slice(&data);
                chunks += 1;
            }
            // Objects of 10 KB: several chunks (metadata is small enough for one).
            let small = accept.contains("PartialObjectMetadata");
            assert!(small || chunks > 3, "{accept}: {chunks} chunks");
            let list: Value = serde_json::from_slice(&whole).expect("JSON");
            let rows = list
                .get("items")
                .or_else(|| list.get("rows"))
                .expect("items");
            assert_eq!(rows.as_array().map(Vec::len), Some(40), "{accept}");
            assert_eq!(list["metadata"]["continue"], "next", "{accept}");
            assert_eq!(list["metadata"]["remainingItemCount"], 3, "{accept}");
        }
    }

    fn accepting(accept: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, accept.parse().expect("header"));
        headers
    }

    async fn answered(resp: Response) -> (StatusCode, Value) {
        use http_body_util::BodyExt;
        let code = resp.status();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        (code, serde_json::from_slice(&bytes).expect("JSON"))
    }

    fn configmap(name: &str) -> Arc<StoredObject> {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7"},
            "data": {"k": "v"}});
        Arc::new(StoredObject::new(7, v).expect("object"))
    }

    /// `Accept` as kube's negotiation reads it: `as` with `g=meta.k8s.io` and `v=v1` or
    /// `v1beta1`; any other alternative with `as` is passed over.
    #[test]
    fn accept_names_the_transform_and_its_version() {
        use super::MetaVersion::{V1beta1, V1};
        for (accept, want) in [
            ("", Representation::Full),
            ("application/json", Representation::Full),
            (
                "application/json;as=Table;v=v1;g=meta.k8s.io",
                Representation::Table(V1),
            ),
            (
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
                Representation::Table(V1beta1),
            ),
            (
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
                Representation::PartialMetadata(V1beta1),
            ),
            (
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                Representation::PartialMetadataList(V1),
            ),
            // No version, another version, another group or kind: passed over.
            ("application/json;as=Table;g=meta.k8s.io", Representation::Full),
            (
                "application/json;as=Table;g=meta.k8s.io;v=v2,application/json;as=Table;g=meta.k8s.io;v=v1beta1",
                Representation::Table(V1beta1),
            ),
            (
                "application/json;as=Table;g=example.com;v=v1,application/json",
                Representation::Full,
            ),
            (
                "application/json;as=Scale;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                Representation::PartialMetadata(V1),
            ),
            // kubectl's and the metadata client's headers.
            (
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
                Representation::Table(V1),
            ),
            (
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
                Representation::PartialMetadataList(V1),
            ),
        ] {
            assert_eq!(representation(&accepting(accept)), want, "{accept}");
        }
    }

    /// One object asked for as a PartialObjectMetadataList is kube's 406
    /// (`asPartialObjectMetadataList`, naming the internal type); as a PartialObjectMetadata or
    /// a Table it is written in the `meta.k8s.io` version asked for.
    #[tokio::test]
    async fn one_object_as_a_metadata_list_is_not_acceptable() {
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        let q = Query::new();
        let respond = |accept: &str| {
            object_response(&ri, &accepting(accept), &q, StatusCode::OK, configmap("a"))
        };
        let (code, st) = answered(respond(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        ))
        .await;
        assert_eq!(code, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(
            st,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)",
                "reason": "NotAcceptable", "code": 406})
        );
        for (v, api_version) in [("v1", "meta.k8s.io/v1"), ("v1beta1", "meta.k8s.io/v1beta1")] {
            let (code, o) = answered(respond(&format!(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v={v}"
            )))
            .await;
            assert_eq!(code, StatusCode::OK);
            assert_eq!(o["kind"], "PartialObjectMetadata");
            assert_eq!(o["apiVersion"], api_version);
            assert_eq!(o["metadata"]["name"], "a");
            let (code, t) = answered(respond(&format!(
                "application/json;as=Table;g=meta.k8s.io;v={v}"
            )))
            .await;
            assert_eq!(code, StatusCode::OK);
            assert_eq!(t["kind"], "Table");
            assert_eq!(t["apiVersion"], api_version, "{t}");
            assert_eq!(t["rows"][0]["object"]["apiVersion"], api_version, "{t}");
        }
    }

    /// A list asked for as a PartialObjectMetadata is kube's 406 (`asPartialObjectMetadata`),
    /// empty or not; as a PartialObjectMetadataList or a Table it is written in the version
    /// asked for, its items and rows too.
    #[tokio::test]
    async fn a_list_as_one_metadata_is_not_acceptable() {
        let reg = crate::model::Registry::with_builtins();
        let ri = reg.lookup("", "v1", "configmaps").expect("built-in");
        let page = |items: Vec<Arc<StoredObject>>| ListResult {
            rv: 9,
            items,
            continue_token: None,
            remaining: None,
        };
        let pom = accepting("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");
        for items in [vec![], vec![configmap("a")]] {
            let e = match list_response(&ri, &pom, &Query::new(), page(items), None) {
                Err(e) => e,
                Ok(_) => panic!("a list answered as PartialObjectMetadata"),
            };
            assert_eq!((e.code, e.reason), (406, "NotAcceptable"));
            assert_eq!(
                e.message,
                "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
            );
        }
        let v1beta1 = "meta.k8s.io/v1beta1";
        let listed = |accept: &str| {
            list_response(
                &ri,
                &accepting(accept),
                &Query::new(),
                page(vec![configmap("a"), configmap("b")]),
                None,
            )
            .map_err(|e| e.message)
            .expect("a list")
        };
        let (_, l) = answered(listed(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
        ))
        .await;
        assert_eq!(l["kind"], "PartialObjectMetadataList");
        assert_eq!(l["apiVersion"], v1beta1);
        assert_eq!(l["items"][1]["apiVersion"], v1beta1, "{l}");
        assert_eq!(l["items"][1]["metadata"]["name"], "b");
        let (_, t) = answered(listed("application/json;as=Table;g=meta.k8s.io;v=v1beta1")).await;
        assert_eq!(t["apiVersion"], v1beta1, "{t}");
        for row in t["rows"].as_array().expect("rows") {
            assert_eq!(row["object"]["apiVersion"], v1beta1, "{t}");
        }
    }

    /// The Go types kube's 406 names: the internal types of the built-in kinds (events.k8s.io
    /// Events are core Events).
    #[test]
    fn not_acceptable_names_kubes_internal_types() {
        let reg = crate::model::Registry::with_builtins();
        for (group, version, resource, one, list) in [
            (
                "apps",
                "v1",
                "deployments",
                "*apps.Deployment",
                "*apps.DeploymentList",
            ),
            (
                "events.k8s.io",
                "v1",
                "events",
                "*core.Event",
                "*core.EventList",
            ),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "roles",
                "*rbac.Role",
                "*rbac.RoleList",
            ),
            (
                "coordination.k8s.io",
                "v1",
                "leases",
                "*coordination.Lease",
                "*coordination.LeaseList",
            ),
        ] {
            let ri = reg.lookup(group, version, resource).expect("built-in");
            assert_eq!(go_type(&ri, false), one);
            assert_eq!(go_type(&ri, true), list);
        }
    }

    /// A JSON body's repeated keys are read (for the write to report) unless
    /// `fieldValidation=Ignore`; the last value is kept either way.
    #[test]
    fn repeated_keys_are_read_unless_ignored() {
        let json = HeaderMap::new();
        let cms = crate::model::Registry::with_builtins()
            .lookup("", "v1", "configmaps")
            .expect("built-in");
        let body = br#"{"metadata": {"name": "a", "name": "b"}}"#;
        for fv in [FieldValidation::Strict, FieldValidation::Warn] {
            let (v, found) = decode_written(&cms, &json, body, fv).expect("decoded");
            assert_eq!(v["metadata"]["name"], "b");
            let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
            assert_eq!(paths, ["metadata.name"], "{fv:?}");
        }
        let (v, found) =
            decode_written(&cms, &json, body, FieldValidation::Ignore).expect("decoded");
        assert_eq!(v["metadata"]["name"], "b");
        assert!(found.is_empty());
        // Not JSON: kube's wording, under every fieldValidation.
        for fv in [FieldValidation::Strict, FieldValidation::Ignore] {
            let e = decode_written(&cms, &json, b"{\"a\": 1,}", fv).unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"));
            assert_eq!(
                e.message,
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get \
                 version/kind; json parse error: invalid character '}' looking for beginning of \
                 object key string ({\"a\": 1,})"
            );
        }
        // `null` is the empty object; invalid UTF-8 in a string a U+FFFD, as Go reads them.
        let (v, _) = decode_written(&cms, &json, b"null", FieldValidation::Strict).expect("null");
        assert_eq!(v, serde_json::json!({}));
        let (v, _) = decode_written(
            &cms,
            &json,
            b"{\"data\": {\"a\": \"x\xffy\"}}",
            FieldValidation::Strict,
        )
        .expect("decoded");
        assert_eq!(v["data"]["a"], "x\u{fffd}y");
        let mut yaml = HeaderMap::new();
        yaml.insert(
            header::CONTENT_TYPE,
            "application/yaml".parse().expect("header"),
        );
        let (_, found) = decode_written(
            &cms,
            &yaml,
            b"metadata:\n  name: a\n",
            FieldValidation::Strict,
        )
        .expect("decoded");
        assert!(found.is_empty());
    }

    /// `-0` is an integer, as Go reads it; `-0.0`, `1e2` and `1.5` are not.
    #[test]
    fn negative_zero_is_an_integer() {
        fn decode(body: &[u8]) -> Result<Value, crate::builtin::decode::DecodeError> {
            let mut v = decode_json(body).expect("JSON");
            crate::builtin::decode::decode("apps", "v1", "Deployment", &mut v).map(|_| v)
        }
        let v = decode(br#"{"metadata": {"generation": -0}, "spec": {"replicas": -0}}"#)
            .expect("decoded");
        assert_eq!(v["spec"]["replicas"].as_i64(), Some(0));
        // `generation` is a non-pointer `omitempty` int64: at zero it is no field at all.
        assert_eq!(v["metadata"].get("generation"), None);
        for bad in ["-0.0", "1e2", "1.5", "-0e0"] {
            let body = format!("{{\"spec\": {{\"replicas\": {bad}}}}}");
            assert!(decode(body.as_bytes()).is_err(), "{bad}");
        }
        let opts =
            delete_options(&Query::new(), &[], br#"{"gracePeriodSeconds": -0}"#).expect("options");
        assert_eq!(opts.grace_period, Some(0));
    }

    /// A Scale written with PUT names the URL's object (kube's `checkName` and
    /// `EnsureObjectNamespaceMatchesRequestNamespace`).
    #[test]
    fn a_scale_names_the_urls_object() {
        let scale = |meta: Value| {
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": meta,
                   "spec": {"replicas": 2}})
        };
        assert!(check_name(
            &scale(json!({"name": "web", "namespace": "ns"})),
            "ns",
            "web"
        )
        .is_ok());
        assert!(check_name(&scale(json!({"name": "web"})), "ns", "web").is_ok());
        let e = check_name(&scale(json!({"name": "other"})), "ns", "web").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "the name of the object (other) does not match the name on the URL (web)"
            )
        );
        let e = check_name(
            &scale(json!({"name": "other", "namespace": "x"})),
            "ns",
            "web",
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        );
        let e = check_name(&scale(json!({})), "ns", "web").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "the name of the object (web based on URL) was undeterminable: name must be provided"
            )
        );
        // Cluster-scoped: a namespace in the body is cleared, not refused.
        assert!(check_name(&scale(json!({"name": "web", "namespace": "x"})), "", "web").is_ok());
    }

    /// `timeoutSeconds` and `limit` are parsed as kube's parameter codec parses them, before
    /// `ValidateListOptions`: Go's `strconv.ParseInt` and its error in a 400.
    #[test]
    fn list_integers_are_gos() {
        let q = |k: &str, v: &str| Query::from([(k.to_owned(), v.to_owned())]);
        assert_eq!(
            list_integers(&q("timeoutSeconds", "-5")).expect("parsed"),
            (Some(-5), None)
        );
        assert_eq!(
            list_integers(&q("limit", "+7")).expect("parsed"),
            (None, Some(7))
        );
        for (k, v, why) in [
            ("timeoutSeconds", "abc", "invalid syntax"),
            ("timeoutSeconds", "1.5", "invalid syntax"),
            (
                "timeoutSeconds",
                "99999999999999999999",
                "value out of range",
            ),
            ("limit", "", "invalid syntax"),
        ] {
            let e = list_integers(&q(k, v)).unwrap_err();
            assert_eq!(
                (e.code, e.message),
                (400, format!("strconv.ParseInt: parsing \"{v}\": {why}"))
            );
        }
        let mut both = q("timeoutSeconds", "x");
        both.insert("sendInitialEvents".into(), "true".into());
        assert_eq!(validate_list_options(&both, false).unwrap_err().code, 400);
        assert_eq!(list_options(&q("limit", "x")).unwrap_err().code, 400);
    }

    #[test]
    fn durations_as_go_prints_them() {
        let d = std::time::Duration::from_millis;
        assert_eq!(go_duration(d(60_000)), "1m0s");
        assert_eq!(go_duration(d(2_000)), "2s");
        assert_eq!(go_duration(d(1_500)), "1.5s");
        assert_eq!(go_duration(d(3_725_000)), "1h2m5s");
        assert_eq!(
            body_timeout(d(60_000)).message,
            "Timeout: request did not complete within 1m0s"
        );
    }

    #[test]
    fn warnings_follow_kubes_recorder() {
        let w = |s: &str| s.to_owned();
        // Under the limit: all of them, each once, in order.
        assert_eq!(
            warning_texts(&[w("a"), w(""), w("b"), w("a")]),
            vec![w("a"), w("b")]
        );
        // Over it: every warning cut to 256 characters, until 4 Ki are written.
        let long: Vec<String> = (0..40)
            .map(|i| format!("{i:03}{}", "é".repeat(400)))
            .collect();
        let out = warning_texts(&long);
        assert_eq!(out.len(), 16);
        assert!(out.iter().all(|t| t.chars().count() == 256));
        assert!(out[0].starts_with("000") && out[15].starts_with("015"));
        // One long warning among short ones: the short ones stay whole.
        let mut mixed = vec![w("first"), "x".repeat(5000), w("last")];
        let out = warning_texts(&mixed);
        assert_eq!(out, vec![w("first"), "x".repeat(256), w("last")]);
        mixed.truncate(1);
        assert_eq!(warning_texts(&mixed), vec![w("first")]);
    }

    /// apimachinery's `NewWarningHeader`: only `"` and `\` escaped, UTF-8 sent as it is, and a
    /// text with a control character dropped (kube's recorder drops what it refuses).
    #[test]
    fn warning_headers_are_quoted_as_kubes() {
        let mut resp = Response::new(Body::empty());
        add_warnings(
            &mut resp,
            &[
                "say \"déjà vu\" \\ twice".to_owned(),
                "a bell\u{7}".to_owned(),
                "last".to_owned(),
            ],
        );
        let got: Vec<Vec<u8>> = resp
            .headers()
            .get_all(header::WARNING)
            .iter()
            .map(|v| v.as_bytes().to_vec())
            .collect();
        assert_eq!(
            got,
            vec![
                "299 - \"say \\\"déjà vu\\\" \\\\ twice\""
                    .as_bytes()
                    .to_vec(),
                b"299 - \"last\"".to_vec(),
            ]
        );
    }

    /// `dryRun` is checked as kube's option validators check it, in the query (every value of
    /// a repeated parameter, an empty one too) and in a DELETE's body: a 422 on the options'
    /// kind that lists the whole `[]string`, with the options' other causes.
    #[test]
    fn dry_run_values_are_checked_as_kube_checks_them() {
        let info = |uri: &str| {
            RequestInfo::parse(&Method::POST, &uri.parse::<axum::http::Uri>().expect("uri"))
                .expect("parse")
        };
        let cms = "/api/v1/namespaces/a/configmaps";
        let ok =
            checked_write_options(&info(&format!("{cms}?dryRun=All")), Write::Create).expect("All");
        assert!(ok.dry_run);
        let ok = checked_write_options(&info(cms), Write::Create).expect("none");
        assert!(!ok.dry_run);
        for (query, kind, shown) in [
            ("dryRun=bogus", Write::Create, r#"["bogus"]"#),
            ("dryRun=All&dryRun=x", Write::Update, r#"["All","x"]"#),
            ("dryRun=", Write::Patch(PatchType::Merge), r#"[""]"#),
        ] {
            let e = checked_write_options(&info(&format!("{cms}?{query}")), kind).expect_err(query);
            let options = match kind {
                Write::Create => "CreateOptions",
                Write::Update => "UpdateOptions",
                Write::Patch(_) => "PatchOptions",
            };
            assert_eq!((e.code, e.reason), (422, "Invalid"), "{query}");
            assert_eq!(
                e.message,
                format!(
                    "{options}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: {shown}: supported values: \"All\""
                ),
                "{query}"
            );
        }
        // With the options' other causes, in kube's order.
        let e = checked_write_options(
            &info(&format!("{cms}?fieldValidation=Loose&dryRun=Some")),
            Write::Create,
        )
        .expect_err("two causes");
        assert_eq!(
            e.causes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                r#"dryRun: Unsupported value: ["Some"]: supported values: "All""#,
                r#"fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn""#,
            ]
        );

        // A DELETE: the body's list, else the query's.
        let q = Query::new();
        let none: &[String] = &[];
        let all = ["All".to_owned()];
        let e = delete_options(&q, none, br#"{"dryRun": ["bogus"]}"#).expect_err("body");
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["bogus"]: supported values: "All""#
            )
        );
        let e = delete_options(&q, none, br#"{"dryRun": ["All", "x"]}"#).expect_err("body");
        assert!(
            e.message.contains(r#"Unsupported value: ["All","x"]"#),
            "{}",
            e.message
        );
        let bogus = ["All".to_owned(), "bogus".to_owned()];
        let e = delete_options(&q, &bogus, b"").expect_err("query");
        assert!(
            e.message.contains(r#"Unsupported value: ["All","bogus"]"#),
            "{}",
            e.message
        );
        assert!(delete_options(&q, &all, b"").expect("query").dry_run);
        assert!(
            delete_options(&q, &all, br#"{"gracePeriodSeconds": 1}"#)
                .expect("the query's, the body has none")
                .dry_run
        );
        assert!(
            delete_options(&q, none, br#"{"dryRun": ["All"]}"#)
                .expect("body")
                .dry_run
        );
        assert!(
            !delete_options(&q, none, br#"{"dryRun": []}"#)
                .expect("empty")
                .dry_run
        );
        // With a bad policy: both causes, the policy's first.
        let e = delete_options(
            &q,
            none,
            br#"{"propagationPolicy": "Now", "dryRun": ["x"]}"#,
        )
        .expect_err("two causes");
        assert_eq!(
            e.causes
                .iter()
                .map(|c| c.field.as_str())
                .collect::<Vec<_>>(),
            ["propagationPolicy", "dryRun"]
        );
        // Not a list of strings: Go's json.Unmarshal error, a 400.
        let e = delete_options(&q, none, br#"{"dryRun": "All"}"#).expect_err("a string");
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type []string"
            )
        );
    }
}
