// The chat page of lisa serve --webui. Everything the server sends is
// put on the page as text (textContent), never as HTML. The API key is
// kept in sessionStorage and sent only to this page's own origin; the
// model picked is kept there too, for the tab's session.
"use strict";

(function () {
  const KEY = "lisa-api-key", MODEL = "lisa-model";
  const $ = (id) => document.getElementById(id);
  const messages = $("messages"), prompt = $("prompt"), form = $("form");
  const keyInput = $("key"), modelEl = $("model"), modelStateEl = $("modelstate");
  const tpsEl = $("tps"), statusEl = $("status");
  const sendBtn = $("send"), stopBtn = $("stop"), clearBtn = $("clear");
  let history = [];   // {role, content} of this chat
  let models = [];    // {id, aliases, status, error}: the served models, one entry each
  let model = "";     // the chosen model's id, sent as each request's "model"
  let controller = null;
  let listSeq = 0;    // the latest /v1/models read: an older answer is stale

  keyInput.value = sessionStorage.getItem(KEY) || "";
  keyInput.addEventListener("change", () => {
    sessionStorage.setItem(KEY, keyInput.value.trim());
    loadModels(false);
  });

  function headers() {
    const h = { "Content-Type": "application/json" };
    const k = keyInput.value.trim();
    if (k) h["Authorization"] = "Bearer " + k;
    return h;
  }

  function status(text) { statusEl.textContent = text; }

  // apiError returns the message of an OpenAI-style error body.
  async function apiError(resp) {
    try {
      const j = await resp.json();
      if (j && j.error && j.error.message) return resp.status + ": " + j.error.message;
    } catch (e) { /* not JSON */ }
    return "HTTP " + resp.status;
  }

  // groupModels turns /v1/models' entries into one entry per model. A
  // server with several models gives each entry a status and marks an
  // alias with alias_of; a server with one model lists its name first,
  // then its aliases, without a status.
  function groupModels(data) {
    const multi = data.some((e) => e && typeof e.status === "string");
    const out = [], byID = new Map();
    for (const e of data) {
      if (!e || typeof e.id !== "string" || e.id === "") continue;
      const of = multi ? (typeof e.alias_of === "string" ? e.alias_of : "") : (out.length ? out[0].id : "");
      if (of) {
        const m = byID.get(of);
        if (m) m.aliases.push(e.id);
        continue;
      }
      const m = { id: e.id, aliases: [], status: multi ? String(e.status || "") : "",
        error: typeof e.error === "string" ? e.error : "" };
      out.push(m);
      byID.set(m.id, m);
    }
    return out;
  }

  // pick returns want when it is served, else the first loaded model,
  // else the first that did not fail to load, else the first.
  function pick(list, want) {
    if (want && list.some((m) => m.id === want)) return want;
    const m = list.find((m) => m.status === "loaded") || list.find((m) => m.status !== "failed") || list[0];
    return m ? m.id : "";
  }

  function current() { return models.find((m) => m.id === model); }

  // setState records what this page saw of a model's state (a list read
  // before that is stale).
  function setState(id, state) {
    listSeq++;
    const m = models.find((m) => m.id === id);
    if (!m || !m.status) return;
    m.status = state;
    m.error = "";
    render();
  }

  const STATES = { unloaded: "not loaded yet: the first message loads it", loading: "loading…",
    loaded: "loaded", failed: "failed to load" };

  function label(m) {
    let s = m.id;
    if (m.aliases.length) s += " (alias " + m.aliases.join(", ") + ")";
    if (m.status && m.status !== "loaded") s += " — " + (m.status === "loading" ? "loading…" : m.status);
    return s;
  }

  // render fills the picker: disabled when there is nothing to choose.
  function render() {
    const opts = models.map((m) => {
      const o = document.createElement("option");
      o.value = m.id;
      o.textContent = label(m);
      return o;
    });
    if (!opts.length) {
      const o = document.createElement("option");
      o.value = "";
      o.textContent = "no model";
      opts.push(o);
    }
    modelEl.replaceChildren(...opts);
    modelEl.value = model;
    modelEl.disabled = models.length < 2;
    const m = current();
    modelStateEl.classList.toggle("failed", !!m && m.status === "failed");
    let s = m && m.status ? STATES[m.status] || m.status : "";
    if (m && m.error) s += ": " + m.error;
    modelStateEl.textContent = s;
  }

  // loadModels reads the served models and their states; quiet keeps
  // the status line as it is.
  async function loadModels(quiet) {
    const seq = ++listSeq;
    try {
      const resp = await fetch("/v1/models", { headers: headers() });
      if (seq !== listSeq) return;
      if (!resp.ok) {
        models = [];
        model = "";
        render();
        status(resp.status === 401 ? "this server needs an API key: type it above" : await apiError(resp));
        return;
      }
      const j = await resp.json();
      if (seq !== listSeq) return;
      models = groupModels(j && Array.isArray(j.data) ? j.data : []);
      model = pick(models, model || sessionStorage.getItem(MODEL));
      render();
      if (!quiet) status(models.length ? "ready" : "this server lists no model");
    } catch (e) {
      status("cannot reach the server: " + e);
    }
  }

  modelEl.addEventListener("change", () => {
    model = modelEl.value;
    sessionStorage.setItem(MODEL, model);
    render();
    const m = current();
    status(m && m.status === "failed" ? "the model " + m.id + " failed to load: " + (m.error || "no reason given")
      : "messages go to " + model);
    loadModels(true); // its state may have changed since the list was read
  });

  function addMessage(role, text) {
    const div = document.createElement("div");
    div.className = "msg " + role;
    const who = document.createElement("span");
    who.className = "role";
    who.textContent = role;
    const body = document.createElement("span");
    body.className = "content";
    body.textContent = text;
    div.append(who, body);
    messages.append(div);
    messages.scrollTop = messages.scrollHeight;
    return body;
  }

  function busy(on) {
    sendBtn.disabled = on;
    stopBtn.disabled = !on;
  }

  // readEvents calls onData with each "data:" payload of a server-sent
  // event stream.
  async function readEvents(body, onData) {
    const reader = body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let at;
      while ((at = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, at).replace(/\r$/, "");
        buf = buf.slice(at + 1);
        if (line.startsWith("data:")) onData(line.slice(5).trim());
      }
    }
  }

  async function send(text) {
    history.push({ role: "user", content: text });
    addMessage("user", text);
    const out = addMessage("assistant", "");
    out.parentElement.classList.add("streaming");
    busy(true);
    const m = current(), id = model;
    if (m && m.status && m.status !== "loaded") {
      // The first request of a model that is not loaded waits for its load.
      setState(id, "loading");
      status("loading the model " + id + "…");
    } else {
      status("waiting for the first token…");
    }
    controller = new AbortController();
    const started = performance.now();
    let first = 0, last = 0, chunks = 0, usage = null, reply = "";
    try {
      const resp = await fetch("/v1/chat/completions", {
        method: "POST", headers: headers(), signal: controller.signal,
        body: JSON.stringify({ model: id || undefined, messages: history, stream: true,
          stream_options: { include_usage: true } }),
      });
      if (!resp.ok) throw new Error(await apiError(resp));
      if (m && m.status) setState(id, "loaded");
      if (!first) status("waiting for the first token…");
      await readEvents(resp.body, (data) => {
        if (data === "[DONE]") return;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message || "error");
        if (j.usage) usage = j.usage;
        const c = j.choices && j.choices[0] && j.choices[0].delta && j.choices[0].delta.content;
        if (c) {
          const now = performance.now();
          if (!first) { first = now; status("generating…"); }
          last = now;
          chunks++;
          reply += c;
          out.textContent = reply;
          messages.scrollTop = messages.scrollHeight;
        }
      });
      history.push({ role: "assistant", content: reply });
      const n = usage ? usage.completion_tokens : chunks;
      // Generation speed: the tokens after the first over the time
      // between the first and the last (prompt processing excluded).
      const tps = n > 1 && last > first ? (n - 1) * 1000 / (last - first) : 0;
      tpsEl.textContent = n + " tokens, " + tps.toFixed(1) + " tokens/s";
      status("done in " + ((performance.now() - started) / 1000).toFixed(2) + " s");
    } catch (e) {
      history.pop(); // the question without an answer is not kept
      out.parentElement.classList.add("error");
      out.textContent = reply + (reply ? "\n" : "") + (e.name === "AbortError" ? "(stopped)" : String(e.message || e));
      status(e.name === "AbortError" ? "stopped" : "error");
      if (m && m.status) loadModels(true); // a failed load shows in the model's state
    } finally {
      out.parentElement.classList.remove("streaming");
      controller = null;
      busy(false);
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = prompt.value.trim();
    if (!text || controller) return;
    prompt.value = "";
    send(text);
  });
  prompt.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  stopBtn.addEventListener("click", () => { if (controller) controller.abort(); });
  clearBtn.addEventListener("click", () => {
    if (controller) controller.abort();
    history = [];
    messages.replaceChildren();
    tpsEl.textContent = "";
  });

  loadModels(false);
})();
