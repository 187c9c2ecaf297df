//! What an uninstall left behind: the objects of the after-inventory the before-inventory did
//! not hold, grouped by the release that created them, minus the churn a cluster makes by
//! itself (a table of rules, each with its reason).
//!
//! The operator's case 2 (`cases/case-2.sh`, chart e2e skill) asserts no leftover releases,
//! CRDs still owned by the release (both Helm annotations as a pair), APIServices and
//! ClusterRoleBindings, with `gpustack-system` kept on purpose. A whole-cluster difference
//! asserts all of that and more, so its allowances must be explicit.

use std::collections::{BTreeMap, BTreeSet};

use crate::inventory::{Inventory, ObjectRecord};

/// The operator's namespace, kept by its teardown on purpose (case-2.sh header).
pub const KEPT_NAMESPACE: &str = "gpustack-system";

/// One allowed kind of churn.
pub struct Allowance {
    pub rule: &'static str,
    pub why: &'static str,
    pub allows: fn(&ObjectRecord) -> bool,
}

/// What an uninstall may leave, and why.
pub const ALLOWED: &[Allowance] = &[
    Allowance {
        rule: "Namespace gpustack-system",
        why: "the operator's teardown keeps its namespace on purpose (case 2)",
        allows: |o| o.kind == "Namespace" && o.group().is_empty() && o.name == KEPT_NAMESPACE,
    },
    Allowance {
        rule: "Events (core and events.k8s.io)",
        why: "every controller and the kubelet record Events; they expire on their own (TTL)",
        allows: |o| o.kind == "Event" && matches!(o.group(), "" | "events.k8s.io"),
    },
    Allowance {
        rule: "Leases (coordination.k8s.io)",
        why: "leader election and node heartbeats; the apiserver's own identity leases churn",
        allows: |o| o.kind == "Lease" && o.group() == "coordination.k8s.io",
    },
    Allowance {
        rule: "Endpoints and EndpointSlices",
        why: "the endpoints controllers make them for every Service (the Service itself is checked)",
        allows: |o| {
            (o.kind == "Endpoints" && o.group().is_empty())
                || (o.kind == "EndpointSlice" && o.group() == "discovery.k8s.io")
        },
    },
    Allowance {
        rule: "ConfigMap kube-root-ca.crt",
        why: "the root CA publisher writes it into every namespace (the namespace itself is checked)",
        allows: |o| o.kind == "ConfigMap" && o.group().is_empty() && o.name == "kube-root-ca.crt",
    },
    Allowance {
        rule: "ServiceAccount default",
        why: "the service account controller makes it in every namespace (the namespace itself is checked)",
        allows: |o| o.kind == "ServiceAccount" && o.group().is_empty() && o.name == "default",
    },
    Allowance {
        rule: "automanaged APIServices",
        why: "the aggregator registers one per served group version by itself (the CRD or built-in API behind it is checked)",
        allows: |o| {
            o.kind == "APIService"
                && o.labels
                    .get("kube-aggregator.kubernetes.io/automanaged")
                    .is_some_and(|v| v == "true" || v == "onstart")
        },
    },
];

/// The first rule allowing `o`, if any.
pub fn allowed_by(o: &ObjectRecord) -> Option<&'static Allowance> {
    ALLOWED.iter().find(|a| (a.allows)(o))
}

/// One object the after-inventory holds and the before-inventory did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    pub object: ObjectRecord,
    /// The before-inventory held an object of the same kind, namespace and name (another uid).
    pub recreated: bool,
}

impl Leftover {
    /// Finalizers holding an object that is already being deleted.
    pub fn stuck_finalizers(&self) -> &[String] {
        if self.object.deletion_timestamp.is_some() {
            &self.object.finalizers
        } else {
            &[]
        }
    }

    /// `Kind [namespace/]name`, marked when recreated or held by finalizers.
    pub fn line(&self) -> String {
        let mut out = self.object.display();
        if self.recreated {
            out.push_str(" (recreated: a new uid)");
        }
        let stuck = self.stuck_finalizers();
        if !stuck.is_empty() {
            out.push_str(&format!(
                " (deleting, held by finalizers: {})",
                stuck.join(", ")
            ));
        }
        out
    }
}

