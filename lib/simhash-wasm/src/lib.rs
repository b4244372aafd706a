//! SimHash version 2's feature loop and vote (docs/simhash.md), over a text's UTF-8 bytes,
//! compiled to WebAssembly. lib/simhash.ts fills the tables (the class and 64-bit value of every
//! BMP character, from @node-rs/xxhash) and the text, calls `fingerprint` and reads the result;
//! this file reads tables, rotates and XORs. Rebuild with lib/simhash-wasm/build.sh after any
//! change (it regenerates lib/simhash-wasm.ts, which a unit test checks against this source).
//! SIMD128 (which Node has run since 16.4) is enabled function by function
//! (`#[target_feature(enable = "simd128")]`), so the build needs no flags.
#![no_std]

use core::arch::wasm32::*;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// lib/simhash.ts MAX_SIMHASH_BYTES: the text buffer's size.
const MAX_BYTES: usize = 256 * 1024;
/// Bytes a block of the ASCII loop reads (TEXT holds this many zeros after the text).
const BLOCK: usize = 32;
/// Character classes (lib/simhash.ts): separators are 0.
const WORD: u8 = 1;
const UNSPACED: u8 = 2;

/// The class and value of every BMP character (filled by lib/simhash.ts). A value's two 32-bit
/// halves are bit-interleaved: the low half's bit b at bit 2b, the high half's at 2b + 1, so that
/// one 64-bit rotation by 2k rotates each half by k.
static mut CLS: [u8; 65536] = [0; 65536];
static mut V: [u64; 65536] = [0; 65536];
/// Two ASCII bytes' values at once (init): PAIR[b0 | b1 << 8] = V[b0] XOR rotr(V[b1], 2).
static mut PAIR: [u64; 32768] = [0; 32768];
/// Bit b & 7 of byte b >> 3: whether ASCII byte b is a word character (init).
static mut ASCII_WORD_BITS: [u8; 16] = [0; 16];
/// Whether the ASCII block loop may run (no ASCII character is unspaced: init).
static mut FAST: bool = false;
/// The text, 16-byte aligned (a block starts at an even byte, so its pairs are aligned u16s).
#[repr(C, align(16))]
struct Text([u8; MAX_BYTES + BLOCK]);
static mut TEXT: Text = Text([0; MAX_BYTES + BLOCK]);
/// Features, each bit-interleaved, one a token. A token takes two bytes at least with the
/// byte after it (a word and the character ending it, an unspaced character's three), the last
/// excepted: at most n / 2 + 1 of them, so collect() writes without a bounds check; vote() pads
/// them with zeros to a multiple of 32 (the 32 more).
static mut FEAT: [u64; MAX_BYTES / 2 + 2 + 32] = [0; MAX_BYTES / 2 + 2 + 32];
/// The fingerprint's halves: [lo, hi].
static mut RESULT: [u32; 2] = [0; 2];

#[no_mangle]
pub extern "C" fn cls_ptr() -> *mut u8 {
    core::ptr::addr_of_mut!(CLS) as *mut u8
}
#[no_mangle]
pub extern "C" fn v_ptr() -> *mut u64 {
    core::ptr::addr_of_mut!(V) as *mut u64
}
#[no_mangle]
pub extern "C" fn text_ptr() -> *mut u8 {
    core::ptr::addr_of_mut!(TEXT) as *mut u8
}
#[no_mangle]
pub extern "C" fn result_ptr() -> *mut u32 {
    core::ptr::addr_of_mut!(RESULT) as *mut u32
}

/// Fills PAIR, ASCII_WORD_BITS and FAST from CLS and V (after lib/simhash.ts filled those),
/// and makes sure a separator's value is 0 (a run of them must add nothing to the block loop's
/// chain), surrogates excepted (a character past U+FFFF is valued by its two).
#[no_mangle]
pub extern "C" fn init() {
    unsafe {
        let cls = &*core::ptr::addr_of!(CLS);
        let v = &mut *core::ptr::addr_of_mut!(V);
        let bits = &mut *core::ptr::addr_of_mut!(ASCII_WORD_BITS);
        for c in 0..65536 {
            if cls[c] == 0 && !(0xd800..0xe000).contains(&c) {
                v[c] = 0;
            }
        }
        let pair = &mut *core::ptr::addr_of_mut!(PAIR);
        for b1 in 0..128 {
            for b0 in 0..128 {
                pair[b0 | b1 << 8] = v[b0] ^ v[b1].rotate_right(2);
            }
        }
        *bits = [0; 16];
        let mut fast = true;
        for b in 0..128 {
            if cls[b] == WORD {
                bits[b >> 3] |= 1 << (b & 7);
            }
            if cls[b] == UNSPACED {
                fast = false;
            }
        }
        *core::ptr::addr_of_mut!(FAST) = fast;
    }
}

