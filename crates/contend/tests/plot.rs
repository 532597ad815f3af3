//! `sweep --plot` and `advise --plot`: the SVG, read back as XML, names
//! every line that ran in its legend, draws NCCL's replica unlike every
//! other line, and marks one crossover per change of winner that the same
//! command's JSON output reports — each label `SIZE: FROM → TO` — no more.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;
use common::contend;
use contend_topo::Bytes;
use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contend-plot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A text of the SVG and where it is.
struct TextAt {
    x: f64,
    y: f64,
    text: String,
}

/// A polyline's style and points.
struct Poly {
    style: (String, String),
    points: Vec<(f64, f64)>,
}

struct Svg {
    texts: Vec<TextAt>,
    polys: Vec<Poly>,
}

fn num(n: roxmltree::Node<'_, '_>, attr: &str) -> f64 {
    n.attribute(attr)
        .unwrap_or_else(|| panic!("<{}> without {attr}", n.tag_name().name()))
        .parse()
        .unwrap()
}

/// The file parsed as XML: its texts and polylines.
fn read_svg(path: &Path) -> Svg {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let mut svg = Svg {
        texts: vec![],
        polys: vec![],
    };
    for n in doc.descendants().filter(|n| n.is_element()) {
        match n.tag_name().name() {
            "text" => svg.texts.push(TextAt {
                x: num(n, "x"),
                y: num(n, "y"),
                text: n.text().unwrap_or_default().trim().to_string(),
            }),
            "polyline" => svg.polys.push(Poly {
                style: (
                    n.attribute("stroke").unwrap().to_string(),
                    n.attribute("stroke-width").unwrap().to_string(),
                ),
                points: n
                    .attribute("points")
                    .unwrap()
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect(),
            }),
            _ => {}
        }
    }
    svg
}

impl Svg {
    /// The legend entries naming `name` (`name` alone or `name (...)`).
    fn legend_of(&self, name: &str) -> Vec<&TextAt> {
        self.texts
            .iter()
            .filter(|t| t.text == name || t.text.starts_with(&format!("{name} (")))
            .collect()
    }

    /// The style of a legend entry: the short horizontal line drawn left of
    /// its text, on the text's line.
    fn style_of(&self, t: &TextAt) -> (String, String) {
        self.polys
            .iter()
            .filter(|p| {
                let [(x0, y0), (x1, y1)] = p.points[..] else {
                    return false;
                };
                y0 == y1 && x1 - x0 == 20.0 && x1 <= t.x && y0 >= t.y && y0 - t.y <= 20.0
            })
            .min_by(|a, b| (a.points[0].1 - t.y).total_cmp(&(b.points[0].1 - t.y)))
            .map(|p| p.style.clone())
            .unwrap_or_else(|| panic!("no legend line beside `{}`", t.text))
    }

    /// The crossover labels, sorted.
    fn crossovers(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .texts
            .iter()
            .filter(|t| t.text.contains(" → "))
            .map(|t| t.text.clone())
            .collect();
        v.sort();
        v
    }

    /// Every legend entry of `names` is there; `nccl`'s are drawn thicker
    /// than any other, and its line (more than two points) in its style.
    fn check_legend(&self, names: &[String]) {
        let mut styles: BTreeMap<&str, Vec<(String, String)>> = BTreeMap::new();
        for n in names {
            let entries = self.legend_of(n);
            assert!(!entries.is_empty(), "no legend entry for `{n}`");
            styles.insert(n, entries.iter().map(|t| self.style_of(t)).collect());
        }
        let nccl = styles.get("nccl").expect("nccl ran");
        // every line has its own colour: highlighted is thicker than all
        let width = |s: &(String, String)| s.1.parse::<f64>().unwrap();
        for (n, s) in &styles {
            if *n != "nccl" {
                for own in s {
                    assert!(
                        nccl.iter().all(|x| width(x) > width(own)),
                        "`{n}` is drawn as thick as nccl: {own:?} against {nccl:?}"
                    );
                }
            }
        }
        for s in nccl {
            assert!(
                self.polys
                    .iter()
                    .any(|p| &p.style == s && p.points.len() > 2),
                "no nccl line in its legend's style {s:?}"
            );
        }
    }
}

fn label(size: u64, from: &str, to: &str) -> String {
    format!("{}: {from} → {to}", Bytes(size))
}

