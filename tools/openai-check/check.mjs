// check.mjs exercises lisa serve with the official openai npm package:
// responses.create (text and item input, with and without stream, the
// SDK's stream helper) and its refusals,
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

  await checkResponses(model);
  if (process.env.LISA_EMBEDDINGS) await checkEmbeddings(model);

  console.log(JSON.stringify({ model, chat: chat.choices[0].message.content, stream: text, completion: comp.choices[0].text, failures }));
  if (failures.length) process.exit(1);
}

async function checkResponses(model) {
  const resp = await client.responses.create({ model, input: "Once upon a time", instructions: "You tell stories.", max_output_tokens: max, temperature: 0, store: false });
  check("responses", resp.object === "response" && ["completed", "incomplete"].includes(resp.status), `object ${resp.object} status ${resp.status}`);
  check("responses", resp.usage && resp.usage.output_tokens > 0 && resp.usage.total_tokens === resp.usage.input_tokens + resp.usage.output_tokens, `usage ${JSON.stringify(resp.usage)}`);
  checkText("responses", resp.output_text);

  // Message input with the item shapes the API defines: the developer
  // role, input_text parts and the assistant's own output_text.
  const items = await client.responses.create({
    model,
    input: [
      { role: "developer", content: "Answer briefly." },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Tell me a story." }] },
      { role: "assistant", content: [{ type: "output_text", text: "Once upon a time.", annotations: [] }] },
      { role: "user", content: "Once upon a time" },
    ],
    max_output_tokens: max,
    temperature: 0,
  });
  check("responses items", items.status !== "failed" && items.output.length === 1 && items.output[0].type === "message", `got ${JSON.stringify(items).slice(0, 300)}`);

  // Function tools and a call with its output in the history go to the
  // model's template; an engine that cannot take them yet answers with
  // a 400 unsupported_for_model, never a 500.
  try {
    const calls = await client.responses.create({
      model,
      input: [
        { role: "user", content: "What is the weather?" },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
        { type: "function_call_output", call_id: "call_1", output: "sunny" },
      ],
      tools: [{ type: "function", name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: true }],
      // "none": a random-weight model still answers in text.
      tool_choice: "none",
      max_output_tokens: max,
      temperature: 0,
    });
    check("responses tools", calls.output.length >= 1, `got ${JSON.stringify(calls).slice(0, 300)}`);
  } catch (e) {
    check("responses tools", e instanceof OpenAI.BadRequestError && e.code === "unsupported_for_model", `got ${e} (code ${e.code})`);
  }

  const rstream = client.responses.stream({ model, input: "Once upon a time", max_output_tokens: max, temperature: 0 });
  let rtext = "";
  const types = new Set();
  for await (const ev of rstream) {
    types.add(ev.type);
    if (ev.type === "response.output_text.delta") rtext += ev.delta;
  }
  const final = await rstream.finalResponse();
  for (const t of ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done"]) {
    check("responses stream", types.has(t), `no ${t} event`);
  }
  check("responses stream", types.has("response.completed") || types.has("response.incomplete"), "no final event");
  checkText("responses stream", rtext);
  // The stream helper's final response has no output_text convenience
  // (the SDK adds it to parsed responses only): join the parts.
  const finalText = final.output.filter((o) => o.type === "message").flatMap((o) => o.content.map((c) => c.text)).join("");
  checkText("responses stream final", finalText);

  const raw = await client.responses.create({ model, input: "Once upon a time", max_output_tokens: max, temperature: 0, stream: true });
  let seq = -1;
  let ordered = true;
  for await (const ev of raw) {
    ordered = ordered && ev.sequence_number === seq + 1;
    seq = ev.sequence_number;
  }
  check("responses create stream", ordered && seq >= 8, `sequence numbers end at ${seq}, in order ${ordered}`);

  for (const [name, params, param] of [
    ["previous_response_id", { previous_response_id: "resp_1" }, "previous_response_id"],
    ["bad max_output_tokens", { max_output_tokens: "ten" }, "max_output_tokens"],
    ["unknown field", { frobnicate: 1 }, "frobnicate"],
    ["image input", { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }, "input[0].content[0].type"],
  ]) {
    try {
      await client.responses.create({ model, input: "x", ...params });
      check(name, false, "no error");
    } catch (e) {
      check(name, e instanceof OpenAI.BadRequestError && e.param === param, `got ${e} (param ${e.param})`);
    }
  }
  try {
    await client.responses.retrieve(resp.id);
    check("responses.retrieve", false, "no error");
  } catch (e) {
    check("responses.retrieve", e instanceof OpenAI.NotFoundError, `got ${e}`);
  }
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