/// The release an object belongs to: its Helm annotations, else "no release".
pub fn release_of(o: &ObjectRecord) -> String {
    match (&o.helm.release_name, &o.helm.release_namespace) {
        (Some(name), Some(ns)) => format!("release {ns}/{name}"),
        (Some(name), None) => format!("release {name} (no namespace annotation)"),
        _ if o.helm.managed_by.as_deref() == Some("Helm") => {
            "managed-by Helm, release not annotated".to_string()
        }
        _ => "no release".to_string(),
    }
}

/// The comparison of two inventories.
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    /// Leftovers by the release that created them.
    pub by_release: BTreeMap<String, Vec<Leftover>>,
    /// New objects an allowance covers, with the rule.
    pub allowed: Vec<(ObjectRecord, &'static str)>,
    /// Resources one of the two inventories could not list: nothing about them was compared.
    pub unchecked: Vec<String>,
}

impl outcome::Concluded for Comparison {
    /// Held when nothing is left over; any leftover fails the uninstall.
    fn outcome(&self) -> outcome::Outcome {
        if self.count() > 0 {
            outcome::Outcome::Failed
        } else {
            outcome::Outcome::Held
        }
    }
}

impl Comparison {
    pub fn leftovers(&self) -> impl Iterator<Item = &Leftover> {
        self.by_release.values().flatten()
    }

    pub fn count(&self) -> usize {
        self.by_release.values().map(Vec::len).sum()
    }

    /// The report: leftovers by release, then what was allowed and what was not compared.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (release, items) in &self.by_release {
            out.push_str(&format!("{release}:\n"));
            for l in items {
                out.push_str(&format!("  LEFTOVER {}\n", l.line()));
            }
        }
        if !self.allowed.is_empty() {
            out.push_str(&format!("allowed ({}):\n", self.allowed.len()));
            for (o, rule) in &self.allowed {
                out.push_str(&format!("  {} ({rule})\n", o.display()));
            }
        }
        for r in &self.unchecked {
            out.push_str(&format!("NOT COMPARED {r}\n"));
        }
        match self.count() {
            0 => out.push_str("no leftovers\n"),
            n => out.push_str(&format!("{n} leftover(s)\n")),
        }
        out
    }
}

/// Everything in `after` that `before` did not hold (by uid), with objects recreated under a
/// name `before` knew marked; an allowance moves an object to [`Comparison::allowed`].
pub fn compare(before: &Inventory, after: &Inventory) -> Comparison {
    let uids: BTreeSet<&str> = before.objects.iter().map(|o| o.uid.as_str()).collect();
    let names: BTreeSet<_> = before.objects.iter().map(ObjectRecord::identity).collect();
    let mut out = Comparison::default();
    for o in &after.objects {
        // an object without a uid (ComponentStatus) is matched by its name alone
        if (uids.contains(o.uid.as_str()) && !o.uid.is_empty())
            || (o.uid.is_empty() && names.contains(&o.identity()))
        {
            continue;
        }
        if let Some(a) = allowed_by(o) {
            out.allowed.push((o.clone(), a.rule));
            continue;
        }
        out.by_release
            .entry(release_of(o))
            .or_default()
            .push(Leftover {
                object: o.clone(),
                recreated: names.contains(&o.identity()),
            });
    }
    let unlisted = |i: &Inventory| -> BTreeSet<String> {
        i.unlisted
            .iter()
            .map(|u| format!("{} ({})", u.resource, u.reason))
            .collect()
    };
    let listed_before: BTreeSet<&str> = before.listed.iter().map(String::as_str).collect();
    out.unchecked = unlisted(after).into_iter().collect();
    // a resource listed after but not before: its objects all look new (a CRD installed since
    // is fine: its objects are leftovers indeed); one unlisted before is noted
    for u in &before.unlisted {
        if !listed_before.contains(u.resource.as_str()) {
            out.unchecked
                .push(format!("{} (before: {})", u.resource, u.reason));
        }
    }
    out.unchecked.sort();
    out.unchecked.dedup();
    out
}

