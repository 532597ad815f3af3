//! The CPU side of verification: fresh non-zero inputs, the reference sum and
//! the check of every rank's output against it.
//!
//! Inputs have magnitudes in [0.25, 1] and random signs, so each rank's
//! contribution to an element is at least 0.25, far above the tolerance:
//! an output that drops, repeats or misplaces any rank's data fails.
//!
//! Tolerance, per element, against the exact (f64) sum `ref` of the ranks'
//! inputs `x_j`:
//! - fp32: `|out - ref| <= 1e-5 * sum_j |x_j|` (fp32 summation of up to 8
//!   terms errs by at most 8 * 2^-24 of that);
//! - bf16: `|out - ref| <= 2^-6 * sum_j |x_j|` (sums run in fp32 and are
//!   rounded to bf16 once, twice for the hierarchical kernel; each rounding
//!   errs by at most 2^-8 relative).
//!
//! The lossless kernel (`two-shot-push-fp32acc`) is held to more: its output
//! must equal, bit for bit, every rank's element converted to fp32, added in
//! rank order and rounded to the element type once ([`check_exact`]). Its
//! bf16 inputs use every mantissa bit ([`draw_input_fine`]: any bf16 of
//! magnitude in [0.25, 1]): the sum of at most 8 of them needs 13 bits, so
//! the fp32 sum is exact in any order and the result is the exact sum
//! rounded once, while a partial sum rounded to bf16 anywhere loses bits
//! and shows. (The inputs of [`draw_input`], multiples of 1/64, keep partial
//! sums below 4 exact in bf16, which would hide a second rounding.)
//!
//! NaN never passes (outputs are poisoned with 0xFF bytes, a NaN in both
//! types, before each checked run).

use contend_workload::Dtype;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Relative tolerance (times the sum of magnitudes) for a dtype.
pub fn tolerance(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::Fp32 => 1e-5,
        Dtype::Bf16 | Dtype::Fp16 => 1.0 / 64.0,
    }
}

/// bf16 bits to f32 (exact).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// f32 to bf16 bits, round to nearest even (NaN stays NaN).
pub fn f32_to_bf16(x: f32) -> u16 {
    let u = x.to_bits();
    if x.is_nan() {
        return ((u >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((u >> 16) & 1);
    (u.wrapping_add(round) >> 16) as u16
}

/// Element `i` of a buffer of `dtype` as f64.
fn elem(dtype: Dtype, bytes: &[u8], i: usize) -> f64 {
    match dtype {
        Dtype::Fp32 => f64::from(f32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])),
        _ => f64::from(bf16_to_f32(u16::from_le_bytes([
            bytes[2 * i],
            bytes[2 * i + 1],
        ]))),
    }
}

/// One rank's input of `bytes` bytes: non-zero values with |x| in [0.25, 1].
/// bf16 values are k/64 for k in 16..=64 (exact in bf16).
pub fn draw_input(dtype: Dtype, bytes: usize, seed: u64) -> Vec<u8> {
    use rand::RngExt as _;
    let es = dtype.size() as usize;
    let n = bytes / es;
    // Chunks drawn in parallel, each from its own stream of the seed.
    const CHUNK: usize = 1 << 16;
    let mut out = vec![0u8; n * es];
    out.par_chunks_mut(CHUNK * es)
        .enumerate()
        .for_each(|(c, part)| {
            let mut rng =
                ChaCha8Rng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            for e in part.chunks_exact_mut(es) {
                let neg = rng.random::<bool>();
                match dtype {
                    Dtype::Fp32 => {
                        let m: f32 = rng.random_range(0.25f32..=1.0f32);
                        e.copy_from_slice(&(if neg { -m } else { m }).to_le_bytes());
                    }
                    _ => {
                        let k: u32 = rng.random_range(16..=64);
                        let v = k as f32 / 64.0;
                        e.copy_from_slice(&f32_to_bf16(if neg { -v } else { v }).to_le_bytes());
                    }
                }
            }
        });
    out
}

/// One rank's input for the exact check: bf16 values of magnitude in
/// [0.25, 1] with every mantissa bit drawn (fp32: as [`draw_input`]).
pub fn draw_input_fine(dtype: Dtype, bytes: usize, seed: u64) -> Vec<u8> {
    use rand::RngExt as _;
    if dtype == Dtype::Fp32 {
        return draw_input(dtype, bytes, seed);
    }
    let n = bytes / 2;
    const CHUNK: usize = 1 << 16;
    let mut out = vec![0u8; n * 2];
    out.par_chunks_mut(CHUNK * 2)
        .enumerate()
        .for_each(|(c, part)| {
            let mut rng = ChaCha8Rng::seed_from_u64(
                seed ^ 0x5eed_f1e5 ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            for e in part.chunks_exact_mut(2) {
                // exponent of 0.25 or 0.5 (magnitudes [0.25, 1)), or exactly 1.0
                let bits: u16 = if rng.random_range(0u32..256) == 0 {
                    0x3f80
                } else {
                    let exp: u16 = if rng.random::<bool>() { 0x7d } else { 0x7e };
                    (exp << 7) | rng.random_range(0u16..128)
                };
                let sign: u16 = if rng.random::<bool>() { 0x8000 } else { 0 };
                e.copy_from_slice(&(sign | bits).to_le_bytes());
            }
        });
    out
}

/// The first element where `output` misses the reference sum of `inputs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Miss {
    pub index: usize,
    pub got: f64,
    pub want: f64,
    pub allowed: f64,
    /// Elements that missed in all.
    pub count: usize,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} element(s) off; first at index {}: got {}, want {} (allowed error {:.3e})",
            self.count, self.index, self.got, self.want, self.allowed
        )
    }
}

