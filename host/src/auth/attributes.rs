//! Request -> RBAC attributes, as kube's RequestInfoFactory derives them from method and path.

use axum::http::Method;

use super::rbac::Attributes;

/// Attributes of a request. `watch` is the value of the `watch` query parameter.
pub fn request_attributes(method: &Method, path: &str, watch: bool) -> Attributes {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let non_resource = || Attributes {
        verb: method.as_str().to_ascii_lowercase(),
        resource_request: false,
        api_group: String::new(),
        resource: String::new(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        path: path.to_owned(),
    };
    let (group, rest) = match segs.as_slice() {
        ["api", _v, rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", g, _v, rest @ ..] if !rest.is_empty() => (*g, rest),
        _ => return non_resource(),
    };
    // namespaces/NS/RESOURCE/... is namespaced, unless it is a namespace's own subresource.
    let (namespace, parts): (&str, &[&str]) = match rest {
        ["namespaces", ns, res, tail @ ..]
            if !(group.is_empty() && matches!(*res, "status" | "finalize")) =>
        {
            let _ = tail;
            (ns, &rest[2..])
        }
        _ => ("", rest),
    };
    let (resource, name, subresource) = match parts {
        [res] => (*res, "", ""),
        [res, name] => (*res, *name, ""),
        [res, name, sub, ..] => (*res, *name, *sub),
        [] => return non_resource(),
    };
    // A namespace object names itself as namespace too (kube sets both).
    let namespace =
        if group.is_empty() && resource == "namespaces" && !name.is_empty() && namespace.is_empty()
        {
            name
        } else {
            namespace
        };
    let verb = match *method {
        Method::GET | Method::HEAD if name.is_empty() && watch => "watch",
        Method::GET | Method::HEAD if name.is_empty() => "list",
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if name.is_empty() => "deletecollection",
        Method::DELETE => "delete",
        _ => "",
    };
    Attributes {
        verb: verb.to_owned(),
        resource_request: true,
        api_group: group.to_owned(),
        resource: resource.to_owned(),
        subresource: subresource.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        path: path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_requests() {
        let a = request_attributes(&Method::POST, "/api/v1/namespaces/foo/configmaps", false);
        assert_eq!(
            (a.verb.as_str(), a.resource.as_str(), a.namespace.as_str()),
            ("create", "configmaps", "foo")
        );
        let a = request_attributes(&Method::GET, "/apis/coordination.k8s.io/v1/leases", true);
        assert_eq!(
            (a.verb.as_str(), a.api_group.as_str(), a.namespace.as_str()),
            ("watch", "coordination.k8s.io", "")
        );
        let a = request_attributes(&Method::PUT, "/api/v1/namespaces/ns/pods/p/status", false);
        assert_eq!(
            (a.verb.as_str(), a.name.as_str(), a.subresource.as_str()),
            ("update", "p", "status")
        );
        let a = request_attributes(&Method::GET, "/api/v1/namespaces/foo", false);
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.namespace.as_str()),
            ("namespaces", "foo", "foo")
        );
        let a = request_attributes(&Method::DELETE, "/api/v1/namespaces/foo/secrets", false);
        assert_eq!(a.verb, "deletecollection");
    }

    #[test]
    fn non_resource_requests() {
        for p in [
            "/api",
            "/apis",
            "/api/v1",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
        ] {
            let a = request_attributes(&Method::GET, p, false);
            assert!(!a.resource_request, "{p}");
            assert_eq!(a.verb, "get");
        }
    }
}
