//! Nearest-neighbour search over binary embeddings by Hamming distance, on the GPU.
//!
//! Each 256-bit embedding is packed into 8 `i32` words. The distance from a query to every
//! database entry is `popcount(query XOR entry)` summed over the words:
//! `db.bitwise_xor(query).bit_count().sum_dim(1)`, then the `k` smallest distances
//! (`top_k(k, 0, Order::Ascending)`) are the nearest neighbours. The database holds noisy copies of a few "prototype" codes, so the true
//! neighbours of a query made from a prototype are known, and the example checks it finds them.
//!
//! `cargo run --release --example hamming_search`

mod common;

use burn::tensor::{Int, Tensor, TensorData};
use burn_dml_ops::prelude::*;

const BITS: usize = 256;
const WORDS: usize = BITS / 32;
const ENTRIES: usize = 100_000;
const PROTOTYPES: usize = 64;
const K: usize = 5;

/// A small deterministic generator (xorshift64*), so the example needs no extra crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn code(&mut self) -> [u32; WORDS] {
        std::array::from_fn(|_| self.next() as u32)
    }

    /// `code` with `flips` random bits flipped.
    fn noisy(&mut self, code: &[u32; WORDS], flips: usize) -> [u32; WORDS] {
        let mut out = *code;
        for _ in 0..flips {
            let bit = (self.next() % BITS as u64) as usize;
            out[bit / 32] ^= 1 << (bit % 32);
        }
        out
    }
}

fn main() {
    let device = common::device();
    println!("Hamming search over {ENTRIES} binary embeddings of {BITS} bits on {device:?}");

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let prototypes: Vec<[u32; WORDS]> = (0..PROTOTYPES).map(|_| rng.code()).collect();
    // Entry i is a copy of prototype i % PROTOTYPES with up to 40 bits flipped; except for the
    // first K entries of prototype 0, which are within 3 bits of it.
    let mut words = Vec::with_capacity(ENTRIES * WORDS);
    for i in 0..ENTRIES {
        let prototype = &prototypes[i % PROTOTYPES];
        let flips = if i % PROTOTYPES == 0 && i / PROTOTYPES < K {
            3
        } else {
            20 + i % 21
        };
        words.extend(rng.noisy(prototype, flips).map(|w| w as i32));
    }
    let db = Tensor::<2, Int>::from_data(TensorData::new(words, [ENTRIES, WORDS]), &device);

    let query = rng.noisy(&prototypes[0], 2).map(|w| w as i32);
    let query = Tensor::<2, Int>::from_data(TensorData::new(query.to_vec(), [1, WORDS]), &device);

    // [ENTRIES, WORDS] -> [ENTRIES, 1] distances, all on the device.
    let distances = db
        .bitwise_xor(query)
        .bit_count()
        .sum_dim(1)
        .reshape([ENTRIES]);
    // The K smallest distances on the device, ties by lower index.
    let Sorted {
        values: nearest,
        indices: index,
    } = distances.top_k(K, 0, Order::Ascending);

    let nearest: Vec<i64> = nearest.into_data().convert::<i64>().try_to_vec().unwrap();
    let index: Vec<i64> = index.into_data().convert::<i64>().try_to_vec().unwrap();
    println!("{K} nearest entries (index: distance in bits):");
    for (i, d) in index.iter().zip(&nearest) {
        println!("  {i:>6}: {d}");
    }
    let mut found = index.clone();
    found.sort_unstable();
    let expected: Vec<i64> = (0..K as i64).map(|j| j * PROTOTYPES as i64).collect();
    assert_eq!(
        found, expected,
        "the planted near-duplicates are the nearest neighbours"
    );
    println!("found the {K} planted near-duplicates of the query's prototype");
}
