//! Go's `sort.Sort` (pattern-defeating quicksort since Go 1.19), step for step.
//!
//! Two orders kube's answers depend on are sorted by it with a `Less` that is not a strict
//! weak order: goautoneg's `Accept` clauses (by q, then by specificity, where a `*/*` of a
//! higher q and a specific type of a lower q are each "less" than the other) and go-yaml's map
//! keys (a "natural" order of runs of digits). With such an order the result depends on the
//! algorithm's every comparison and swap, so this is Go's algorithm, not merely a sort: for up
//! to 12 elements an insertion sort (stable), beyond that Go's pdqsort with its pivot choices,
//! partial insertion sort, pattern breaking (xorshift64 13/7/17, as Go's `sort` and `slices`
//! seed it with the length) and heapsort fallback.

/// Sorts `data` as Go's `sort.Sort` sorts a `sort.Interface` whose `Less(i, j)` is
/// `less(&data[i], &data[j])`.
pub fn sort<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    if n <= 1 {
        return;
    }
    let mut s = Sorter { data, less };
    let limit = bits_len(n);
    s.pdqsort(0, n, limit);
}

/// Go's `bits.Len`: the number of bits needed to represent `x`.
fn bits_len(x: usize) -> usize {
    (usize::BITS - x.leading_zeros()) as usize
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

struct Sorter<'a, T, F> {
    data: &'a mut [T],
    less: F,
}

