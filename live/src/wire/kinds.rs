//! The kind registry: group, version, plural and scope of every kind the chain uses
//! (../shared/crds/README.md "Files" table; core v1 for Node, Namespace, Pod), of the
//! built-in kinds a chart installs (Secrets, ConfigMaps, ServiceAccounts, Deployments, CRDs,
//! webhook configurations, APIServices, RBAC, Leases, PodDisruptionBudgets), and of the kinds
//! a CustomResourceDefinition created at run time adds ([`Kind::runtime`]).

/// What the store does with `status` on create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusOnCreate {
    /// Keep what the client sent (Node: the kubelet registers with a status).
    Keep,
    /// Drop it (custom resources with a status subresource).
    Clear,
    /// Replace it by `{phase: <value>}` (Pod: `Pending`, Namespace: `Active`).
    Phase(&'static str),
    /// Replace it by `{}` (Deployment, PodDisruptionBudget: their strategies' PrepareForCreate
    /// reset the status to its zero value, which serialises as an empty object).
    Empty,
}

/// One served resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind {
    /// API group; empty for core.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    /// Has a `/status` subresource: status ignored on the main resource, spec on `/status`.
    pub has_status: bool,
}

/// core/v1 Node (cluster-scoped, status subresource).
pub const NODE: Kind = Kind {
    group: "",
    version: "v1",
    kind: "Node",
    plural: "nodes",
    namespaced: false,
    has_status: true,
};
/// core/v1 Namespace (cluster-scoped, status subresource).
pub const NAMESPACE: Kind = Kind {
    group: "",
    version: "v1",
    kind: "Namespace",
    plural: "namespaces",
    namespaced: false,
    has_status: true,
};
/// core/v1 Pod (namespaced, status subresource).
pub const POD: Kind = Kind {
    group: "",
    version: "v1",
    kind: "Pod",
    plural: "pods",
    namespaced: true,
    has_status: true,
};
/// nfd.k8s-sigs.io/v1alpha1 NodeFeature (namespaced, no status subresource).
pub const NODE_FEATURE: Kind = Kind {
    group: "nfd.k8s-sigs.io",
    version: "v1alpha1",
    kind: "NodeFeature",
    plural: "nodefeatures",
    namespaced: true,
    has_status: false,
};
/// worker.gpustack.ai/v1alpha1 Devices (cluster-scoped, status subresource).
pub const DEVICES: Kind = Kind {
    group: "worker.gpustack.ai",
    version: "v1alpha1",
    kind: "Devices",
    plural: "devices",
    namespaced: false,
    has_status: true,
};
/// worker.gpustack.ai/v1alpha1 InstanceType (cluster-scoped, status subresource).
pub const INSTANCE_TYPE: Kind = Kind {
    group: "worker.gpustack.ai",
    version: "v1alpha1",
    kind: "InstanceType",
    plural: "instancetypes",
    namespaced: false,
    has_status: true,
};
/// kueue.x-k8s.io/v1beta2 ResourceFlavor (cluster-scoped, no status subresource).
pub const RESOURCE_FLAVOR: Kind = Kind {
    group: "kueue.x-k8s.io",
    version: "v1beta2",
    kind: "ResourceFlavor",
    plural: "resourceflavors",
    namespaced: false,
    has_status: false,
};
/// kueue.x-k8s.io/v1beta2 Topology (cluster-scoped, no status subresource; the operator
/// generates `gpustack-<profile>`, devices.md §5).
pub const TOPOLOGY: Kind = Kind {
    group: "kueue.x-k8s.io",
    version: "v1beta2",
    kind: "Topology",
    plural: "topologies",
    namespaced: false,
    has_status: false,
};
/// worker.gpustack.ai/v1alpha1 TopologySource (cluster-scoped, status subresource with its
/// Ready condition; api/worker/v1alpha1/topology_source.go). No CRD of it is in shared/crds.
pub const TOPOLOGY_SOURCE: Kind = Kind {
    group: "worker.gpustack.ai",
    version: "v1alpha1",
    kind: "TopologySource",
    plural: "topologysources",
    namespaced: false,
    has_status: true,
};
/// kueue.x-k8s.io/v1beta2 ClusterQueue (cluster-scoped, status subresource).
pub const CLUSTER_QUEUE: Kind = Kind {
    group: "kueue.x-k8s.io",
    version: "v1beta2",
    kind: "ClusterQueue",
    plural: "clusterqueues",
    namespaced: false,
    has_status: true,
};
/// kueue.x-k8s.io/v1beta2 LocalQueue (namespaced, status subresource).
pub const LOCAL_QUEUE: Kind = Kind {
    group: "kueue.x-k8s.io",
    version: "v1beta2",
    kind: "LocalQueue",
    plural: "localqueues",
    namespaced: true,
    has_status: true,
};
/// kueue.x-k8s.io/v1beta2 AdmissionCheck (cluster-scoped, status subresource).
pub const ADMISSION_CHECK: Kind = Kind {
    group: "kueue.x-k8s.io",
    version: "v1beta2",
    kind: "AdmissionCheck",
    plural: "admissionchecks",
    namespaced: false,
    has_status: true,
};
/// kueue.x-k8s.io/v1beta2 Workload (namespaced, status subresource).
pub const WORKLOAD: Kind = Kind {
    group: "kueue.x-k8s.io",
    version: "v1beta2",
    kind: "Workload",
    plural: "workloads",
    namespaced: true,
    has_status: true,
};

