//! Shuffle sharding: which queues a flow may use.
//!
//! Each flow (a FlowSchema and its distinguisher, hashed by [`flow_hash`]) is dealt a *hand* of
//! `hand_size` distinct queues out of a *deck* of `queues`; a request then joins the least
//! loaded queue of its flow's hand. Two flows rarely share their whole hand, so one elephant
//! flow fills its own queues and leaves every other flow a queue it does not share.
//!
//! The dealing is kube's `shufflesharding.Dealer.Deal` step for step, so a hash maps to the
//! same hand here and in kube-apiserver (the debug dumps and metrics then line up), and
//! [`Dealer::new`] refuses what kube refuses, with kube's messages.

use std::fmt;

/// The most bits of the hash a deal may consume. kube stops at 60 of the 64 so that the last
/// card dealt stays near uniform (unevenness at most 32:33 instead of 2:3).
pub const MAX_HASH_BITS: u32 = 60;

/// The largest hand the entropy rule admits (deck 15, hand 15 needs 59 bits; any hand of 16
/// needs at least 64), so a deal's digits fit on the stack.
pub const MAX_HAND_SIZE: usize = 15;

/// kube refuses decks larger than this as impractical.
pub const MAX_DECK_SIZE: usize = 1 << 26;

/// A conservative estimate of the hash bits a deal consumes: `ceil(log2(deck) * hand)`, kube's
/// `RequiredEntropyBits`. Meaningful for `1 <= hand <= deck <= 2^26`.
pub fn required_entropy_bits(deck_size: usize, hand_size: usize) -> u32 {
    ((deck_size as f64).log2() * hand_size as f64).ceil() as u32
}

/// Why a (deck, hand) pair cannot be dealt; `Display` gives kube's message word for word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DealerError {
    /// A size of zero (kube also rejects negatives, which our unsigned sizes cannot be).
    NotPositive {
        /// The deck size asked for.
        deck_size: usize,
        /// The hand size asked for.
        hand_size: usize,
    },
    /// More cards to deal than the deck holds.
    HandLargerThanDeck {
        /// The deck size asked for.
        deck_size: usize,
        /// The hand size asked for.
        hand_size: usize,
    },
    /// A deck over [`MAX_DECK_SIZE`].
    DeckTooLarge {
        /// The deck size asked for.
        deck_size: usize,
    },
    /// A deal would need more than [`MAX_HASH_BITS`] bits of the hash.
    TooMuchEntropy {
        /// The deck size asked for.
        deck_size: usize,
        /// The hand size asked for.
        hand_size: usize,
    },
}

impl fmt::Display for DealerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPositive { deck_size, hand_size } => {
                write!(f, "deckSize {deck_size} or handSize {hand_size} is not positive")
            }
            Self::HandLargerThanDeck { deck_size, hand_size } => {
                write!(f, "handSize {hand_size} is greater than deckSize {deck_size}")
            }
            Self::DeckTooLarge { deck_size } => write!(f, "deckSize {deck_size} is impractically large"),
            Self::TooMuchEntropy { deck_size, hand_size } => write!(
                f,
                "required entropy bits of deckSize {deck_size} and handSize {hand_size} is greater than {MAX_HASH_BITS}"
            ),
        }
    }
}

impl std::error::Error for DealerError {}

/// Deals hands of distinct card (queue) indices in `0..deck_size` from a 64-bit hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dealer {
    deck_size: usize,
    hand_size: usize,
}

impl Dealer {
    /// A dealer for the given sizes, checked in kube's order (so the first failing rule is the
    /// one reported, as kube reports it).
    pub fn new(deck_size: usize, hand_size: usize) -> Result<Self, DealerError> {
        if deck_size == 0 || hand_size == 0 {
            return Err(DealerError::NotPositive { deck_size, hand_size });
        }
        if hand_size > deck_size {
            return Err(DealerError::HandLargerThanDeck { deck_size, hand_size });
        }
        if deck_size > MAX_DECK_SIZE {
            return Err(DealerError::DeckTooLarge { deck_size });
        }
        if required_entropy_bits(deck_size, hand_size) > MAX_HASH_BITS {
            return Err(DealerError::TooMuchEntropy { deck_size, hand_size });
        }
        Ok(Self { deck_size, hand_size })
    }

    /// The number of cards in the deck (queues).
    pub fn deck_size(&self) -> usize {
        self.deck_size
    }

    /// The number of cards in a hand.
    pub fn hand_size(&self) -> usize {
        self.hand_size
    }

    /// The hand for `hash`, in the order kube deals it.
    ///
    /// The hash is read as a mixed-radix number: digit `i` (radix `deck - i`) picks the `i`-th
    /// card among those not yet dealt, counted in ascending order. The second loop turns that
    /// rank among the remaining cards into the card's index in the full deck.
    pub fn deal(&self, hash: u64) -> Vec<usize> {
        let mut hand = Vec::with_capacity(self.hand_size);
        self.deal_into(hash, &mut hand);
        hand
    }

    /// [`Dealer::deal`] into a reused buffer (cleared first), so a hot path need not allocate.
    pub fn deal_into(&self, mut hash: u64, hand: &mut Vec<usize>) {
        hand.clear();
        // The raw digits stay apart from the dealt cards: every later card is adjusted
        // against the earlier *digits*, not the earlier cards, exactly as kube does.
        let mut digits = [0usize; MAX_HAND_SIZE];
        for (i, digit) in digits.iter_mut().enumerate().take(self.hand_size) {
            let radix = (self.deck_size - i) as u64;
            *digit = (hash % radix) as usize;
            hash /= radix;
        }
        for i in 0..self.hand_size {
            let mut card = digits[i];
            for j in (1..=i).rev() {
                if card >= digits[j - 1] {
                    card += 1;
                }
            }
            hand.push(card);
        }
    }
}

