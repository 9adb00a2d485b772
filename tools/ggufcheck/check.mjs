// check.mjs compares `lisa gguf inspect --json --full` with the GGUF reader
// of @huggingface/gguf (an independent implementation) on every given file:
// header, every metadata key (order, type, array element type, length,
// scalar value and every array element) and every tensor (name, type,
// dimensions, offset, and byte size against the other package's table of
// bits per weight). It prints one line per file and a summary, and exits
// 1 on any mismatch.
//
// Usage: node check.mjs [--lisa PATH] [FILE.gguf ...]
// Without --lisa it builds ./cmd/lisa; without files it checks
// ../shared/models/*.gguf and ../shared/ref/vocab/*.gguf beside the repo.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { pathToFileURL } from "node:url";
import { gguf, GGUFValueType, GGMLQuantizationType } from "@huggingface/gguf";

// The package's table of bits per weight of every ggml type is internal
// (its CLI uses it); load it from the module chunk that defines it.
const GGML_QUANT_SIZES = await (async () => {
  const dist = dirname(fileURLToPath(import.meta.resolve("@huggingface/gguf")));
  for (const f of readdirSync(dist).sort()) {
    if (!f.endsWith(".mjs")) continue;
    const m = await import(pathToFileURL(join(dist, f)).href);
    if (m.GGML_QUANT_SIZES) return m.GGML_QUANT_SIZES;
  }
  throw new Error(`no GGML_QUANT_SIZES in ${dist}`);
})();

let normalised = 0; // string values that matched only after normalising
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pseudoKeys = new Set(["version", "tensor_count", "kv_count"]);
const typeNames = {
  [GGUFValueType.UINT8]: "uint8", [GGUFValueType.INT8]: "int8", [GGUFValueType.UINT16]: "uint16",
  [GGUFValueType.INT16]: "int16", [GGUFValueType.UINT32]: "uint32", [GGUFValueType.INT32]: "int32",
  [GGUFValueType.FLOAT32]: "float32", [GGUFValueType.BOOL]: "bool", [GGUFValueType.STRING]: "string",
  [GGUFValueType.ARRAY]: "array", [GGUFValueType.UINT64]: "uint64", [GGUFValueType.INT64]: "int64",
  [GGUFValueType.FLOAT64]: "float64",
};

function parseArgs(argv) {
  let lisa = "";
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--lisa") lisa = argv[++i];
    else files.push(argv[i]);
  }
  return { lisa, files };
}

function defaultFiles() {
  const shared = process.env.LISA_SHARED || resolve(repo, "..", "shared");
  const out = [];
  for (const sub of ["models", join("ref", "vocab")]) {
    const dir = join(shared, sub);
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir).sort()) if (f.endsWith(".gguf")) out.push(join(dir, f));
  }
  return out;
}

function buildLisa() {
  const bin = join(mkdtempSync(join(tmpdir(), "ggufcheck-")), "lisa");
  execFileSync("go", ["build", "-o", bin, "./cmd/lisa"], {
    cwd: repo, stdio: "inherit", env: { ...process.env, CGO_ENABLED: "0" },
  });
  return bin;
}

// parseExact parses lisa's JSON keeping integers beyond 2^53 exact: long
// integer literals become strings, compared later as BigInt.
function parseExact(text) {
  return JSON.parse(text.replace(/([:\[,])(-?\d{16,})(?=[,\]}])/g, '$1"$2"'));
}

// sameScalar compares one value of GGUF type t from both readers.
function sameScalar(t, ours, theirs) {
  switch (t) {
    case "float32":
    case "float64": {
      const a = typeof ours === "string" ? Number(ours.replace("+Inf", "Infinity").replace("-Inf", "-Infinity")) : ours;
      if (Number.isNaN(a) && Number.isNaN(theirs)) return true;
      return t === "float32" ? Math.fround(a) === Math.fround(theirs) : a === theirs;
    }
    case "uint64":
    case "int64":
    case "uint32":
    case "int32":
    case "uint16":
    case "int16":
    case "uint8":
    case "int8":
      return BigInt(ours) === BigInt(theirs);
    case "bool":
      return ours === theirs;
    case "string":
      // Known decoding differences of the other reader, not of the file:
      // its TextDecoder drops a leading byte-order mark, and encoding/json
      // and TextDecoder replace invalid UTF-8 with different runs of U+FFFD
      // (so runs are compared as one).
      if (ours === theirs) return true;
      if (ours === "\uFEFF" + theirs || collapseFFFD(ours) === collapseFFFD(theirs)) {
        normalised++;
        return true;
      }
      return false;
  }
  return false;
}

// staleSizes lists the entries of the other package's size table that
// predate a ggml change, with ggml's value (ggml-common.h defines the file
// layout). Q8_1's d and s became ggml_half: static_assert(sizeof(block_q8_1)
// == 2*sizeof(ggml_half) + QK8_1), 36 bytes, while the table (like gguf-py's)
// still says 4 + 4 + 32. If the package is fixed, main() says so.
const staleSizes = {
  [GGMLQuantizationType.Q8_1]: { ggml: (36 * 8) / 32, stale: (40 * 8) / 32 },
};

function collapseFFFD(s) {
  return s.replace(/\uFFFD+/g, "\uFFFD");
}