/// Checks one rank's `output` against the sum of `inputs` (all the same
/// length, raw little-endian bytes of `dtype`).
pub fn check(dtype: Dtype, inputs: &[&[u8]], output: &[u8]) -> Result<(), Miss> {
    let es = dtype.size() as usize;
    let n = output.len() / es;
    if inputs.iter().any(|i| i.len() != output.len()) {
        return Err(Miss {
            index: 0,
            got: f64::NAN,
            want: f64::NAN,
            allowed: 0.0,
            count: n.max(1),
        });
    }
    let tol = tolerance(dtype);
    const CHUNK: usize = 1 << 16;
    let per_chunk: Vec<(usize, Option<Miss>)> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let (lo, hi) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
            let mut count = 0;
            let mut first = None;
            for i in lo..hi {
                let (mut want, mut mag) = (0.0f64, 0.0f64);
                for inp in inputs {
                    let x = elem(dtype, inp, i);
                    want += x;
                    mag += x.abs();
                }
                let got = elem(dtype, output, i);
                let allowed = tol * mag;
                let ok = got.is_finite() && (got - want).abs() <= allowed;
                if !ok {
                    count += 1;
                    if first.is_none() {
                        first = Some(Miss {
                            index: i,
                            got,
                            want,
                            allowed,
                            count: 0,
                        });
                    }
                }
            }
            (count, first)
        })
        .collect();
    let total: usize = per_chunk.iter().map(|(c, _)| c).sum();
    match per_chunk.into_iter().find_map(|(_, f)| f) {
        None => Ok(()),
        Some(mut m) => {
            m.count = total;
            Err(m)
        }
    }
}

/// Element `i` of a buffer of `dtype` as f32 (exact: bf16 widens, fp32 is itself).
fn elem_f32(dtype: Dtype, bytes: &[u8], i: usize) -> f32 {
    match dtype {
        Dtype::Fp32 => f32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ]),
        _ => bf16_to_f32(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]])),
    }
}

/// The sum the lossless kernel computes: each rank's element in fp32, added
/// in rank order starting from rank 0's, rounded to `dtype` once.
pub fn fp32_sum_rounded_once(dtype: Dtype, inputs: &[&[u8]]) -> Vec<u8> {
    let es = dtype.size() as usize;
    let n = inputs.first().map_or(0, |i| i.len() / es);
    let mut out = Vec::with_capacity(n * es);
    for i in 0..n {
        let mut acc = inputs.first().map_or(0.0, |inp| elem_f32(dtype, inp, i));
        for inp in &inputs[1..] {
            acc += elem_f32(dtype, inp, i);
        }
        match dtype {
            Dtype::Fp32 => out.extend_from_slice(&acc.to_le_bytes()),
            _ => out.extend_from_slice(&f32_to_bf16(acc).to_le_bytes()),
        }
    }
    out
}

