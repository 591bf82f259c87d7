// gradserve playground: a page over the /v1 API for people learning backward().
// Plain browser JavaScript, no dependencies, no external assets: every action is one
// request to the same origin; after each one the tensors and the graph are read again.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { session: null, shapes: {} };  // shapes: the session's tensors, by name

// -- presets: the seed tutorials' examples, as lists of actions ------------------------------
const PRESETS = {
  "abc": {
    title: "y = 3a + 2b² + log c, backward with weights",
    actions: [
      { leaf: { name: "a", data: [1.0, 2.0, 3.0] } },
      { leaf: { name: "b", data: [3.0, 4.0, 5.0] } },
      { leaf: { name: "c", data: [6.0, 7.0, 8.0] } },
      { step: { out: "y", expr: "3*a + 2*b*b + log(c)" } },
      { backward: { tensors: "y", grad_tensors: [[0.1, 1.0, 0.0001]], retain_graph: true } },
    ],
  },
  "retained": {
    title: "z = (2x)³: backward again and again on a retained graph",
    actions: [
      { leaf: { name: "x", data: [[-0.7207]] } },
      { step: { out: "y", expr: "2 * x" } },
      { step: { out: "z", expr: "y ** 3" } },
      { backward: { tensors: "z", retain_graph: true } },
      { zero_grad: { tensors: ["x"] } },
      { backward: { tensors: "z", grad_tensors: [[[0.1]]], retain_graph: true } },
      { backward: { tensors: "z", grad_tensors: [[[0.5]]], retain_graph: true } },
    ],
  },
  "onehot": {
    title: "Rows of the Jacobian of z = 2x with one-hot grad_tensors",
    actions: [
      { leaf: { name: "x", data: [[1.0, 2.0, 3.0, 4.0]] } },
      { step: { out: "z", expr: "2 * x" } },
      { backward: { tensors: "z", grad_tensors: [[[1, 0, 0, 0]]], retain_graph: true } },
      { zero_grad: { tensors: ["x"] } },
      { backward: { tensors: "z", grad_tensors: [[[0, 1, 0, 0]]], retain_graph: true } },
      { zero_grad: { tensors: ["x"] } },
      { backward: { tensors: "z", grad_tensors: [[[1, 1, 1, 1]]], retain_graph: true } },
    ],
  },
  "doubling": {
    title: "y = 2x; while y.data.norm() < 1000: y = y * 2",
    actions: [
      { leaf: { name: "x", data: [0.5, -1.0, 0.25] } },
      { step: { out: "y", expr: "x * 2" } },
      { whileNormBelow: { tensor: "y", limit: 1000, step: { out: "y", expr: "y * 2" } } },
      { backward: { tensors: "y", grad_tensors: [[0.1, 1.0, 0.0001]] } },
    ],
  },
  "freed": {
    title: "A second backward without retain_graph: PyTorch's error",
    actions: [
      { leaf: { name: "x", data: [1.0, 2.0] } },
      { step: { out: "y", expr: "(x ** 2).sum()" } },
      { backward: { tensors: "y" } },
      { backward: { tensors: "y" } },
    ],
  },
  "jacobian": {
    title: "A stored program and its Jacobian as a heat map: y = cumsum(x) · sin(x)",
    actions: [
      { leaf: { name: "x", data: [0.5, 1.0, 1.5, 2.0, 2.5] } },
      { program: { name: "f", steps: [{ out: "y", expr: "x.cumsum(0) * x.sin()" }] } },
      { run: { program: "f", repeat: 1 } },
      { jacobian: { program: "f", of: ["y"], wrt: ["x"] } },
    ],
  },
  "train": {
    title: "A training step stored as a program, run 20 times",
    actions: [
      { leaf: { name: "X", data: [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad: false } },
      { leaf: { name: "Y", data: [[1.0], [2.0], [3.0]], requires_grad: false } },
      { leaf: { name: "w", data: [[0.1], [-0.2]] } },
      { program: { name: "train", fetch: ["loss"], steps: [
        { out: "loss", expr: "((X @ w - Y) ** 2).mean()" },
        { backward: { tensors: "loss" } },
        { out: "w", expr: "w - 0.01 * w.grad", assign: true },
        { zero_grad: { tensors: ["w"] } },
      ] } },
      { run: { program: "train", repeat: 20 } },
    ],
  },
  "double": {
    title: "Gradients of gradients: x³ → 3x² → 6x (create_graph)",
    actions: [
      { leaf: { name: "x", data: [1.0, 2.0, 3.0] } },
      { step: { out: "y", expr: "(x ** 3).sum()" } },
      { grad: { outputs: ["y"], inputs: ["x"], create_graph: true, out: ["gx"] } },
      { step: { out: "s", expr: "gx.sum()" } },
      { grad: { outputs: ["s"], inputs: ["x"], out: ["ggx"] } },
    ],
  },
};

// -- requests ------------------------------------------------------------------------------------
class ProblemError extends Error {
  constructor(problem) {
    super(problem.detail || problem.title || "request failed");
    this.problem = problem;
  }
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  const key = $("api-key").value.trim();
  if (key) headers["Authorization"] = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const text = await response.text();
  let payload = null;
  try { payload = text ? JSON.parse(text) : null; } catch (_) { payload = { title: text }; }
  if (!response.ok) {
    throw new ProblemError(Object.assign({ status: response.status }, payload || {}));
  }
  return payload;
}

const sessionPath = (suffix = "") => `/v1/sessions/${encodeURIComponent(state.session)}${suffix}`;

// -- actions -------------------------------------------------------------------------------------
function names(text) {
  return text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
}

function parseJSON(text, what) {
  try { return JSON.parse(text); } catch (err) {
    throw new ProblemError({ title: "Not JSON", code: "playground", detail: `${what}: ${err.message}` });
  }
}

async function attach() {
  const name = $("session-name").value.trim();
  try {
    await api("POST", "/v1/sessions", { name });
  } catch (err) {
    if (!(err instanceof ProblemError) || err.problem.code !== "session_exists") throw err;
    await api("GET", `/v1/sessions/${encodeURIComponent(name)}`);
  }
  state.session = name;
  localStorage.setItem("gradserve.session", name);
  setStatus(`session ${name}`);
}

async function ensureSession() {
  if (!state.session) await attach();
}

const ACTIONS = {
  async leaf(a) {
    const body = { data: a.data, dtype: a.dtype || "float32", requires_grad: a.requires_grad !== false };
    await api("PUT", sessionPath(`/tensors/${encodeURIComponent(a.name)}`), body);
    const flag = body.requires_grad ? "True" : "False";
    return `${a.name} = torch.tensor(${formatValue(a.data)}, requires_grad=${flag})`;
  },
  async step(a) {
    await api("POST", sessionPath("/ops"), a);
    return `${a.out} ${a.assign ? "(in place) " : ""}= ${a.expr}`;
  },
  async backward(a) {
    const answer = await api("POST", sessionPath("/backward"), a);
    const roots = [].concat(a.tensors);
    const args = [];
    if (a.grad_tensors) args.push(formatValue(roots.length === 1 ? a.grad_tensors[0] : a.grad_tensors));
    args.push(...keywords(a, ["retain_graph", "create_graph"]));
    if (a.inputs) args.push(`inputs=[${[].concat(a.inputs).join(", ")}]`);
    const call = roots.length === 1 ? `${roots[0]}.backward(${args.join(", ")})`
      : `torch.autograd.backward([${roots.join(", ")}]${args.length ? ", " + args.join(", ") : ""})`;
    return { text: call, grads: (answer && answer.grads) || {} };
  },
  async grad(a) {
    await api("POST", sessionPath("/grad"), a);
    const args = [`[${[].concat(a.outputs).join(", ")}]`, `[${[].concat(a.inputs).join(", ")}]`];
    if (a.grad_outputs) args.push(`grad_outputs=${formatValue(a.grad_outputs)}`);
    args.push(...keywords(a, ["retain_graph", "create_graph", "allow_unused"]));
    const bound = a.out ? `${[].concat(a.out).join(", ")} = ` : "";
    return `${bound}torch.autograd.grad(${args.join(", ")})`;
  },
  async zero_grad(a) {
    await api("POST", sessionPath("/zero_grad"), a);
    const how = a.set_to_none ? " = None" : ".zero_()";
    return a.tensors && a.tensors.length
      ? a.tensors.map((t) => `${t}.grad${how}`).join("; ")
      : `zero_grad(set_to_none=${a.set_to_none ? "True" : "False"})  # every leaf`;
  },
  async program(a) {
    const body = { steps: a.steps };
    if (a.fetch && a.fetch.length) body.fetch = a.fetch;
    const p = await api("PUT", sessionPath(`/programs/${encodeURIComponent(a.name)}`), body);
    const facts = `reads [${p.reads.join(", ")}], binds [${p.binds.join(", ")}]${p.pure ? ", pure" : ""}`;
    return `@program ${a.name}: ${p.steps} steps, ${facts}`;
  },
  async run(a) {
    const r = await api("POST", sessionPath(`/programs/${encodeURIComponent(a.program)}/run`),
      { repeat: a.repeat || 1 });
    const values = Object.entries(r.values || {})
      .map(([k, v]) => `${k} = ${formatValue(v === null ? null : v.data)}`);
    return `${a.program}.run(repeat=${a.repeat || 1}): ${r.iterations} iterations` +
      (values.length ? `; ${values.join(", ")}` : "");
  },
  async jacobian(a) {
    const body = { of: [].concat(a.of), wrt: [].concat(a.wrt), mode: a.mode || "rev" };
    const r = await api("POST", sessionPath(`/programs/${encodeURIComponent(a.program)}/jacobian`), body);
    drawJacobian(r.jacobian);
    const fn = body.mode === "fwd" ? "jacfwd" : "jacrev";
    return `torch.func.${fn}(${a.program}, argnums=[${body.wrt.join(", ")}]) of [${body.of.join(", ")}]`;
  },
  async whileNormBelow(a) {
    let rounds = 0;
    for (;;) {
      const t = await api("GET", sessionPath(`/tensors/${encodeURIComponent(a.tensor)}?values=true`));
      const norm = Math.sqrt(flatten(t.data.data).reduce((s, v) => s + Number(v) ** 2, 0));
      if (!(norm < a.limit) || rounds >= 100) return `while ${a.tensor}.data.norm() < ${a.limit}: ${rounds} rounds (norm ${norm.toFixed(2)})`;
      await api("POST", sessionPath("/ops"), a.step);
      rounds += 1;
    }
  },
};

// Python-style keyword arguments for the flags that are set: retain_graph=True
function keywords(a, flags) {
  return flags.filter((f) => a[f]).map((f) => `${f}=True`);
}

async function perform(kind, args) {
  await ensureSession();
  const line = document.createElement("li");
  line.dataset.kind = kind;
  try {
    const done = await ACTIONS[kind](args);
    const entry = typeof done === "string" ? { text: done } : done;
    const code = document.createElement("code");
    code.textContent = entry.text;
    line.append(code);
    if (entry.grads) {  // step by step: each leaf's .grad right after this backward
      const list = document.createElement("ul");
      list.className = "grads";
      for (const [name, grad] of Object.entries(entry.grads)) {
        const item = document.createElement("li");
        item.dataset.grad = name;
        item.dataset.values = JSON.stringify(grad.data);
        item.textContent = `${name}.grad = ${formatValue(grad.data)}`;
        list.append(item);
      }
      line.append(list);
    }
    $("log").appendChild(line);
    return true;
  } catch (err) {
    line.textContent = `${kind} failed: ${err.message}`;
    line.className = "failed";
    $("log").appendChild(line);
    showError(err);
    return false;
  } finally {
    await refresh();
    // a counter a test (or a curious person) can watch: one more per finished action
    document.body.dataset.actions = String(Number(document.body.dataset.actions || 0) + 1);
  }
}

// -- reading the session back --------------------------------------------------------------------
function flatten(value) {
  return Array.isArray(value) ? value.flatMap(flatten) : [value];
}

function formatNumber(v) {
  if (typeof v === "string") return v === "Infinity" ? "inf" : v === "-Infinity" ? "-inf" : v.toLowerCase();
  if (typeof v === "boolean") return v ? "True" : "False";
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-4 || a >= 1e6) ? v.toExponential(4) : String(Number(v.toFixed(4)));
}

