// The web UI of `ironloop serve`: plain DOM, no framework, no network but this server.
// Everything it shows comes from the server's Agent Server API (the endpoints
// langgraph-sdk calls), plus /ui/assistants/{id}/graph.svg for the drawing.
"use strict";

const $ = (id) => document.getElementById(id);

const ui = {
  assistants: [],
  assistant: null, // the selected assistant's record
  chat: true, // its input has `messages` (else the message box takes the input as JSON)
  values: {}, // the thread's state values
  thread: null, // the selected thread's id (null: a new one is made on send)
  messages: [], // the thread's messages, from the last `values` event or state
  live: new Map(), // id -> message being streamed, not yet in `messages`
  progress: new Map(), // tool call id -> its partial output (`tool-output-delta`s) while it runs
  interrupts: [],
  next: [],
  forkFrom: null, // a history entry the next run starts from
  run: null, // {threadId, runId, controller} while a run streams
  renderQueued: false,
};

// ------------------------------------------------------------------ the API

function credentials() {
  const headers = {};
  const key = localStorage.getItem("ironloop.apiKey");
  const authorization = localStorage.getItem("ironloop.authorization");
  if (key) headers["x-api-key"] = key;
  if (authorization) headers.authorization = authorization;
  return headers;
}

class ApiError extends Error {}

async function failure(response, path) {
  let detail = response.statusText;
  try {
    const body = await response.json();
    detail = body.detail || JSON.stringify(body);
  } catch (_) {
    // not JSON: keep the status text
  }
  const hint =
    response.status === 401 || response.status === 403
      ? " The server wants credentials: enter them under Connection."
      : "";
  return new ApiError(`${path}: ${response.status} ${detail}.${hint}`);
}

async function api(path, body, method) {
  const init = { method: method || (body === undefined ? "GET" : "POST"), headers: credentials() };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response, path);
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

// A run streamed over Server-Sent Events (POST, so not EventSource): calls
// onEvent(name, data) for each event until the server ends the stream.
async function stream(path, body, onEvent, signal) {
  const headers = { ...credentials(), "content-type": "application/json", accept: "text/event-stream" };
  const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body), signal });
  if (!response.ok) throw await failure(response, path);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

// ------------------------------------------------------------------ helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function text(message) {
  const content = message.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : part.type === "text" ? part.text : ""))
      .join("");
  }
  return content == null ? "" : JSON.stringify(content);
}

const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

function showAlert(error) {
  const alert = $("alert");
  if (!error) {
    alert.hidden = true;
    alert.textContent = "";
    return;
  }
  alert.hidden = false;
  alert.textContent = error instanceof ApiError ? error.message : `Error: ${error.message || error}`;
}

function setStatus(message) {
  $("status").textContent = message;
}

function saveLocation() {
  const params = new URLSearchParams();
  if (ui.assistant) params.set("assistant", ui.assistant.graph_id);
  if (ui.thread) params.set("thread", ui.thread);
  history.replaceState(null, "", `#${params}`);
}

// ------------------------------------------------------------------ messages

function scheduleRender() {
  if (ui.renderQueued) return;
  ui.renderQueued = true;
  requestAnimationFrame(() => {
    ui.renderQueued = false;
    renderMessages();
  });
}

function shownMessages() {
  const known = new Set(ui.messages.map((m) => m.id));
  return [...ui.messages, ...[...ui.live.values()].filter((m) => !known.has(m.id))];
}

function toolCallView(call, result, waiting) {
  let outcome;
  if (result) {
    const failed = result.status === "error";
    outcome = el(
      "div",
      { class: failed ? "tool-result error" : "tool-result" },
      el("span", { class: "label" }, failed ? "Error" : "Result"),
      el("pre", {}, text(result)),
    );
  } else {
    const partial = ui.progress.get(call.id);
    outcome = el(
      "div",
      {},
      el("p", { class: "muted tool-pending" }, waiting ? "Waiting for approval" : "Running…"),
      partial ? el("pre", { class: "tool-progress", "aria-label": `Progress of ${call.name}` }, partial) : null,
    );
  }
  return el(
    "div",
    { class: "tool-call", "data-tool-call": call.id || "" },
    el("p", { class: "tool-name" }, el("span", { class: "label" }, "Tool call"), " ", el("code", {}, call.name)),
    el("pre", { class: "tool-args", "aria-label": `Arguments of ${call.name}` }, pretty(call.args)),
    outcome,
  );
}

