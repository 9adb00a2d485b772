// check.mjs exercises lisa serve with the official openai npm package:
// responses.create (text and item input, with and without stream, the
// SDK's stream helper) and its refusals (text.format's among them),
// models.list and models.retrieve, chat.completions.create with and
// without stream (and with the SDK's own assistant message sent back as
// history, and a literal "<s>" in a message counted as text),
// completions.create with and without stream, x-request-id on responses,
// n = 3 choices (greedy: identical; seeded: the same whole and streamed,
// not all alike; completions too) and n's refusals, plus the error paths
// (unknown model, bad parameter, a prompt longer than the context). The
// server needs at least 3 slots (lisa's default is 4).
//
//   LISA_URL      base URL of the API, e.g. http://127.0.0.1:8080/v1 (required)
//   LISA_API_KEY  API key (any string when the server has no keys)
//   LISA_EXPECT   if set, the exact text every generation must produce
//   LISA_MAX      max_tokens per request (default 24)
//   LISA_EMBEDDINGS  if set, also embeddings.create (the server must run
//                 with --embeddings): three inputs, the SDK's default
//                 base64 transfer and float, deterministic and distinct
//   LISA_TOOLS    if set, check function calling and structured output
//                 instead (on a model with a large enough context): a
//                 forced named call and tool_choice "required" streamed
//                 return calls that parse and fit the schema, their
//                 arguments in several deltas that the SDK's stream
//                 helper (finalChatCompletion) and runTools assemble, a
//                 tool result round trip, json_schema (strict) and
//                 json_object output that parse, the Responses API's
//                 forced call (its streamed argument deltas joining to
//                 the item's arguments) and text.format json_schema
//                 (strict, whole and streamed), and every new field's
//                 bad input answered with a 4xx OpenAI error
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

// weatherSchema has only bounded values, so that even a random-weight
// model under the grammar ends each value soon.
const weatherSchema = {
  type: "object",
  properties: {
    city: { type: "string", enum: ["Paris", "Oslo", "Lima"] },
    days: { type: "integer", minimum: 1, maximum: 7 },
    metric: { type: "boolean" },
  },
  required: ["city", "days", "metric"],
  additionalProperties: false,
};
const tools = [
  { type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: weatherSchema, strict: true } },
  {
    type: "function",
    function: {
      name: "get_time",
      parameters: { type: "object", properties: { zone: { type: "string", enum: ["UTC", "CET"] } }, required: ["zone"], additionalProperties: false },
    },
  },
];

// fitsWeather reports why value does not fit weatherSchema ("" when it does).
function fitsWeather(value) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not an object";
  const keys = Object.keys(value).sort().join(",");
  if (keys !== "city,days,metric") return `keys ${keys}`;
  if (!["Paris", "Oslo", "Lima"].includes(value.city)) return `city ${value.city}`;
  if (!Number.isInteger(value.days) || value.days < 1 || value.days > 7) return `days ${value.days}`;
  if (typeof value.metric !== "boolean") return `metric ${value.metric}`;
  return "";
}

// checkCall checks one returned tool call: OpenAI's shape, a name among
// the tools, arguments that parse and fit.
function checkCall(name, call, want) {
  check(name, call && call.type === "function" && typeof call.id === "string" && call.id.length > 0, `call ${JSON.stringify(call)}`);
  if (!call || !call.function) return;
  if (want) check(name, call.function.name === want, `called ${call.function.name}, want ${want}`);
  let args;
  try {
    args = JSON.parse(call.function.arguments);
  } catch (e) {
    check(name, false, `arguments ${JSON.stringify(call.function.arguments)} do not parse: ${e}`);
    return;
  }
  if (call.function.name === "get_weather") {
    const why = fitsWeather(args);
    check(name, why === "", `arguments ${call.function.arguments}: ${why}`);
  } else if (call.function.name === "get_time") {
    check(name, ["UTC", "CET"].includes(args.zone) && Object.keys(args).length === 1, `arguments ${call.function.arguments}`);
  } else {
    check(name, false, `call to ${call.function.name}, not a tool`);
  }
}

