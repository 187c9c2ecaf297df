//! API errors as values: a `Status` shaped like Kubernetes `metav1.Status`
//! (k8s.io/apimachinery pkg/apis/meta/v1 types.go; messages as pkg/api/errors/errors.go).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::kinds::Kind;

/// One reason a request was rejected, as `metav1.StatusCause`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// Machine-readable reason, e.g. `FieldValueRequired`, `FieldValueTypeInvalid`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The offending field path, e.g. `spec.os` or `spec.groups[0].id`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Cause {
    /// A cause naming `field`, with a reason and message.
    pub fn new(field: &str, reason: &str, message: impl Into<String>) -> Self {
        Cause {
            reason: reason.to_string(),
            message: message.into(),
            field: field.to_string(),
        }
    }

    /// `field: message`, the form the apiserver joins into an Invalid message.
    fn render(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// `metav1.StatusDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StatusDetails {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
}

/// A failed request, serialised exactly like `metav1.Status` with `kind: Status`,
/// `apiVersion: v1`, `metadata: {}`, `status: Failure`. `code` is the HTTP status the
/// server answers with. (The constant fields are not stored, to keep errors small.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct Status {
    pub message: String,
    pub reason: String,
    pub details: Option<Box<StatusDetails>>,
    pub code: u16,
}

/// The wire form of [`Status`].
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireStatus {
    kind: String,
    api_version: String,
    #[serde(default)]
    metadata: serde_json::Map<String, Value>,
    status: String,
    #[serde(default)]
    message: String,
    /// Left out when empty, as Go's `omitempty` leaves it (an InternalError has none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<StatusDetails>,
    code: u16,
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireStatus {
            kind: "Status".to_string(),
            api_version: "v1".to_string(),
            metadata: serde_json::Map::new(),
            status: "Failure".to_string(),
            message: self.message.clone(),
            reason: self.reason.clone(),
            details: self.details.as_deref().cloned(),
            code: self.code,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireStatus::deserialize(deserializer)?;
        Ok(Status {
            message: wire.message,
            reason: wire.reason,
            details: wire.details.map(Box::new),
            code: wire.code,
        })
    }
}

impl Status {
    /// A `Failure` status with the given code, reason, message and details.
    pub fn failure(
        code: u16,
        reason: &str,
        message: impl Into<String>,
        details: Option<StatusDetails>,
    ) -> Self {
        Status {
            message: message.into(),
            reason: reason.to_string(),
            details: details.map(Box::new),
            code,
        }
    }

    /// The HTTP status code the server answers with.
    pub fn http_code(&self) -> u16 {
        self.code
    }

    /// The JSON body the server sends.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// 404 NotFound for a named object (errors.go NewNotFound).
    pub fn not_found(kind: &Kind, name: &str) -> Self {
        Status::failure(
            404,
            "NotFound",
            format!("{} \"{}\" not found", kind.qualified_resource(), name),
            Some(resource_details(kind, name)),
        )
    }

    /// 404 NotFound for a resource or subresource the server does not serve.
    pub fn no_such_resource(what: &str) -> Self {
        Status::failure(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({what})"),
            None,
        )
    }

    /// 409 AlreadyExists (errors.go NewAlreadyExists).
    pub fn already_exists(kind: &Kind, name: &str) -> Self {
        Status::failure(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", kind.qualified_resource(), name),
            Some(resource_details(kind, name)),
        )
    }

