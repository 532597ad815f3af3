//! `NCCL_GRAPH_FILE`: rings and trees given as NCCL's XML graph, read as
//! `ncclTopoGetGraphFromXml` reads them (`src/graph/search.cc` v2.28.9-1):
//! `<graphs><graph id= pattern= nchannels= speedintra= speedinter=
//! typeintra= typeinter= samechannels=><channel><gpu dev=/>…`. Graph id 0
//! is the ring graph, 1 the tree graph; a `gpu dev` is the CUDA device
//! number, here the GPU's position in the topology file. A graph read this
//! way skips the search (and its channel duplication).

use crate::paths::PathType;
use crate::search::Pattern;
use contend_topo::xml::Tag;

/// One `<graph>` of the file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct XmlGraph {
    pub id: u32,
    pub pattern: Pattern,
    pub n_channels: usize,
    pub speed_intra: f32,
    pub speed_inter: f32,
    pub type_intra: PathType,
    pub type_inter: PathType,
    pub same_channels: bool,
    /// Device numbers per channel.
    pub channels: Vec<Vec<usize>>,
}

/// The tags of a graph file (the one tokenizer of NCCL's XML).
fn tags(text: &str) -> Result<Vec<Tag>, String> {
    contend_topo::xml::tags(text).map_err(|e| e.message)
}

fn attr<'a>(t: &'a Tag, k: &str) -> Result<&'a str, String> {
    t.attrs
        .iter()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| format!("<{}> has no `{k}`", t.name))
}

fn num<T: std::str::FromStr>(t: &Tag, k: &str) -> Result<T, String> {
    let v = attr(t, k)?;
    v.trim()
        .parse()
        .map_err(|_| format!("<{}> {k}=\"{v}\" is not a number", t.name))
}

/// Parses a graph file's text.
pub(crate) fn parse(text: &str) -> Result<Vec<XmlGraph>, String> {
    let mut graphs = Vec::new();
    let mut current: Option<XmlGraph> = None;
    let mut channel: Option<Vec<usize>> = None;
    for t in tags(text)? {
        match (t.name.as_str(), t.closing) {
            ("graph", false) => {
                let pattern = match num::<u32>(&t, "pattern")? {
                    1 => Pattern::BalancedTree,
                    2 => Pattern::SplitTree,
                    3 => Pattern::Tree,
                    4 => Pattern::Ring,
                    p => return Err(format!("pattern {p} is not replicated (1-4)")),
                };
                let ty = |k: &str| -> Result<PathType, String> {
                    let v = attr(&t, k)?;
                    // kvDictLinkType: LOC NVL NVB PIX PXB P2C PXN PHB SYS.
                    PathType::from_name(v)
                        .filter(|p| *p != PathType::C2c && *p <= PathType::Sys)
                        .ok_or_else(|| format!("{k}=\"{v}\" is not a path type"))
                };
                current = Some(XmlGraph {
                    id: num(&t, "id")?,
                    pattern,
                    n_channels: num(&t, "nchannels")?,
                    speed_intra: num(&t, "speedintra")?,
                    speed_inter: num(&t, "speedinter")?,
                    type_intra: ty("typeintra")?,
                    type_inter: ty("typeinter")?,
                    same_channels: num::<u32>(&t, "samechannels")? != 0,
                    channels: vec![],
                });
            }
            ("graph", true) => {
                if let Some(g) = current.take() {
                    graphs.push(g);
                }
            }
            ("channel", false) => {
                channel = Some(vec![]);
                if t.self_closing
                    && let (Some(g), Some(c)) = (current.as_mut(), channel.take())
                {
                    g.channels.push(c);
                }
            }
            ("channel", true) => {
                if let (Some(g), Some(c)) = (current.as_mut(), channel.take()) {
                    g.channels.push(c);
                }
            }
            ("gpu", false) => {
                let dev = attr(&t, "dev")?;
                let d = usize::from_str_radix(dev.trim().trim_start_matches("0x"), 16)
                    .map_err(|_| format!("<gpu dev=\"{dev}\"> is not a device number"))?;
                channel.as_mut().ok_or("<gpu> outside a <channel>")?.push(d);
            }
            _ => {}
        }
    }
    Ok(graphs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_ring_graph() {
        let g = parse(
            r#"<graphs version="1">
  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="12" speedinter="12" latencyinter="0" typeintra="PHB" typeinter="PIX" samechannels="1">
    <channel><gpu dev="0"/><gpu dev="1"/><gpu dev="2"/><gpu dev="3"/></channel>
    <channel><gpu dev="3"/><gpu dev="2"/><gpu dev="1"/><gpu dev="0"/></channel>
  </graph>
</graphs>"#,
        )
        .unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].pattern, Pattern::Ring);
        assert_eq!(g[0].type_intra, PathType::Phb);
        assert_eq!(g[0].channels, vec![vec![0, 1, 2, 3], vec![3, 2, 1, 0]]);
        assert!(parse(r#"<graph id="0" pattern="9"/>"#).is_err());
    }
}