/// The feature of a token after the one before it: each half rotl(previous, 5) XOR token.
#[inline(always)]
fn feature(p: u64, t: u64) -> u64 {
    p.rotate_left(10) ^ t
}

/// Which of the 16 bytes at `at` are ASCII word characters (a 16-bit mask), or None when one
/// of them is not ASCII.
#[inline]
#[target_feature(enable = "simd128")]
unsafe fn ascii_words16(at: *const u8, bits: v128) -> Option<u32> {
    let x = v128_load(at as *const v128);
    if i8x16_bitmask(x) != 0 {
        return None;
    }
    let byte = i8x16_swizzle(bits, u8x16_shr(x, 3));
    let bit = i8x16_swizzle(u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128), v128_and(x, u8x16_splat(7)));
    Some(i8x16_bitmask(u8x16_ne(v128_and(byte, bit), u8x16_splat(0))) as u32)
}

/// The tokens' state between blocks.
struct State {
    /// Features written so far.
    out: usize,
    /// Whether a word is open, and its hash so far (0 when none is).
    in_word: bool,
    w: u64,
    /// The last token's hash.
    p: u64,
}

/// The features of TEXT[..n] into FEAT; returns how many. Tokens are words (runs of word
/// characters) and single unspaced characters, in order; each makes one feature with the token
/// before it (none before the first). A word's hash is (each half) rotl(hash so far, 1) XOR
/// the next character's value; with the halves bit-interleaved, that is one 64-bit rotation by 2.
///
/// Blocks of 32 bytes all ASCII (the common case) take no branch a byte: the chain
/// Q[j] = Q[j-1] XOR rotr(V[byte j], 2j) runs over the whole block (separators add 0), and a word
/// ending at j after the word that ended at e has hash rotl(Q[j] XOR Q[e], 2j); the word ends
/// come from a SIMD mask of the block's word characters, one branch a word. The chain goes two
/// bytes a step (PAIR), which is enough: after a word's last byte comes a separator, which adds 0.
/// Other blocks go byte by byte, decoding UTF-8, with a branch at every word boundary (the loop
/// of lib/simhash.ts before #35's fourth pass, same values). Reads and writes skip bounds checks: indices are below n + BLOCK <= MAX_BYTES + BLOCK,
/// at most 0xffff for a decoded character (or its surrogates), and FEAT holds as many features as
/// n bytes can make (above).
#[target_feature(enable = "simd128")]
unsafe fn collect(n: usize) -> usize {
    let n = if n > MAX_BYTES { MAX_BYTES } else { n };
    let text = core::ptr::addr_of_mut!(TEXT) as *mut u8;
    // Zeros (separators) after the text, for the block that crosses its end.
    v128_store(text.add(n) as *mut v128, u64x2_splat(0));
    v128_store(text.add(n + 16) as *mut v128, u64x2_splat(0));
    let text = text as *const u8;
    let bits = v128_load(core::ptr::addr_of!(ASCII_WORD_BITS) as *const v128);
    let fast = *core::ptr::addr_of!(FAST);
    let mut s = State { out: 0, in_word: false, w: 0, p: 0 };
    let mut i = 0usize;
    while i < n {
        if fast && i & 1 == 0 {
            if let (Some(m0), Some(m1)) = (ascii_words16(text.add(i), bits), ascii_words16(text.add(i + 16), bits)) {
                ascii_block(text.add(i), m0 | m1 << 16, &mut s);
                i += BLOCK;
                continue;
            }
        }
        // A block with a byte from 0x80, or one character to get back to an even byte.
        let end = if i & 1 != 0 { i + 1 } else if i + BLOCK < n { i + BLOCK } else { n };
        i = bytes(i, end, n, &mut s);
    }
    if s.in_word {
        let feat = core::ptr::addr_of_mut!(FEAT) as *mut u64;
        *feat.add(s.out) = feature(s.p, s.w);
        s.out += 1;
    }
    s.out
}