/// core/v1 Secret (namespaced; `type` defaults to Opaque, `stringData` is folded into `data`).
pub const SECRET: Kind = builtin("", "v1", "Secret", "secrets", true, false);
/// core/v1 ConfigMap (namespaced).
pub const CONFIG_MAP: Kind = builtin("", "v1", "ConfigMap", "configmaps", true, false);
/// core/v1 ServiceAccount (namespaced; the serviceaccount controller makes `default` in
/// every new namespace).
pub const SERVICE_ACCOUNT: Kind =
    builtin("", "v1", "ServiceAccount", "serviceaccounts", true, false);
/// core/v1 PersistentVolumeClaim (namespaced, status subresource): the run directories of
/// verify's Kubernetes Jobs (deploy/).
pub const PERSISTENT_VOLUME_CLAIM: Kind = builtin(
    "",
    "v1",
    "PersistentVolumeClaim",
    "persistentvolumeclaims",
    true,
    true,
);
/// batch/v1 Job (namespaced, status subresource): verify's Indexed Job (deploy/).
pub const JOB: Kind = builtin("batch", "v1", "Job", "jobs", true, true);
/// batch/v1 CronJob (namespaced, status subresource): verify's nightly soak (deploy/).
pub const CRON_JOB: Kind = builtin("batch", "v1", "CronJob", "cronjobs", true, true);
/// apiregistration.k8s.io/v1 APIService (cluster-scoped, status subresource).
pub const API_SERVICE: Kind = builtin(
    "apiregistration.k8s.io",
    "v1",
    "APIService",
    "apiservices",
    false,
    true,
);
/// apps/v1 Deployment (namespaced, status subresource).
pub const DEPLOYMENT: Kind = builtin("apps", "v1", "Deployment", "deployments", true, true);
/// policy/v1 PodDisruptionBudget (namespaced, status subresource).
pub const POD_DISRUPTION_BUDGET: Kind = builtin(
    "policy",
    "v1",
    "PodDisruptionBudget",
    "poddisruptionbudgets",
    true,
    true,
);
/// rbac.authorization.k8s.io/v1 ClusterRole (cluster-scoped).
pub const CLUSTER_ROLE: Kind = builtin(
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRole",
    "clusterroles",
    false,
    false,
);
/// rbac.authorization.k8s.io/v1 ClusterRoleBinding (cluster-scoped).
pub const CLUSTER_ROLE_BINDING: Kind = builtin(
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRoleBinding",
    "clusterrolebindings",
    false,
    false,
);
/// admissionregistration.k8s.io/v1 MutatingWebhookConfiguration (cluster-scoped).
pub const MUTATING_WEBHOOK_CONFIGURATION: Kind = builtin(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    false,
    false,
);
/// admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration (cluster-scoped).
pub const VALIDATING_WEBHOOK_CONFIGURATION: Kind = builtin(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    false,
    false,
);
/// apiextensions.k8s.io/v1 CustomResourceDefinition (cluster-scoped, status subresource).
pub const CUSTOM_RESOURCE_DEFINITION: Kind = builtin(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    false,
    true,
);
/// coordination.k8s.io/v1 Lease (namespaced).
pub const LEASE: Kind = builtin("coordination.k8s.io", "v1", "Lease", "leases", true, false);

