//! SimHash version 2's feature loop and vote (docs/simhash.md), over a text's UTF-8 bytes,
//! compiled to WebAssembly. lib/simhash.ts fills the tables (the class and 64-bit value of every
//! BMP character, from @node-rs/xxhash) and the text, calls `fingerprint` and reads the result;
//! this file reads tables, rotates and XORs. Rebuild with lib/simhash-wasm/build.sh after any
//! change (it regenerates lib/simhash-wasm.ts, which a unit test checks against this source).
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

/// The class and value halves of every BMP character (filled by lib/simhash.ts).
static mut CLS: [u8; 65536] = [0; 65536];
static mut LO: [u32; 65536] = [0; 65536];
static mut HI: [u32; 65536] = [0; 65536];
/// The same values bit-interleaved (init): LO bit b at bit 2b, HI bit b at bit 2b + 1.
static mut V: [u64; 65536] = [0; 65536];
/// Two ASCII bytes' values at once (init): PAIR[b0 | b1 << 8] = V[b0] XOR rotr(V[b1], 2).
static mut PAIR: [u64; 32768] = [0; 32768];
/// Bit b & 7 of byte b >> 3: whether ASCII byte b is a word character (init).
static mut ASCII_WORD_BITS: [u8; 16] = [0; 16];
/// Whether the ASCII block loop may run (no ASCII character is unspaced: init).
static mut FAST: bool = false;
static mut TEXT: [u8; MAX_BYTES + BLOCK] = [0; MAX_BYTES + BLOCK];
/// Features, each bit-interleaved, one a token. A token takes two bytes at least with the
/// byte after it (a word and the character ending it, an unspaced character's three), the last
/// excepted: at most n / 2 + 1 of them, so collect() writes without a bounds check.
static mut FEAT: [u64; MAX_BYTES / 2 + 2] = [0; MAX_BYTES / 2 + 2];
/// The fingerprint's halves: [lo, hi].
static mut RESULT: [u32; 2] = [0; 2];

#[no_mangle]
pub extern "C" fn cls_ptr() -> *mut u8 {
    core::ptr::addr_of_mut!(CLS) as *mut u8
}
#[no_mangle]
pub extern "C" fn lo_ptr() -> *mut u32 {
    core::ptr::addr_of_mut!(LO) as *mut u32
}
#[no_mangle]
pub extern "C" fn hi_ptr() -> *mut u32 {
    core::ptr::addr_of_mut!(HI) as *mut u32
}
#[no_mangle]
pub extern "C" fn text_ptr() -> *mut u8 {
    core::ptr::addr_of_mut!(TEXT) as *mut u8
}
#[no_mangle]
pub extern "C" fn result_ptr() -> *mut u32 {
    core::ptr::addr_of_mut!(RESULT) as *mut u32
}

/// Spreads a 32-bit half over the even bits of a u64 (bit b to bit 2b).
fn spread(x: u32) -> u64 {
    let mut x = x as u64;
    x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    (x | x << 1) & 0x5555_5555_5555_5555
}