// deepSchema is a schema nested n objects deep.
function deepSchema(n) {
  let deep = { type: "object" };
  for (let i = 0; i < n; i++) deep = { type: "object", properties: { a: deep } };
  return deep;
}

// expectError checks that a request fails with a 4xx OpenAI-shaped error.
async function expectError(name, body) {
  try {
    await client.chat.completions.create(body);
    check(name, false, "no error");
  } catch (e) {
    check(name, e instanceof OpenAI.APIError && e.status >= 400 && e.status < 500 && typeof e.message === "string" && e.error && e.error.message, `got ${e}`);
  }
}

async function toolChecks(model) {
  const ask = [{ role: "user", content: "What is the weather in Oslo?" }];
  const base = { model, max_tokens: 200, temperature: 1, seed: 3 };

  // A forced named call, whole. One call: with parallel calls allowed a
  // random-weight model may write call after call until max_tokens (the
  // grammar lets it), which says nothing about the server.
  const named = await client.chat.completions.create({
    ...base,
    messages: ask,
    tools,
    tool_choice: { type: "function", function: { name: "get_weather" } },
    parallel_tool_calls: false,
  });
  const nm = named.choices[0];
  check("named call", nm.finish_reason === "tool_calls", `finish ${nm.finish_reason}`);
  check("named call", nm.message.content === null && Array.isArray(nm.message.tool_calls) && nm.message.tool_calls.length >= 1, `message ${JSON.stringify(nm.message)}`);
  for (const c of nm.message.tool_calls ?? []) checkCall("named call", c, "get_weather");

  // tool_choice "required", streamed: deltas gathered by index.
  const stream = await client.chat.completions.create({ ...base, messages: ask, tools, tool_choice: "required", parallel_tool_calls: false, stream: true });
  const calls = [];
  const pieces = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      for (const d of c.delta?.tool_calls ?? []) {
        pieces[d.index] = (pieces[d.index] ?? 0) + 1;
        const call = (calls[d.index] ??= { id: "", type: "", function: { name: "", arguments: "" } });
        if (d.id) call.id = d.id;
        if (d.type) call.type = d.type;
        if (d.function?.name) call.function.name += d.function.name;
        if (d.function?.arguments) call.function.arguments += d.function.arguments;
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check("required stream", finish === "tool_calls" && calls.length === 1, `finish ${finish}, ${calls.length} calls`);
  for (const c of calls) checkCall("required stream", c);
  // One call, in one or more deltas: the arguments stream as the model
  // writes them, but how many deltas arrive depends on timing (the server
  // merges the tokens of a reader that falls behind), so their count is
  // checked where it is deterministic, in package toolcall and the broker.
  check("required stream", pieces.length === 1 && pieces[0] >= 1, `deltas per call ${JSON.stringify(pieces)}`);

  // The SDK's stream helper assembles the deltas into the final message.
  // (How many deltas it gets depends on timing, as above.)
  const helper = client.beta.chat.completions.stream({ ...base, messages: ask, tools, tool_choice: "required", parallel_tool_calls: false });
  let helperDeltas = 0;
  helper.on("chunk", (chunk) => {
    for (const c of chunk.choices) helperDeltas += (c.delta?.tool_calls ?? []).length;
  });
  const assembled = await helper.finalChatCompletion();
  const am = assembled.choices[0];
  check("stream helper", am.finish_reason === "tool_calls" && am.message.tool_calls?.length === 1 && helperDeltas >= 1,
    `finish ${am.finish_reason}, message ${JSON.stringify(am.message)}, ${helperDeltas} call deltas`);
  for (const c of am.message.tool_calls ?? []) checkCall("stream helper", c);

  // runTools, streamed: the SDK assembles the call, parses its arguments
  // and runs the function with them.
  let ran = null;
  const runner = client.beta.chat.completions.runTools({
    ...base,
    messages: ask,
    stream: true,
    tool_choice: { type: "function", function: { name: "get_weather" } },
    tools: [{
      type: "function",
      function: {
        name: "get_weather", description: "Weather in a city", parameters: weatherSchema, parse: JSON.parse,
        function: async (args) => { ran = args; return "sunny, 21 degrees"; },
      },
    }],
  });
  await runner.done();
  check("runTools stream", ran !== null && fitsWeather(ran) === "", `the function ran with ${JSON.stringify(ran)}: ${ran === null ? "not run" : fitsWeather(ran)}`);

  // The round trip: the SDK's own assistant message with its calls, then
  // the tool's result, back as history.
  const call = nm.message.tool_calls?.[0];
  if (call) {
    const back = await client.chat.completions.create({
      ...base,
      max_tokens: 16,
      messages: [...ask, nm.message, { role: "tool", tool_call_id: call.id, content: "sunny, 21 degrees" }],
      tools,
    });
    check("tool round trip", ["stop", "length", "tool_calls"].includes(back.choices[0].finish_reason), `finish ${back.choices[0].finish_reason}`);
  }

  // The Responses API: a forced named call comes back as a function_call
  // output item, whole and through the SDK's stream helper.
  const rtools = tools.map((t) => ({ type: "function", name: t.function.name, description: t.function.description, parameters: t.function.parameters, strict: t.function.strict ?? false }));
  // Greedy (the Responses API has no seed), with room for a weak model's
  // bounded whitespace.
  const rbase = { model, input: "What is the weather in Oslo?", tools: rtools, tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 400, temperature: 0 };
  const asCall = (it) => ({ type: "function", id: it.call_id, function: { name: it.name, arguments: it.arguments } });
  const rwhole = await client.responses.create(rbase);
  const rcalls = rwhole.output.filter((it) => it.type === "function_call");
  check("responses named call", rwhole.status === "completed" && rcalls.length >= 1, `got ${JSON.stringify(rwhole.output).slice(0, 300)}`);
  for (const it of rcalls) checkCall("responses named call", asCall(it), "get_weather");
  // Streamed: each call's arguments arrive in several deltas that join
  // to the arguments of its .done event and of the final item.
  const rstream = client.responses.stream(rbase);
  const joined = {};
  const doneArgs = {};
  let argDeltas = 0;
  for await (const ev of rstream) {
    if (ev.type === "response.function_call_arguments.delta") {
      argDeltas++;
      joined[ev.output_index] = (joined[ev.output_index] ?? "") + ev.delta;
    }
    if (ev.type === "response.function_call_arguments.done") doneArgs[ev.output_index] = ev.arguments;
  }
  const rfinal = await rstream.finalResponse();
  const scalls = rfinal.output.filter((it) => it.type === "function_call");
  check("responses named call streamed", argDeltas > scalls.length && scalls.length >= 1, `${argDeltas} argument deltas, ${JSON.stringify(rfinal.output).slice(0, 300)}`);
  rfinal.output.forEach((it, i) => {
    if (it.type !== "function_call") return;
    check("responses named call streamed", joined[i] === it.arguments && doneArgs[i] === it.arguments,
      `output ${i}: deltas join to ${JSON.stringify(joined[i])}, done ${JSON.stringify(doneArgs[i])}, item ${JSON.stringify(it.arguments)}`);
  });
  for (const it of scalls) checkCall("responses named call streamed", asCall(it), "get_weather");

  // text.format json_schema (strict) on the Responses API, whole and
  // streamed: the output text parses and fits.
  const rformat = { model, input: "What is the weather in Oslo?", max_output_tokens: 400, temperature: 0,
    text: { format: { type: "json_schema", name: "weather", schema: weatherSchema, strict: true } } };
  const rjs = await client.responses.create(rformat);
  const rjsStream = client.responses.stream(rformat);
  for await (const _ of rjsStream);
  const rjsStreamed = await rjsStream.finalResponse();
  // The stream helper's final Response has no output_text convenience
  // field: the message item's text parts are joined here.
  const textOf = (r) => r.output.filter((it) => it.type === "message").flatMap((it) => it.content).filter((p) => p.type === "output_text").map((p) => p.text).join("");
  for (const [name, r] of [["responses json_schema", rjs], ["responses json_schema streamed", rjsStreamed]]) {
    const text = textOf(r);
    try {
      const why = fitsWeather(JSON.parse(text));
      check(name, why === "" && r.status === "completed" && r.text?.format?.type === "json_schema" && r.text.format.name === "weather",
        `${text}: ${why}, status ${r.status}, text ${JSON.stringify(r.text)}`);
    } catch (e) {
      check(name, false, `${JSON.stringify(text)}: ${e}`);
    }
  }
  check("responses json_schema", rjs.output_text === textOf(rjs), `output_text ${JSON.stringify(rjs.output_text)}`);
  try {
    await client.responses.create({ ...rformat, text: { format: { type: "json_schema", name: "d", schema: { type: "string", format: "email", pattern: "^a$" } } } });
    check("responses json_schema unsupported keyword", false, "no error");
  } catch (e) {
    check("responses json_schema unsupported keyword", e instanceof OpenAI.BadRequestError && (e.param ?? "").startsWith("text.format.schema"), `got ${e} (param ${e.param})`);
  }

  // json_schema, strict: the content parses and fits.
  const js = await client.chat.completions.create({
    ...base,
    messages: ask,
    response_format: { type: "json_schema", json_schema: { name: "weather", schema: weatherSchema, strict: true } },
  });
  try {
    const why = fitsWeather(JSON.parse(js.choices[0].message.content));
    check("json_schema", why === "" && js.choices[0].finish_reason === "stop", `${js.choices[0].message.content}: ${why}`);
  } catch (e) {
    check("json_schema", false, `${JSON.stringify(js.choices[0].message.content)}: ${e}`);
  }

  // json_object: the content parses as an object. A random model's
  // strings run long; a bias towards '"' and '}' (Llama 2 ids) closes
  // them within the budget.
  const jo = await client.chat.completions.create({
    ...base,
    max_tokens: 300,
    messages: ask,
    response_format: { type: "json_object" },
    logit_bias: process.env.LISA_JSON_BIAS ? JSON.parse(process.env.LISA_JSON_BIAS) : undefined,
  });
  try {
    const v = JSON.parse(jo.choices[0].message.content);
    check("json_object", typeof v === "object" && v !== null && !Array.isArray(v), `${jo.choices[0].message.content}`);
  } catch (e) {
    check("json_object", false, `${JSON.stringify(jo.choices[0].message.content)}: ${e}`);
  }

  // Bad input to every new field: a 4xx in OpenAI's error shape.
  let deep = { type: "object" };
  for (let i = 0; i < 40; i++) deep = { type: "object", properties: { a: deep } };
  const fn = (parameters) => [{ type: "function", function: { name: "f", parameters } }];
  const bad = {
    "tools not a list": { tools: { type: "function" } },
    "tool without a name": { tools: [{ type: "function", function: { parameters: {} } }] },
    "tool name too long": { tools: [{ type: "function", function: { name: "f".repeat(65) } }] },
    "too many tools": { tools: Array.from({ length: 129 }, (_, i) => ({ type: "function", function: { name: `f${i}` } })) },
    "parameters not an object": { tools: fn("x") },
    "parameters too deep": { tools: fn(deep), tool_choice: "required" },
    "parameters too large": { tools: fn({ type: "object", description: "x".repeat(70000) }) },
    "parameters unsupported keyword": { tools: fn({ type: "object", patternProperties: { a: {} } }), tool_choice: "required" },
    "tool_choice wrong type": { tools, tool_choice: 5 },
    "tool_choice unknown function": { tools, tool_choice: { type: "function", function: { name: "nope" } } },
    "parallel_tool_calls wrong type": { tools, parallel_tool_calls: "yes" },
    "tool message without id": { messages: [...ask, { role: "tool", content: "x" }] },
    "tool_calls wrong type": { messages: [{ role: "assistant", content: null, tool_calls: "x" }, ...ask] },
    "response_format wrong type": { response_format: "json" },
    "response_format unknown type": { response_format: { type: "xml" } },
    "json_schema without schema name": { response_format: { type: "json_schema", json_schema: { schema: weatherSchema } } },
    "json_schema too deep": { response_format: { type: "json_schema", json_schema: { name: "d", schema: deep } } },
    "json_schema too large": { response_format: { type: "json_schema", json_schema: { name: "d", schema: { type: "object", description: "x".repeat(70000) } } } },
    "json_schema unsupported keyword": { response_format: { type: "json_schema", json_schema: { name: "d", schema: { type: "string", format: "email", pattern: "^a$" } } } },
    "grammar wrong type": { grammar: 5 },
    "grammar syntax": { grammar: "root ::= (" },
    "grammar too large": { grammar: "root ::= " + '"a" '.repeat(20000) },
    "tools with a format": { tools, response_format: { type: "json_object" } },
  };
  for (const [name, extra] of Object.entries(bad)) await expectError(name, { ...base, max_tokens: 4, messages: ask, ...extra });
}

async function main() {
  if (process.env.LISA_TOOLS) {
    const model = (await client.models.list()).data[0].id;
    await toolChecks(model);
    console.log(JSON.stringify({ model, failures }));
    if (failures.length) process.exit(1);
    return;
  }
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

  // A literal "<s>" in a message is text, not the model's BOS token: eight
  // of them add several tokens each to the prompt (one each as special
  // tokens).
  const promptTokens = async (content) => (await client.chat.completions.create({ model, messages: [{ role: "user", content }], max_tokens: 1, temperature: 0 })).usage.prompt_tokens;
  const plain = await promptTokens("Tell me.");
  const marked = await promptTokens("Tell me." + "<s>".repeat(8));
  check("literal <s>", marked - plain >= 16, `8 literal <s> add ${marked - plain} prompt tokens`);

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

  await checkChoices(model);
  await checkResponses(model);
  if (process.env.LISA_EMBEDDINGS) await checkEmbeddings(model);

  console.log(JSON.stringify({ model, chat: chat.choices[0].message.content, stream: text, completion: comp.choices[0].text, failures }));
  if (failures.length) process.exit(1);
}

// checkChoices asks for n = 3 choices: each choice has its index and a
// finish reason; greedy choices are the same text (the expected one);
// seeded choices are the same whole and streamed (each stream chunk
// naming its choice) and not all alike; usage counts every choice; n
// outside 1..128 is a 400 naming n.
async function checkChoices(model) {
  const n = 3;
  const messages = [{ role: "user", content: "Once upon a time" }];
  const finishes = ["stop", "length"];
  const greedy = await client.chat.completions.create({ model, messages, max_tokens: max, temperature: 0, n });
  check("n greedy", greedy.choices.length === n, `${greedy.choices.length} choices`);
  greedy.choices.forEach((c, i) => {
    check("n greedy", c.index === i && finishes.includes(c.finish_reason), `choice ${i}: index ${c.index}, finish ${c.finish_reason}`);
    checkText(`n greedy choice ${i}`, c.message.content);
    check("n greedy", c.message.content === greedy.choices[0].message.content, `choice ${i} ${JSON.stringify(c.message.content)} differs from choice 0`);
  });
  const u = greedy.usage;
  check("n greedy usage", u && u.completion_tokens > 0 && u.completion_tokens % n === 0 && u.total_tokens === u.prompt_tokens + u.completion_tokens,
    `usage ${JSON.stringify(u)}`);

  const seeded = { model, messages, max_tokens: max, temperature: 1, seed: 5, n };
  const whole = await client.chat.completions.create(seeded);
  const stream = await client.chat.completions.create({ ...seeded, stream: true, stream_options: { include_usage: true } });
  const texts = Array(n).fill("");
  const streamFinish = Array(n).fill(null);
  let streamUsage = null;
  for await (const chunk of stream) {
    if (chunk.usage) streamUsage = chunk.usage;
    for (const c of chunk.choices) {
      check("n stream", Number.isInteger(c.index) && c.index >= 0 && c.index < n, `chunk for choice ${c.index}`);
      texts[c.index] += c.delta?.content ?? "";
      if (c.finish_reason) streamFinish[c.index] = c.finish_reason;
    }
  }
  check("n seeded", whole.choices.length === n, `${whole.choices.length} choices`);
  whole.choices.forEach((c, i) => {
    check("n seeded", c.index === i && finishes.includes(c.finish_reason), `choice ${i}: index ${c.index}, finish ${c.finish_reason}`);
    check("n stream", texts[i] === c.message.content && streamFinish[i] === c.finish_reason,
      `choice ${i} streamed ${JSON.stringify(texts[i])} (${streamFinish[i]}), whole ${JSON.stringify(c.message.content)} (${c.finish_reason})`);
  });
  check("n seeded", new Set(texts).size > 1, `every choice says ${JSON.stringify(texts[0])}`);
  check("n stream usage", streamUsage && streamUsage.completion_tokens === whole.usage.completion_tokens, `usage ${JSON.stringify(streamUsage)} vs ${JSON.stringify(whole.usage)}`);

  const comp = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: max, temperature: 0, n: 2 });
  check("n completions", comp.choices.length === 2 && comp.choices.every((c, i) => c.index === i), `choices ${JSON.stringify(comp.choices)}`);
  comp.choices.forEach((c, i) => checkText(`n completions choice ${i}`, c.text));

  for (const bad of [0, 129]) {
    try {
      await client.chat.completions.create({ model, messages, max_tokens: 1, n: bad });
      check(`n=${bad}`, false, "no error");
    } catch (e) {
      check(`n=${bad}`, e instanceof OpenAI.BadRequestError && e.param === "n", `got ${e}`);
    }
  }
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
  // model's template. A model without a tool template gets the tools as
  // a JSON system prompt, which may not fit a small model's context: then
  // a 400 context_length_exceeded, never a 500 or "unsupported".
  try {
    const calls = await client.responses.create({
      model,
      input: [
        { role: "user", content: "What is the weather?" },
        // Nine letters and digits: Mistral's template refuses other ids.
        { type: "function_call", call_id: "a1b2c3d4e", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
        { type: "function_call_output", call_id: "a1b2c3d4e", output: "sunny" },
      ],
      tools: [{ type: "function", name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: true }],
      // "none": a random-weight model still answers in text.
      tool_choice: "none",
      max_output_tokens: max,
      temperature: 0,
    });
    check("responses tools", calls.output.length >= 1 && calls.output[0].type === "message", `got ${JSON.stringify(calls).slice(0, 300)}`);
  } catch (e) {
    check("responses tools", e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded", `got ${e} (code ${e.code})`);
  }

  const rstream = client.responses.stream({ model, input: "Once upon a time", max_output_tokens: max, temperature: 0 });
  let rtext = "";
  const types = new Set();
  for await (const ev of rstream) {
    types.add(ev.type);
    if (ev.type === "response.output_text.delta") rtext += ev.delta;
  }
  const final = await rstream.finalResponse();
  // A model that ends at once sends no text, so no delta (never an empty one).
  for (const t of ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.done", "response.content_part.done", "response.output_item.done"]) {
    check("responses stream", types.has(t), `no ${t} event`);
  }
  check("responses stream", types.has("response.output_text.delta") === (rtext !== ""), `text ${JSON.stringify(rtext)}, delta events ${types.has("response.output_text.delta")}`);
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
  // Eight events without text (created … completed), one a delta more.
  check("responses create stream", ordered && seq >= 7, `sequence numbers end at ${seq}, in order ${ordered}`);

  for (const [name, params, param] of [
    ["previous_response_id", { previous_response_id: "resp_1" }, "previous_response_id"],
    ["bad max_output_tokens", { max_output_tokens: "ten" }, "max_output_tokens"],
    ["unknown field", { frobnicate: 1 }, "frobnicate"],
    ["image input", { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }, "input[0].content[0].type"],
    ["text.format without schema", { text: { format: { type: "json_schema", name: "w" } } }, "text.format.schema"],
    ["text.format unknown type", { text: { format: { type: "xml" } } }, "text.format.type"],
    ["text.format bad name", { text: { format: { type: "json_schema", name: "a b", schema: { type: "object" } } } }, "text.format.name"],
    ["text.format schema not an object", { text: { format: { type: "json_schema", name: "w", schema: "object" } } }, "text.format.schema"],
    ["text.format schema too deep", { text: { format: { type: "json_schema", name: "w", schema: deepSchema(200) } } }, "text.format.schema"],
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
