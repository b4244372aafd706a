//! SimHash version 2's feature loop and vote (docs/simhash.md), over a text's UTF-8 bytes,
//! compiled to WebAssembly. lib/simhash.ts fills the tables (the class and 64-bit value of every
//! BMP character, from @node-rs/xxhash) and the text, calls `fingerprint` and reads the result;
//! this file reads tables, rotates and XORs. It is the same loop lib/simhash.ts ran in JavaScript
//! until #35's third pass, with the same values, at a quarter to a half of its CPU
//! (docs/simhash.md has the figures). Rebuild with lib/simhash-wasm/build.sh after any change
//! (it regenerates lib/simhash-wasm.ts, which a unit test checks against this source).
#![no_std]

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// lib/simhash.ts MAX_SIMHASH_BYTES: the text buffer's size.
const MAX_BYTES: usize = 256 * 1024;
/// Character classes (lib/simhash.ts): separators are 0.
const WORD: u8 = 1;
const UNSPACED: u8 = 2;

/// The class and value of every BMP character (filled by lib/simhash.ts).
static mut CLS: [u8; 65536] = [0; 65536];
static mut LO: [u32; 65536] = [0; 65536];
static mut HI: [u32; 65536] = [0; 65536];
static mut TEXT: [u8; MAX_BYTES] = [0; MAX_BYTES];
/// Features, each as (hi << 32) | lo, one a token. A token takes two bytes at least with the
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

#[inline(always)]
fn rotl(x: u32, r: u32) -> u32 {
    x.rotate_left(r)
}

/// The feature of a token after the one before it: rotl(previous, 5) XOR token, each half.
#[inline(always)]
fn feature(pl: u32, ph: u32, l: u32, h: u32) -> u64 {
    ((rotl(ph, 5) ^ h) as u64) << 32 | (rotl(pl, 5) ^ l) as u64
}

/// The features of TEXT[..n] into FEAT; returns how many. Tokens are words (runs of word
/// characters) and single unspaced characters, in order; each makes one feature with the token
/// before it (none before the first). A word's hash is rotl(hash so far, 1) XOR the next
/// character's value. A character cut at n is left out. Measured and not kept: the same without
/// a branch at word boundaries (a running hash over the whole text, masks for word starts and
/// ends): 1.4 times the CPU of this loop on clean-links. Reads and writes skip bounds checks
/// (0.88 of the time): indices are below n <= MAX_BYTES, at most 0xffff for a decoded character
/// (or its surrogates), and FEAT holds as many features as n bytes can make (above).
unsafe fn collect(n: usize) -> usize {
    let text = &*core::ptr::addr_of!(TEXT);
    let cls = core::ptr::addr_of!(CLS) as *const u8;
    let tl = core::ptr::addr_of!(LO) as *const u32;
    let th = core::ptr::addr_of!(HI) as *const u32;
    let feat = &mut *core::ptr::addr_of_mut!(FEAT);
    let n = if n > MAX_BYTES { MAX_BYTES } else { n };
    // Whether an ASCII byte is a word character; 0 for every byte from 0x80 (a lead or
    // continuation byte): one read decides whether an ASCII word goes on.
    let mut ascii_word = [0u8; 256];
    for b in 0..128 {
        ascii_word[b] = (*cls.add(b) == WORD) as u8;
    }
    let mut out = 0usize;
    let mut in_word = false;
    // The open word's hash so far (r), the last token's hash (p).
    let (mut rl, mut rh, mut pl, mut ph) = (0u32, 0u32, 0u32, 0u32);
    let mut i = 0usize;
    // A token of class k and value (vl, vh): a word character extends or opens the word (and
    // the rest of the word, while ASCII, is read in a loop of its own: 0.8 of the time on
    // clean-links); anything else closes the open word, and an unspaced character is a token.
    macro_rules! token {
        ($k:expr, $vl:expr, $vh:expr) => {{
            let (k, vl, vh) = ($k, $vl, $vh);
            if k == WORD {
                if in_word {
                    rl = rotl(rl, 1) ^ vl;
                    rh = rotl(rh, 1) ^ vh;
                } else {
                    rl = vl;
                    rh = vh;
                    in_word = true;
                }
                while i < n {
                    let b = *text.get_unchecked(i) as usize;
                    if *ascii_word.get_unchecked(b) == 0 {
                        break;
                    }
                    rl = rotl(rl, 1) ^ *tl.add(b);
                    rh = rotl(rh, 1) ^ *th.add(b);
                    i += 1;
                }
                continue;
            }
            if in_word {
                *feat.get_unchecked_mut(out) = feature(pl, ph, rl, rh);
                out += 1;
                pl = rl;
                ph = rh;
                in_word = false;
            }
            if k == UNSPACED {
                *feat.get_unchecked_mut(out) = feature(pl, ph, vl, vh);
                out += 1;
                pl = vl;
                ph = vh;
            }
        }};
    }
    while i < n {
        let b = *text.get_unchecked(i) as usize;
        let c: usize;
        if b < 0x80 {
            c = b;
            i += 1;
        } else if b < 0xe0 {
            if i + 1 >= n {
                break;
            }
            c = ((b & 0x1f) << 6) | (*text.get_unchecked(i + 1) as usize & 0x3f);
            i += 2;
        } else if b < 0xf0 {
            if i + 2 >= n {
                break;
            }
            c = ((b & 0x0f) << 12) | ((*text.get_unchecked(i + 1) as usize & 0x3f) << 6) | (*text.get_unchecked(i + 2) as usize & 0x3f);
            i += 3;
        } else {
            if i + 3 >= n {
                break;
            }
            // A character past U+FFFF: its high surrogate's class, rotl(value(high), 1) XOR
            // value(low). Bytes that decode to no such character (not UTF-8) separate.
            let cp = (((b & 0x07) << 18) | ((*text.get_unchecked(i + 1) as usize & 0x3f) << 12) | ((*text.get_unchecked(i + 2) as usize & 0x3f) << 6) | (*text.get_unchecked(i + 3) as usize & 0x3f)) as i64 - 0x10000;
            i += 4;
            let high = 0xd800 | (cp >> 10) as usize;
            let low = 0xdc00 | (cp as usize & 0x3ff);
            if cp < 0 || high > 0xdfff {
                token!(0, 0, 0);
            } else {
                token!(*cls.add(high), rotl(*tl.add(high), 1) ^ *tl.add(low), rotl(*th.add(high), 1) ^ *th.add(low));
            }
            continue;
        }
        token!(*cls.add(c), *tl.add(c), *th.add(c));
    }
    if in_word {
        *feat.get_unchecked_mut(out) = feature(pl, ph, rl, rh);
        out += 1;
    }
    out
}

