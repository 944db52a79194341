//! kube's CEL authorizer library (`k8s.io/apiserver/pkg/cel/library/authz.go`): the
//! `authorizer` variable of admission policies and webhook match conditions, and
//! `authorizer.requestResource`.
//!
//! ```text
//! authorizer.group('apps').resource('deployments').namespace('ns').name('x').check('create').allowed()
//! authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').reason()
//! authorizer.path('/healthz').check('get').allowed()
//! authorizer.requestResource.subresource('scale').check('update').allowed()
//! ```
//!
//! Each receiver is an opaque value of kube's type (`kubernetes.authorization.Authorizer`,
//! `GroupCheck`, `ResourceCheck`, `PathCheck`, `Decision`); `check` asks the same authorizer
//! every API request goes through, as the request's user (or the service account named). The
//! interpreter selects fields only from maps, so `authorizer.requestResource` is rewritten to the
//! variable [`REQUEST_RESOURCE`] when the expression is compiled.
//!
//! A `check` costs [`CHECK_COST`], as in kube. Differences from kube: `fieldSelector` and
//! `labelSelector` are accepted and kept, but RBAC (the only authorizer here) never looks at
//! selectors, as kube's RBAC does not.

use std::fmt;
use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{Context, ExecutionError, Value as CelValue};

use crate::auth::rbac::{Attributes, Decision, UserInfo, SERVICE_ACCOUNT_USERNAME_PREFIX};

/// What one `check` costs (kube's `authzCheckCost`): an expression may make at most two.
pub const CHECK_COST: u64 = 350_000;

/// The variable `authorizer.requestResource` becomes when compiled.
pub const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// The functions of the library (method calls only).
pub const FUNCTIONS: &[&str] = &[
    "allowed",
    "check",
    "error",
    "errored",
    "fieldSelector",
    "group",
    "labelSelector",
    "name",
    "namespace",
    "path",
    "reason",
    "resource",
    "serviceAccount",
    "subresource",
];

/// What answers `check`: the host's authorizer.
pub trait AccessCheck: Send + Sync {
    fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision;
}

impl AccessCheck for crate::auth::Authorizer {
    fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        crate::auth::Authorizer::authorize(self, user, attrs)
    }
}

/// `authorizer`: who checks, as whom.
#[derive(Clone)]
struct Authz {
    user: Arc<UserInfo>,
    checker: Arc<dyn AccessCheck>,
}

impl fmt::Debug for Authz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("user", &self.user.name)
            .finish()
    }
}

impl PartialEq for Authz {
    fn eq(&self, other: &Self) -> bool {
        self.user == other.user && Arc::ptr_eq(&self.checker, &other.checker)
    }
}
impl Eq for Authz {}