function formatValue(value) {
  if (value === null || value === undefined) return "None";
  if (!Array.isArray(value)) return formatNumber(value);
  return "[" + value.map(formatValue).join(", ") + "]";
}

function cell(row, text, attrs = {}) {
  const td = document.createElement("td");
  td.textContent = text;
  for (const [k, v] of Object.entries(attrs)) td.setAttribute(k, v);
  row.appendChild(td);
  return td;
}

async function refresh() {
  if (!state.session) return;
  let info;
  try {
    info = await api("GET", sessionPath());
  } catch (err) {
    showError(err);
    return;
  }
  const body = $("tensors").querySelector("tbody");
  body.replaceChildren();
  const tensors = info.tensors || [];
  $("empty").hidden = tensors.length > 0;
  state.shapes = Object.fromEntries(tensors.map((t) => [t.name, t.shape]));
  for (const meta of tensors) {
    let full = meta;
    try {
      full = await api("GET", sessionPath(`/tensors/${encodeURIComponent(meta.name)}`));
    } catch (_) { /* unbound meanwhile: keep the metadata */ }
    const row = document.createElement("tr");
    row.dataset.tensor = meta.name;
    cell(row, meta.name);
    const data = full.data ? full.data.data : null;
    cell(row, formatValue(data), { class: "num", "data-field": "value", "data-values": JSON.stringify(data) });
    cell(row, meta.grad_fn || "None", { "data-field": "grad_fn", class: meta.grad_fn ? "" : "none" });
    const grad = full.grad ? full.grad.data : null;
    cell(row, formatValue(grad), { class: "num" + (grad === null ? " none" : ""), "data-field": "grad", "data-values": JSON.stringify(grad) });
    cell(row, JSON.stringify(meta.shape));
    cell(row, meta.dtype);
    cell(row, String(meta.requires_grad));
    cell(row, String(meta.is_leaf));
    cell(row, String(meta.version), { "data-field": "version" });
    body.appendChild(row);
  }
  await drawGraph();
}

