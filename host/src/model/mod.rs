//! Pure types shared by every layer: what a resource is, how objects are keyed, the Kubernetes
//! `Status` error shape, and small helpers over object metadata. No I/O happens here.

pub mod fields;
pub mod gojson;
pub mod json;
pub mod limits;
pub mod meta;
pub mod registry;
pub mod status;
pub mod workloads;

pub use registry::{Registry, ResourceInfo, Scope};
pub use status::{ApiError, Cause};

/// Where one object lives: its group-resource (version independent, like kube's etcd keys),
/// namespace (empty for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// `configmaps` for the core group, `leases.coordination.k8s.io` for named groups.
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(resource: &str, namespace: &str, name: &str) -> Self {
        Self {
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The key inside one resource's ordered map: `namespace/name` (`/name` when cluster-scoped),
    /// so that a namespace's objects are one contiguous range, ordered like kube lists them.
    pub fn item_key(&self) -> String {
        item_key(&self.namespace, &self.name)
    }
}

pub fn item_key(namespace: &str, name: &str) -> String {
    let mut k = String::with_capacity(namespace.len() + name.len() + 1);
    k.push_str(namespace);
    k.push('/');
    k.push_str(name);
    k
}

/// The kind of change a watch event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}