function renderMessages() {
  const list = $("messages");
  const messages = shownMessages();
  const results = new Map();
  for (const m of messages) if (m.type === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  const calls = new Set();
  const items = [];
  for (const m of messages) {
    const type = m.type === "AIMessageChunk" ? "ai" : m.type;
    if (type === "human") {
      items.push(el("li", { class: "msg human" }, el("span", { class: "who" }, "You"), el("div", { class: "body" }, text(m))));
    } else if (type === "ai") {
      const toolCalls = m.tool_calls || [];
      for (const c of toolCalls) calls.add(c.id);
      const body = text(m);
      items.push(
        el(
          "li",
          { class: "msg ai", "data-id": m.id || "" },
          el("span", { class: "who" }, m.name || "Assistant"),
          body ? el("div", { class: "body" }, body) : null,
          toolCalls.map((c) => toolCallView(c, results.get(c.id), ui.interrupts.length > 0)),
        ),
      );
    } else if (type === "tool") {
      if (!calls.has(m.tool_call_id)) {
        items.push(el("li", { class: "msg tool" }, el("span", { class: "who" }, `Tool ${m.name || ""}`), el("pre", {}, text(m))));
      }
    } else if (type !== "system") {
      items.push(el("li", { class: "msg other" }, el("span", { class: "who" }, type), el("div", { class: "body" }, text(m))));
    }
  }
  const { __interrupt__: _, messages: __, ...rest } = ui.values || {};
  if (!ui.chat && Object.keys(rest).length) {
    items.push(el("li", { class: "msg state" }, el("span", { class: "who" }, "State"), el("pre", { class: "state-values" }, pretty(rest))));
  }
  list.replaceChildren(...items);
  if (!items.length) {
    const hint = !ui.assistant ? "Pick an assistant." : ui.chat ? "No messages yet: say something below." : "No state yet: give the graph its input below.";
    list.append(el("li", { class: "empty muted" }, hint));
  }
  list.scrollTop = list.scrollHeight;
}

// ------------------------------------------------------------------ interrupts

function isHitl(value) {
  return value && Array.isArray(value.action_requests) && Array.isArray(value.review_configs);
}

// One action a HumanInTheLoopMiddleware interrupt asks about: its decision buttons,
// and the fields an edit, a rejection or a response needs. decide(decision) records
// the answer.
function actionView(action, allowed, decide) {
  const box = el("article", { class: "action" });
  const outcome = el("p", { class: "decided", role: "status" });
  const extra = el("div", { class: "action-extra" });
  const buttons = el("div", { class: "buttons" });
  const done = (decision, summary) => {
    for (const b of box.querySelectorAll("button, textarea, input")) b.disabled = true;
    outcome.textContent = summary;
    decide(decision);
  };
  const labels = { approve: "Approve", edit: "Edit", reject: "Reject", respond: "Respond" };
  for (const kind of allowed) {
    buttons.append(
      el(
        "button",
        {
          type: "button",
          class: kind === "approve" ? "primary" : "",
          "data-decision": kind,
          onclick: () => {
            if (kind === "approve") return done({ type: "approve" }, "Approved");
            extra.replaceChildren(...decisionForm(kind, action, done));
            extra.querySelector("textarea, input")?.focus();
          },
        },
        labels[kind] || kind,
      ),
    );
  }
  box.append(
    el("h3", {}, el("code", {}, action.name)),
    action.description ? el("p", { class: "description" }, action.description) : null,
    el("pre", { class: "tool-args", "aria-label": `Arguments of ${action.name}` }, pretty(action.args)),
    buttons,
    extra,
    outcome,
  );
  return box;
}

function decisionForm(kind, action, done) {
  const id = `decision-${kind}-${Math.random().toString(36).slice(2)}`;
  const error = el("p", { class: "field-error", role: "alert" });
  if (kind === "edit") {
    const field = el("textarea", { id, rows: 5 });
    field.value = JSON.stringify(action.args, null, 2);
    const submit = () => {
      let args;
      try {
        args = JSON.parse(field.value);
      } catch (e) {
        error.textContent = `The arguments are not valid JSON (${e.message}); fix them and press the button again.`;
        return;
      }
      if (!args || typeof args !== "object" || Array.isArray(args)) {
        error.textContent = "The arguments must be a JSON object, e.g. {\"city\": \"Paris\"}.";
        return;
      }
      done({ type: "edit", edited_action: { name: action.name, args } }, "Edited: runs with your arguments");
    };
    return [el("label", { for: id }, `Arguments for ${action.name} (JSON)`), field, error,
      el("button", { type: "button", class: "primary", onclick: submit }, "Run with these arguments")];
  }
  const field = el(kind === "respond" ? "textarea" : "input", { id, rows: 3 });
  const label = kind === "reject" ? "Why (optional, the model is told)" : "Your answer (the model gets it as the tool's result)";
  const submit = () => {
    if (kind === "respond" && !field.value.trim()) {
      error.textContent = "Write the answer the model should get, then press the button.";
      return;
    }
    const decision = { type: kind };
    if (field.value.trim()) decision.message = field.value;
    done(decision, kind === "reject" ? "Rejected" : "Answered in the tool's place");
  };
  return [el("label", { for: id }, label), field, error,
    el("button", { type: "button", class: "primary", onclick: submit }, kind === "reject" ? "Reject the call" : "Send the answer")];
}

function renderInterrupts() {
  const section = $("interrupt");
  const body = $("interrupt-body");
  if (!ui.interrupts.length || ui.forkFrom) {
    section.hidden = true;
    body.replaceChildren();
    return false;
  }
  const answers = new Map();
  const answer = (interrupt, value) => {
    answers.set(interrupt.id, value);
    if (answers.size < ui.interrupts.length) return;
    // One interrupt: its value; several: keyed by interrupt id (LangGraph's resume map).
    const resume = ui.interrupts.length === 1 ? value : Object.fromEntries(answers);
    startRun({ command: { resume } });
  };
  const parts = [];
  for (const interrupt of ui.interrupts) {
    const value = interrupt.value;
    if (isHitl(value)) {
      const decisions = new Array(value.action_requests.length);
      let count = 0;
      value.action_requests.forEach((action, i) => {
        const config = value.review_configs.find((c) => c.action_name === action.name) || value.review_configs[i] || {};
        parts.push(
          actionView(action, config.allowed_decisions || ["approve", "reject"], (decision) => {
            decisions[i] = decision;
            count += 1;
            if (count === decisions.length) answer(interrupt, { decisions });
          }),
        );
      });
    } else if (value && value.type === "tool_approval") {
      parts.push(actionView(value, ["approve", "edit", "reject", "respond"], (decision) => answer(interrupt, decision)));
    } else {
      const id = `resume-${parts.length}`;
      const field = el("textarea", { id, rows: 3 });
      const submit = el("button", { type: "button", class: "primary" }, "Resume");
      submit.addEventListener("click", () => {
        let resume = field.value;
        try {
          resume = JSON.parse(field.value);
        } catch (_) {
          // plain text is sent as a string
        }
        submit.disabled = true;
        answer(interrupt, resume);
      });
      parts.push(
        el(
          "article",
          { class: "action" },
          el("h3", {}, "Interrupt"),
          el("pre", { class: "payload", "aria-label": "The interrupt's payload" }, pretty(value)),
          el("label", { for: id }, "Resume value (JSON, or plain text sent as a string)"),
          field,
          submit,
        ),
      );
    }
  }
  body.replaceChildren(...parts);
  section.hidden = false;
  $("messages").scrollTop = $("messages").scrollHeight; // the panel took room: keep the end in view
  return true;
}

// ------------------------------------------------------------------ runs

function highlight(nodes) {
  for (const g of document.querySelectorAll("#graph [data-node]")) {
    g.classList.toggle("active", nodes.includes(g.dataset.node));
  }
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").hidden = !busy;
  $("new-thread").disabled = busy;
  $("assistant").disabled = busy;
}

async function ensureThread() {
  if (ui.thread) return ui.thread;
  const thread = await api("/threads", { graph_id: ui.assistant.graph_id, metadata: {} });
  ui.thread = thread.thread_id;
  saveLocation();
  return ui.thread;
}

async function startRun(extra) {
  if (ui.run) return;
  // Taken at once, so a second Enter while the thread is being made starts nothing.
  const run = { threadId: null, runId: null, controller: new AbortController(), stopped: false };
  ui.run = run;
  showAlert(null);
  setBusy(true);
  let ended = "done";
  try {
    const threadId = await ensureThread();
    run.threadId = threadId;
    const body = {
      assistant_id: ui.assistant.assistant_id,
      stream_mode: ["values", "messages-tuple", "tools"],
      multitask_strategy: "reject",
      ...extra,
    };
    if (ui.forkFrom) body.checkpoint_id = ui.forkFrom.checkpoint_id;
    ui.forkFrom = null;
    renderFork();
    ui.interrupts = [];
    renderInterrupts();
    setStatus("Running…");
    await stream(
      `/threads/${threadId}/runs/stream`,
      body,
      (event, data) => {
        if (event === "metadata") run.runId = data.run_id;
        else if (event === "values") onValues(data);
        else if (event === "messages") onMessage(data);
        else if (event === "tools") onToolEvent(data);
        else if (event === "error") {
          ended = "error";
          showAlert(new Error(`the run failed: ${data.error || ""} ${data.message || ""}`.trim()));
        }
      },
      run.controller.signal,
    );
  } catch (e) {
    if (e.name !== "AbortError") {
      ended = "error";
      showAlert(e);
    }
  } finally {
    if (run.stopped) ended = "stopped";
    ui.run = null;
    ui.live.clear();
    ui.progress.clear();
    setBusy(false);
  }
  await loadThread(ui.thread, { keepAlert: true });
  const waiting = ui.interrupts.length > 0;
  setStatus(
    ended === "stopped" ? "Stopped." : ended === "error" ? "The run failed." : waiting ? "Waiting for your decision." : "Done.",
  );
  await loadThreads();
  if (waiting) $("interrupt-title").focus();
}

function onValues(values) {
  ui.values = values || {};
  if (Array.isArray(values?.messages)) {
    ui.messages = values.messages;
    for (const m of values.messages) ui.live.delete(m.id);
    for (const id of ui.live.keys()) if (id.startsWith("local-")) ui.live.delete(id);
  }
  scheduleRender();
}

// LangGraph's `tools` stream: a running call's partial output shows under it until
// its result (a tool message) arrives.
function onToolEvent(data) {
  const id = data.tool_call_id;
  if (data.event === "tool-output-delta") {
    const delta = typeof data.delta === "string" ? data.delta : `${JSON.stringify(data.delta)}\n`;
    ui.progress.set(id, (ui.progress.get(id) || "") + delta);
    scheduleRender();
  } else if (data.event === "tool-finished" || data.event === "tool-error") {
    ui.progress.delete(id);
  }
}

function onMessage([message, metadata]) {
  if (!message || !message.id) return;
  if (metadata?.langgraph_node) highlight([metadata.langgraph_node]);
  if (message.type === "AIMessageChunk") {
    const live = ui.live.get(message.id) || { ...message, content: "", tool_calls: [] };
    live.content = text(live) + text(message);
    if (message.tool_calls?.length) live.tool_calls = message.tool_calls;
    ui.live.set(message.id, live);
  } else {
    ui.live.set(message.id, message);
  }
  scheduleRender();
}

async function stopRun() {
  const run = ui.run;
  if (!run) return;
  run.stopped = true;
  if (run.runId) {
    try {
      await api(`/threads/${run.threadId}/runs/${run.runId}/cancel?action=interrupt`, {});
    } catch (e) {
      showAlert(e);
    }
  }
  run.controller.abort();
}

// ------------------------------------------------------------------ threads and history

function threadTitle(thread) {
  const messages = thread.values?.messages || [];
  const first = messages.find((m) => m.type === "human");
  return first ? text(first).slice(0, 60) || "(empty message)" : "(no messages)";
}

async function loadThreads() {
  const list = $("threads");
  if (!ui.assistant) return list.replaceChildren();
  let threads;
  try {
    threads = await api("/threads/search", {
      metadata: { graph_id: ui.assistant.graph_id },
      limit: 50,
      sort_by: "updated_at",
      sort_order: "desc",
    });
  } catch (e) {
    showAlert(e);
    return;
  }
  list.replaceChildren(
    ...threads.map((t) =>
      el(
        "li",
        {},
        el(
          "button",
          {
            type: "button",
            class: "thread",
            "aria-current": t.thread_id === ui.thread ? "true" : null,
            onclick: () => selectThread(t.thread_id),
          },
          el("span", { class: "thread-title" }, threadTitle(t)),
          el("span", { class: `thread-meta status-${t.status}` }, `${t.status} · ${new Date(t.updated_at).toLocaleString()}`),
        ),
      ),
    ),
  );
  if (!threads.length) list.append(el("li", { class: "muted" }, "No threads yet."));
}

async function loadThread(threadId, options) {
  if (!options?.keepAlert) showAlert(null);
  ui.forkFrom = null;
  renderFork();
  if (!threadId) {
    ui.values = {};
    ui.messages = [];
    ui.interrupts = [];
    ui.next = [];
    $("thread-caption").textContent = "A new thread: it is made when you send the first message.";
    renderMessages();
    renderInterrupts();
    renderHistory([]);
    highlight([]);
    return;
  }
  let state;
  let checkpoints;
  try {
    [state, checkpoints] = await Promise.all([
      api(`/threads/${threadId}/state`),
      api(`/threads/${threadId}/history`, { limit: 50 }),
    ]);
  } catch (e) {
    showAlert(e);
    return;
  }
  $("thread-caption").textContent = `Thread ${threadId}`;
  ui.values = state.values || {};
  ui.messages = state.values?.messages || [];
  ui.interrupts = state.interrupts?.length ? state.interrupts : (state.tasks || []).flatMap((t) => t.interrupts || []);
  ui.next = state.next || [];
  renderMessages();
  renderInterrupts();
  renderHistory(checkpoints);
  highlight(ui.next);
}

async function selectThread(threadId) {
  if (ui.run) return;
  ui.thread = threadId;
  saveLocation();
  for (const b of document.querySelectorAll("#threads .thread")) b.removeAttribute("aria-current");
  await loadThread(threadId);
  await loadThreads();
  setStatus("");
}

function renderHistory(checkpoints) {
  const list = $("history");
  list.replaceChildren(
    ...checkpoints.map((c) => {
      const messages = c.values?.messages || [];
      const last = messages[messages.length - 1];
      const step = c.metadata?.step;
      const summary = last ? `${last.type}: ${text(last) || (last.tool_calls || []).map((t) => t.name).join(", ")}` : "empty";
      return el(
        "li",
        { class: "checkpoint" },
        el("p", {}, el("strong", {}, `Step ${step ?? "?"}`), ` · ${c.metadata?.source || ""}`,
          c.next?.length ? ` · next: ${c.next.join(", ")}` : " · finished"),
        el("p", { class: "muted summary" }, `${messages.length} message(s); last ${summary.slice(0, 80)}`),
        el("button", { type: "button", onclick: () => startFork(c) }, "Fork from here"),
      );
    }),
  );
  if (!checkpoints.length) list.append(el("li", { class: "muted" }, "No checkpoints yet."));
}

function startFork(checkpoint) {
  ui.forkFrom = checkpoint;
  ui.values = checkpoint.values || {};
  ui.messages = checkpoint.values?.messages || [];
  renderMessages();
  renderInterrupts();
  renderFork();
  highlight(checkpoint.next || []);
  $("input").focus();
}

function renderFork() {
  const c = ui.forkFrom;
  $("fork").hidden = !c;
  if (!c) return;
  $("fork-text").textContent =
    `Forking from step ${c.metadata?.step ?? "?"} (checkpoint ${c.checkpoint_id}): the conversation above is the thread as it was then; ` +
    "your next message continues from there, on a new branch of this thread.";
  $("fork-replay").hidden = !(c.next && c.next.length);
}

// ------------------------------------------------------------------ assistants

async function selectAssistant(graphId, threadId) {
  ui.assistant = ui.assistants.find((a) => a.graph_id === graphId) || ui.assistants[0] || null;
  ui.thread = threadId || null;
  $("assistant").value = ui.assistant ? ui.assistant.graph_id : "";
  $("assistant-description").textContent = ui.assistant?.description || "";
  saveLocation();
  const box = $("graph");
  box.replaceChildren();
  if (!ui.assistant) return;
  const id = encodeURIComponent(ui.assistant.assistant_id);
  try {
    const [svg, schemas] = await Promise.all([api(`/ui/assistants/${id}/graph.svg`), api(`/assistants/${id}/schemas`)]);
    box.innerHTML = svg;
    setInputMode(schemas.input_schema);
  } catch (e) {
    showAlert(e);
  }
  await loadThread(ui.thread);
  await loadThreads();
}

// A graph whose input has no `messages` gets its input as JSON, shown with the
// input's fields as a starting point.
function setInputMode(schema) {
  const properties = schema?.properties || {};
  ui.chat = !schema || "messages" in properties;
  $("input-label").textContent = ui.chat ? "Message" : "Input (JSON)";
  const example = Object.fromEntries(Object.keys(properties).map((k) => [k, properties[k].type === "string" ? "" : null]));
  $("input").placeholder = ui.chat ? "" : JSON.stringify(example);
}

function parseInput(content) {
  if (ui.chat) return { messages: [{ role: "user", content }] };
  let input;
  try {
    input = JSON.parse(content);
  } catch (e) {
    throw new Error(`the input is not valid JSON (${e.message}); this graph takes its input as a JSON object, e.g. ${$("input").placeholder}`);
  }
  if (!input || typeof input !== "object" || Array.isArray(input)) {
    throw new Error(`the input must be a JSON object, e.g. ${$("input").placeholder}`);
  }
  return input;
}

async function start() {
  $("api-key").value = localStorage.getItem("ironloop.apiKey") || "";
  $("authorization").value = localStorage.getItem("ironloop.authorization") || "";
  $("connection").addEventListener("submit", (e) => {
    e.preventDefault();
    localStorage.setItem("ironloop.apiKey", $("api-key").value.trim());
    localStorage.setItem("ironloop.authorization", $("authorization").value.trim());
    location.reload();
  });
  $("assistant").addEventListener("change", (e) => selectAssistant(e.target.value, null));
  $("new-thread").addEventListener("click", () => selectThread(null));
  $("stop").addEventListener("click", stopRun);
  $("fork-cancel").addEventListener("click", () => selectThread(ui.thread));
  $("fork-replay").addEventListener("click", () => startRun({ input: null }));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && ui.forkFrom) selectThread(ui.thread);
  });
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const content = $("input").value.trim();
    if (!content || !ui.assistant || ui.run) return;
    let input;
    try {
      input = parseInput(content);
    } catch (error) {
      showAlert(error);
      return;
    }
    $("input").value = "";
    if (ui.chat) {
      const local = `local-${Date.now()}`; // shown until the run's first values arrive
      ui.live.set(local, { type: "human", content, id: local });
      scheduleRender();
    }
    startRun({ input });
  });
  try {
    // The graphs' own assistants, in langgraph.json's order (the first is the default).
    ui.assistants = await api("/assistants/search", {
      limit: 100, metadata: { created_by: "system" }, sort_by: "created_at", sort_order: "asc",
    });
  } catch (e) {
    showAlert(e);
    return;
  }
  $("assistant").replaceChildren(...ui.assistants.map((a) => el("option", { value: a.graph_id }, a.name || a.graph_id)));
  if (!ui.assistants.length) showAlert(new Error("this server serves no graphs (langgraph.json names none)"));
  const params = new URLSearchParams(location.hash.slice(1));
  await selectAssistant(params.get("assistant"), params.get("thread"));
}

start();
