fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/conformance".into());
    let r = conformance::run_dir(std::path::Path::new(&dir)).unwrap();
    print!("{}", r.render());
}
