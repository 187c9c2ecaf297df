//! CustomResourceDefinitions as objects (k8s.io/apiextensions-apiserver): their defaults and
//! the validation a chart can trip, the status the apiserver's own controllers write
//! (NamesAccepted by the naming controller, Established by the establishing controller,
//! Terminating and the cleanup finalizer on delete), and the kinds an established CRD serves.
//! Pure: the store (`Store::reconcile_crd`) applies what these functions decide.

use serde_json::{json, Map, Value};

use super::status::Cause;
use crate::wire::kinds::Kind;

type Object = Map<String, Value>;

/// The finalizer the apiserver puts on a CRD being deleted: its custom objects are deleted
/// before the CRD goes (apiextensions-apiserver registry/customresourcedefinition/etcd.go).
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The manager of the apiserver's own status writes.
pub const SERVER_MANAGER: &str = "kube-apiserver";

/// apiextensions/v1 `SetDefaults_CustomResourceDefinition(Spec)`: `names.singular` is the
/// lower-cased kind, `names.listKind` is `<Kind>List`, `conversion.strategy` is `None`; a CRD
/// with no status yet gets the one the create strategy starts it with (no conditions, no
/// accepted names, the storage version stored), and a new storage version is added to
/// `status.storedVersions` (strategy.go PrepareForCreate/PrepareForUpdate).
pub fn default_crd(object: &mut Object) {
    let storage = storage_version(&Value::Object(object.clone()));
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
            if let Some(kind) = names
                .get("kind")
                .and_then(Value::as_str)
                .map(str::to_string)
            {
                names
                    .entry("singular")
                    .or_insert_with(|| json!(kind.to_ascii_lowercase()));
                names
                    .entry("listKind")
                    .or_insert_with(|| json!(format!("{kind}List")));
            }
        }
        let conversion = spec.entry("conversion").or_insert_with(|| json!({}));
        if let Some(c) = conversion.as_object_mut() {
            c.entry("strategy").or_insert_with(|| json!("None"));
        }
    }
    let stored: Vec<Value> = storage.iter().map(|v| json!(v)).collect();
    let status = object.entry("status").or_insert_with(|| {
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""},
               "storedVersions": stored})
    });
    if let (Some(v), Some(versions)) = (
        storage,
        status
            .get_mut("storedVersions")
            .and_then(Value::as_array_mut),
    ) {
        if !versions.iter().any(|s| s == v.as_str()) {
            versions.push(json!(v));
        }
    }
}

/// The name of the version marked `storage: true` (the first, if several are).
pub fn storage_version(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .map(str::to_string)
}

