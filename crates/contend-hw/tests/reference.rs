//! The CPU side of verification: the reference sum accepts what a correct
//! allreduce returns (in bf16 and fp32, for 2 to 8 ranks, with one or two
//! roundings) and rejects what a broken one returns.

use contend_hw::verify::{
    bf16_to_f32, check, check_exact, draw_input, draw_input_fine, f32_to_bf16,
    fp32_sum_rounded_once, reference_sum, tolerance,
};
use contend_workload::Dtype;

fn inputs(dtype: Dtype, n: usize, bytes: usize, seed: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|r| draw_input(dtype, bytes, seed + r as u64))
        .collect()
}

#[test]
fn a_correct_sum_passes() {
    for dtype in [Dtype::Bf16, Dtype::Fp32] {
        for n in [2, 3, 4, 8] {
            let ins = inputs(dtype, n, 64 << 10, 100 + n as u64);
            let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
            let out = reference_sum(dtype, &refs);
            check(dtype, &refs, &out).unwrap();
        }
    }
}

#[test]
fn fp32_summation_order_and_bf16_double_rounding_pass() {
    // fp32 summed in rank order (what the kernels do) instead of exactly.
    let ins = inputs(Dtype::Fp32, 8, 16 << 10, 7);
    let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let n = ins[0].len() / 4;
    let f = |b: &[u8], i: usize| f32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
    let mut out = vec![];
    for i in 0..n {
        let s = refs.iter().fold(0f32, |acc, b| acc + f(b, i));
        out.extend_from_slice(&s.to_le_bytes());
    }
    check(Dtype::Fp32, &refs, &out).unwrap();
    // bf16 hierarchical: groups of 2 rounded to bf16, then summed and rounded again.
    let ins = inputs(Dtype::Bf16, 4, 16 << 10, 9);
    let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let g = |b: &[u8], i: usize| bf16_to_f32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]]));
    let mut out = vec![];
    for i in 0..ins[0].len() / 2 {
        let p0 = bf16_to_f32(f32_to_bf16(g(refs[0], i) + g(refs[1], i)));
        let p1 = bf16_to_f32(f32_to_bf16(g(refs[2], i) + g(refs[3], i)));
        out.extend_from_slice(&f32_to_bf16(p0 + p1).to_le_bytes());
    }
    check(Dtype::Bf16, &refs, &out).unwrap();
}

#[test]
fn a_broken_allreduce_fails() {
    for dtype in [Dtype::Bf16, Dtype::Fp32] {
        let es = dtype.size() as usize;
        let ins = inputs(dtype, 8, 32 << 10, 42);
        let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
        // One rank's contribution missing.
        let seven: Vec<&[u8]> = refs[..7].to_vec();
        let wrong = reference_sum(dtype, &seven);
        let m = check(dtype, &refs, &wrong).unwrap_err();
        assert_eq!(m.count, ins[0].len() / es, "every element must miss: {m}");
        // One element wrong by a little more than the tolerance allows.
        let mut out = reference_sum(dtype, &refs);
        let i = 123;
        match dtype {
            Dtype::Fp32 => {
                let v = f32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
                let bumped = v + 8.0 * tolerance(dtype) as f32 * 8.0 + 0.01;
                out[4 * i..4 * i + 4].copy_from_slice(&bumped.to_le_bytes());
            }
            _ => {
                let v = bf16_to_f32(u16::from_le_bytes([out[2 * i], out[2 * i + 1]]));
                out[2 * i..2 * i + 2].copy_from_slice(&f32_to_bf16(v + 0.25).to_le_bytes());
            }
        }
        let m = check(dtype, &refs, &out).unwrap_err();
        assert_eq!((m.index, m.count), (i, 1), "{m}");
        // Poison left in place (never written): NaN fails.
        let poisoned = vec![0xffu8; ins[0].len()];
        assert!(check(dtype, &refs, &poisoned).is_err());
        // Wrong length.
        assert!(check(dtype, &refs, &out[..out.len() - es]).is_err());
    }
}

