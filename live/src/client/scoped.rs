//! The typed kinds verify writes and reads, each with its `Api` scope, and the client's typed
//! verbs over them (every one retried per [`super::retry`]). A twin [`Kind`] picks its Rust type
//! through [`with_type!`].

use std::fmt::Debug;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::retry::not_found;
use super::{Client, ClientError};
use crate::crd::{
    AdmissionCheck, ClusterQueue, Devices, InstanceType, LocalQueue, NodeFeature, ResourceFlavor,
    Topology, TopologySource, Workload,
};

/// A typed kind and how to address it: cluster-scoped kinds ignore the namespace; namespaced
/// kinds without one list across namespaces.
pub trait Scoped:
    Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Serialize + Send + Sync + 'static
{
    fn api(client: kube::Client, namespace: Option<&str>) -> Api<Self>;
}

macro_rules! cluster_scoped {
    ($($t:ty),*) => {$(
        impl Scoped for $t {
            fn api(client: kube::Client, _: Option<&str>) -> Api<Self> {
                Api::all(client)
            }
        }
    )*};
}

macro_rules! namespaced {
    ($($t:ty),*) => {$(
        impl Scoped for $t {
            fn api(client: kube::Client, namespace: Option<&str>) -> Api<Self> {
                match namespace {
                    Some(ns) => Api::namespaced(client, ns),
                    None => Api::all(client),
                }
            }
        }
    )*};
}

cluster_scoped!(
    Node,
    Namespace,
    Devices,
    InstanceType,
    TopologySource,
    Topology,
    ResourceFlavor,
    ClusterQueue,
    AdmissionCheck
);
namespaced!(NodeFeature, LocalQueue, Workload, Pod);

/// Runs `$body` with `$t` bound to the Rust type of twin kind `$kind` (a `Kind`); `$other`
/// for a kind verify has no type for.
#[macro_export]
macro_rules! with_type {
    ($kind:expr, $t:ident => $body:expr, _ => $other:expr) => {{
        use $crate::crd::*;
        use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
        $crate::with_type!(@each $kind, $t, $body, $other; Node, Namespace, NodeFeature, Devices,
            InstanceType, TopologySource, Topology, ResourceFlavor, ClusterQueue, LocalQueue,
            AdmissionCheck, Workload, Pod)
    }};
    (@each $kind:expr, $t:ident, $body:expr, $other:expr; $($ty:ident),*) => {
        $(if $kind.kind == stringify!($ty) {
            type $t = $ty;
            $body
        } else)* {
            $other
        }
    };
}

/// `<kind> <namespace>/<name>` for messages.
pub fn describe(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// A JSON object as the typed `K` (what verify writes must fit its own types).
pub fn typed<K: Scoped>(value: Value, what: &str) -> Result<K, ClientError> {
    serde_json::from_value(value).map_err(|e| ClientError::Object {
        object: what.to_string(),
        message: format!("does not fit verify's type: {e}"),
    })
}

/// `value` through `K` and back: only the fields verify's types carry, in their wire form.
pub fn normalized<K: Scoped>(value: Value) -> Value {
    serde_json::from_value::<K>(value)
        .ok()
        .and_then(|k| serde_json::to_value(k).ok())
        .unwrap_or(Value::Null)
}

impl Client {
    fn api<K: Scoped>(&self, namespace: Option<&str>) -> Api<K> {
        K::api(self.kube.clone(), namespace)
    }

    /// Creates `object` (typed as `K`).
    pub async fn create<K: Scoped>(
        &self,
        namespace: Option<&str>,
        object: Value,
    ) -> Result<K, ClientError> {
        let name = crate::wire::read::name_of(&object);
        let what = format!("creating {}", describe(&K::kind(&()), namespace, &name));
        let object: K = typed(object, &what)?;
        let api = self.api::<K>(namespace);
        let params = PostParams::default();
        self.retrying(&what, || api.create(&params, &object)).await
    }

    /// JSON merge patch of the main resource (a `null` removes a key).
    pub async fn merge<K: Scoped>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<K, ClientError> {
        let what = format!("patching {}", describe(&K::kind(&()), namespace, name));
        let api = self.api::<K>(namespace);
        let patch = Patch::Merge(patch);
        let params = PatchParams::default();
        self.retrying(&what, || api.patch(name, &params, &patch))
            .await
    }

    /// JSON merge patch of `/status` with `{"status": status}`.
    pub async fn merge_status<K: Scoped>(
        &self,
        namespace: Option<&str>,
        name: &str,
        status: &Value,
    ) -> Result<K, ClientError> {
        let what = format!(
            "writing the status of {}",
            describe(&K::kind(&()), namespace, name)
        );
        let api = self.api::<K>(namespace);
        let body = serde_json::json!({ "status": status });
        let patch = Patch::Merge(&body);
        let params = PatchParams::default();
        self.retrying(&what, || api.patch_status(name, &params, &patch))
            .await
    }

    /// Deletes one object; already gone counts as done.
    pub async fn delete<K: Scoped>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), ClientError> {
        let what = format!("deleting {}", describe(&K::kind(&()), namespace, name));
        let api = self.api::<K>(namespace);
        let params = DeleteParams::default();
        match self.retrying(&what, || api.delete(name, &params)).await {
            Ok(_) => Ok(()),
            Err(e) if not_found(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Lists `K` (all namespaces when `namespace` is `None`), optionally by label selector.
    pub async fn list<K: Scoped>(
        &self,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<K>, ClientError> {
        let what = format!("listing {}", K::plural(&()));
        let api = self.api::<K>(namespace);
        let params = match selector {
            Some(s) => ListParams::default().labels(s),
            None => ListParams::default(),
        };
        self.retrying(&what, || api.list(&params))
            .await
            .map(|l| l.items)
    }
}