/// One block of 32 ASCII bytes at `at` (an even address), `mask` saying which are word
/// characters.
#[inline(always)]
unsafe fn ascii_block(at: *const u8, mask: u32, s: &mut State) {
    let feat = core::ptr::addr_of_mut!(FEAT) as *mut u64;
    let pair = core::ptr::addr_of!(PAIR) as *const u64;
    // q[k + 1]: the chain after byte 2k + 1 (two bytes a step); q[0] carries the open word in
    // (its hash rotated so that a word ending at j has hash rotl(chain(j) XOR base, 2j), base
    // being 0 then). The pairs are read from memory, not taken out of the SIMD registers that
    // hold the block (which the compiler prefers): 0.83-0.85 of the time on the pages measured.
    let mut q = [0u64; BLOCK / 2 + 1];
    let mut x = s.w.rotate_left(2);
    q[0] = x;
    for k in 0..BLOCK / 2 {
        x ^= (*pair.add(core::ptr::read_volatile(at.add(2 * k) as *const u16) as usize)).rotate_right(4 * k as u32);
        *q.get_unchecked_mut(k + 1) = x;
    }
    // Bit k of m: position k - 1 (bit 0: the open word, position -1) is a word character.
    let m = (mask as u64) << 1 | s.in_word as u64;
    // Words ending at -1..30 (one ending at 31 stays open).
    let mut ends = m & !(m >> 1) & 0xffff_ffff;
    let mut base = 0u64;
    let (mut out, mut p) = (s.out, s.p);
    while ends != 0 {
        let k = ends.trailing_zeros();
        // Position j = k - 1. For an even j the chain after j is the chain after the pair
        // (j, j + 1): the byte after a word's end is no word character, and adds 0.
        let qe = *q.get_unchecked(((k + 1) >> 1) as usize);
        let h = (qe ^ base).rotate_left(2 * k + 62);
        *feat.add(out) = feature(p, h);
        out += 1;
        p = h;
        base = qe;
        ends &= ends - 1;
    }
    s.out = out;
    s.p = p;
    s.in_word = mask >> 31 != 0;
    s.w = if s.in_word { (q[BLOCK / 2] ^ base).rotate_left(62) } else { 0 };
}

/// The characters starting in TEXT[i..end] (the last may end past `end`, not past n), one at a
/// time; returns where the next one starts (n when a character is cut at n).
#[inline(never)]
unsafe fn bytes(mut i: usize, end: usize, n: usize, s: &mut State) -> usize {
    let text = core::ptr::addr_of!(TEXT) as *const u8;
    let cls = core::ptr::addr_of!(CLS) as *const u8;
    let v = core::ptr::addr_of!(V) as *const u64;
    let feat = core::ptr::addr_of_mut!(FEAT) as *mut u64;
    let bits = &*core::ptr::addr_of!(ASCII_WORD_BITS);
    let (mut out, mut in_word, mut r, mut p) = (s.out, s.in_word, s.w, s.p);
    // A token of class k and value t: a word character extends or opens the word (and the rest
    // of the word, while ASCII, is read in a loop of its own); anything else closes the open
    // word, and an unspaced character is a token.
    macro_rules! token {
        ($k:expr, $t:expr) => {{
            let (k, t) = ($k, $t);
            if k == WORD {
                r = if in_word { r.rotate_left(2) ^ t } else { t };
                in_word = true;
                while i < end {
                    let b = *text.add(i) as usize;
                    if b >= 0x80 || bits[b >> 3] & (1 << (b & 7)) == 0 {
                        break;
                    }
                    r = r.rotate_left(2) ^ *v.add(b);
                    i += 1;
                }
                continue;
            }
            if in_word {
                *feat.add(out) = feature(p, r);
                out += 1;
                p = r;
                r = 0;
                in_word = false;
            }
            if k == UNSPACED {
                *feat.add(out) = feature(p, t);
                out += 1;
                p = t;
            }
        }};
    }
    while i < end {
        let b = *text.add(i) as usize;
        let c: usize;
        if b < 0x80 {
            c = b;
            i += 1;
        } else if b < 0xe0 {
            if i + 1 >= n {
                i = n;
                break;
            }
            c = ((b & 0x1f) << 6) | (*text.add(i + 1) as usize & 0x3f);
            i += 2;
        } else if b < 0xf0 {
            if i + 2 >= n {
                i = n;
                break;
            }
            c = ((b & 0x0f) << 12) | ((*text.add(i + 1) as usize & 0x3f) << 6) | (*text.add(i + 2) as usize & 0x3f);
            i += 3;
        } else {
            if i + 3 >= n {
                i = n;
                break;
            }
            // A character past U+FFFF: its high surrogate's class, (each half)
            // rotl(value(high), 1) XOR value(low). Bytes that decode to no such character (not
            // UTF-8) separate.
            let cp = (((b & 0x07) << 18) | ((*text.add(i + 1) as usize & 0x3f) << 12) | ((*text.add(i + 2) as usize & 0x3f) << 6) | (*text.add(i + 3) as usize & 0x3f)) as i64 - 0x10000;
            i += 4;
            let high = 0xd800 | (cp >> 10) as usize;
            let low = 0xdc00 | (cp as usize & 0x3ff);
            if cp < 0 || high > 0xdfff {
                token!(0, 0);
            } else {
                token!(*cls.add(high), (*v.add(high)).rotate_left(2) ^ *v.add(low));
            }
            continue;
        }
        token!(*cls.add(c), *v.add(c));
    }
    s.out = out;
    s.in_word = in_word;
    s.w = r;
    s.p = p;
    i
}