/// The lossless two-shot's check: on full-mantissa bf16 inputs the fp32 sum
/// rounded once passes bit for bit; a result that rounded a partial sum to
/// bf16 (an island or hierarchical reduction, a ring) is within the
/// tolerance but not exact.
#[test]
fn the_exact_check_takes_one_rounding_and_refuses_two() {
    let g = |b: &[u8], i: usize| bf16_to_f32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]]));
    for n in [2, 4, 8] {
        let ins: Vec<Vec<u8>> = (0..n)
            .map(|r| draw_input_fine(Dtype::Bf16, 64 << 10, 500 + r as u64))
            .collect();
        let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
        let once = fp32_sum_rounded_once(Dtype::Bf16, &refs);
        check_exact(Dtype::Bf16, &refs, &once).unwrap();
        // at most 8 such inputs sum exactly in fp32: rounding once is the
        // exact sum rounded, whatever the order
        assert_eq!(once, reference_sum(Dtype::Bf16, &refs));
        check(Dtype::Bf16, &refs, &once).unwrap();
        // two roundings: halves summed and rounded, then added and rounded
        let half = n / 2;
        let mut twice = vec![];
        for i in 0..ins[0].len() / 2 {
            let p0: f32 = refs[..half].iter().map(|b| g(b, i)).sum();
            let p1: f32 = refs[half..].iter().map(|b| g(b, i)).sum();
            let (p0, p1) = (bf16_to_f32(f32_to_bf16(p0)), bf16_to_f32(f32_to_bf16(p1)));
            twice.extend_from_slice(&f32_to_bf16(p0 + p1).to_le_bytes());
        }
        check(Dtype::Bf16, &refs, &twice).unwrap();
        if n >= 4 {
            // (with 2 ranks each half is one input: nothing to round)
            let m = check_exact(Dtype::Bf16, &refs, &twice).unwrap_err();
            assert!(m.count > 0 && m.allowed == 0.0, "n={n}: {m}");
        }
        // one bit off anywhere fails
        let mut off = once.clone();
        off[2 * 77] ^= 1;
        let m = check_exact(Dtype::Bf16, &refs, &off).unwrap_err();
        assert_eq!((m.index, m.count), (77, 1), "{m}");
    }
    // the coarse inputs (multiples of 1/64) would hide the second rounding
    let ins = inputs(Dtype::Bf16, 4, 16 << 10, 9);
    let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let twice: Vec<u8> = (0..ins[0].len() / 2)
        .flat_map(|i| {
            let p0 = bf16_to_f32(f32_to_bf16(g(refs[0], i) + g(refs[1], i)));
            let p1 = bf16_to_f32(f32_to_bf16(g(refs[2], i) + g(refs[3], i)));
            f32_to_bf16(p0 + p1).to_le_bytes()
        })
        .collect();
    check_exact(Dtype::Bf16, &refs, &twice).unwrap();
    // fp32: rank order, bit for bit
    let ins = inputs(Dtype::Fp32, 8, 16 << 10, 77);
    let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let once = fp32_sum_rounded_once(Dtype::Fp32, &refs);
    check_exact(Dtype::Fp32, &refs, &once).unwrap();
    let f = |b: &[u8], i: usize| f32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
    let reversed: Vec<u8> = (0..ins[0].len() / 4)
        .flat_map(|i| {
            refs.iter()
                .rev()
                .fold(0f32, |a, b| a + f(b, i))
                .to_le_bytes()
        })
        .collect();
    check(Dtype::Fp32, &refs, &reversed).unwrap();
    assert!(
        check_exact(Dtype::Fp32, &refs, &reversed).is_err(),
        "another order"
    );
    assert!(check_exact(Dtype::Bf16, &[], &[]).is_err());
}

/// The copy-engine ring adds one rank per step and rounds each partial sum
/// to bf16 (N - 1 roundings, in ring order, different for every chunk): on
/// the backend's inputs that stays within the tolerance for 2 to 8 ranks.
#[test]
fn ring_order_bf16_roundings_pass_the_tolerance() {
    let g = |b: &[u8], i: usize| bf16_to_f32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]]));
    for n in 2..=8usize {
        let ins = inputs(Dtype::Bf16, n, 64 << 10, 900 + n as u64);
        let refs: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
        for start in 0..n {
            let out: Vec<u8> = (0..ins[0].len() / 2)
                .flat_map(|i| {
                    let mut acc = g(refs[start], i);
                    for k in 1..n {
                        acc = bf16_to_f32(f32_to_bf16(acc + g(refs[(start + k) % n], i)));
                    }
                    f32_to_bf16(acc).to_le_bytes()
                })
                .collect();
            check(Dtype::Bf16, &refs, &out).unwrap_or_else(|m| panic!("n={n} start={start}: {m}"));
        }
    }
}