/// Checks that `output` equals [`fp32_sum_rounded_once`] of `inputs` bit for
/// bit (allowed error 0).
pub fn check_exact(dtype: Dtype, inputs: &[&[u8]], output: &[u8]) -> Result<(), Miss> {
    let es = dtype.size() as usize;
    let n = output.len() / es;
    if inputs.is_empty() || inputs.iter().any(|i| i.len() != output.len()) {
        return Err(Miss {
            index: 0,
            got: f64::NAN,
            want: f64::NAN,
            allowed: 0.0,
            count: n.max(1),
        });
    }
    let want = fp32_sum_rounded_once(dtype, inputs);
    let mut first = None;
    let mut count = 0;
    for i in 0..n {
        if output[i * es..(i + 1) * es] != want[i * es..(i + 1) * es] {
            count += 1;
            if first.is_none() {
                first = Some(i);
            }
        }
    }
    match first {
        None => Ok(()),
        Some(index) => Err(Miss {
            index,
            got: elem(dtype, output, index),
            want: elem(dtype, &want, index),
            allowed: 0.0,
            count,
        }),
    }
}

/// The exact sum of `inputs`, rounded to `dtype` (what a perfect allreduce
/// returns); used by tests and by the fake device in them.
pub fn reference_sum(dtype: Dtype, inputs: &[&[u8]]) -> Vec<u8> {
    let es = dtype.size() as usize;
    let n = inputs.first().map_or(0, |i| i.len() / es);
    let mut out = Vec::with_capacity(n * es);
    for i in 0..n {
        let s: f64 = inputs.iter().map(|inp| elem(dtype, inp, i)).sum();
        match dtype {
            Dtype::Fp32 => out.extend_from_slice(&(s as f32).to_le_bytes()),
            _ => out.extend_from_slice(&f32_to_bf16(s as f32).to_le_bytes()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_round_trip_and_rounding() {
        for k in 16..=64u32 {
            let v = k as f32 / 64.0;
            assert_eq!(bf16_to_f32(f32_to_bf16(v)), v);
            assert_eq!(bf16_to_f32(f32_to_bf16(-v)), -v);
        }
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
        assert_eq!(bf16_to_f32(f32_to_bf16(1.0 + 1.0 / 256.0)), 1.0);
        assert_eq!(
            bf16_to_f32(f32_to_bf16(1.0 + 3.0 / 256.0)),
            1.0 + 1.0 / 64.0
        );
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    }

    #[test]
    fn fine_inputs_use_every_mantissa_bit_and_stay_bounded() {
        let a = draw_input_fine(Dtype::Bf16, 1 << 20, 1);
        assert_ne!(a, draw_input_fine(Dtype::Bf16, 1 << 20, 2));
        let mut mantissas = std::collections::BTreeSet::new();
        for i in 0..a.len() / 2 {
            let b = u16::from_le_bytes([a[2 * i], a[2 * i + 1]]);
            let x = bf16_to_f32(b).abs();
            assert!((0.25..=1.0).contains(&x), "{x}");
            mantissas.insert(b & 0x7f);
        }
        assert_eq!(mantissas.len(), 128);
        assert_eq!(
            draw_input_fine(Dtype::Fp32, 4096, 3),
            draw_input(Dtype::Fp32, 4096, 3)
        );
    }

    #[test]
    fn inputs_are_nonzero_fresh_and_bounded() {
        for dtype in [Dtype::Bf16, Dtype::Fp32] {
            let a = draw_input(dtype, 1 << 20, 1);
            let b = draw_input(dtype, 1 << 20, 2);
            assert_ne!(a, b);
            let n = a.len() / dtype.size() as usize;
            assert!((0..n).all(|i| {
                let x = elem(dtype, &a, i).abs();
                (0.25..=1.0).contains(&x)
            }));
        }
    }
}
