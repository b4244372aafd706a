import { detectLanguage, letterRuns, primarySubtag, scriptCounts } from '../../lib/html/language';

const PARAGRAPHS: Array<[string, string]> = [
  ['en', 'The history of the city is long and complicated. It was founded by traders who came from the north, and for many years it was a small market town with a church and a harbour. In the nineteenth century the railway arrived, which changed everything: factories were built on the river, and the population grew faster than anyone had expected.'],
  ['de', 'Die Geschichte der Stadt ist lang und kompliziert. Sie wurde von Händlern gegründet, die aus dem Norden kamen, und war viele Jahre lang eine kleine Marktstadt mit einer Kirche und einem Hafen. Im neunzehnten Jahrhundert kam die Eisenbahn, und das hat alles verändert: Fabriken wurden am Fluss gebaut, und die Bevölkerung wuchs schneller, als man es erwartet hatte.'],
  ['fr', "L'histoire de la ville est longue et compliquée. Elle a été fondée par des marchands qui venaient du nord, et pendant de nombreuses années elle était une petite ville de marché avec une église et un port. Au dix-neuvième siècle, le chemin de fer est arrivé, ce qui a tout changé : des usines ont été construites sur le fleuve, et la population a augmenté plus vite que prévu."],
  ['es', 'La historia de la ciudad es larga y complicada. Fue fundada por comerciantes que venían del norte, y durante muchos años fue un pequeño pueblo de mercado con una iglesia y un puerto. En el siglo diecinueve llegó el ferrocarril, lo que lo cambió todo: se construyeron fábricas junto al río, y la población creció más rápido de lo que nadie esperaba.'],
  ['it', "La storia della città è lunga e complicata. È stata fondata da mercanti che venivano dal nord, e per molti anni è stata una piccola città di mercato con una chiesa e un porto. Nel diciannovesimo secolo è arrivata la ferrovia, che ha cambiato tutto: sono state costruite fabbriche sul fiume, e la popolazione è cresciuta più velocemente di quanto si pensasse."],
  ['nl', 'De geschiedenis van de stad is lang en ingewikkeld. Ze werd gesticht door handelaars die uit het noorden kwamen, en jarenlang was het een klein marktstadje met een kerk en een haven. In de negentiende eeuw kwam de spoorweg, en dat veranderde alles: er werden fabrieken gebouwd aan de rivier, en de bevolking groeide sneller dan iemand had verwacht.'],
  ['pt', 'A história da cidade é longa e complicada. Ela foi fundada por comerciantes que vinham do norte, e durante muitos anos foi uma pequena cidade de mercado com uma igreja e um porto. No século dezenove chegou a ferrovia, o que mudou tudo: foram construídas fábricas junto ao rio, e a população cresceu mais rápido do que se esperava.'],
  ['ru', 'История города длинная и сложная. Он был основан торговцами, которые пришли с севера, и в течение многих лет это был небольшой торговый город с церковью и гаванью. В девятнадцатом веке пришла железная дорога, которая всё изменила: на реке построили фабрики, и население росло быстрее, чем кто-либо ожидал.'],
  ['zh', '这座城市的历史悠久而复杂。它是由来自北方的商人建立的，多年来一直是一个拥有教堂和港口的小集镇。十九世纪铁路到来，改变了一切：河边建起了工厂，人口增长的速度超出了所有人的预期。'],
  ['ja', 'この町の歴史は長く複雑です。北から来た商人たちによって築かれ、長い間、教会と港のある小さな市場町でした。十九世紀に鉄道が来て、すべてが変わりました。川沿いに工場が建てられ、人口は誰も予想しなかったほど速く増えました。'],
  ['ko', '이 도시의 역사는 길고 복잡합니다. 북쪽에서 온 상인들이 세웠으며, 오랫동안 교회와 항구가 있는 작은 시장 마을이었습니다. 19세기에 철도가 들어오면서 모든 것이 바뀌었습니다. 강가에 공장이 세워졌고, 인구는 누구도 예상하지 못할 만큼 빠르게 늘어났습니다.'],
  ['ar', 'تاريخ المدينة طويل ومعقد. أسسها تجار جاؤوا من الشمال، وظلت لسنوات عديدة بلدة سوق صغيرة فيها كنيسة وميناء. في القرن التاسع عشر وصلت السكك الحديدية، فتغير كل شيء: بنيت المصانع على النهر، ونما عدد السكان بسرعة أكبر مما توقعه أي أحد.'],
];