/// Fills V and ASCII_WORD_BITS from CLS, LO and HI (after lib/simhash.ts filled those).
/// Separators get 0 (a run of them adds nothing to the block loop's chain), surrogates excepted
/// (a character past U+FFFF is valued by its two).
#[no_mangle]
pub extern "C" fn init() {
    unsafe {
        let cls = &*core::ptr::addr_of!(CLS);
        let lo = &*core::ptr::addr_of!(LO);
        let hi = &*core::ptr::addr_of!(HI);
        let v = &mut *core::ptr::addr_of_mut!(V);
        let bits = &mut *core::ptr::addr_of_mut!(ASCII_WORD_BITS);
        for c in 0..65536 {
            v[c] = if cls[c] == 0 && !(0xd800..0xe000).contains(&c) { 0 } else { spread(lo[c]) | spread(hi[c]) << 1 };
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
/// come from a SIMD mask of the block's word characters. Other blocks go byte by byte, decoding
/// UTF-8. Reads and writes skip bounds checks: indices are below n + BLOCK <= MAX_BYTES + BLOCK,
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
        if fast {
            if let (Some(m0), Some(m1)) = (ascii_words16(text.add(i), bits), ascii_words16(text.add(i + 16), bits)) {
                ascii_block(text.add(i), m0 | m1 << 16, &mut s);
                i += BLOCK;
                continue;
            }
        }
        let end = if i + BLOCK < n { i + BLOCK } else { n };
        i = bytes(i, end, n, &mut s);
    }
    if s.in_word {
        let feat = core::ptr::addr_of_mut!(FEAT) as *mut u64;
        *feat.add(s.out) = feature(s.p, s.w);
        s.out += 1;
    }
    s.out
}

/// One block of 32 ASCII bytes at `at`, `mask` saying which are word characters.
#[inline(always)]
unsafe fn ascii_block(at: *const u8, mask: u32, s: &mut State) {
    let v = core::ptr::addr_of!(V) as *const u64;
    let feat = core::ptr::addr_of_mut!(FEAT) as *mut u64;
    let pair = core::ptr::addr_of!(PAIR) as *const u64;
    // q[k + 1]: the chain after byte 2k + 1 (two bytes a step); q[0] carries the open word in
    // (its hash rotated so that a word ending at j has hash rotl(chain(j) XOR base, 2j), base
    // being 0 then). The chain after an even byte j is q[j / 2] XOR rotr(V[byte j], 2j).
    let mut q = [0u64; BLOCK / 2 + 1];
    let mut x = s.w.rotate_left(2);
    q[0] = x;
    for k in 0..BLOCK / 2 {
        x ^= (*pair.add((at.add(2 * k) as *const u16).read_unaligned() as usize)).rotate_right(4 * k as u32);
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
        // Position j = k - 1; for an even j (k odd) the byte at j is added to the chain.
        let even = ((k & 1) as u64).wrapping_neg();
        let last = (*v.add(*at.add(k as usize).sub(1) as usize)).rotate_right(2 * k + 62) & even;
        let qe = *q.get_unchecked((k >> 1) as usize) ^ last;
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

/// The vote over FEAT[..count] into RESULT: bit i is 1 when at least half of the features have
/// it set (no feature: all ones). Counted two features at a time (the two lanes of a v128), in
/// two levels of counters packed in 64-bit lanes: nibbles for bits k, k+4, ... (k = 0..3) over 15
/// features a lane, before a nibble can overflow; their even and odd nibbles then added into
/// bytes, over 255 features a lane; only the bytes are unpacked. The features' bits are
/// interleaved: bit 2b is the low half's bit b, 2b + 1 the high half's.
#[target_feature(enable = "simd128")]
unsafe fn vote(count: usize) {
    let m = u64x2_splat(0x1111_1111_1111_1111);
    let nibbles = u64x2_splat(0x0f0f_0f0f_0f0f_0f0f);
    let feat = core::ptr::addr_of_mut!(FEAT) as *mut u64;
    // A zero feature after the last (FEAT has room: see there) makes the count of lanes even.
    *feat.add(count) = 0;
    let pairs = (count + 1) / 2;
    let mut wide = [0u32; 64];
    let mut j = 0;
    while j < pairs {
        let stop = if pairs - j > 255 { j + 255 } else { pairs };
        // Byte counters: even[k] byte r counts bit 8r + k, odd[k] byte r bit 8r + 4 + k.
        let mut even = [u64x2_splat(0); 4];
        let mut odd = [u64x2_splat(0); 4];
        while j < stop {
            let end = if stop - j > 15 { j + 15 } else { stop };
            let mut a = [u64x2_splat(0); 4];
            while j < end {
                let f = v128_load(feat.add(2 * j) as *const v128);
                a[0] = i64x2_add(a[0], v128_and(f, m));
                a[1] = i64x2_add(a[1], v128_and(u64x2_shr(f, 1), m));
                a[2] = i64x2_add(a[2], v128_and(u64x2_shr(f, 2), m));
                a[3] = i64x2_add(a[3], v128_and(u64x2_shr(f, 3), m));
                j += 1;
            }
            for k in 0..4 {
                even[k] = i64x2_add(even[k], v128_and(a[k], nibbles));
                odd[k] = i64x2_add(odd[k], v128_and(u64x2_shr(a[k], 4), nibbles));
            }
        }
        for k in 0..4 {
            // The two lanes' bytes, added as 16-bit counters (up to 510).
            let e = u16x8_extadd_pairwise_u8x16(i8x16_shuffle::<0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15>(even[k], even[k]));
            let o = u16x8_extadd_pairwise_u8x16(i8x16_shuffle::<0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15>(odd[k], odd[k]));
            macro_rules! lane {
                ($r:literal) => {
                    wide[8 * $r + k] += u16x8_extract_lane::<$r>(e) as u32;
                    wide[8 * $r + 4 + k] += u16x8_extract_lane::<$r>(o) as u32;
                };
            }
            lane!(0);
            lane!(1);
            lane!(2);
            lane!(3);
            lane!(4);
            lane!(5);
            lane!(6);
            lane!(7);
        }
    }
    let (mut lo, mut hi) = (0u32, 0u32);
    for b in 0..32 {
        if 2 * wide[2 * b] as usize >= count {
            lo |= 1 << b;
        }
        if 2 * wide[2 * b + 1] as usize >= count {
            hi |= 1 << b;
        }
    }
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

