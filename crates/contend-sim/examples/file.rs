use contend_sim::{ModelParams, simulate};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let sc = contend_workload::load_scenario(std::path::Path::new(&path), None).unwrap();
    for r in simulate(&sc, &ModelParams::default(), &sc.fidelities).unwrap() {
        for rec in &r.records {
            println!(
                "{:14} {:4} size {} total {:>10.1} us p50 {:>8.2} us bw {:?} events {:>9} wall {:>7.1} ms busiest {:?}",
                rec.algorithm,
                format!("{:?}", rec.fidelity.unwrap()),
                rec.size_bytes,
                rec.total_ns / 1e3,
                rec.stats.median_ns / 1e3,
                rec.bandwidth_gbps,
                rec.events.unwrap(),
                rec.wall_ns.unwrap() as f64 / 1e6,
                rec.busiest_link
            );
        }
    }
}
