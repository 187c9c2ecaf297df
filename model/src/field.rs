//! Field errors as apimachinery's `field.Error` prints them, and the `NewInvalid` envelope an
//! API server returns for an object a validating webhook rejects (the Pod webhook, the
//! InstanceType webhook).

use std::fmt;

/// The kind of a field error (apimachinery `field.ErrorType`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    Required,
    Forbidden,
    Invalid { value: String },
}

/// One field error: the object's field path, its kind and the rule's detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub path: String,
    pub kind: FieldErrorKind,
    pub detail: String,
}

impl fmt::Display for FieldError {
    /// Rendered as apimachinery prints a field error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FieldErrorKind::Required => write!(f, "{}: Required value: {}", self.path, self.detail),
            FieldErrorKind::Forbidden => write!(f, "{}: Forbidden: {}", self.path, self.detail),
            FieldErrorKind::Invalid { value } => {
                write!(
                    f,
                    "{}: Invalid value: {value:?}: {}",
                    self.path, self.detail
                )
            }
        }
    }
}

/// `field.Forbidden`.
pub fn forbidden(path: &str, detail: String) -> FieldError {
    FieldError {
        path: path.to_string(),
        kind: FieldErrorKind::Forbidden,
        detail,
    }
}

/// `field.Required`.
pub fn required(path: &str, detail: String) -> FieldError {
    FieldError {
        path: path.to_string(),
        kind: FieldErrorKind::Required,
        detail,
    }
}

/// `field.Invalid` with the offending value.
pub fn invalid(path: &str, value: &str, detail: &str) -> FieldError {
    FieldError {
        path: path.to_string(),
        kind: FieldErrorKind::Invalid {
            value: value.to_string(),
        },
        detail: detail.to_string(),
    }
}

/// `kerrors.NewInvalid(kind, name, errs)`'s message: `<Kind> "<name>" is invalid: <errors>`,
/// one error bare and several bracketed and comma-joined (`ErrorList.ToAggregate`). `kind` is
/// the qualified kind (`Pod`, `InstanceType.worker.gpustack.ai`).
pub fn invalid_message(kind: &str, name: &str, errs: &[FieldError]) -> String {
    let parts: Vec<String> = errs.iter().map(ToString::to_string).collect();
    invalid_envelope(kind, name, &parts)
}

/// The `NewInvalid` envelope around already printed field errors (`ErrorList.ToAggregate`:
/// one error bare, several bracketed and comma-joined); the twin's API errors use it too.
pub fn invalid_envelope(kind: &str, name: &str, printed: &[String]) -> String {
    let joined = match printed {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    format!("{kind} {name:?} is invalid: {joined}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_error_stands_alone_and_several_are_bracketed() {
        let os = required("spec.os", "must be specified".into());
        let arch = required("spec.arch", "must be specified".into());
        assert_eq!(
            invalid_message("InstanceType.worker.gpustack.ai", "x", std::slice::from_ref(&os)),
            "InstanceType.worker.gpustack.ai \"x\" is invalid: spec.os: Required value: must be specified"
        );
        assert_eq!(
            invalid_message("Pod", "p", &[os, arch]),
            "Pod \"p\" is invalid: [spec.os: Required value: must be specified, spec.arch: \
             Required value: must be specified]"
        );
    }

    #[test]
    fn kinds_print_as_apimachinery_does() {
        assert_eq!(
            invalid(
                "spec.unitResources.cpu",
                "2",
                "must be 1 when acceleratable is false"
            )
            .to_string(),
            "spec.unitResources.cpu: Invalid value: \"2\": must be 1 when acceleratable is false"
        );
        assert_eq!(
            forbidden("spec", "is immutable".into()).to_string(),
            "spec: Forbidden: is immutable"
        );
    }
}
