// The chat page of lisa serve --webui. Everything the server sends is
// put on the page as text (textContent), never as HTML. The API key is
// kept in sessionStorage and sent only to this page's own origin.
"use strict";

(function () {
  const KEY = "lisa-api-key";
  const $ = (id) => document.getElementById(id);
  const messages = $("messages"), prompt = $("prompt"), form = $("form");
  const keyInput = $("key"), modelEl = $("model"), tpsEl = $("tps"), statusEl = $("status");
  const sendBtn = $("send"), stopBtn = $("stop"), clearBtn = $("clear");
  let history = [];   // {role, content} of this chat
  let model = "";     // the served model's id, from /v1/models
  let controller = null;

  keyInput.value = sessionStorage.getItem(KEY) || "";
  keyInput.addEventListener("change", () => {
    sessionStorage.setItem(KEY, keyInput.value.trim());
    loadModel();
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

  async function loadModel() {
    try {
      const resp = await fetch("/v1/models", { headers: headers() });
      if (!resp.ok) {
        modelEl.textContent = "no model";
        status(resp.status === 401 ? "this server needs an API key: type it above" : await apiError(resp));
        return;
      }
      const j = await resp.json();
      if (j.data && j.data.length > 0) {
        model = String(j.data[0].id);
        modelEl.textContent = model;
        status("ready");
      }
    } catch (e) {
      status("cannot reach the server: " + e);
    }
  }

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
    status("waiting for the first token…");
    controller = new AbortController();
    const started = performance.now();
    let first = 0, last = 0, chunks = 0, usage = null, reply = "";
    try {
      const resp = await fetch("/v1/chat/completions", {
        method: "POST", headers: headers(), signal: controller.signal,
        body: JSON.stringify({ model: model || undefined, messages: history, stream: true,
          stream_options: { include_usage: true } }),
      });
      if (!resp.ok) throw new Error(await apiError(resp));
      await readEvents(resp.body, (data) => {
        if (data === "[DONE]") return;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message || "error");
        if (j.model && !model) { model = String(j.model); modelEl.textContent = model; }
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

  loadModel();
})();