/// Kinds whose objects their controllers replace on their own: a user's Pod gone after the run
/// is its controller's churn, not the run's doing.
pub const REPLACED_BY_CONTROLLERS: [&str; 1] = ["Pod"];

/// Objects `before` held that `after` does not (by uid): the user's objects an install and
/// uninstall must never touch (case 2's title). Allowed churn, controller-replaced kinds and
/// objects already being deleted before are left out; so are resources `after` could not list.
pub fn removed(before: &Inventory, after: &Inventory) -> Vec<ObjectRecord> {
    let uids: BTreeSet<&str> = after.objects.iter().map(|o| o.uid.as_str()).collect();
    let names: BTreeSet<_> = after.objects.iter().map(ObjectRecord::identity).collect();
    let listed: BTreeSet<&str> = after.listed.iter().map(String::as_str).collect();
    let resource_of = |o: &ObjectRecord| format!("{}/{}", o.api_version, o.resource);
    before
        .objects
        .iter()
        .filter(|o| {
            if o.uid.is_empty() {
                !names.contains(&o.identity())
            } else {
                !uids.contains(o.uid.as_str())
            }
        })
        .filter(|o| after.listed.is_empty() || listed.contains(resource_of(o).as_str()))
        .filter(|o| o.deletion_timestamp.is_none())
        .filter(|o| allowed_by(o).is_none())
        .filter(|o| !REPLACED_BY_CONTROLLERS.contains(&o.kind.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{HelmOwnership, FORMAT};
    use outcome::{Concluded, Outcome};

    fn object(kind: &str, api: &str, ns: Option<&str>, name: &str, uid: &str) -> ObjectRecord {
        ObjectRecord {
            kind: kind.into(),
            api_version: api.into(),
            resource: format!("{}s", kind.to_lowercase()),
            namespace: ns.map(str::to_string),
            name: name.into(),
            uid: uid.into(),
            finalizers: vec![],
            owner_references: vec![],
            helm: HelmOwnership::default(),
            labels: BTreeMap::new(),
            deletion_timestamp: None,
        }
    }

    fn inventory(objects: Vec<ObjectRecord>) -> Inventory {
        Inventory {
            format: FORMAT.into(),
            objects,
            ..Inventory::default()
        }
    }

    #[test]
    fn identical_inventories_have_no_leftovers() {
        let a = inventory(vec![object("Namespace", "v1", None, "x", "u1")]);
        let c = compare(&a, &a.clone());
        assert_eq!(c.count(), 0);
        assert!(c.outcome().passed());
        assert!(c.render().contains("no leftovers"));
    }

    #[test]
    fn new_objects_are_named_and_grouped_by_release() {
        let before = inventory(vec![object("Namespace", "v1", None, "default", "u0")]);
        let mut crd = object(
            "CustomResourceDefinition",
            "apiextensions.k8s.io/v1",
            None,
            "widgets.x.io",
            "u3",
        );
        crd.helm.release_name = Some("gpustack-operator".into());
        crd.helm.release_namespace = Some("gpustack-system".into());
        let after = inventory(vec![
            object("Namespace", "v1", None, "default", "u0"),
            object("Namespace", "v1", None, "x", "u1"),
            object("Secret", "v1", Some("x"), "s1", "u2"),
            crd,
        ]);
        let c = compare(&before, &after);
        assert_eq!(c.outcome(), Outcome::Failed);
        let lines: Vec<String> = c.leftovers().map(Leftover::line).collect();
        assert!(lines.contains(&"Namespace x".to_string()), "{lines:?}");
        assert!(lines.contains(&"Secret x/s1".to_string()), "{lines:?}");
        assert!(lines.contains(&"CustomResourceDefinition widgets.x.io".to_string()));
        assert_eq!(
            c.by_release["release gpustack-system/gpustack-operator"].len(),
            1
        );
        assert_eq!(c.by_release["no release"].len(), 2);
    }

    #[test]
    fn objects_without_a_uid_match_by_name() {
        let a = inventory(vec![object("ComponentStatus", "v1", None, "etcd-0", "")]);
        let b = inventory(vec![
            object("ComponentStatus", "v1", None, "etcd-0", ""),
            object("ComponentStatus", "v1", None, "etcd-1", ""),
        ]);
        let c = compare(&a, &b);
        let lines: Vec<String> = c.leftovers().map(Leftover::line).collect();
        assert_eq!(lines, ["ComponentStatus etcd-1"]);
        assert!(removed(&a, &b).is_empty());
        assert_eq!(removed(&b, &a).len(), 1);
    }

    #[test]
    fn a_recreated_object_is_a_leftover_marked_as_such() {
        let before = inventory(vec![object("ConfigMap", "v1", Some("a"), "c", "old")]);
        let after = inventory(vec![object("ConfigMap", "v1", Some("a"), "c", "new")]);
        let c = compare(&before, &after);
        let l: Vec<&Leftover> = c.leftovers().collect();
        assert_eq!(l.len(), 1);
        assert!(l[0].recreated);
        assert!(l[0].line().contains("recreated"));
    }

    #[test]
    fn a_finalizer_holding_a_deleting_object_is_shown() {
        let mut held = object("Widget", "x.io/v1", Some("a"), "w", "u1");
        held.finalizers = vec!["x.io/hold".into()];
        held.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
        let c = compare(&inventory(vec![]), &inventory(vec![held]));
        let l = c.leftovers().next().map(Leftover::line).unwrap_or_default();
        assert_eq!(l, "Widget a/w (deleting, held by finalizers: x.io/hold)");
    }

    #[test]
    fn churn_the_cluster_makes_is_allowed_by_a_named_rule() {
        let mut auto = object(
            "APIService",
            "apiregistration.k8s.io/v1",
            None,
            "v1.x.io",
            "u6",
        );
        auto.labels.insert(
            "kube-aggregator.kubernetes.io/automanaged".into(),
            "true".into(),
        );
        let after = inventory(vec![
            object("Namespace", "v1", None, KEPT_NAMESPACE, "u1"),
            object("Event", "v1", Some("a"), "e.1", "u2"),
            object(
                "Lease",
                "coordination.k8s.io/v1",
                Some("kube-system"),
                "l",
                "u3",
            ),
            object("ConfigMap", "v1", Some("a"), "kube-root-ca.crt", "u4"),
            object("ServiceAccount", "v1", Some("a"), "default", "u5"),
            auto,
            object(
                "EndpointSlice",
                "discovery.k8s.io/v1",
                Some("a"),
                "s-x",
                "u7",
            ),
        ]);
        let c = compare(&inventory(vec![]), &after);
        assert_eq!(c.count(), 0, "{}", c.render());
        assert_eq!(c.allowed.len(), 7);
        // a ConfigMap of another name, or a hand-made APIService, is not churn
        let after = inventory(vec![
            object("ConfigMap", "v1", Some("a"), "mine", "u8"),
            object(
                "APIService",
                "apiregistration.k8s.io/v1",
                None,
                "v1.y.io",
                "u9",
            ),
        ]);
        assert_eq!(compare(&inventory(vec![]), &after).count(), 2);
    }

    #[test]
    fn a_user_object_gone_after_the_run_is_reported() {
        let before = inventory(vec![
            object("ConfigMap", "v1", Some("a"), "mine", "u1"),
            object("Pod", "v1", Some("a"), "p", "u2"),
            object("Event", "v1", Some("a"), "e", "u3"),
        ]);
        let gone = removed(&before, &inventory(vec![]));
        let names: Vec<String> = gone.iter().map(ObjectRecord::display).collect();
        assert_eq!(names, ["ConfigMap a/mine"]);
        assert!(removed(&before, &before).is_empty());
    }

    #[test]
    fn every_allowance_says_why() {
        for a in ALLOWED {
            assert!(!a.why.is_empty() && !a.rule.is_empty());
        }
    }

    #[test]
    fn an_unlisted_resource_is_reported_as_not_compared() {
        let mut after = inventory(vec![]);
        after.unlisted.push(crate::inventory::Unlisted {
            resource: "x.io/v1/secrets".into(),
            reason: "403 Forbidden".into(),
        });
        let c = compare(&inventory(vec![]), &after);
        assert!(c
            .render()
            .contains("NOT COMPARED x.io/v1/secrets (403 Forbidden)"));
    }
}
