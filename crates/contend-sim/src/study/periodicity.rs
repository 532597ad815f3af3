//! The longest stretch of a sequence that repeats itself exactly with some
//! period: what an exact fast-forward of a steady state (issue 11) could
//! skip at most. A channel whose starts (their spacing in time and what
//! they carry) never repeat for long is in no steady state to skip, and
//! `examples/steady_state.rs` measures this on the TLP runs.

/// A stretch of a sequence in which every element equals the one
/// `period` places later: `seq[i] == seq[i + period]` for each `i` in
/// `start..start + len` (so `seq[start..start + len + period]` repeats
/// one block of `period` elements, the last copy cut short).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodicRun {
    pub period: usize,
    pub start: usize,
    pub len: usize,
}

impl PeriodicRun {
    /// The elements the stretch spans: `len + period`, the first block
    /// included (a fast-forward must see it before it can repeat it).
    pub fn span(&self) -> usize {
        self.len + self.period
    }
}

/// The longest [`PeriodicRun`] of `seq` with a period of 1 to
/// `max_period` (the shorter period where two are as long, the earlier
/// start where two of one period are); `None` where no element equals
/// the one a period later. One pass per period: O(len × max_period).
pub fn longest_periodic_run<T: PartialEq>(seq: &[T], max_period: usize) -> Option<PeriodicRun> {
    let mut best: Option<PeriodicRun> = None;
    for period in 1..=max_period.min(seq.len().saturating_sub(1)) {
        let mut run = 0;
        for (i, (a, b)) in seq.iter().zip(&seq[period..]).enumerate() {
            if a == b {
                run += 1;
                if best.is_none_or(|b| run > b.len) {
                    best = Some(PeriodicRun {
                        period,
                        start: i + 1 - run,
                        len: run,
                    });
                }
            } else {
                run = 0;
            }
        }
    }
    best
}

/// How many elements of `seq` repeat, in some stretch, the block of
/// 1 to `max_period` elements before them, where that stretch repeats its
/// block whole at least once (a steady state seen for a whole period,
/// which a fast-forward could then have skipped): the elements `i +
/// period` for every `i` of every run of `seq[i] == seq[i + period]` at
/// least `period` long, each counted once. O(len × max_period).
pub fn repeated<T: PartialEq>(seq: &[T], max_period: usize) -> usize {
    let mut covered = vec![false; seq.len()];
    for period in 1..=max_period.min(seq.len().saturating_sub(1)) {
        let pairs = seq.len() - period;
        let mut i = 0;
        while i < pairs {
            if seq[i] != seq[i + period] {
                i += 1;
                continue;
            }
            let start = i;
            while i < pairs && seq[i] == seq[i + period] {
                i += 1;
            }
            if i - start >= period {
                covered[start + period..i + period].fill(true);
            }
        }
    }
    covered.iter().filter(|&&c| c).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: every period and start, each run counted afresh.
    fn by_every_start<T: PartialEq>(seq: &[T], max_period: usize) -> Option<PeriodicRun> {
        let mut best: Option<PeriodicRun> = None;
        for period in 1..=max_period.min(seq.len().saturating_sub(1)) {
            for start in 0..seq.len() - period {
                let len = (start..seq.len() - period)
                    .take_while(|&i| seq[i] == seq[i + period])
                    .count();
                if len > 0 && best.is_none_or(|b| len > b.len) {
                    best = Some(PeriodicRun { period, start, len });
                }
            }
        }
        best
    }

    #[test]
    fn finds_a_repeated_block_between_noise() {
        // 3 elements of noise, a block of 5 repeated 4 times, 2 of noise
        let block = [7, 1, 1, 4, 2];
        let mut seq = vec![9, 8, 6];
        for _ in 0..4 {
            seq.extend_from_slice(&block);
        }
        seq.extend_from_slice(&[5, 3]);
        let run = longest_periodic_run(&seq, 10).unwrap();
        assert_eq!(
            run,
            PeriodicRun {
                period: 5,
                start: 3,
                len: 15
            }
        );
        assert_eq!(run.span(), 20);
        // a period too short to hold the block finds only its pair of 1s
        assert_eq!(longest_periodic_run(&seq, 4).unwrap().len, 1);
    }

    #[test]
    fn nothing_repeats_in_distinct_elements() {
        let seq: Vec<u32> = (0..50).collect();
        assert_eq!(longest_periodic_run(&seq, 20), None);
        assert_eq!(longest_periodic_run::<u32>(&[], 20), None);
        assert_eq!(longest_periodic_run(&[1], 20), None);
    }

    /// The reference of [`repeated`]: an element counts where some period
    /// and some stretch of at least that period of equal pairs, ending at
    /// or after it, hold it among the later copies.
    fn repeated_each(seq: &[u8], max_period: usize) -> usize {
        (0..seq.len())
            .filter(|&j| {
                (1..=max_period.min(j)).any(|p| {
                    // the pairs (i, i + p) equal from `lo` to `hi` around j - p
                    let eq = |i: usize| i + p < seq.len() && seq[i] == seq[i + p];
                    if !eq(j - p) {
                        return false;
                    }
                    let mut lo = j - p;
                    while lo > 0 && eq(lo - 1) {
                        lo -= 1;
                    }
                    let mut hi = j - p;
                    while eq(hi + 1) {
                        hi += 1;
                    }
                    hi + 1 - lo >= p
                })
            })
            .count()
    }

    #[test]
    fn counts_the_copies_after_a_first_whole_block() {
        let block = [7u8, 1, 1, 4, 2];
        let mut seq = vec![9, 8, 6];
        for _ in 0..4 {
            seq.extend_from_slice(&block);
        }
        seq.extend_from_slice(&[5, 3]);
        // the 15 elements of the three copies after the first block, and
        // the second 1 of the first block (the pair of 1s is a stretch of
        // period 1, one long: it repeats its block whole once)
        assert_eq!(repeated(&seq, 10), 15 + 1);
        // a stretch shorter than its period is no steady state
        assert_eq!(repeated(&[1u8, 2, 3, 1, 2, 9], 3), 0);
        assert_eq!(repeated::<u8>(&[], 3), 0);
    }

    proptest! {
        /// The runs counted in one pass per period give the elements the
        /// reference finds element by element.
        #[test]
        fn repeated_matches_element_by_element(
            seq in proptest::collection::vec(0u8..3, 0..60),
            max_period in 1usize..12,
        ) {
            prop_assert_eq!(repeated(&seq, max_period), repeated_each(&seq, max_period));
        }

        /// The one pass per period finds the run the reference finds by trying
        /// every start.
        #[test]
        fn one_pass_matches_every_start(
            seq in proptest::collection::vec(0u8..3, 0..60),
            max_period in 1usize..12,
        ) {
            prop_assert_eq!(
                longest_periodic_run(&seq, max_period),
                by_every_start(&seq, max_period)
            );
        }
    }
}
