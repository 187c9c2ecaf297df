//! The twin's clock request as both sides spell it: the admin endpoint (`server::clock` answers
//! it) and the body that advances the clock (the client sends it).

use serde_json::{json, Value};

/// The admin endpoint.
pub const CLOCK_PATH: &str = "/verify/v1/clock";

/// The body that advances the clock by `seconds`.
pub fn advance_body(seconds: u64) -> Value {
    json!({"advance": format!("{seconds}s")})
}
