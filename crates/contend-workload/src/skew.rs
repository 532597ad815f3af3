//! Arrival skew: ranks reach a collective at different times (compute jitter
//! between layers). Drawn from a seeded distribution so runs repeat exactly.

use contend_topo::Picos;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{Exp, Normal};
use thiserror::Error;

/// The distribution of each rank's extra delay before each collective.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "distribution", rename_all = "snake_case", deny_unknown_fields)]
#[derive(Default)]
pub enum Skew {
    /// Every rank arrives together.
    #[default]
    None,
    /// Half-normal: |N(0, sd)|.
    Normal { sd_us: f64 },
    /// Exponential with the given mean.
    Exponential { mean_us: f64 },
    /// Uniform on [0, max].
    Uniform { max_us: f64 },
}

/// A skew whose parameter no distribution takes.
#[derive(Clone, Copy, Debug, PartialEq, Error)]
pub enum SkewError {
    /// The parameter (sd, mean or max) is negative, NaN or infinite.
    #[error("skew parameter must be zero or more, got {value}")]
    Negative { value: f64 },
}

impl Skew {
    /// Checks the distribution's parameter: finite, zero or more.
    pub fn validate(&self) -> Result<(), SkewError> {
        let v = match *self {
            Skew::None => return Ok(()),
            Skew::Normal { sd_us } => sd_us,
            Skew::Exponential { mean_us } => mean_us,
            Skew::Uniform { max_us } => max_us,
        };
        if v.is_finite() && v >= 0.0 {
            Ok(())
        } else {
            Err(SkewError::Negative { value: v })
        }
    }

    /// `ops × ranks` delays, row per collective, reproducible for a seed.
    pub fn sample(&self, seed: u64, ops: usize, ranks: usize) -> Vec<Vec<Picos>> {
        use rand::RngExt as _;
        use rand::distr::Distribution;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let draw = |rng: &mut ChaCha8Rng| -> f64 {
            match *self {
                Skew::None => 0.0,
                Skew::Normal { sd_us } if sd_us > 0.0 => Normal::new(0.0, sd_us)
                    .map(|d| d.sample(rng).abs())
                    .unwrap_or(0.0),
                Skew::Exponential { mean_us } if mean_us > 0.0 => Exp::new(1.0 / mean_us)
                    .map(|d| d.sample(rng))
                    .unwrap_or(0.0),
                Skew::Uniform { max_us } if max_us > 0.0 => rng.random::<f64>() * max_us,
                _ => 0.0,
            }
        };
        (0..ops)
            .map(|_| {
                (0..ranks)
                    .map(|_| Picos::from_ns_f64(draw(&mut rng) * 1000.0))
                    .collect()
            })
            .collect()
    }
}
