use contend_sim::{ModelParams, simulate};
use contend_workload::{Fidelity, default_scenario};
fn main() {
    let sc = default_scenario(None).unwrap();
    let fids: Vec<Fidelity> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    for r in simulate(&sc, &ModelParams::default(), &fids).unwrap() {
        let rec = r.record();
        println!(
            "{:14} {:4} total {:>10.1} us p50 {:>8.2} us p99 {:>8.2} events {:>9} wall {:>7.1} ms busiest {:?}",
            rec.algorithm,
            format!("{:?}", rec.fidelity.unwrap()),
            rec.total_ns / 1e3,
            rec.stats.median_ns / 1e3,
            rec.stats.p99_ns / 1e3,
            rec.events.unwrap(),
            rec.wall_ns.unwrap() as f64 / 1e6,
            rec.busiest_link
        );
    }
}