const fn builtin(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    has_status: bool,
) -> Kind {
    Kind {
        group,
        version,
        kind,
        plural,
        namespaced,
        has_status,
    }
}

/// The built-in kinds beyond the chain's core three, in the order a real apiserver lists
/// their groups (`GET /apis`: apiregistration, apps, batch, policy, rbac,
/// admissionregistration, apiextensions, coordination).
pub const BUILT_IN: [Kind; 15] = [
    SECRET,
    CONFIG_MAP,
    SERVICE_ACCOUNT,
    PERSISTENT_VOLUME_CLAIM,
    API_SERVICE,
    DEPLOYMENT,
    JOB,
    CRON_JOB,
    POD_DISRUPTION_BUDGET,
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    MUTATING_WEBHOOK_CONFIGURATION,
    VALIDATING_WEBHOOK_CONFIGURATION,
    CUSTOM_RESOURCE_DEFINITION,
    LEASE,
];

/// The API groups of Kubernetes itself: their kinds are not custom resources.
const BUILT_IN_GROUPS: [&str; 9] = [
    "",
    "apiregistration.k8s.io",
    "apps",
    "batch",
    "policy",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "coordination.k8s.io",
];

/// Every kind the twin serves from the start, in the real server's discovery order: the core
/// kinds (the chain's, then the chart's), the built-in groups, then the chain's CRDs.
pub fn served() -> Vec<Kind> {
    let mut out: Vec<Kind> = ALL.iter().filter(|k| k.group.is_empty()).copied().collect();
    out.extend(BUILT_IN);
    out.extend(ALL.iter().filter(|k| !k.group.is_empty()));
    out
}

/// Every kind of the chain (the core three and the chain's custom resources).
pub const ALL: [Kind; 13] = [
    NODE,
    NAMESPACE,
    POD,
    NODE_FEATURE,
    DEVICES,
    INSTANCE_TYPE,
    TOPOLOGY_SOURCE,
    TOPOLOGY,
    RESOURCE_FLAVOR,
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    ADMISSION_CHECK,
    WORKLOAD,
];

impl Kind {
    /// `apiVersion` as written in objects: `v1` for core, else `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` (or `plural` for core), as in NotFound/Conflict messages.
    pub fn qualified_resource(&self) -> String {
        qualify(self.plural, self.group)
    }

    /// `Kind.group` (or `Kind` for core), as in Invalid messages.
    pub fn qualified_kind(&self) -> String {
        qualify(self.kind, self.group)
    }

    /// Built-in kinds allow an update without `metadata.resourceVersion`; custom resources
    /// do not (apiserver rest strategies' AllowUnconditionalUpdate).
    pub fn allows_unconditional_update(&self) -> bool {
        !self.is_custom()
    }

    /// Custom resources (a CRD's kinds) are validated against a structural schema; the
    /// groups of Kubernetes itself are not custom.
    pub fn is_custom(&self) -> bool {
        !BUILT_IN_GROUPS.contains(&self.group)
    }

    /// Whether the server keeps `metadata.generation` for the kind: the strategies of kinds
    /// with a spec set it; Namespaces, Nodes, Secrets, ConfigMaps, ServiceAccounts, Leases,
    /// RBAC objects and APIServices carry none (a real server's answers have no
    /// `generation`).
    pub fn tracks_generation(&self) -> bool {
        !matches!(
            (self.group, self.kind),
            (
                "",
                "Secret" | "ConfigMap" | "ServiceAccount" | "Namespace" | "Node"
            ) | ("coordination.k8s.io", "Lease")
                | (
                    "rbac.authorization.k8s.io",
                    "ClusterRole" | "ClusterRoleBinding"
                )
                | ("apiregistration.k8s.io", "APIService")
        )
    }

    /// The kind a CustomResourceDefinition adds at run time. Kinds are `Copy` with
    /// `&'static str` names so that the store's keys, the router and discovery can pass them
    /// by value everywhere; a runtime kind's names are interned ([`intern`]): each distinct
    /// name is leaked once and reused, so creating and deleting the same CRD again and again
    /// leaks nothing more, and the leak is bounded by the distinct names a run ever serves.
    pub fn runtime(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        has_status: bool,
    ) -> Kind {
        Kind {
            group: intern(group),
            version: intern(version),
            kind: intern(kind),
            plural: intern(plural),
            namespaced,
            has_status,
        }
    }

