//! A kubeconfig pointing at the twin: one cluster, one user, one context, all named after the
//! context (client-go clientcmd v1 `Config`). Plain HTTP on loopback, so no TLS settings; the
//! only credential is the token a twin issued to be recognised by
//! ([`crate::wire::identity`]), if any.

/// A YAML string literal: JSON's double-quoted form is valid YAML.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// The kubeconfig YAML for a twin serving at `url` (e.g. `http://127.0.0.1:8080`), with
/// cluster, user and context all named `context`, which is also the current context.
pub fn kubeconfig_yaml(url: &str, context: &str) -> String {
    kubeconfig_yaml_with_token(url, context, None)
}

/// [`kubeconfig_yaml`] whose user carries `token` (the twin's identity token) when given.
pub fn kubeconfig_yaml_with_token(url: &str, context: &str, token: Option<&str>) -> String {
    let name = quoted(context);
    let server = quoted(url);
    let user = token.map_or("{}".to_string(), |t| format!("{{token: {}}}", quoted(t)));
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: {name}\n  cluster:\n    server: {server}\n\
         users:\n\
         - name: {name}\n  user: {user}\n\
         contexts:\n\
         - name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n\
         current-context: {name}\n\
         preferences: {{}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn parses_as_a_config_with_one_of_each() {
        let text = kubeconfig_yaml("http://127.0.0.1:40123", "verify-twin");
        let doc: Value = serde_norway::from_str(&text).unwrap_or_default();
        assert_eq!(doc["kind"], "Config");
        assert_eq!(doc["current-context"], "verify-twin");
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:40123"
        );
        assert_eq!(doc["contexts"][0]["context"]["cluster"], "verify-twin");
        assert_eq!(doc["contexts"][0]["context"]["user"], "verify-twin");
        assert_eq!(doc["users"][0]["name"], "verify-twin");
        assert!(doc["users"][0]["user"].is_object());
    }

    #[test]
    fn a_token_is_the_user_credential() {
        let text = kubeconfig_yaml_with_token("http://127.0.0.1:1", "verify-twin", Some("t-1"));
        let doc: Value = serde_norway::from_str(&text).unwrap_or_default();
        assert_eq!(doc["users"][0]["user"]["token"], "t-1");
    }

    #[test]
    fn odd_context_names_stay_one_string() {
        let text = kubeconfig_yaml("http://127.0.0.1:1", "a: b # c");
        let doc: Value = serde_norway::from_str(&text).unwrap_or_default();
        assert_eq!(doc["current-context"], "a: b # c");
    }
}