async function drawGraph() {
  const headers = {};
  const key = $("api-key").value.trim();
  if (key) headers["Authorization"] = "Bearer " + key;
  const options = new URLSearchParams();
  if ($("show-accumulate").checked) options.set("accumulate_grad", "true");
  if ($("show-saved").checked) options.set("saved", "true");
  const query = options.toString() ? "?" + options.toString() : "";
  const response = await fetch(sessionPath("/graph.svg" + query), { headers });
  const box = $("graph");
  if (!response.ok) {
    box.textContent = "(no graph)";
    return;
  }
  const svg = new DOMParser().parseFromString(await response.text(), "image/svg+xml").documentElement;
  box.replaceChildren(document.importNode(svg, true));
}

// -- the Jacobian as heat maps ------------------------------------------------------------------
const SVG = "http://www.w3.org/2000/svg";

function svgElement(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// white at 0, red for positive, blue for negative, full at the largest magnitude
function heatColour(v, scale) {
  const t = scale > 0 ? Math.min(1, Math.abs(v) / scale) : 0;
  const fade = (c) => Math.round(255 - (255 - c) * t);
  return v >= 0 ? `rgb(${fade(185)},${fade(28)},${fade(28)})` : `rgb(${fade(29)},${fade(78)},${fade(216)})`;
}

function numeric(v) {
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  return v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : NaN;
}

// one heat map: rows are the output's elements, columns the input's (both flattened
// in row-major order, as torch.func.jacrev(...).reshape(out.numel(), in.numel()))
function heatmap(of, wrt, value, outShape, shape) {
  const flat = flatten(value.data).map(numeric);
  const rows = outShape.reduce((n, d) => n * d, 1);
  const cols = rows > 0 ? flat.length / rows : 0;
  const size = Math.max(6, Math.min(36, Math.floor(480 / Math.max(rows, cols, 1))));
  const pad = 4;
  const scale = flat.reduce((m, v) => (Number.isFinite(v) ? Math.max(m, Math.abs(v)) : m), 0);
  const svg = svgElement("svg", { width: cols * size + 2 * pad, height: rows * size + 2 * pad,
    viewBox: `0 0 ${cols * size + 2 * pad} ${rows * size + 2 * pad}`, role: "img",
    "data-of": of, "data-wrt": wrt, "data-rows": rows, "data-cols": cols });
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const v = flat[i * cols + j];
      const rect = svgElement("rect", { class: "cell", x: pad + j * size, y: pad + i * size,
        width: size, height: size, fill: Number.isFinite(v) ? heatColour(v, scale) : "#fde047",
        "data-row": i, "data-col": j, "data-value": String(v) });
      const title = svgElement("title", {});
      title.textContent = `∂${of}[${i}] / ∂${wrt}[${j}] = ${formatNumber(v)}`;
      rect.append(title);
      svg.append(rect);
    }
  }
  const figure = document.createElement("figure");
  figure.className = "heatmap";
  figure.dataset.of = of;
  figure.dataset.wrt = wrt;
  const caption = document.createElement("figcaption");
  caption.textContent = `∂${of}/∂${wrt}: shape ${JSON.stringify(shape)}, |max| ${formatNumber(scale)}`;
  figure.append(caption, svg);
  return figure;
}