    /// 409 Conflict for a stale resourceVersion or a failed precondition (errors.go NewConflict).
    pub fn conflict(kind: &Kind, name: &str, why: &str) -> Self {
        Status::failure(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                kind.qualified_resource(),
                name,
                why
            ),
            Some(resource_details(kind, name)),
        )
    }

    /// 409 Conflict of a server-side apply with fields owned by other managers, as the
    /// apiserver builds it (fieldmanager `NewConflictError`, errors.go `NewApplyConflict`):
    /// one `FieldManagerConflict` cause per field and no other details. `conflicts` holds
    /// `(manager as printed, field)`, the manager already quoted (`"kubectl"`, `"b" using v1`).
    pub fn apply_conflict(conflicts: &[(String, String)]) -> Self {
        let causes: Vec<Cause> = conflicts
            .iter()
            .map(|(manager, field)| {
                Cause::new(
                    field,
                    "FieldManagerConflict",
                    format!("conflict with {manager}"),
                )
            })
            .collect();
        let message = match conflicts {
            [(manager, field)] => {
                format!("Apply failed with 1 conflict: conflict with {manager}: {field}")
            }
            _ => {
                // grouped by manager, managers sorted
                let mut by_manager: std::collections::BTreeMap<&str, Vec<&str>> =
                    Default::default();
                for (manager, field) in conflicts {
                    by_manager.entry(manager).or_default().push(field);
                }
                let lines: Vec<String> = by_manager
                    .iter()
                    .flat_map(|(manager, fields)| {
                        std::iter::once(format!("conflicts with {manager}:"))
                            .chain(fields.iter().map(|f| format!("- {f}")))
                    })
                    .collect();
                format!(
                    "Apply failed with {} conflicts: {}",
                    conflicts.len(),
                    lines.join("\n")
                )
            }
        };
        Status::failure(
            409,
            "Conflict",
            message,
            Some(StatusDetails {
                causes,
                ..StatusDetails::default()
            }),
        )
    }

    /// 422 Invalid naming every offending field (errors.go NewInvalid).
    pub fn invalid(kind: &Kind, name: &str, causes: Vec<Cause>) -> Self {
        let rendered: Vec<String> = causes.iter().map(Cause::render).collect();
        Status::failure(
            422,
            "Invalid",
            model::field::invalid_envelope(&kind.qualified_kind(), name, &rendered),
            Some(StatusDetails {
                name: name.to_string(),
                group: kind.group.to_string(),
                kind: kind.kind.to_string(),
                causes,
            }),
        )
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::failure(400, "BadRequest", message, None)
    }

    /// 410 Gone with reason Expired: a watch from a resourceVersion older than the history.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Status::failure(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
            None,
        )
    }

    /// True for a 410 Gone.
    pub fn is_gone(&self) -> bool {
        self.code == 410
    }
}

/// `details` of a status about one named object: name, group and resource (plural).
fn resource_details(kind: &Kind, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.to_string(),
        group: kind.group.to_string(),
        kind: kind.plural.to_string(),
        causes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::kinds;

    #[test]
    fn not_found_has_the_metav1_shape() {
        let s = Status::not_found(&kinds::INSTANCE_TYPE, "a10");
        let v = s.to_value();
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["status"], "Failure");
        assert_eq!(v["reason"], "NotFound");
        assert_eq!(v["code"], 404);
        assert_eq!(
            v["message"],
            "instancetypes.worker.gpustack.ai \"a10\" not found"
        );
        assert_eq!(v["details"]["name"], "a10");
        assert_eq!(v["details"]["group"], "worker.gpustack.ai");
        assert_eq!(v["details"]["kind"], "instancetypes");
        assert!(v["details"].get("causes").is_none());
    }

    #[test]
    fn core_kinds_have_no_group_in_messages() {
        let s = Status::already_exists(&kinds::NODE, "n1");
        assert_eq!(s.message, "nodes \"n1\" already exists");
        assert!(s.to_value()["details"].get("group").is_none());
    }

    #[test]
    fn invalid_joins_causes_and_names_the_kind() {
        let one = Status::invalid(
            &kinds::INSTANCE_TYPE,
            "x",
            vec![Cause::new(
                "spec.os",
                "FieldValueRequired",
                "Required value",
            )],
        );
        assert_eq!(
            one.message,
            "InstanceType.worker.gpustack.ai \"x\" is invalid: spec.os: Required value"
        );
        assert_eq!(one.code, 422);
        let two = Status::invalid(
            &kinds::NODE,
            "n",
            vec![
                Cause::new("a", "FieldValueRequired", "Required value"),
                Cause::new("b", "FieldValueRequired", "Required value"),
            ],
        );
        assert_eq!(
            two.message,
            "Node \"n\" is invalid: [a: Required value, b: Required value]"
        );
        assert_eq!(two.to_value()["details"]["causes"][1]["field"], "b");
    }

    #[test]
    fn apply_conflict_lists_each_field() {
        let s = Status::apply_conflict(&[(
            "\"kubectl\"".to_string(),
            ".spec.unschedulable".to_string(),
        )]);
        assert_eq!(
            s.message,
            "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.unschedulable"
        );
        let d = s.details.clone().unwrap_or_default();
        assert_eq!(d.causes[0].reason, "FieldManagerConflict");
        assert_eq!(d.causes[0].message, "conflict with \"kubectl\"");
        assert!(d.name.is_empty());
        let back: Result<Status, _> = serde_json::from_value(s.to_value());
        assert_eq!(back.ok(), Some(s));
    }
}