impl Opaque for Authz {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct PathCheck {
    authz: Authz,
    path: String,
}

impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.PathCheck"
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct GroupCheck {
    authz: Authz,
    group: String,
}

impl Opaque for GroupCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.GroupCheck"
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ResourceCheck {
    authz: Authz,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    field_selector: String,
    label_selector: String,
}

impl Opaque for ResourceCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.ResourceCheck"
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct AuthzDecision {
    allowed: bool,
    reason: String,
}

impl Opaque for AuthzDecision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

/// The request a policy evaluates, as `authorizer.requestResource` checks it.
pub struct RequestResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// The `authorizer` variable for `user`.
pub fn authorizer(user: &UserInfo, checker: Arc<dyn AccessCheck>) -> CelValue {
    CelValue::Opaque(Arc::new(Authz {
        user: Arc::new(user.clone()),
        checker,
    }))
}

/// The `authorizer.requestResource` variable: a ResourceCheck of the request's resource,
/// subresource, namespace and name (kube's `NewResourceAuthorizerVal`).
pub fn request_resource(
    user: &UserInfo,
    checker: Arc<dyn AccessCheck>,
    r: &RequestResource<'_>,
) -> CelValue {
    CelValue::Opaque(Arc::new(ResourceCheck {
        authz: Authz {
            user: Arc::new(user.clone()),
            checker,
        },
        group: r.group.to_owned(),
        resource: r.resource.to_owned(),
        subresource: r.subresource.to_owned(),
        namespace: r.namespace.to_owned(),
        name: r.name.to_owned(),
        field_selector: String::new(),
        label_selector: String::new(),
    }))
}

/// Register the library's functions.
pub fn register(ctx: &mut Context<'_>) {
    ctx.add_function("path", path);
    ctx.add_function("group", group);
    ctx.add_function("serviceAccount", service_account);
    ctx.add_function("resource", resource);
    ctx.add_function("subresource", subresource);
    ctx.add_function("namespace", namespace);
    ctx.add_function("name", name);
    ctx.add_function("fieldSelector", field_selector);
    ctx.add_function("labelSelector", label_selector);
    ctx.add_function("check", check);
    ctx.add_function("allowed", allowed);
    ctx.add_function("reason", reason);
    ctx.add_function("errored", errored);
    ctx.add_function("error", error);
}

fn opaque<T: Opaque + Clone>(v: &CelValue) -> Result<T, ExecutionError> {
    match v {
        CelValue::Opaque(o) => o
            .downcast_ref::<T>()
            .cloned()
            .ok_or(ExecutionError::NoSuchOverload),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn string(v: &CelValue) -> Result<String, ExecutionError> {
    match v {
        CelValue::String(s) => Ok(s.to_string()),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn wrap<T: Opaque>(t: T) -> Result<CelValue, ExecutionError> {
    Ok(CelValue::Opaque(Arc::new(t)))
}

fn error_text(name: &str, message: &str) -> ExecutionError {
    ExecutionError::function_error(name, message)
}

fn path(This(this): This<CelValue>, p: CelValue) -> Result<CelValue, ExecutionError> {
    let authz: Authz = opaque(&this)?;
    let path = string(&p)?;
    if path.trim().is_empty() {
        return Err(error_text("path", "path must not be empty"));
    }
    wrap(PathCheck { authz, path })
}

fn group(This(this): This<CelValue>, g: CelValue) -> Result<CelValue, ExecutionError> {
    let authz: Authz = opaque(&this)?;
    wrap(GroupCheck {
        authz,
        group: string(&g)?,
    })
}

fn service_account(
    This(this): This<CelValue>,
    ns: CelValue,
    sa: CelValue,
) -> Result<CelValue, ExecutionError> {
    let authz: Authz = opaque(&this)?;
    let (namespace, name) = (string(&ns)?, string(&sa)?);
    // kube checks the name first, then the namespace.
    if !crate::model::meta::is_dns_subdomain(&name) {
        return Err(error_text("serviceAccount", "Invalid service account name"));
    }
    if !crate::model::meta::is_dns_label(&namespace) {
        return Err(error_text(
            "serviceAccount",
            "Invalid service account namespace",
        ));
    }
    // kube's `ServiceAccountInfo.UserInfo()`: the user and its two groups.
    let user = UserInfo {
        name: format!("{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..UserInfo::default()
    };
    wrap(Authz {
        user: Arc::new(user),
        checker: authz.checker,
    })
}

fn resource(This(this): This<CelValue>, r: CelValue) -> Result<CelValue, ExecutionError> {
    let g: GroupCheck = opaque(&this)?;
    let resource = string(&r)?;
    if resource.trim().is_empty() {
        return Err(error_text("resource", "resource must not be empty"));
    }
    wrap(ResourceCheck {
        authz: g.authz,
        group: g.group,
        resource,
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        field_selector: String::new(),
        label_selector: String::new(),
    })
}

/// A ResourceCheck with one field replaced.
fn with(
    this: &CelValue,
    v: &CelValue,
    set: impl FnOnce(&mut ResourceCheck, String),
) -> Result<CelValue, ExecutionError> {
    let mut r: ResourceCheck = opaque(this)?;
    set(&mut r, string(v)?);
    wrap(r)
}

fn subresource(This(this): This<CelValue>, v: CelValue) -> Result<CelValue, ExecutionError> {
    with(&this, &v, |r, s| r.subresource = s)
}

fn namespace(This(this): This<CelValue>, v: CelValue) -> Result<CelValue, ExecutionError> {
    with(&this, &v, |r, s| r.namespace = s)
}

fn name(This(this): This<CelValue>, v: CelValue) -> Result<CelValue, ExecutionError> {
    with(&this, &v, |r, s| r.name = s)
}

fn field_selector(This(this): This<CelValue>, v: CelValue) -> Result<CelValue, ExecutionError> {
    with(&this, &v, |r, s| r.field_selector = s)
}

fn label_selector(This(this): This<CelValue>, v: CelValue) -> Result<CelValue, ExecutionError> {
    with(&this, &v, |r, s| r.label_selector = s)
}

fn check(This(this): This<CelValue>, v: CelValue) -> Result<CelValue, ExecutionError> {
    let verb = string(&v)?;
    let (authz, attrs) = if let Ok(p) = opaque::<PathCheck>(&this) {
        let attrs = Attributes {
            verb,
            path: p.path,
            ..Attributes::default()
        };
        (p.authz, attrs)
    } else {
        let r: ResourceCheck = opaque(&this)?;
        let attrs = Attributes {
            verb,
            resource_request: true,
            api_group: r.group,
            resource: r.resource,
            subresource: r.subresource,
            namespace: r.namespace,
            name: r.name,
            path: String::new(),
        };
        (r.authz, attrs)
    };
    let decision = authz.checker.authorize(&authz.user, &attrs);
    wrap(AuthzDecision {
        allowed: decision.is_allowed(),
        reason: decision.reason().to_owned(),
    })
}

fn allowed(This(this): This<CelValue>) -> Result<CelValue, ExecutionError> {
    Ok(CelValue::Bool(opaque::<AuthzDecision>(&this)?.allowed))
}

fn reason(This(this): This<CelValue>) -> Result<CelValue, ExecutionError> {
    Ok(CelValue::String(Arc::new(
        opaque::<AuthzDecision>(&this)?.reason,
    )))
}

/// RBAC answers without errors: never errored.
fn errored(This(this): This<CelValue>) -> Result<CelValue, ExecutionError> {
    opaque::<AuthzDecision>(&this)?;
    Ok(CelValue::Bool(false))
}

fn error(This(this): This<CelValue>) -> Result<CelValue, ExecutionError> {
    opaque::<AuthzDecision>(&this)?;
    Ok(CelValue::String(Arc::new(String::new())))
}