#[test]
fn sweep_plot_draws_every_algorithm_and_each_crossover_its_json_reports() {
    let d = scratch("sweep");
    let f = d.join("sweep.svg");
    let fs = f.display().to_string();
    let (ok, out, err) = contend(&[
        "sweep",
        "--topology",
        "pro6000-4x-1socket",
        "--from",
        "4KiB",
        "--to",
        "1MiB",
        "--fidelity",
        "flow",
        "--format",
        "json",
        "--plot",
        &fs,
    ]);
    assert!(ok, "{err}");
    assert!(err.contains(&format!("wrote the plot to {fs}")), "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let results = json["results"].as_array().unwrap();
    let svg = read_svg(&f);

    // the title names the scenario and the topology that ran
    let (scenario, topology) = (
        json["scenario"].as_str().unwrap(),
        json["topology"].as_str().unwrap(),
    );
    assert!(
        svg.texts.iter().any(|t| t.text.contains(scenario))
            && svg.texts.iter().any(|t| t.text == format!("on {topology}")),
        "no title naming {scenario} and {topology}"
    );

    let mut algorithms: Vec<String> = vec![];
    // per placement and fidelity: per size, the first fastest median; NCCL
    // places its own buffers (no placement in its record) and runs with the
    // sweep's first placement, where the table compares it
    let first = results
        .iter()
        .find(|r| !r["placement"].is_null())
        .map(|r| r["placement"].to_string())
        .unwrap();
    let mut groups: BTreeMap<(String, String), BTreeMap<u64, (String, f64)>> = BTreeMap::new();
    for r in results {
        let a = r["algorithm"].as_str().unwrap().to_string();
        if !algorithms.contains(&a) {
            algorithms.push(a.clone());
        }
        let placement = match &r["placement"] {
            Value::Null => first.clone(),
            p => p.to_string(),
        };
        let key = (placement, r["fidelity"].to_string());
        let size = r["size_bytes"].as_u64().unwrap();
        let t = r["stats"]["median_ns"].as_f64().unwrap();
        let best = groups
            .entry(key)
            .or_default()
            .entry(size)
            .or_insert((a.clone(), t));
        if t < best.1 {
            *best = (a, t);
        }
    }
    assert!(algorithms.len() > 2 && algorithms.contains(&"nccl".to_string()));
    svg.check_legend(&algorithms);

    let mut expected: Vec<String> = vec![];
    for winners in groups.values() {
        let w: Vec<(&u64, &(String, f64))> = winners.iter().collect();
        for p in w.windows(2) {
            if p[0].1.0 != p[1].1.0 {
                expected.push(label(*p[1].0, &p[0].1.0, &p[1].1.0));
            }
        }
    }
    expected.sort();
    assert!(!expected.is_empty(), "this sweep's winner changes");
    let panels = svg
        .texts
        .iter()
        .filter(|t| t.text.ends_with(" fidelity"))
        .count();
    assert_eq!(panels, groups.len(), "a panel per placement and fidelity");
    assert_eq!(svg.crossovers(), expected);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn advise_plot_draws_every_family_and_each_change_of_range_its_json_reports() {
    let d = scratch("advise");
    let f = d.join("advice.svg");
    let fs = f.display().to_string();
    let (ok, out, err) = contend(&[
        "advise",
        "--topology",
        "pro6000-4x-1socket",
        "--from",
        "4KiB",
        "--to",
        "1MiB",
        "--format",
        "json",
        "--plot",
        &fs,
    ]);
    assert!(ok, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let advice = json["advice"].as_array().unwrap();
    let svg = read_svg(&f);
    // a panel per world size
    let titles = svg
        .texts
        .iter()
        .filter(|t| t.text.starts_with("world size "))
        .count();
    assert_eq!(titles, advice.len());

    let mut families: Vec<String> = vec![];
    let mut expected: Vec<String> = vec![];
    for w in advice {
        for c in w["choices"].as_array().unwrap() {
            for fam in c["families"].as_array().unwrap() {
                let (name, alg) = (
                    fam["family"].as_str().unwrap(),
                    fam["algorithm"].as_str().unwrap(),
                );
                if !families.iter().any(|f| f == name) {
                    families.push(name.to_string());
                }
                // the legend names the algorithm that was the family's best
                assert!(
                    svg.legend_of(name).iter().all(|t| t.text.contains(alg)),
                    "{name}'s legend does not name {alg}"
                );
            }
        }
        let name = |r: &Value| {
            let tied: Vec<&str> = r["tied"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            if tied.is_empty() {
                r["family"].as_str().unwrap().to_string()
            } else {
                tied.join(" = ")
            }
        };
        for p in w["ranges"].as_array().unwrap().windows(2) {
            expected.push(label(
                p[1]["from_bytes"].as_u64().unwrap(),
                &name(&p[0]),
                &name(&p[1]),
            ));
        }
    }
    svg.check_legend(&families);
    expected.sort();
    assert!(!expected.is_empty(), "this advice changes somewhere");
    assert_eq!(svg.crossovers(), expected);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_plot_that_cannot_be_written_names_its_path() {
    let d = scratch("unwritable");
    // a folder where the file would go: refused as existing, then unwritable
    let ds = d.display().to_string();
    let args = [
        "sweep",
        "--topology",
        "pro6000-4x-1socket",
        "--sizes",
        "4KiB,8KiB",
        "--plot",
        &ds,
    ];
    let (ok, _, err) = contend(&args);
    assert!(!ok && err.contains(&format!("{ds} exists")), "{err}");
    let forced: Vec<&str> = args.iter().copied().chain(["--force"]).collect();
    let (ok, out, err) = contend(&forced);
    assert!(!ok, "{out}");
    assert!(err.contains(&format!("{ds}: writing the chart")), "{err}");
    // a folder that is not there: refused before any work
    let missing = d.join("no-such-folder/plot.svg").display().to_string();
    let (ok, out, err) = contend(&[
        "advise",
        "--topology",
        "pro6000-4x-1socket",
        "--plot",
        &missing,
    ]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(
        err.contains(&missing) && err.contains("does not exist"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
