/**
 * SimHash version 2 (lib/simhash.ts): the fast loop against a plain restatement of its
 * definition (docs/simhash.md), fixed vectors, texts in many scripts (the same text written
 * differently, small edits, distinct texts), CJK shingles, and the helpers.
 */
import { xxh64 } from '@node-rs/xxhash';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { SIMHASH_WASM_SOURCE_SHA256 } from '../../lib/simhash-wasm';
import { blocks16, hammingDistance, MAX_SIMHASH_BYTES, simhash64, simhashWithCount } from '../../lib/simhash';
import { rng } from '../support/rng';

/** The definition, one code point at a time with strings and regular expressions (slow, plain). */
function reference(text: string): { simhash: string; shingles: number } {
  const rotl = (x: number, r: number): number => ((x << r) | (x >>> (32 - r))) | 0;
  const halves = (h: bigint): [number, number] => [Number(h & 0xffffffffn) | 0, Number(h >> 32n) | 0];
  const unit = (u: number): [number, number] => halves(xxh64(Buffer.from([u >> 8, u & 255]), 1n));
  type Char = { kind: 'word' | 'unspaced' | 'sep'; v: [number, number] };
  const charOf = (ch: string): Char => {
    const cp = ch.codePointAt(0)!;
    if (cp > 0xffff) {
      const high = 0xd800 | ((cp - 0x10000) >>> 10);
      const low = 0xdc00 | ((cp - 0x10000) & 0x3ff);
      const [hl, hh] = unit(high);
      const [ll, lh] = unit(low);
      return { kind: cp >= 0x20000 && cp < 0x40000 ? 'unspaced' : 'sep', v: [rotl(hl, 1) ^ ll, rotl(hh, 1) ^ lh] };
    }
    const f = ch.normalize('NFKC').toLowerCase();
    if (!/^[\p{L}\p{N}\p{M}_]/u.test(f)) return { kind: 'sep', v: [0, 0] };
    const unspaced = /^[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]/u.test(f);
    return { kind: unspaced ? 'unspaced' : 'word', v: halves(xxh64(f, 0n)) };
  };
  const tokens: Array<[number, number]> = [];
  let word: [number, number] | null = null;
  for (const ch of text) {
    const c = charOf(ch);
    if (c.kind === 'word') {
      word = word ? [rotl(word[0], 1) ^ c.v[0], rotl(word[1], 1) ^ c.v[1]] : c.v;
      continue;
    }
    if (word) tokens.push(word);
    word = null;
    if (c.kind === 'unspaced') tokens.push(c.v);
  }
  if (word) tokens.push(word);
  const counts = new Array<number>(64).fill(0);
  let prev: [number, number] = [0, 0];
  for (const t of tokens) {
    const f = [rotl(prev[0], 5) ^ t[0], rotl(prev[1], 5) ^ t[1]];
    for (let b = 0; b < 32; b++) {
      counts[b] += (f[0] >>> b) & 1;
      counts[32 + b] += (f[1] >>> b) & 1;
    }
    prev = t;
  }
  let lo = 0;
  let hi = 0;
  for (let b = 0; b < 32; b++) {
    if (2 * counts[b] >= tokens.length) lo |= 1 << b;
    if (2 * counts[32 + b] >= tokens.length) hi |= 1 << b;
  }
  return { simhash: (hi >>> 0).toString(16).padStart(8, '0') + (lo >>> 0).toString(16).padStart(8, '0'), shingles: tokens.length };
}

/** Letters of each script (and how its words are separated). */
const SCRIPTS: Record<string, { letters: string; spaced: boolean }> = {
  latin: { letters: 'abcdefghijklmnopqrstuvwxyz', spaced: true },
  czech: { letters: 'abcčdďeéěfghiíjklmnňoóprřsštťuúůvyýzž', spaced: true },
  cyrillic: { letters: 'абвгдежзийклмнопрстуфхцчшщыэюя', spaced: true },
  greek: { letters: 'αβγδεζηθικλμνξοπρστυφχψω', spaced: true },
  arabic: { letters: 'ابتثجحخدذرزسشصضطظعغفقكلمنهوي', spaced: true },
  devanagari: { letters: 'कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह\u093e\u093f\u0940\u0941\u0947\u094b', spaced: true },
  korean: { letters: '가나다라마바사아자차카타파하고노도로모보소오조초', spaced: true },
  chinese: { letters: '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明', spaced: false },
  japanese: { letters: 'あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソ日本語東京大学新聞社会', spaced: false },
  thai: { letters: 'กขคงจฉชซญดตถทธนบปผพฟภมยรลวศษสหอฮะาิีึืุู่้เแโใไ', spaced: false },
};

