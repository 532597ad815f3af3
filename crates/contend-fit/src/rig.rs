//! A public rig (`calibration/public/<rig>/`): its figures, the topologies
//! they were measured on, each fit figure's twin (or why it has none), and
//! predictions under a set of constants.

use crate::figure_twin::{Expressed, FigureTwin, figure_twin};
use crate::figures::{FigureFile, load_figures};
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_topo::{Location, Topology};
use contend_workload::Fidelity;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The name of a rig's figures file inside its folder.
pub const FIGURES_FILE: &str = "figures.toml";

/// What became of one figure.
#[derive(Clone, Debug)]
pub enum Use {
    /// A fit figure with its twin.
    Fit(Box<FigureTwin>),
    /// A fit figure the model cannot express (why).
    Skipped(String),
    /// `fit = false` in the file (its note says why).
    NotFit,
    /// A fit figure of a rig (or figure) without a topology.
    NoTopology,
}

/// A rig, loaded: every figure with what became of it.
#[derive(Clone, Debug)]
pub struct Rig {
    pub dir: PathBuf,
    pub file: FigureFile,
    /// Topology files as written, loaded.
    pub topologies: BTreeMap<String, Topology>,
    /// One per figure, in file order.
    pub uses: Vec<Use>,
}

/// A path written in a figures file: relative to the repository root, the
/// nearest folder above the rig's that holds it.
fn resolve(dir: &Path, written: &str) -> Option<PathBuf> {
    contend_topo::relative_path::find_upwards(dir, written)
}

/// Loads a rig folder: its figures file, every topology it names, and the
/// twin of each fit figure.
pub fn load_rig(dir: &Path) -> Result<Rig, CalibError> {
    let file = load_figures(&dir.join(FIGURES_FILE))?;
    let mut topologies: BTreeMap<String, Topology> = BTreeMap::new();
    let mut load = |written: &str, at: Location| -> Result<(), CalibError> {
        if topologies.contains_key(written) {
            return Ok(());
        }
        let path = resolve(dir, written).ok_or_else(|| CalibError::At {
            location: at.clone(),
            message: format!(
                "topology file `{written}` not found in {} or a folder above it",
                dir.display()
            ),
        })?;
        let t = contend_topo::load_topology(&path).map_err(|e| CalibError::At {
            location: at,
            message: format!("topology `{written}`: {e}"),
        })?;
        topologies.insert(written.to_string(), t);
        Ok(())
    };
    if let Some((t, at)) = &file.topology {
        load(t, at.clone())?;
    }
    for f in &file.figures {
        if let Some(t) = &f.topology {
            load(t, f.at("topology"))?;
        }
    }
    let uses = file
        .figures
        .iter()
        .map(|f| {
            if !f.fit {
                return Ok(Use::NotFit);
            }
            let Some(t) = file.topology_of(f) else {
                return Ok(Use::NoTopology);
            };
            let topo = &topologies[t];
            match figure_twin(f, topo) {
                Ok(Expressed::Twin(t)) => Ok(Use::Fit(t)),
                Ok(Expressed::Skipped(why)) => Ok(Use::Skipped(why)),
                Err(e) => Err(CalibError::At {
                    location: f.at(e.field),
                    message: format!("figure `{}`: {}", f.id, e.message),
                }),
            }
        })
        .collect::<Result<Vec<_>, CalibError>>()?;
    Ok(Rig {
        dir: dir.to_path_buf(),
        file,
        topologies,
        uses,
    })
}

impl Rig {
    pub fn name(&self) -> &str {
        &self.file.rig
    }

    /// The fit figures with twins: (index in the file, twin).
    pub fn twins(&self) -> Vec<(usize, &FigureTwin)> {
        self.uses
            .iter()
            .enumerate()
            .filter_map(|(i, u)| match u {
                Use::Fit(t) => Some((i, t.as_ref())),
                _ => None,
            })
            .collect()
    }

    /// Every twin's prediction under `params` (in [`Rig::twins`] order).
    pub fn predict(
        &self,
        params: &ModelParams,
        fidelity: Fidelity,
    ) -> Result<Vec<f64>, CalibError> {
        self.twins()
            .par_iter()
            .map(|(i, t)| {
                t.predict(params, fidelity).map_err(|m| CalibError::At {
                    location: self.file.figures[*i].location.clone(),
                    message: format!("figure `{}`: simulated twin: {m}", self.file.figures[*i].id),
                })
            })
            .collect()
    }
}