    /// What happens to `status` on create (apiserver PrepareForCreate per kind).
    pub fn status_on_create(&self) -> StatusOnCreate {
        match (self.group, self.kind) {
            ("", "Node") => StatusOnCreate::Keep,
            ("", "Pod") => StatusOnCreate::Phase("Pending"),
            ("", "Namespace") => StatusOnCreate::Phase("Active"),
            ("apps", "Deployment") | ("policy", "PodDisruptionBudget") => StatusOnCreate::Empty,
            _ if self.has_status => StatusOnCreate::Clear,
            _ => StatusOnCreate::Keep,
        }
    }
}

/// `text` as a `&'static str`: the one already interned, else a newly leaked copy.
pub fn intern(text: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| Mutex::new(HashSet::new()));
    let mut names = match names.lock() {
        Ok(n) => n,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(known) = names.get(text) {
        return known;
    }
    let leaked: &'static str = Box::leak(text.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// `name.group`, or `name` when the group is core.
fn qualify(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}

/// The kind served at `group`/`version` under `plural`.
pub fn by_resource(group: &str, version: &str, plural: &str) -> Option<Kind> {
    ALL.iter()
        .chain(BUILT_IN.iter())
        .find(|k| k.group == group && k.version == version && k.plural == plural)
        .copied()
}

/// The kind named `kind` in `apiVersion` `api_version` (e.g. `worker.gpustack.ai/v1alpha1`).
pub fn by_kind(api_version: &str, kind: &str) -> Option<Kind> {
    ALL.iter()
        .chain(BUILT_IN.iter())
        .find(|k| k.kind == kind && k.api_version() == api_version)
        .copied()
}

/// What `verify audit --context` lists: the kinds of docs/audit.md's kubectl command, plus
/// Namespaces (which decide where LocalQueues must exist). Kueue's Topology objects
/// (`gpustack-<profile>`, kueue.x-k8s.io/v1beta2 as the twin serves them) are the model's
/// `Derived.topologies`.
pub const AUDITED_KINDS: [Kind; 9] = [
    NAMESPACE,
    NODE,
    DEVICES,
    INSTANCE_TYPE,
    RESOURCE_FLAVOR,
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    ADMISSION_CHECK,
    TOPOLOGY,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_match_the_crd_table() {
        let cluster: Vec<&str> = ALL
            .iter()
            .filter(|k| !k.namespaced)
            .map(|k| k.kind)
            .collect();
        assert_eq!(
            cluster,
            [
                "Node",
                "Namespace",
                "Devices",
                "InstanceType",
                "TopologySource",
                "Topology",
                "ResourceFlavor",
                "ClusterQueue",
                "AdmissionCheck"
            ]
        );
        let without_status: Vec<&str> = ALL
            .iter()
            .filter(|k| !k.has_status)
            .map(|k| k.kind)
            .collect();
        assert_eq!(
            without_status,
            ["NodeFeature", "Topology", "ResourceFlavor"]
        );
    }

    #[test]
    fn lookups_by_resource_and_kind() {
        assert_eq!(
            by_resource("kueue.x-k8s.io", "v1beta2", "workloads"),
            Some(WORKLOAD)
        );
        assert_eq!(by_resource("kueue.x-k8s.io", "v1beta1", "workloads"), None);
        assert_eq!(by_kind("v1", "Node"), Some(NODE));
        assert_eq!(
            by_kind("worker.gpustack.ai/v1alpha1", "InstanceType"),
            Some(INSTANCE_TYPE)
        );
        assert_eq!(NODE.api_version(), "v1");
        assert_eq!(DEVICES.qualified_resource(), "devices.worker.gpustack.ai");
    }

    #[test]
    fn status_on_create_per_kind() {
        assert_eq!(NODE.status_on_create(), StatusOnCreate::Keep);
        assert_eq!(POD.status_on_create(), StatusOnCreate::Phase("Pending"));
        assert_eq!(INSTANCE_TYPE.status_on_create(), StatusOnCreate::Clear);
        assert_eq!(NODE_FEATURE.status_on_create(), StatusOnCreate::Keep);
    }
}