/** A text of `words` words (or runs of characters, for unspaced scripts) in a script, with punctuation. */
function textIn(script: string, words: number, seed: number): string[] {
  const { letters } = SCRIPTS[script];
  const chars = Array.from(letters);
  const r = rng(seed);
  return Array.from({ length: words }, () => Array.from({ length: 2 + Math.floor(r() * 6) }, () => chars[Math.floor(r() * chars.length)]).join(''));
}

const join = (script: string, words: string[]): string => (SCRIPTS[script].spaced ? words.join(' ') : words.join('、'));

describe('simhash64 (version 2) is its definition', () => {
  it('equals the plain restatement on random texts of every script, mixed, with punctuation and astral characters', () => {
    const r = rng(35);
    const extras = ['’', '“', '—', '…', '😀', '\u{20000}', '\u{2A6D6}', 'Ａ', 'ﬁ', 'İ', 'ß', '\u0301', '_', '9', '\u00a0', '\t'];
    const names = Object.keys(SCRIPTS);
    for (let t = 0; t < 200; t++) {
      const parts: string[] = [];
      for (let p = 0; p < 1 + Math.floor(r() * 6); p++) {
        const s = names[Math.floor(r() * names.length)];
        parts.push(join(s, textIn(s, Math.floor(r() * 30), t * 100 + p)));
        if (r() < 0.5) parts.push(extras[Math.floor(r() * extras.length)]);
      }
      const text = parts.join(r() < 0.5 ? ' ' : '');
      expect(simhashWithCount(text)).toEqual(reference(text));
      expect(simhashWithCount(Buffer.from(text, 'utf8'))).toEqual(reference(text));
    }
  });

  it('gives fixed values (a change of algorithm must change SIMHASH_VERSION)', () => {
    expect(simhash64('How are you? I AM fine. Thanks. And you?')).toBe(reference('How are you? I AM fine. Thanks. And you?').simhash);
    expect({
      en: simhash64('How are you? I AM fine. Thanks. And you?'),
      zh: simhash64('你好　世界！　　呼噜。'),
      ja: simhash64('東京大学の新聞は日本語で書かれています'),
      th: simhash64('ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ'),
    }).toEqual({ en: '91a9056fa148556b', zh: '99b6f63cfe9ff7ff', ja: '98bd04671988119c', th: 'f59cd5f5c2bccb1f' });
  });

  it('counts one feature per word and per unspaced character; a text with none gets all ones', () => {
    expect(simhashWithCount('one two, three!').shingles).toBe(3);
    expect(simhashWithCount('日本語です').shingles).toBe(5);
    expect(simhashWithCount('ok 日本').shingles).toBe(3);
    expect(simhashWithCount(' ... !! ')).toEqual({ simhash: 'ffffffffffffffff', shingles: 0 });
  });

  it('reads at most MAX_SIMHASH_BYTES of UTF-8, leaving out a character cut there', () => {
    const head = 'word '.repeat(Math.floor((MAX_SIMHASH_BYTES - 2) / 5)) + 'xx';
    expect(Buffer.byteLength(head)).toBe(MAX_SIMHASH_BYTES - 2);
    // 'é' (2 bytes) from byte MAX-2 fits; '日' (3 bytes) from MAX-2 does not.
    expect(simhash64(`${head}é tail tail`)).toBe(reference(`${head}é`).simhash);
    expect(simhash64(`${head}日 tail`)).toBe(reference(head).simhash);
  });
});