/// The even bits of x, packed (bit 2b to bit b): the inverse of the interleaving of V.
fn compact(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | x >> 1) & 0x3333_3333_3333_3333;
    x = (x | x >> 2) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x >> 4) & 0x00ff_00ff_00ff_00ff;
    x = (x | x >> 8) & 0x0000_ffff_0000_ffff;
    (x | x >> 16) as u32
}

/// A carry-save adder of three bit vectors: (carry, sum), bit by bit.
#[inline]
#[target_feature(enable = "simd128")]
fn csa(a: v128, b: v128, c: v128) -> (v128, v128) {
    let u = v128_xor(a, b);
    (v128_bitselect(c, a, u), v128_xor(u, c))
}

/// Counters of the vote, 32-bit: acc[k][h] lane l counts bit 8 (4h + l) + k, for k = 0..7.
type Acc = [[v128; 2]; 8];

/// Adds byte counters into acc: byte r of each lane of x[k] (k = 0..7) counts bit 8r + k; the
/// two lanes are added, as the two halves of a feature pair. Each byte times 2^shift.
#[inline]
#[target_feature(enable = "simd128")]
fn add_bytes(acc: &mut Acc, x: &[v128; 8], shift: u32) {
    for k in 0..8 {
        let w = u16x8_extadd_pairwise_u8x16(i8x16_shuffle::<0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15>(x[k], x[k]));
        acc[k][0] = i32x4_add(acc[k][0], i32x4_shl(u32x4_extend_low_u16x8(w), shift));
        acc[k][1] = i32x4_add(acc[k][1], i32x4_shl(u32x4_extend_high_u16x8(w), shift));
    }
}

/// Nibble counters (nibble r of a[k] counts bit 4r + k, k = 0..3) as byte counters (byte r of
/// x[k] counts bit 8r + k, k = 0..7).
#[inline]
#[target_feature(enable = "simd128")]
fn bytes_of(a: &[v128; 4]) -> [v128; 8] {
    let nibbles = u64x2_splat(0x0f0f_0f0f_0f0f_0f0f);
    let mut x = [u64x2_splat(0); 8];
    for k in 0..4 {
        x[k] = v128_and(a[k], nibbles);
        x[k + 4] = v128_and(u64x2_shr(a[k], 4), nibbles);
    }
    x
}

