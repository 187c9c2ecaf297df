//! (being written)

use crate::input::not_modelled;
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    not_modelled(v.test_name())
}
