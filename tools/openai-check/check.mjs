// check.mjs exercises lisa serve with the official openai npm package:
// models.list and models.retrieve, chat.completions.create with and
// without stream (and with the SDK's own assistant message sent back as
// history), completions.create with and without stream, x-request-id on
// responses, plus the error paths (unknown model, bad parameter, a prompt
// longer than the context).
//
//   LISA_URL      base URL of the API, e.g. http://127.0.0.1:8080/v1 (required)
//   LISA_API_KEY  API key (any string when the server has no keys)
//   LISA_EXPECT   if set, the exact text every generation must produce
//   LISA_MAX      max_tokens per request (default 24)
//   LISA_EMBEDDINGS  if set, also embeddings.create (the server must run
//                 with --embeddings): three inputs, the SDK's default
//                 base64 transfer and float, deterministic and distinct
import OpenAI from "openai";

const baseURL = process.env.LISA_URL;
if (!baseURL) {
  console.error("set LISA_URL, e.g. http://127.0.0.1:8080/v1");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: process.env.LISA_API_KEY || "no-key", maxRetries: 0, timeout: 120000 });
const expect = process.env.LISA_EXPECT;
const max = Number(process.env.LISA_MAX || 24);
const failures = [];

function check(name, cond, detail) {
  if (!cond) failures.push(`${name}: ${detail}`);
}

function checkText(name, text) {
  check(name, typeof text === "string", `text is ${typeof text}`);
  if (expect !== undefined) check(name, text === expect, `text ${JSON.stringify(text)}, want ${JSON.stringify(expect)}`);
}

async function main() {
  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  check("models.list", ids.length === 1, `models ${JSON.stringify(ids)}`);
  const model = ids[0];

  const chat = await client.chat.completions.create({
    model,
    messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Once upon a time" }],
    max_tokens: max,
    temperature: 0,
  });
  check("chat", chat.object === "chat.completion", `object ${chat.object}`);
  check("chat", ["stop", "length"].includes(chat.choices[0].finish_reason), `finish ${chat.choices[0].finish_reason}`);
  check("chat", chat.usage && chat.usage.completion_tokens > 0, `usage ${JSON.stringify(chat.usage)}`);
  checkText("chat", chat.choices[0].message.content);

  const retrieved = await client.models.retrieve(model);
  check("models.retrieve", retrieved.id === model && retrieved.object === "model", `got ${JSON.stringify(retrieved)}`);

  // What the SDK returned goes back as history as it is (with the
  // refusal and annotations OpenAI's responses carry), and x-request-id
  // is on the response.
  const returned = chat.choices[0].message;
  check("chat message", returned.refusal === null && Array.isArray(returned.annotations), `message ${JSON.stringify(returned)}`);
  const { data: again, response } = await client.chat.completions
    .create({
      model,
      messages: [{ role: "user", content: "Once upon a time" }, returned, { role: "user", content: "Go on." }],
      max_tokens: max,
      temperature: 0,
      user: "openai-check",
      store: false,
      metadata: { check: "history" },
    })
    .withResponse();
  checkText("history", again.choices[0].message.content);
  check("x-request-id", /^[A-Za-z0-9._:-]+$/.test(response.headers.get("x-request-id") || ""), `header ${response.headers.get("x-request-id")}`);

  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "Once upon a time" }],
    max_tokens: max,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check("chat stream", chunks >= 2, `${chunks} chunks`);
  check("chat stream", ["stop", "length"].includes(finish), `finish ${finish}`);
  check("chat stream", usage && usage.completion_tokens > 0, `usage ${JSON.stringify(usage)}`);
  checkText("chat stream", text);

  const comp = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: max, temperature: 0 });
  check("completions", comp.object === "text_completion", `object ${comp.object}`);
  check("completions", ["stop", "length"].includes(comp.choices[0].finish_reason), `finish ${comp.choices[0].finish_reason}`);
  checkText("completions", comp.choices[0].text);

  const cstream = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: max, temperature: 0, stream: true });
  let ctext = "";
  for await (const chunk of cstream) for (const c of chunk.choices) ctext += c.text ?? "";
  checkText("completions stream", ctext);

  try {
    await client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] });
    check("unknown model", false, "no error");
  } catch (e) {
    check("unknown model", e instanceof OpenAI.NotFoundError, `got ${e}`);
  }
  try {
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }], temperature: 9 });
    check("bad temperature", false, "no error");
  } catch (e) {
    check("bad temperature", e instanceof OpenAI.BadRequestError && e.param === "temperature", `got ${e}`);
  }

  try {
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "hello ".repeat(20000) }] });
    check("prompt too long", false, "no error");
  } catch (e) {
    check("prompt too long", e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded", `got ${e}`);
  }

  if (process.env.LISA_EMBEDDINGS) await checkEmbeddings(model);

  console.log(JSON.stringify({ model, chat: chat.choices[0].message.content, stream: text, completion: comp.choices[0].text, failures }));
  if (failures.length) process.exit(1);
}

async function checkEmbeddings(model) {
  const input = ["Once upon a time", "The dog ran home.", "A red ball"];
  // Without encoding_format the SDK asks for base64 and decodes it.
  const a = await client.embeddings.create({ model, input });
  const b = await client.embeddings.create({ model, input, encoding_format: "float" });
  check("embeddings", a.object === "list" && a.data.length === 3, `got ${JSON.stringify(a).slice(0, 200)}`);
  check("embeddings", a.usage && a.usage.prompt_tokens > 0 && a.usage.total_tokens === a.usage.prompt_tokens, `usage ${JSON.stringify(a.usage)}`);
  const vecs = a.data.map((d) => d.embedding);
  const dim = vecs[0].length;
  for (let i = 0; i < 3; i++) {
    const v = vecs[i];
    check("embeddings", a.data[i].index === i && v.length === dim && dim > 0, `item ${i}: index ${a.data[i].index}, ${v.length} values`);
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    check("embeddings", Math.abs(norm - 1) < 1e-4, `item ${i}: norm ${norm}`);
    const w = b.data[i].embedding;
    check("embeddings deterministic", w.length === dim && w.every((x, k) => Math.abs(x - v[k]) < 1e-6), `item ${i} differs between calls`);
  }
  const same = (u, v) => u.every((x, k) => x === v[k]);
  check("embeddings distinct", !same(vecs[0], vecs[1]) && !same(vecs[1], vecs[2]) && !same(vecs[0], vecs[2]), "two inputs embed the same");
  try {
    await client.embeddings.create({ model, input: "x", dimensions: dim + 1 });
    check("embeddings dimensions", false, "no error");
  } catch (e) {
    check("embeddings dimensions", e instanceof OpenAI.BadRequestError && e.param === "dimensions", `got ${e}`);
  }
}

main().catch((e) => {
  console.error(`openai-check: ${e}`);
  process.exit(1);
});