describe('detectLanguage', () => {
  test.each(PARAGRAPHS)('%s paragraph', (lang, text) => {
    expect(detectLanguage(text)).toBe(lang);
  });

  test.each([
    ['short text', 'The quick brown fox jumps over the lazy dog.'],
    ['empty', ''],
    ['digits and punctuation', '1234 5678 — 42 !!! ... 2024-01-01 '.repeat(20)],
    ['short CJK', '你好世界'],
    ['a language we do not know (Swedish)', 'Stadens historia är lång och komplicerad. Den grundades av köpmän som kom norrifrån, och under många år var den en liten marknadsstad med en kyrka och en hamn. Under artonhundratalet kom järnvägen, vilket förändrade allt: fabriker byggdes vid floden.'],
    ['Ukrainian is not reported as Russian', 'Історія міста довга і складна. Його заснували торговці, які прийшли з півночі, і протягом багатьох років це було невелике ринкове місто з церквою та гаванню. У дев’ятнадцятому столітті прийшла залізниця, яка все змінила.'],
    ['Persian is not reported as Arabic', 'تاریخ این شهر طولانی و پیچیده است. این شهر توسط بازرگانانی که از شمال آمده بودند بنا شد و سال‌ها یک شهر بازار کوچک با یک کلیسا و یک بندر بود. در قرن نوزدهم راه آهن آمد و همه چیز را تغییر داد.'],
  ])('%s -> null', (_name, text) => {
    expect(detectLanguage(text)).toBeNull();
  });

  test('html lang wins over the text', () => {
    expect(detectLanguage(PARAGRAPHS[0][1], 'de-AT')).toBe('de');
    expect(detectLanguage('short', 'FR')).toBe('fr');
    expect(detectLanguage('', 'zh_Hant_TW')).toBe('zh');
  });

  test('an unusable html lang falls back to the text', () => {
    for (const bad of ['', '  ', 'und', 'x-klingon', 'english!', '12', null, undefined]) {
      expect(detectLanguage(PARAGRAPHS[1][1], bad)).toBe('de');
    }
  });

  test('primarySubtag', () => {
    expect(primarySubtag('en-US')).toBe('en');
    expect(primarySubtag('  pt-BR ')).toBe('pt');
    expect(primarySubtag('yue')).toBe('yue');
    expect(primarySubtag('mul')).toBeNull();
  });
});

describe('scriptCounts', () => {
  const count = (s: string, re: RegExp): number => s.match(re)?.length ?? 0;
  const byRegex = (s: string) => ({
    latin: count(s, /[A-Za-z\u00c0-\u024f]/g),
    hangul: count(s, /[\uac00-\ud7af\u1100-\u11ff]/g),
    kana: count(s, /[\u3040-\u30ff]/g),
    han: count(s, /[\u4e00-\u9fff\u3400-\u4dbf]/g),
    cyr: count(s, /[\u0400-\u04ff]/g),
    arabic: count(s, /[\u0600-\u06ff]/g),
  });

  test('counts what the six character classes count, at every range edge and on random text', () => {
    const edges = [0x40, 0x41, 0x5a, 0x5b, 0x60, 0x61, 0x7a, 0x7b, 0xbf, 0xc0, 0x24f, 0x250, 0x3ff, 0x400, 0x4ff, 0x500, 0x5ff, 0x600, 0x6ff, 0x700,
      0x10ff, 0x1100, 0x11ff, 0x1200, 0x303f, 0x3040, 0x30ff, 0x3100, 0x33ff, 0x3400, 0x4dbf, 0x4dc0, 0x4dff, 0x4e00, 0x9fff, 0xa000, 0xabff, 0xac00, 0xd7af, 0xd7b0, 0xd800, 0xdfff, 0xffff];
    for (const c of edges) expect(scriptCounts(String.fromCharCode(c))).toEqual(byRegex(String.fromCharCode(c)));
    let x = 12345;
    for (let n = 0; n < 200; n++) {
      let s = '';
      for (let i = 0; i < 500; i++) {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        // Half the characters from the edges' neighbourhood, half anywhere in the BMP.
        s += String.fromCharCode(x % 2 ? (edges[(x >>> 8) % edges.length] + ((x >>> 4) % 3) - 1) & 0xffff : x >>> 16);
      }
      expect(scriptCounts(s)).toEqual(byRegex(s));
    }
  });
});

describe('letterRuns', () => {
  const byRegex = (s: string, max: number) => {
    const words = s.match(/[\p{L}\p{M}]+/gu) ?? [];
    return { count: words.length, short: words.filter((w) => w.length <= max) };
  };

  test('counts and keeps the short runs that /[\\p{L}\\p{M}]+/gu matches: every BMP unit, surrogate pairs, lone surrogates, random text', () => {
    // Each BMP code unit alone and between two letters (a mark or letter joins them, anything else splits).
    const differ: number[] = [];
    const same = (s: string) => JSON.stringify(letterRuns(s, 7)) === JSON.stringify(byRegex(s, 7));
    for (let c = 0; c < 0x10000; c++) {
      const ch = String.fromCharCode(c);
      if (!same(ch) || !same(`ab${ch}cd`)) differ.push(c);
    }
    expect(differ).toEqual([]);
    const specials = ['\u{1d400}', '\u{20000}', '\u{1f600}', '\ud800', '\udc00', '\udc00\ud800', 'e\u0301', '\u0130', 'ß', ' ', '.', 'x', 'Ab'];
    let x = 777;
    for (let n = 0; n < 300; n++) {
      let s = '';
      for (let i = 0; i < 200; i++) {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        s += x % 3 === 0 ? specials[(x >>> 8) % specials.length] : x % 3 === 1 ? String.fromCharCode(x >>> 16) : 'abc de fgh '.slice((x >>> 4) % 11);
      }
      for (const max of [0, 3, 7, 100]) expect(letterRuns(s, max)).toEqual(byRegex(s, max));
    }
  });
});