describe('the same text written differently', () => {
  it('ignores case, punctuation, curly or straight quotes, full-width forms and spacing', () => {
    const plain = simhash64("It's the printer's new toner, don't worry: 2026 models");
    expect(simhash64('It’s the Printer’s NEW toner — don’t worry… 2026 models!')).toBe(plain);
    expect(simhash64('ＩＴ’Ｓ　the printer’s new toner, don’t worry: ２０２６ models')).toBe(plain);
    expect(simhash64('你好　世界！　　呼噜。')).toBe(simhash64('你好，世界　呼噜'));
  });

  it('costs the same path whatever the script: the string and its UTF-8 bytes agree', () => {
    for (const s of Object.keys(SCRIPTS)) {
      const text = join(s, textIn(s, 300, 1));
      expect(simhash64(Buffer.from(text, 'utf8'))).toBe(simhash64(text));
      expect(simhashWithCount(text).shingles).toBeGreaterThanOrEqual(300);
    }
  });

  it('the same words in another script are another text', () => {
    // Latin and Cyrillic letters that look alike are different characters.
    expect(hammingDistance(simhash64('cop tax oxo pop '.repeat(20)), simhash64('сор тах охо рор '.repeat(20)))).toBeGreaterThan(3);
  });
});

describe('near-duplicates in every script', () => {
  for (const s of Object.keys(SCRIPTS)) {
    it(`${s}: a changed date or word stays within 3 bits, another page of the same vocabulary does not`, () => {
      // 2,000 words: the median corpus page has about 12,000 characters of text.
      const words = textIn(s, 2000, 7);
      const base = join(s, words);
      const a = simhash64(`${base} visited 2026-11-30`);
      const b = simhash64(`${base} visited 2026-12-01`);
      const edited = [...words];
      edited[1000] = words[1001];
      const other = simhash64(join(s, textIn(s, 2000, 8)));
      expect(hammingDistance(a, b)).toBeLessThanOrEqual(3);
      expect(hammingDistance(simhash64(base), simhash64(join(s, edited)))).toBeLessThanOrEqual(3);
      expect(hammingDistance(a, other)).toBeGreaterThan(3);
    });
  }

  it('CJK shingles are character pairs: the same characters in another order are another text', () => {
    const chars = Array.from(SCRIPTS.chinese.letters).slice(0, 200);
    const r = rng(3);
    const shuffled = [...chars].sort(() => r() - 0.5);
    expect(hammingDistance(simhash64(chars.join('')), simhash64(shuffled.join('')))).toBeGreaterThan(3);
    // One character changed in 200 moves few bits.
    const one = [...chars];
    one[100] = '龍';
    expect(hammingDistance(simhash64(chars.join('')), simhash64(one.join('')))).toBeLessThanOrEqual(3);
  });
});

describe('simhash helpers', () => {
  it('renders 16 lower-case hex digits', () => {
    expect(simhash64('How are you?')).toMatch(/^[0-9a-f]{16}$/);
    expect(simhash64('')).toMatch(/^[0-9a-f]{16}$/);
  });

  it('splits into four 16-bit blocks, most significant first', () => {
    expect(blocks16('0123456789abcdef')).toEqual([0x0123, 0x4567, 0x89ab, 0xcdef]);
  });

  it('counts differing bits across both halves', () => {
    expect(hammingDistance('ffffffffffffffff', '0000000000000000')).toBe(64);
    expect(hammingDistance('8000000000000001', '0000000000000000')).toBe(2);
  });
});