// a JSON value's shape, from its nested lists (the wire sends it only where they lose it)
function shapeOf(value) {
  if (value.shape) return value.shape;
  const shape = [];
  for (let v = value.data; Array.isArray(v); v = v[0]) shape.push(v.length);
  return shape;
}

function drawJacobian(grid) {
  const box = $("jacobian");
  box.replaceChildren();
  for (const [of, row] of Object.entries(grid)) {
    for (const [wrt, value] of Object.entries(row)) {
      const inRank = (state.shapes[wrt] || []).length;
      const shape = shapeOf(value);
      box.append(heatmap(of, wrt, value, shape.slice(0, shape.length - inRank), shape));
    }
  }
  $("jacobian-card").hidden = false;
}

// -- errors as cards -----------------------------------------------------------------------------
function showError(err) {
  const p = err instanceof ProblemError ? err.problem : { title: "Request failed", detail: String(err) };
  const card = document.createElement("div");
  card.className = "error";
  card.dataset.code = p.code || "";
  const h = document.createElement("h3");
  h.textContent = `${p.title || "Error"}${p.status ? " · " + p.status : ""}`;
  const code = document.createElement("code");
  code.textContent = p.code || "error";
  h.append(" ", code);
  const detail = document.createElement("p");
  detail.className = "detail";
  detail.textContent = p.detail || "";
  card.append(h, detail);
  if (p.hint) {
    const hint = document.createElement("p");
    hint.className = "hint";
    hint.textContent = "Hint: " + p.hint;
    card.append(hint);
  }
  const errors = $("errors");
  errors.prepend(card);
  while (errors.children.length > 3) errors.lastChild.remove();
}