/// The vote over FEAT[..count] into RESULT: bit i is 1 when at least half of the features have
/// it set (no feature: all ones). The features' bits are interleaved: bit 2b is the low half's
/// bit b, 2b + 1 the high half's. Counted 32 features at a time (16 v128 of two) by a tree of
/// carry-save adders (Harley-Seal), whose bit planes ones, twos, fours and eights carry over and
/// whose sixteens are counted in nibbles (bits k, k + 4, ... in sixteens[k]) over 15 blocks,
/// then in 32-bit lanes (acc), compared with half the count in SIMD too.
#[target_feature(enable = "simd128")]
unsafe fn vote(count: usize) {
    let m = u64x2_splat(0x1111_1111_1111_1111);
    let feat = core::ptr::addr_of_mut!(FEAT) as *mut u64;
    // Zero features up to a multiple of 32 (FEAT has room: see there) add nothing.
    let blocks = (count + 31) / 32;
    *feat.add(count) = 0;
    let mut z = (count + 1) & !1;
    while z < 32 * blocks {
        v128_store(feat.add(z) as *mut v128, u64x2_splat(0));
        z += 2;
    }
    let zero = u64x2_splat(0);
    let (mut ones, mut twos, mut fours, mut eights) = (zero, zero, zero, zero);
    let mut acc: Acc = [[zero; 2]; 8];
    let mut sixteens = [zero; 4];
    let mut b = 0;
    while b < blocks {
        // Nibble r of sixteens[k] counts bit 4r + k's sixteens, over at most 15 blocks.
        if b % 15 == 0 && b > 0 {
            add_bytes(&mut acc, &bytes_of(&sixteens), 4);
            sixteens = [zero; 4];
        }
        let d = feat.add(32 * b) as *const v128;
        let (twos_a, o) = csa(ones, v128_load(d), v128_load(d.add(1)));
        let (twos_b, o) = csa(o, v128_load(d.add(2)), v128_load(d.add(3)));
        let (fours_a, t) = csa(twos, twos_a, twos_b);
        let (twos_a, o) = csa(o, v128_load(d.add(4)), v128_load(d.add(5)));
        let (twos_b, o) = csa(o, v128_load(d.add(6)), v128_load(d.add(7)));
        let (fours_b, t) = csa(t, twos_a, twos_b);
        let (eights_a, f) = csa(fours, fours_a, fours_b);
        let (twos_a, o) = csa(o, v128_load(d.add(8)), v128_load(d.add(9)));
        let (twos_b, o) = csa(o, v128_load(d.add(10)), v128_load(d.add(11)));
        let (fours_a, t) = csa(t, twos_a, twos_b);
        let (twos_a, o) = csa(o, v128_load(d.add(12)), v128_load(d.add(13)));
        let (twos_b, o) = csa(o, v128_load(d.add(14)), v128_load(d.add(15)));
        let (fours_b, t) = csa(t, twos_a, twos_b);
        let (eights_b, f) = csa(f, fours_a, fours_b);
        let (s16, e) = csa(eights, eights_a, eights_b);
        ones = o;
        twos = t;
        fours = f;
        eights = e;
        for k in 0..4 {
            sixteens[k] = i64x2_add(sixteens[k], v128_and(u64x2_shr(s16, k as u32), m));
        }
        b += 1;
    }
    // The last sixteens (16 times at most 15) and what the planes hold (ones + 2 twos + 4 fours
    // + 8 eights, at most 15) fit a byte together.
    let mut x = bytes_of(&sixteens);
    for k in 0..8 {
        let bit = |p: v128, w: u32| u64x2_shl(v128_and(u64x2_shr(p, k as u32), u64x2_splat(0x0101_0101_0101_0101)), w);
        x[k] = v128_or(i64x2_shl(x[k], 4), v128_or(v128_or(bit(ones, 0), bit(twos, 1)), v128_or(bit(fours, 2), bit(eights, 3))));
    }
    add_bytes(&mut acc, &x, 0);
    // Bit i is set when 2 * acc >= count, that is acc >= ceil(count / 2).
    let half = u32x4_splat(((count + 1) / 2) as u32);
    let mut bits = 0u64;
    for k in 0..8 {
        for h in 0..2 {
            let four = i32x4_bitmask(u32x4_ge(acc[k][h], half)) as u64;
            // Lane l to bit 8 (4h + l) + k.
            bits |= ((four * 0x0020_4081) & 0x0101_0101) << (32 * h + k);
        }
    }
    // Interleaved: even bits are the low half, odd bits the high half.
    let (lo, hi) = (compact(bits), compact(bits >> 1));
    let result = &mut *core::ptr::addr_of_mut!(RESULT);
    result[0] = lo;
    result[1] = hi;
}

/// The fingerprint of TEXT[..n] into RESULT; returns how many features voted.
#[no_mangle]
pub extern "C" fn fingerprint(n: usize) -> usize {
    unsafe {
        let count = collect(n);
        vote(count);
        count
    }
}

