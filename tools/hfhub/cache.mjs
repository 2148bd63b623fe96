// The hub's own JavaScript client, driven by internal/hub/interop_test.go:
//
//   node cache.mjs download HUB_URL CACHE TYPE REPO REVISION FILE
//       fetches FILE into CACHE as the client does and prints its path;
//   node cache.mjs scan CACHE
//       prints what the client's cache scan reads there, as JSON.
import { downloadFileToCacheDir, scanCacheDir } from "@huggingface/hub";

const [cmd, ...args] = process.argv.slice(2);
console.debug = () => {}; // the client's "Downloading …" line is not output
if (cmd === "download") {
  const [hubUrl, cacheDir, type, name, revision, path] = args;
  const p = await downloadFileToCacheDir({ repo: { type, name }, path, revision, hubUrl, cacheDir });
  process.stdout.write(p + "\n");
} else if (cmd === "scan") {
  const info = await scanCacheDir(args[0]);
  const repos = [...info.repos].map((r) => ({
    id: r.id.name,
    type: r.id.type,
    size: r.size,
    revisions: [...r.revisions].map((v) => ({
      commit: v.commitOid,
      refs: [...v.refs].sort(),
      files: [...v.files].map((f) => ({ path: f.path, blob: f.blob.path, size: f.blob.size })).sort((a, b) => a.path.localeCompare(b.path)),
    })),
  }));
  process.stdout.write(JSON.stringify({ repos, warnings: info.warnings.map(String) }) + "\n");
} else {
  console.error("usage: node cache.mjs download HUB_URL CACHE TYPE REPO REVISION FILE | scan CACHE");
  process.exit(2);
}