describe('the WebAssembly module (lib/simhash-wasm)', () => {
  it('was generated from the committed Rust source (rebuild with lib/simhash-wasm/build.sh)', () => {
    const dir = joinPath(__dirname, '..', '..', 'lib', 'simhash-wasm');
    const source = createHash('sha256').update(readFileSync(joinPath(dir, 'Cargo.toml'))).update(readFileSync(joinPath(dir, 'src', 'lib.rs'))).digest('hex');
    expect(SIMHASH_WASM_SOURCE_SHA256).toBe(source);
  });

  it('gives the definition on empty texts, lone and paired surrogates, astral characters in and between words', () => {
    const texts = [
      '', 'a', '日', '😀', '\ud800', '\udc00', 'ab\ud800cd ef', 'ab\udc00\ud800cd ef', 'x\ud83d', '\ude00y z',
      'a😀b c😀 😀d', '𠀀𠀁𠀂 ab 𠀃', 'naïve straße İstanbul ﬁne Ｆｕｌｌ', 'mot’s — “quoted” … 9_9', '日本語の𠀋文と English words',
    ];
    for (const text of texts) {
      expect(simhashWithCount(text)).toEqual(reference(text));
      expect(simhashWithCount(Buffer.from(text, 'utf8'))).toEqual(reference(text));
    }
    expect(simhashWithCount(new Uint8Array(0))).toEqual({ simhash: 'ffffffffffffffff', shingles: 0 });
  });

  it('votes right across its counters\' limits (blocks of 32 features, 15 blocks a flush)', () => {
    const r = rng(255);
    const words = textIn('latin', 4000, 9);
    for (const count of [1, 2, 14, 15, 16, 31, 32, 33, 63, 64, 65, 254, 255, 256, 479, 480, 481, 510, 511, 959, 960, 961, 3825, 4000]) {
      const text = words.slice(0, count).join(r() < 0.5 ? ' ' : ', ');
      expect(simhashWithCount(text)).toEqual(reference(text));
    }
    // The same feature again and again: every counter as high as it goes.
    for (const count of [479, 480, 481, 512, 960, 961, 7681]) {
      const text = 'ab '.repeat(count);
      expect(simhashWithCount(text)).toEqual(reference(text));
    }
  });

  it('reads ASCII in blocks of 32 bytes: words across block edges, ending on any byte, beside other bytes', () => {
    const r = rng(32);
    const chars = 'abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_';
    const seps = [' ', ' ', ' ', ',', '.', '\n', '-', '(', ')', '"', '  ', ', '];
    const others = ['é', '日', '’', '😀', '\u{20000}', 'ж'];
    for (let t = 0; t < 300; t++) {
      const parts: string[] = [' '.repeat(t % 40)];
      while (parts.join('').length < 40 + 3 * (t % 50)) {
        const len = 1 + Math.floor(r() * (r() < 0.1 ? 70 : 12));
        parts.push(Array.from({ length: len }, () => chars[Math.floor(r() * chars.length)]).join(''));
        parts.push(seps[Math.floor(r() * seps.length)]);
        if (t % 3 === 0 && r() < 0.1) parts.push(others[Math.floor(r() * others.length)]);
      }
      if (r() < 0.5) parts.pop();
      const text = parts.join('');
      expect(simhashWithCount(text)).toEqual(reference(text));
      expect(simhashWithCount(Buffer.from(text, 'utf8'))).toEqual(reference(text));
    }
  });

  it('leaves out a character whose bytes are cut at the end of what it is given', () => {
    for (const last of ['é', '日', '😀', '𠀀']) {
      const text = `some words then ${last}`;
      const bytes = Buffer.from(text, 'utf8');
      for (let cut = 1; cut < Buffer.byteLength(last); cut++) {
        expect(simhashWithCount(bytes.subarray(0, bytes.length - cut))).toEqual(reference('some words then '));
      }
    }
  });

  it('holds as many features as MAX_SIMHASH_BYTES can make', () => {
    // One-letter words: a feature every two bytes; a letter and a CJK character: two every four.
    expect(simhashWithCount('a '.repeat(MAX_SIMHASH_BYTES)).shingles).toBe(MAX_SIMHASH_BYTES / 2);
    expect(simhashWithCount('a日'.repeat(MAX_SIMHASH_BYTES)).shingles).toBe(MAX_SIMHASH_BYTES / 2);
    expect(simhashWithCount('a'.repeat(MAX_SIMHASH_BYTES + 10)).shingles).toBe(1);
    const cjk = '日本語'.repeat(MAX_SIMHASH_BYTES / 9 + 1);
    expect(simhashWithCount(cjk)).toEqual(simhashWithCount(Buffer.from(cjk, 'utf8')));
  });

  it('keeps nothing from one text to the next', () => {
    const short = 'How are you? I AM fine. Thanks. And you?';
    const first = simhashWithCount(short);
    simhashWithCount('日本語の文 and a long English text '.repeat(5000));
    expect(simhashWithCount(short)).toEqual(first);
    expect(simhashWithCount(Buffer.from(short, 'utf8'))).toEqual(first);
  });

  it('reads bytes that are not UTF-8 without failing, as separators or characters of the tables', () => {
    const junk = Buffer.from([0x80, 0xbf, 0x61, 0xf8, 0x80, 0x80, 0x80, 0x62, 0xf0, 0x80, 0x80, 0x80, 0x20, 0xff, 0xff, 0xff, 0xff, 0x63, 0x64]);
    const once = simhashWithCount(junk);
    expect(once.simhash).toMatch(/^[0-9a-f]{16}$/);
    expect(simhashWithCount(junk)).toEqual(once);
    expect(once.shingles).toBeLessThanOrEqual(junk.length / 2 + 1);
  });
});