// compareValue compares values recursively, pushing differences to errs.
function compareValue(where, type, sub, ours, theirs, errs) {
  if (type !== "array") {
    if (!sameScalar(type, ours, theirs)) errs.push(`${where}: value ${String(ours)} vs ${String(theirs)}`);
    return;
  }
  if (!Array.isArray(ours) || !Array.isArray(theirs) || ours.length !== theirs.length) {
    errs.push(`${where}: array length ${ours?.length} vs ${theirs?.length}`);
    return;
  }
  for (let i = 0; i < ours.length && errs.length < 20; i++) {
    if (sub === "array") {
      if (!Array.isArray(ours[i]) || !Array.isArray(theirs[i]) || ours[i].length !== theirs[i].length) {
        errs.push(`${where}[${i}]: nested array length differs`);
      }
      continue; // element types of nested arrays are not reported by the other reader
    }
    compareValue(`${where}[${i}]`, sub, undefined, ours[i], theirs[i], errs);
  }
}

async function checkFile(lisa, path) {
  const errs = [];
  const text = execFileSync(lisa, ["gguf", "inspect", "--json", "--full", path], { maxBuffer: 1 << 30 }).toString();
  const ours = parseExact(text);
  const ref = await gguf(path, { allowLocalFile: true, typedMetadata: true });
  const tm = ref.typedMetadata;
  if (ours.version !== tm.version.value) errs.push(`version ${ours.version} vs ${tm.version.value}`);
  if (BigInt(ours.data_offset) !== ref.tensorDataOffset) errs.push(`data_offset ${ours.data_offset} vs ${ref.tensorDataOffset}`);
  const align = tm["general.alignment"] ? Number(tm["general.alignment"].value) : 32;
  if (ours.alignment !== align) errs.push(`alignment ${ours.alignment} vs ${align}`);

  const keys = Object.keys(tm).filter((k) => !pseudoKeys.has(k));
  const ourKeys = ours.metadata.map((m) => m.key);
  if (keys.join("\n") !== ourKeys.join("\n")) errs.push(`metadata keys differ: ${ourKeys.length} vs ${keys.length}`);
  let values = 0;
  for (const m of ours.metadata) {
    const r = tm[m.key];
    if (!r) continue;
    const t = typeNames[r.type];
    if (m.type !== t) errs.push(`${m.key}: type ${m.type} vs ${t}`);
    if (t === "array") {
      const sub = typeNames[r.subType];
      if (m.array_type !== sub) errs.push(`${m.key}: array_type ${m.array_type} vs ${sub}`);
      if (m.len !== r.value.length) errs.push(`${m.key}: len ${m.len} vs ${r.value.length}`);
      values += r.value.length;
    } else {
      values++;
    }
    compareValue(m.key, t, typeNames[r.subType], m.value, r.value, errs);
  }

  if (ours.tensors.length !== ref.tensorInfos.length) {
    errs.push(`tensor count ${ours.tensors.length} vs ${ref.tensorInfos.length}`);
  }
  ref.tensorInfos.forEach((ti, i) => {
    const o = ours.tensors[i];
    if (!o) return;
    const want = {
      name: ti.name, type: GGMLQuantizationType[ti.dtype] ?? `type(${ti.dtype})`,
      dims: ti.shape.map(String).join(","), offset: String(ti.offset),
    };
    const got = { name: o.name, type: o.type, dims: o.dims.map(String).join(","), offset: String(o.offset) };
    // Byte size from the other package's bits per weight (exact binary
    // fractions for every ggml type): elements * bpw / 8.
    const bpw = staleSizes[ti.dtype]?.ggml ?? GGML_QUANT_SIZES[ti.dtype];
    if (bpw !== undefined) {
      const elems = ti.shape.reduce((a, d) => a * BigInt(d), 1n);
      want.bytes = String(Number(elems) * bpw / 8);
      got.bytes = String(o.bytes);
    } else {
      errs.push(`tensor ${i}: type ${ti.dtype} has no size in @huggingface/gguf`);
    }
    for (const k of Object.keys(want)) {
      if (want[k] !== got[k]) errs.push(`tensor ${i} ${k}: ${got[k]} vs ${want[k]}`);
    }
  });
  return { errs, keys: ourKeys.length, values, tensors: ours.tensors.length };
}

async function main() {
  const { lisa: given, files: listed } = parseArgs(process.argv.slice(2));
  const files = listed.length ? listed : defaultFiles();
  if (files.length === 0) {
    console.error("ggufcheck: no GGUF files to check (is ../shared present?)");
    process.exit(1);
  }
  for (const [t, v] of Object.entries(staleSizes)) {
    if (GGML_QUANT_SIZES[t] !== v.stale) {
      console.error(`ggufcheck: @huggingface/gguf now says ${GGML_QUANT_SIZES[t]} bits per weight for type ${t}: update staleSizes`);
      process.exit(1);
    }
  }
  const lisa = given || buildLisa();
  let bad = 0;
  for (const f of files) {
    let res;
    try {
      res = await checkFile(lisa, f);
    } catch (e) {
      res = { errs: [`error: ${e.message.split("\n")[0]}`], keys: 0, values: 0, tensors: 0 };
    }
    const status = res.errs.length ? "MISMATCH" : "ok";
    console.log(`${status.padEnd(8)} ${f}: ${res.keys} keys, ${res.values} values, ${res.tensors} tensors`);
    for (const e of res.errs.slice(0, 20)) console.log(`         ${e}`);
    if (res.errs.length) bad++;
  }
  console.log(`ggufcheck: ${files.length - bad} of ${files.length} files agree with @huggingface/gguf` +
    ` (${normalised} strings matched after normalising a byte-order mark or invalid UTF-8)`);
  process.exit(bad ? 1 : 0);
}

await main();