impl<T, F: Fn(&T, &T) -> bool> Sorter<'_, T, F> {
    fn less(&self, i: usize, j: usize) -> bool {
        (self.less)(&self.data[i], &self.data[j])
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.data.swap(i, j);
    }

    fn insertion_sort(&mut self, a: usize, b: usize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    fn sift_down(&mut self, lo: usize, hi: usize, first: usize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                return;
            }
            if child + 1 < hi && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(&mut self, a: usize, b: usize) {
        let first = a;
        let hi = b - a;
        let mut i = (hi as isize - 1) / 2;
        while i >= 0 {
            self.sift_down(i as usize, hi, first);
            i -= 1;
        }
        let mut i = hi as isize - 1;
        while i >= 0 {
            self.swap(first, first + i as usize);
            self.sift_down(0, i as usize, first);
            i -= 1;
        }
    }

    fn pdqsort(&mut self, mut a: usize, mut b: usize, mut limit: usize) {
        const MAX_INSERTION: usize = 12;
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let length = b - a;
            if length <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = self.choose_pivot(a, b);
            if hint == Hint::Decreasing {
                self.reverse_range(a, b);
                pivot = (b - 1) - (pivot - a);
                hint = Hint::Increasing;
            }
            if was_balanced
                && was_partitioned
                && hint == Hint::Increasing
                && self.partial_insertion_sort(a, b)
            {
                return;
            }
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already) = self.partition(a, b, pivot);
            was_partitioned = already;
            let (left, right) = (mid - a, b - mid);
            let threshold = length / 8;
            if left < right {
                was_balanced = left >= threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    fn partition(&mut self, a: usize, b: usize, pivot: usize) -> (usize, bool) {
        self.swap(a, pivot);
        // Inclusive bounds of what is left to partition; `j` may step below `a + 1`.
        let (mut i, mut j) = (a as isize + 1, b as isize - 1);
        let at = |x: isize| x as usize;
        while i <= j && self.less(at(i), a) {
            i += 1;
        }
        while i <= j && !self.less(at(j), a) {
            j -= 1;
        }
        if i > j {
            self.swap(at(j), a);
            return (at(j), true);
        }
        self.swap(at(i), at(j));
        i += 1;
        j -= 1;
        loop {
            while i <= j && self.less(at(i), a) {
                i += 1;
            }
            while i <= j && !self.less(at(j), a) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(at(i), at(j));
            i += 1;
            j -= 1;
        }
        self.swap(at(j), a);
        (at(j), false)
    }

    fn partition_equal(&mut self, a: usize, b: usize, pivot: usize) -> usize {
        self.swap(a, pivot);
        let (mut i, mut j) = (a as isize + 1, b as isize - 1);
        let at = |x: isize| x as usize;
        loop {
            while i <= j && !self.less(a, at(i)) {
                i += 1;
            }
            while i <= j && self.less(a, at(j)) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(at(i), at(j));
            i += 1;
            j -= 1;
        }
        at(i)
    }

    fn partial_insertion_sort(&mut self, a: usize, b: usize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: usize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            // The smaller one to the left (Go's loop runs down to index 1 of the whole data).
            if i - a >= 2 {
                let mut j = i - 1;
                while j >= 1 {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            // The greater one to the right.
            if b - i >= 2 {
                let mut j = i + 1;
                while j < b {
                    if !self.less(j, j - 1) {
                        break;
                    }
                    self.swap(j, j - 1);
                    j += 1;
                }
            }
        }
        false
    }

    fn break_patterns(&mut self, a: usize, b: usize) {
        let length = b - a;
        if length >= 8 {
            let mut random = length as u64;
            let modulus = 1usize << bits_len(length);
            let start = a + (length / 4) * 2 - 1;
            for idx in start..=start + 2 {
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                let mut other = (random as usize) & (modulus - 1);
                if other >= length {
                    other -= length;
                }
                self.swap(idx, a + other);
            }
        }
    }

    fn choose_pivot(&mut self, a: usize, b: usize) -> (usize, Hint) {
        const SHORTEST_NINTHER: usize = 50;
        const MAX_SWAPS: usize = 4 * 3;
        let l = b - a;
        let mut swaps = 0;
        let mut i = a + l / 4;
        let mut j = a + l / 4 * 2;
        let mut k = a + l / 4 * 3;
        if l >= 8 {
            if l >= SHORTEST_NINTHER {
                i = self.median(i - 1, i, i + 1, &mut swaps);
                j = self.median(j - 1, j, j + 1, &mut swaps);
                k = self.median(k - 1, k, k + 1, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        match swaps {
            0 => (j, Hint::Increasing),
            MAX_SWAPS => (j, Hint::Decreasing),
            _ => (j, Hint::Unknown),
        }
    }

    fn order2(&self, a: usize, b: usize, swaps: &mut usize) -> (usize, usize) {
        if self.less(b, a) {
            *swaps += 1;
            (b, a)
        } else {
            (a, b)
        }
    }

    fn median(&self, a: usize, b: usize, c: usize, swaps: &mut usize) -> usize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, _c) = self.order2(b, c, swaps);
        let (_a, b) = self.order2(a, b, swaps);
        b
    }

    fn reverse_range(&mut self, a: usize, b: usize) {
        let (mut i, mut j) = (a, b - 1);
        while i < j {
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_a_sort_for_a_strict_order() {
        // Long enough for every path: pivots, partitions, the pattern breaker.
        for n in [0usize, 1, 2, 5, 12, 13, 49, 50, 51, 200, 1000] {
            let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ n as u64;
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed % 97
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            sort(&mut v, |a, b| a < b);
            assert_eq!(v, want, "n={n}");
            // Already sorted, reversed, all equal.
            let mut asc: Vec<usize> = (0..n).collect();
            sort(&mut asc, |a, b| a < b);
            assert_eq!(asc, (0..n).collect::<Vec<_>>());
            let mut desc: Vec<usize> = (0..n).rev().collect();
            sort(&mut desc, |a, b| a < b);
            assert_eq!(desc, (0..n).collect::<Vec<_>>());
            let mut same = vec![7u8; n];
            sort(&mut same, |a, b| a < b);
            assert_eq!(same, vec![7u8; n]);
        }
    }

    #[test]
    fn short_slices_are_an_insertion_sort() {
        // Stable for up to 12 elements, as Go's insertion sort is.
        let mut v = vec![(1, 'a'), (0, 'b'), (1, 'c'), (0, 'd')];
        sort(&mut v, |a, b| a.0 < b.0);
        assert_eq!(v, vec![(0, 'b'), (0, 'd'), (1, 'a'), (1, 'c')]);
    }
}
