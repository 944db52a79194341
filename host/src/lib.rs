//! turtles: a Kubernetes-style control plane. One HTTP API server on embedded storage; every
//! resource is a URL, every change is stored, and any GET can become an ordered event stream.
//!
//! Data flows one way: `api` (HTTP) -> `service` (kube semantics) -> `store` (sled), and the
//! store publishes committed events to watchers. See `docs/architecture.md`.

pub mod admission;
pub mod aggregator;
pub mod allocator;
pub mod api;
pub mod apply;
pub mod auth;
pub mod builtin;
pub mod claims;
pub mod controllers;
pub mod crd;
pub mod heap;
pub mod hugetext;
pub mod informer;
pub mod ingress_admission;
pub mod leader;
pub mod limitrange;
pub mod metrics;
pub mod model;
pub mod pace;
pub mod patch;
pub mod pod_admission;
pub mod priority;
pub mod project;
pub mod quota;
pub mod runtime;
pub mod schema;
pub mod selector;
pub mod server;
pub mod service;
pub mod store;
pub mod volume_admission;

#[cfg(test)]
mod fuzz;