/// apiextensions validation a chart can trip (validation.go ValidateCustomResourceDefinition):
/// the name is `<plural>.<group>`, the group, names and scope are given, and exactly one
/// version is stored, each with a schema.
pub fn crd_causes(name: &str, object: &Object) -> Vec<Cause> {
    let crd = Value::Object(object.clone());
    let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (group, plural, kind) = (
        text("/spec/group"),
        text("/spec/names/plural"),
        text("/spec/names/kind"),
    );
    let mut causes = Vec::new();
    if name != format!("{plural}.{group}") {
        causes.push(Cause::new(
            "metadata.name",
            "FieldValueInvalid",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    for (field, value) in [
        ("spec.group", group),
        ("spec.names.plural", plural),
        ("spec.names.kind", kind),
    ] {
        if value.is_empty() {
            causes.push(Cause::new(field, "FieldValueRequired", "Required value"));
        }
    }
    let scope = text("/spec/scope");
    if !matches!(scope, "Namespaced" | "Cluster") {
        causes.push(Cause::new(
            "spec.scope",
            "FieldValueNotSupported",
            format!("Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""),
        ));
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::new(
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: \"null\": must have exactly one version marked as storage version",
        ));
    } else if versions.iter().filter(|v| v["storage"] == true).count() != 1 {
        causes.push(Cause::new(
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: []apiextensions.CustomResourceDefinitionVersion: must have exactly one version marked as storage version",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.pointer("/schema/openAPIV3Schema").is_none() {
            causes.push(Cause::new(
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "FieldValueRequired",
                "Required value: schemas are required",
            ));
        }
    }
    causes
}

/// The kinds an established CRD serves: one per served version (objects are shared: the
/// twin converts with strategy `None`, rewriting only `apiVersion`). A CRD converting by
/// `Webhook`, or whose served versions' schemas differ, is served at its storage version
/// only: the twin calls no conversion webhook, and serving another schema's objects
/// unconverted would be a shortcut no real server takes (Kueue's v1beta1 is not served).
pub fn served_kinds(crd: &Value) -> Vec<Kind> {
    let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (group, plural, kind) = (
        text("/spec/group"),
        text("/spec/names/plural"),
        text("/spec/names/kind"),
    );
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let namespaced = text("/spec/scope") == "Namespaced";
    let schemas: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true)
        .map(|v| &v["schema"])
        .collect();
    let storage_only =
        text("/spec/conversion/strategy") == "Webhook" || schemas.windows(2).any(|w| w[0] != w[1]);
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true && (!storage_only || v["storage"] == true))
        .filter_map(|v| {
            let version = v["name"].as_str()?;
            let has_status = v.pointer("/subresources/status").is_some();
            Some(Kind::runtime(
                group, version, kind, plural, namespaced, has_status,
            ))
        })
        .collect()
}

/// Whether the CRD's status has condition `kind` True.
pub fn has_condition(crd: &Value, kind: &str) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// The status step the apiserver's controllers take next on a live CRD, as the new status:
/// the naming controller accepts the names (NamesAccepted, `acceptedNames`) and marks it
/// Established False (Installing), then the establishing controller marks it Established;
/// None once it is.
pub fn next_status(crd: &Value, now: &str) -> Option<Value> {
    let mut status = crd.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    if !has_condition(crd, "NamesAccepted") {
        status["acceptedNames"] = crd.pointer("/spec/names").cloned().unwrap_or(Value::Null);
        conditions.push(json!({"type": "NamesAccepted", "status": "True",
            "lastTransitionTime": now, "reason": "NoConflicts",
            "message": "no conflicts found"}));
    } else if !conditions.iter().any(|c| c["type"] == "Established") {
        // the naming controller's second step: Established False while the handler for the
        // new names installs
        conditions.push(json!({"type": "Established", "status": "False",
            "lastTransitionTime": now, "reason": "Installing",
            "message": "the initial names have been accepted"}));
    } else if !has_condition(crd, "Established") {
        for c in conditions.iter_mut().filter(|c| c["type"] == "Established") {
            *c = json!({"type": "Established", "status": "True",
                "lastTransitionTime": now, "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted"});
        }
    } else {
        return None;
    }
    status["conditions"] = Value::Array(conditions);
    Some(status)
}

/// The Terminating condition a CRD's delete adds (etcd.go Delete).
pub fn terminating_condition(now: &str) -> Value {
    json!({"type": "Terminating", "status": "True", "lastTransitionTime": now,
           "reason": "InstanceDeletionPending",
           "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> Value {
        json!({"metadata": {"name": "widgets.probe.example.com"}, "spec": {
            "group": "probe.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    }

    #[test]
    fn defaults_names_conversion_and_the_first_status() {
        let mut crd = widget().as_object().cloned().unwrap_or_default();
        default_crd(&mut crd);
        let crd = Value::Object(crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"]["strategy"], "None");
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(crd["status"]["conditions"], Value::Null);
        let kinds = served_kinds(&crd);
        assert_eq!(kinds.len(), 1);
        assert_eq!(kinds[0].qualified_resource(), "widgets.probe.example.com");
        assert!(kinds[0].namespaced && kinds[0].has_status && kinds[0].is_custom());
    }

    #[test]
    fn the_controllers_accept_names_then_establish() {
        let mut crd = widget();
        let first = next_status(&crd, "t");
        crd["status"] = first.unwrap_or_default();
        assert!(has_condition(&crd, "NamesAccepted") && !has_condition(&crd, "Established"));
        assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
        crd["status"] = next_status(&crd, "t").unwrap_or_default();
        assert_eq!(crd["status"]["conditions"][1]["reason"], "Installing");
        assert!(!has_condition(&crd, "Established"));
        crd["status"] = next_status(&crd, "t").unwrap_or_default();
        assert!(has_condition(&crd, "Established"));
        assert_eq!(next_status(&crd, "t"), None);
    }

    #[test]
    fn a_misnamed_crd_is_invalid() {
        let mut crd = widget();
        crd["spec"]["versions"][0]["storage"] = json!(false);
        let causes = crd_causes(
            "wrong.probe.example.com",
            crd.as_object().unwrap_or(&Map::new()),
        );
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "spec.versions"]);
    }
}
