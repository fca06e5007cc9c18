//! The first look [`super::Redactor::clears_json_text`] takes at a whole JSON
//! text: one pass over its bytes, with a 4 KiB table of the words' starts.

/// A first look at a whole JSON text, for [`super::Redactor::clears_json_text`]: one
/// pass that is much cheaper than the automata and may say "maybe" where they
/// would say no, never the reverse. Each word's first three bytes (letters in
/// lower case) set two bits of a small table; two-byte words are kept whole.
#[derive(Clone)]
pub(super) struct WordSieve {
    bits: Box<[u64; WordSieve::WORDS]>,
    /// Two-byte words, and whether they match in any case.
    pairs: Vec<([u8; 2], bool)>,
    /// The bytes a two-byte word starts with (in both cases for one that
    /// matches in any case).
    pair_starts: Box<[bool; 256]>,
    /// A word shorter than two bytes: any text may hold it.
    always: bool,
}

/// What [`WordSieve::sift`] saw in a text.
pub(super) struct Sifted {
    /// A backslash: some string may read otherwise than its bytes stand.
    pub(super) escape: bool,
    /// The most bytes between two quotes: no string is longer.
    pub(super) longest_string: usize,
    /// Whether the text may hold one of the words.
    pub(super) may_hold_word: bool,
}

impl WordSieve {
    /// The table's size in 64-bit words: 4 KiB, a few hundred words' starts at
    /// well under one chance in a thousand of a false "maybe" per byte.
    const WORDS: usize = 512;

    pub(super) fn new(any_case: &[&str], exact_case: &[&str]) -> Self {
        let mut sieve = Self {
            bits: Box::new([0; Self::WORDS]),
            pairs: Vec::new(),
            pair_starts: Box::new([false; 256]),
            always: false,
        };
        let words = any_case.iter().map(|w| (w, true));
        for (word, any_case) in words.chain(exact_case.iter().map(|w| (w, false))) {
            match word.as_bytes() {
                [a, b, c, ..] => {
                    let start = u32::from_be_bytes([
                        0,
                        a.to_ascii_lowercase(),
                        b.to_ascii_lowercase(),
                        c.to_ascii_lowercase(),
                    ]);
                    for bit in Self::bits_of(start) {
                        sieve.bits[bit >> 6] |= 1 << (bit & 63);
                    }
                }
                [a, b] => {
                    sieve.pairs.push(([*a, *b], any_case));
                    sieve.pair_starts[usize::from(*a)] = true;
                    if any_case {
                        sieve.pair_starts[usize::from(a.to_ascii_lowercase())] = true;
                        sieve.pair_starts[usize::from(a.to_ascii_uppercase())] = true;
                    }
                }
                _ => sieve.always = true,
            }
        }
        sieve
    }

    /// The two bits of a word start (three bytes, lower case, in a `u32`).
    fn bits_of(start: u32) -> [usize; 2] {
        let mixed = start.wrapping_mul(0x9E37_79B1) as usize;
        [mixed >> 17, mixed & 0x7FFF]
    }

    pub(super) fn sift(&self, text: &[u8]) -> Sifted {
        let (mut escape, mut longest_string, mut since_quote) = (false, 0, 0);
        let (mut start, mut hit, mut pair) = (0u32, 0u64, false);
        let mut previous = None;
        for (at, &byte) in text.iter().enumerate() {
            escape |= byte == b'\\';
            if byte == b'"' {
                longest_string = longest_string.max(since_quote);
                since_quote = 0;
            } else {
                since_quote += 1;
            }
            start = (start << 8 | u32::from(byte.to_ascii_lowercase())) & 0xFF_FFFF;
            let [i, j] = Self::bits_of(start);
            hit |= (self.bits[i >> 6] >> (i & 63)) & (self.bits[j >> 6] >> (j & 63)) & u64::from(at >= 2);
            if let Some(first) = previous.filter(|first: &u8| self.pair_starts[usize::from(*first)]) {
                pair |= self.pairs.iter().any(|(word, any_case)| {
                    let seen = [first, byte];
                    if *any_case {
                        seen.eq_ignore_ascii_case(word)
                    } else {
                        seen == *word
                    }
                });
            }
            previous = Some(byte);
        }
        let may_hold_word = self.always || hit != 0 || pair;
        Sifted {
            escape,
            longest_string,
            may_hold_word,
        }
    }
}