/// A flow's hash, kube's `hashFlowID`: the first 8 bytes, little-endian, of
/// SHA-256(`schema` ‖ 0x00 ‖ `distinguisher`). kube hashes only when the level has more than one
/// queue; otherwise every flow of the level shares queue 0 and the hash is irrelevant.
pub fn flow_hash(flow_schema: &str, distinguisher: &str) -> u64 {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(flow_schema.as_bytes());
    ctx.update(&[0]);
    ctx.update(distinguisher.as_bytes());
    let digest = ctx.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands worked out by hand from kube's `Deal`: the hash is split into digits
    /// `d_i = h_i % (deck - i)`, `h_{i+1} = h_i / (deck - i)`; card `i` starts at `d_i` and, for
    /// `j` from `i` down to 1, steps up by one whenever it is `>= d_{j-1}`. Each result was then
    /// checked against the other reading of the same rule: `d_i` is the card's rank among the
    /// cards not yet dealt.
    #[test]
    fn hands_match_kubes_deal_for_fixed_hashes() {
        // Zero: every digit 0, each card the smallest left.
        assert_eq!(Dealer::new(128, 6).unwrap().deal(0), vec![0, 1, 2, 3, 4, 5]);
        // 1 over (8, 7, 6): digits [1, 0, 0]; card 2 steps past d1 = 0 and d0 = 1.
        assert_eq!(Dealer::new(8, 3).unwrap().deal(1), vec![1, 0, 2]);
        // 1000 over (10, 9, 8): digits [0, 1, 3] (1000 = 0 + 10 * (1 + 9 * (3 + 8 * 1))).
        assert_eq!(Dealer::new(10, 3).unwrap().deal(1000), vec![0, 2, 5]);
        // 12345 over (64, 63, ...), the suggested `system` level's 64 queues and hand of 6:
        // 12345 = 57 + 64 * 192, 192 = 3 + 63 * 3, then 3, 0, 0, 0.
        assert_eq!(Dealer::new(64, 6).unwrap().deal(12345), vec![57, 3, 4, 0, 1, 2]);
        // u64::MAX over (128, ..., 123): digits [127, 1, 6, 54, 88, 5].
        assert_eq!(Dealer::new(128, 6).unwrap().deal(u64::MAX), vec![127, 1, 7, 56, 91, 6]);
        // The flow hash of ("global-default", "alice") (see below) over 128 queues: digits
        // [55, 61, 124, 123, 103, 1].
        let alice = flow_hash("global-default", "alice");
        assert_eq!(Dealer::new(128, 6).unwrap().deal(alice), vec![55, 62, 126, 125, 105, 1]);
    }

    #[test]
    fn every_hand_is_distinct_cards_within_the_deck() {
        for (deck, hand) in [(4, 4), (8, 8), (12, 12), (15, 15), (128, 8), (256, 7), (512, 6)] {
            let dealer = Dealer::new(deck, hand).unwrap();
            let mut buf = Vec::new();
            for i in 0..2000u64 {
                let hash = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                dealer.deal_into(hash, &mut buf);
                assert_eq!(buf.len(), hand);
                let mut sorted = buf.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), hand, "duplicate card in {buf:?}");
                assert!(buf.iter().all(|&c| c < deck));
            }
        }
    }

    #[test]
    fn dealer_refuses_what_kube_refuses_with_kubes_messages() {
        let msg = |d, h| Dealer::new(d, h).unwrap_err().to_string();
        assert_eq!(msg(0, 8), "deckSize 0 or handSize 8 is not positive");
        assert_eq!(msg(100, 0), "deckSize 100 or handSize 0 is not positive");
        assert_eq!(msg(100, 101), "handSize 101 is greater than deckSize 100");
        assert_eq!(msg(1 << 27, 2), "deckSize 134217728 is impractically large");
        assert_eq!(msg(512, 8), "required entropy bits of deckSize 512 and handSize 8 is greater than 60");
        assert_eq!(msg(16, 16), "required entropy bits of deckSize 16 and handSize 16 is greater than 60");
        assert!(Dealer::new(1024, 6).is_ok(), "exactly 60 bits is allowed");
        assert!(Dealer::new(15, 15).is_ok());
        assert!(Dealer::new(1, 1).is_ok());
        assert_eq!(required_entropy_bits(1024, 6), 60);
        assert_eq!(required_entropy_bits(512, 8), 72);
        assert_eq!(required_entropy_bits(128, 6), 42);
    }

    /// Expected values from Python's `hashlib.sha256(schema + b"\0" + distinguisher)`, first 8
    /// bytes read little-endian, as kube's `hashFlowID` does.
    #[test]
    fn flow_hash_is_kubes_sha256_of_schema_nul_distinguisher() {
        assert_eq!(flow_hash("global-default", "alice"), 17644606172554983095);
        assert_eq!(flow_hash("system-nodes", "system:node:n1"), 8967139723188866340);
        assert_eq!(flow_hash("catch-all", ""), 7733929212674924205);
        assert_eq!(flow_hash("kube-system-service-accounts", "kube-system"), 5788695476672829020);
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(flow_hash("ab", "c"), flow_hash("a", "bc"));
    }
}
