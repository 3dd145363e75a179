//! Go's `sort.SliceStable` (insertion sort of blocks of 20, then SymMerge), step for step.
//!
//! Upstream orders merged lists with a comparison that is not a strict weak ordering when
//! an item is missing from the reference order ("less" is then always true), so the result
//! depends on the exact sequence of comparisons and swaps. Reproducing Go's algorithm makes
//! those cases come out as upstream's do.

/// Sorts `data` stably by `less(a, b)`, exactly as Go's `sort.SliceStable` does.
pub(crate) fn slice_stable<T>(data: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, less, a, b);
        a = b;
        b += block;
    }
    insertion_sort(data, less, a, n);
    while block < n {
        a = 0;
        b = 2 * block;
        while b <= n {
            sym_merge(data, less, a, a + block, b);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, less, a, m, n);
        }
        block *= 2;
    }
}

fn lt<T>(data: &[T], less: &dyn Fn(&T, &T) -> bool, i: usize, j: usize) -> bool {
    less(&data[i], &data[j])
}

fn insertion_sort<T>(data: &mut [T], less: &dyn Fn(&T, &T) -> bool, a: usize, b: usize) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && lt(data, less, j, j - 1) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], less: &dyn Fn(&T, &T) -> bool, a: usize, m: usize, b: usize) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if lt(data, less, h, a) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = a;
        while k + 1 < i {
            data.swap(k, k + 1);
            k += 1;
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !lt(data, less, m, h) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !lt(data, less, p - c, c) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, less, a, start, mid);
    }
    if mid < end && end < b {
        sym_merge(data, less, mid, end, b);
    }
}

fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably() {
        let mut v: Vec<(u32, usize)> = (0..200).map(|i| ((i * 7919 % 13) as u32, i)).collect();
        slice_stable(&mut v, &|a, b| a.0 < b.0);
        for w in v.windows(2) {
            assert!(w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1));
        }
    }

    #[test]
    fn always_true_less_reverses_small_slices() {
        // With "less" always true, each insertion walks the new item to the front.
        let mut v = vec![1, 2, 3, 4];
        slice_stable(&mut v, &|_, _| true);
        assert_eq!(v, vec![4, 3, 2, 1]);
    }

    #[test]
    fn empty_and_single() {
        let mut v: Vec<u8> = vec![];
        slice_stable(&mut v, &|a, b| a < b);
        let mut w = vec![1];
        slice_stable(&mut w, &|a, b| a < b);
        assert_eq!(w, vec![1]);
    }
}