/// The vote over FEAT[..count] into RESULT: bit i is 1 when at least half of the features have
/// it set (no feature: all ones). Counted in two levels of counters packed in u64s: nibbles for
/// bits k, k+4, ... (k = 0..3) over 15 features, before a nibble can overflow; their even and
/// odd nibbles then added into bytes, over 255 features; only the bytes are unpacked.
unsafe fn vote(count: usize) {
    const M: u64 = 0x1111_1111_1111_1111;
    const NIBBLES: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    let feat = &*core::ptr::addr_of!(FEAT);
    let mut wide = [0u32; 64];
    let mut j = 0;
    while j < count {
        let stop = if count - j > 255 { j + 255 } else { count };
        // Byte counters: even[k] byte r counts bit 8r + k, odd[k] byte r bit 8r + 4 + k.
        let mut even = [0u64; 4];
        let mut odd = [0u64; 4];
        while j < stop {
            let end = if stop - j > 15 { j + 15 } else { stop };
            let (mut a0, mut a1, mut a2, mut a3) = (0u64, 0u64, 0u64, 0u64);
            while j < end {
                let f = feat[j];
                a0 += f & M;
                a1 += (f >> 1) & M;
                a2 += (f >> 2) & M;
                a3 += (f >> 3) & M;
                j += 1;
            }
            even[0] += a0 & NIBBLES;
            odd[0] += (a0 >> 4) & NIBBLES;
            even[1] += a1 & NIBBLES;
            odd[1] += (a1 >> 4) & NIBBLES;
            even[2] += a2 & NIBBLES;
            odd[2] += (a2 >> 4) & NIBBLES;
            even[3] += a3 & NIBBLES;
            odd[3] += (a3 >> 4) & NIBBLES;
        }
        for k in 0..4 {
            for r in 0..8 {
                wide[8 * r + k] += ((even[k] >> (8 * r)) & 255) as u32;
                wide[8 * r + 4 + k] += ((odd[k] >> (8 * r)) & 255) as u32;
            }
        }
    }
    let (mut lo, mut hi) = (0u32, 0u32);
    for b in 0..32 {
        if 2 * wide[b] as usize >= count {
            lo |= 1 << b;
        }
        if 2 * wide[32 + b] as usize >= count {
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
