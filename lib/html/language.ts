/**
 * A deliberately small language guesser for routing and stats, not a classifier.
 *
 * Order of evidence:
 *  1. A well-formed <html lang> wins: the author knows better than a word count. Only its
 *     primary subtag is returned ("de-AT" -> "de"); "und", "mul", "zxx" and private use are ignored.
 *  2. Script: Hangul -> ko; Han with any noticeable kana -> ja, otherwise zh; Cyrillic -> ru;
 *     Arabic -> ar.
 *  3. Latin script: count hits against ~25 frequent function words for en, de, fr, es, it, nl, pt.
 *
 * Limits (honest ones): Cyrillic is reported as ru unless Ukrainian/Belarusian/Serbian-only letters
 * show up (then null); Arabic-script Persian/Urdu letters give null rather than ar; other Latin
 * languages (sv, pl, ...) get null or, at worst, the closest of the seven; mixed-language pages get
 * the majority; fewer than ~20 words (or 20 CJK characters) give null. Only the first 20,000
 * characters are looked at.
 */

const SAMPLE = 20_000;
const MIN_WORDS = 20;

const STOP: Record<string, string[]> = {
  en: ['the', 'and', 'of', 'to', 'is', 'in', 'that', 'it', 'with', 'for', 'was', 'are', 'this', 'be', 'on', 'have', 'not', 'by', 'which', 'from', 'they', 'you', 'at', 'or', 'were', 'has', 'their'],
  de: ['der', 'die', 'und', 'das', 'ist', 'nicht', 'ein', 'eine', 'mit', 'sich', 'auf', 'für', 'den', 'dem', 'von', 'zu', 'es', 'auch', 'wird', 'sind', 'wir', 'ich', 'noch', 'nach', 'bei', 'oder', 'werden'],
  fr: ['le', 'la', 'les', 'et', 'est', 'des', 'une', 'dans', 'que', 'pour', 'qui', 'pas', 'sur', 'du', 'avec', 'ce', 'il', 'elle', 'sont', 'au', 'mais', 'ou', 'nous', 'vous', 'aux', 'cette', 'être'],
  es: ['el', 'los', 'las', 'y', 'que', 'del', 'en', 'un', 'una', 'por', 'con', 'para', 'es', 'se', 'no', 'como', 'más', 'pero', 'sus', 'al', 'está', 'también', 'fue', 'muy', 'son', 'lo', 'hay'],
  it: ['il', 'di', 'che', 'e', 'la', 'per', 'un', 'una', 'non', 'sono', 'del', 'della', 'con', 'gli', 'anche', 'è', 'più', 'questo', 'come', 'ma', 'nel', 'alla', 'delle', 'degli', 'essere', 'si', 'dei'],
  nl: ['de', 'het', 'een', 'en', 'van', 'is', 'dat', 'niet', 'op', 'te', 'voor', 'met', 'zijn', 'die', 'ook', 'er', 'maar', 'aan', 'worden', 'wordt', 'bij', 'naar', 'ze', 'hij', 'ik', 'heeft', 'deze'],
  pt: ['o', 'os', 'as', 'e', 'de', 'que', 'não', 'um', 'uma', 'para', 'com', 'do', 'da', 'dos', 'das', 'em', 'por', 'mais', 'é', 'se', 'no', 'na', 'foi', 'são', 'também', 'ao', 'seu'],
};
// word -> languages it belongs to (many function words are shared: "de", "que", "la", ...).
const WORD_LANGS = new Map<string, string[]>();
for (const [lang, words] of Object.entries(STOP)) {
  for (const w of words) WORD_LANGS.set(w, [...(WORD_LANGS.get(w) ?? []), lang]);
}

/** Primary subtag of a BCP 47 tag, or null if it is not a usable language code. */
export function primarySubtag(tag: string | null | undefined): string | null {
  if (!tag) return null;
  const m = /^([a-z]{2,3})(?:[-_][a-z0-9]{1,8})*$/i.exec(tag.trim());
  if (!m) return null;
  const p = m[1].toLowerCase();
  return p === 'und' || p === 'mul' || p === 'zxx' || p === 'mis' ? null : p;
}

function count(s: string, re: RegExp): number {
  return s.match(re)?.length ?? 0;
}

export function detectLanguage(text: string, htmlLang?: string | null): string | null {
  const declared = primarySubtag(htmlLang);
  if (declared !== null) return declared;

  const s = text.slice(0, SAMPLE);
  const latin = count(s, /[A-Za-z\u00c0-\u024f]/g);
  const hangul = count(s, /[\uac00-\ud7af\u1100-\u11ff]/g);
  const kana = count(s, /[\u3040-\u30ff]/g);
  const han = count(s, /[\u4e00-\u9fff\u3400-\u4dbf]/g);
  const cyr = count(s, /[\u0400-\u04ff]/g);
  const arabic = count(s, /[\u0600-\u06ff]/g);
  const cjk = hangul + kana + han;

  // Script decides first: a page that is mostly non-Latin letters is that script's language.
  const top = Math.max(latin, cjk, cyr, arabic);
  if (top === 0) return null;
  if (top === cjk) {
    if (cjk < MIN_WORDS) return null;
    if (hangul > cjk * 0.3) return 'ko';
    // Japanese mixes kana into nearly every sentence; Chinese has none.
    return kana > cjk * 0.05 ? 'ja' : 'zh';
  }
  const words = s.toLowerCase().split(/[^\p{L}\p{M}]+/u).filter(Boolean);
  if (words.length < MIN_WORDS) return null;
  if (top === cyr) return /[іїєґўђћџљњ]/i.test(s) ? null : 'ru';
  if (top === arabic) return /[پچژگکی]/.test(s) ? null : 'ar';

  const scores: Record<string, number> = {};
  let hits = 0;
  for (const w of words) {
    const langs = WORD_LANGS.get(w);
    if (!langs) continue;
    hits++;
    for (const l of langs) scores[l] = (scores[l] ?? 0) + 1;
  }
  const ranked = Object.entries(scores).sort((a, b) => b[1] - a[1]);
  if (ranked.length === 0) return null;
  const [best, bestScore] = ranked[0];
  const second = ranked[1]?.[1] ?? 0;
  // Real prose in these languages is ~30-50% function words; below 10% we are likely looking at
  // another language or a list of names. Demand a clear lead over the runner-up as well.
  if (hits < words.length * 0.1 || bestScore < second * 1.25) return null;
  return best;
}