function setStatus(text) {
  $("status").textContent = text;
}

// -- wiring --------------------------------------------------------------------------------------
function formValues(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    out[el.name] = el.type === "checkbox" ? el.checked : el.value.trim();
  }
  return out;
}

function on(id, handler) {
  $(id).addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await handler(formValues(event.target));
    } catch (err) {
      showError(err);
    }
  });
}

on("leaf-form", (v) => perform("leaf", {
  name: v.name, data: parseJSON(v.values, "values"), dtype: v.dtype, requires_grad: v.requires_grad,
}));
on("step-form", (v) => perform("step", Object.assign({ out: v.out, expr: v.expr },
  v.assign ? { assign: true } : {}, v.no_grad ? { no_grad: true } : {})));
on("backward-form", (v) => {
  const body = { tensors: names(v.tensors), retain_graph: v.retain_graph, create_graph: v.create_graph };
  if (v.grad_tensors) body.grad_tensors = parseJSON(v.grad_tensors, "grad_tensors");
  if (v.inputs) body.inputs = names(v.inputs);
  return perform("backward", body);
});
on("grad-form", (v) => {
  const body = { outputs: names(v.outputs), inputs: names(v.inputs), retain_graph: v.retain_graph,
    create_graph: v.create_graph, allow_unused: v.allow_unused };
  if (v.grad_outputs) body.grad_outputs = parseJSON(v.grad_outputs, "grad_outputs");
  if (v.out) body.out = names(v.out);
  return perform("grad", body);
});
// a program's steps as typed: "out = expression" lines, or JSON items
function programSteps(text) {
  return text.split("\n").map((l) => l.trim()).filter(Boolean).map((line) => {
    if (line.startsWith("{")) return parseJSON(line, "step");
    const at = line.indexOf("=");
    if (at < 1) throw new ProblemError({ title: "Not a step", code: "playground", detail: `${line}: write out = expression` });
    return { out: line.slice(0, at).trim(), expr: line.slice(at + 1).trim() };
  });
}
on("program-form", (v) => perform("program", { name: v.name, steps: programSteps(v.steps), fetch: names(v.fetch) }));
on("run-form", (v) => perform("run", { program: v.program, repeat: Number(v.repeat) || 1 }));
on("jacobian-form", (v) => perform("jacobian", { program: v.program, of: names(v.of), wrt: names(v.wrt), mode: v.mode }));
on("zero-form", (v) => {
  const body = { set_to_none: v.set_to_none };
  if (v.tensors) body.tensors = names(v.tensors);
  return perform("zero_grad", body);
});

