//! Prints the event mix and outcomes of a soak stream (how much churn of each kind it makes).
use std::collections::BTreeMap;

use model::events::{Effect, Event, World};
use soak::stream::EventStream;

fn main() {
    let seed: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let shape = generators::ShapeConfig::default();
    let initial = fuzz::scenario_for(seed, &shape).expect("scenario");
    let mut world = World::new(initial.cluster);
    let mut stream = EventStream::new(seed, shape);
    let mut mix: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..n {
        let e = stream.next(&world).expect("event");
        let kind = serde_json::to_value(&e).unwrap()["event"]
            .as_str()
            .unwrap()
            .to_string();
        let effect = world.apply(&e);
        let what = match (&e, &effect) {
            (Event::Submit { .. }, Effect::Judged { outcome }) => {
                let o = format!("{outcome:?}");
                format!("{kind} -> {}", o.split([' ', '{']).next().unwrap_or("?"))
            }
            (_, Effect::Ignored { .. }) => format!("{kind} -> ignored"),
            _ => kind,
        };
        *mix.entry(what).or_default() += 1;
    }
    for (k, v) in mix {
        println!("{v:6}  {k}");
    }
    println!("nodes at the end: {}", world.cluster().nodes.len());
}