async function runPreset(key) {
  const preset = PRESETS[key];
  setStatus(`running: ${preset.title}`);
  for (const action of preset.actions) {
    const [kind, args] = Object.entries(action)[0];
    await perform(kind, args);
  }
  setStatus(`done: ${preset.title}`);
}

async function startOver() {
  if (state.session) {
    try { await api("DELETE", sessionPath()); } catch (err) { showError(err); }
  }
  state.session = null;
  $("log").replaceChildren();
  $("errors").replaceChildren();
  $("tensors").querySelector("tbody").replaceChildren();
  $("graph").replaceChildren();
  $("jacobian").replaceChildren();
  $("jacobian-card").hidden = true;
  $("empty").hidden = false;
  await attach();
}

function init() {
  const select = $("preset");
  for (const [key, preset] of Object.entries(PRESETS)) {
    const option = document.createElement("option");
    option.value = key;
    option.textContent = preset.title;
    select.appendChild(option);
  }
  const saved = localStorage.getItem("gradserve.session");
  if (saved) $("session-name").value = saved;
  $("attach").addEventListener("click", () => attach().then(refresh).catch(showError));
  $("run-preset").addEventListener("click", () => startOver().then(() => runPreset(select.value)).catch(showError));
  $("reset").addEventListener("click", () => startOver().catch(showError));
  for (const id of ["show-accumulate", "show-saved"]) {
    $(id).addEventListener("change", () => (state.session ? drawGraph() : null));
  }
  document.body.dataset.ready = "true";
}

init();
