// askpoint web inbox: live list and time left, and the form's check before
// an answer is sent. The checks and their words follow question.Field and
// question.Validate, which the terminal prompts use too; a field with a
// pattern is checked by the inbox itself, and the inbox checks the whole
// answer again before it sends anything.
"use strict";

function plural(n, unit) { return n === 1 ? "1 " + unit : n + " " + unit + "s"; }

function human(ms) {
  if (ms < 0) ms = -ms;
  const s = Math.floor(ms / 1000);
  if (s >= 3600) {
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    return h + "h" + String(m).padStart(2, "0") + "m";
  }
  if (s >= 60) return Math.floor(s / 60) + "m" + (s % 60) + "s";
  return s + "s";
}

function tick() {
  const now = Date.now();
  for (const t of document.querySelectorAll("time[data-expires]")) {
    const left = Date.parse(t.dataset.expires) - now;
    if (left <= 0) {
      t.textContent = "expired";
      const row = t.closest("tr");
      if (row) row.remove();
      continue;
    }
    t.textContent = human(left);
    t.classList.toggle("soon", left < 3600 * 1000);
  }
}

function optionsOf(el) {
  try { return JSON.parse(el.dataset.options || "[]"); } catch (e) { return []; }
}

// valueOf reads what the person entered in one field: "" when nothing.
function valueOf(el) {
  const kind = el.dataset.kind, name = el.dataset.name;
  if (kind === "choice" || kind === "boolean") {
    const checked = el.querySelector("input[type=radio]:checked");
    if (checked) return checked.value;
    const typed = el.querySelector("input.typed");
    return typed ? typed.value.trim() : "";
  }
  const input = el.querySelector("input, textarea");
  return input ? input.value.trim() : "";
}

// check returns the messages for one field, as the server would give them.
function check(el) {
  const kind = el.dataset.kind, name = el.dataset.name;
  const v = valueOf(el);
  if (v === "") return el.dataset.required === "true" ? ["This is required."] : [];
  const errs = [];
  if (kind === "choice") {
    const opts = optionsOf(el);
    const hit = opts.some(o => o.v.toLowerCase() === v.toLowerCase() || (o.l && o.l.toLowerCase() === v.toLowerCase()));
    if (!hit) errs.push("Choose one of: " + opts.map(o => o.l || o.v).join(", "));
    return errs;
  }
  if (kind === "number" || kind === "integer") {
    const text = v.replace(",", ".");
    const ok = kind === "integer" ? /^[-+]?[0-9]+$/.test(v) : /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/.test(text);
    if (!ok) return [kind === "integer" ? "expected a whole number" : "expected a number"];
    const n = Number(text), d = el.dataset;
    if (d.min !== undefined && n < Number(d.min)) errs.push("must be at least " + d.min);
    if (d.exclmin !== undefined && n <= Number(d.exclmin)) errs.push("must be greater than " + d.exclmin);
    if (d.max !== undefined && n > Number(d.max)) errs.push("must be at most " + d.max);
    if (d.exclmax !== undefined && n >= Number(d.exclmax)) errs.push("must be less than " + d.exclmax);
    return errs;
  }
  if (kind === "date") {
    if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(v) || isNaN(Date.parse(v + "T00:00:00Z"))) return ["expected a date (YYYY-MM-DD)"];
  }
  if (kind === "json") {
    try { JSON.parse(v); } catch (e) { return ["is not valid JSON"]; }
    return [];
  }
  const d = el.dataset, len = Array.from(v).length;
  if (d.pattern !== undefined) {
    // The agent's pattern is not run here: a browser's regular expressions
    // backtrack, and one pattern can hang the page. The inbox checks the
    // field (askServer), in the same words, and its answer stands.
    if (el.verdict && el.verdict.value === v) return el.verdict.errors;
    askServer(el, v);
  }
  if (d.minlength !== undefined && len < Number(d.minlength)) errs.push("must be at least " + plural(Number(d.minlength), "character") + " long");
  if (d.maxlength !== undefined && len > Number(d.maxlength)) errs.push("must be at most " + plural(Number(d.maxlength), "character") + " long");
  return errs;
}

// askServer has the inbox check what a field holds (POST ACTION/check), a
// moment after the typing stops, and shows its answer if the field still
// holds that.
function askServer(el, v) {
  if (el.asking === v) return;
  el.asking = v;
  clearTimeout(el.askTimer);
  el.askTimer = setTimeout(async () => {
    const form = el.closest("form");
    const body = new URLSearchParams({ csrf: form.elements.csrf.value, field: el.dataset.name, value: v });
    try {
      const r = await fetch(form.getAttribute("action") + "/check", { method: "POST", body, credentials: "same-origin" });
      if (!r.ok) return;
      const res = await r.json();
      el.verdict = { value: v, errors: res.errors || [] };
      if (valueOf(el) === v && (el.classList.contains("invalid") || el.dataset.touched)) show(el, check(el));
    } catch (e) {
      // Unreachable for now: the inbox checks the answer when it is sent.
    } finally {
      if (el.asking === v) el.asking = null;
    }
  }, 150);
}

function show(el, errs) {
  const ul = el.querySelector("ul.errors");
  if (!ul) return;
  ul.replaceChildren(...errs.map(m => { const li = document.createElement("li"); li.textContent = m; return li; }));
  el.classList.toggle("invalid", errs.length > 0);
  // The inputs say they are invalid, and name their errors
  // (aria-describedby in the page points at the list).
  for (const input of el.querySelectorAll("input:not([type=hidden]), textarea, fieldset")) {
    if (errs.length > 0) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }
}

function setupForm(form) {
  const fields = Array.from(form.querySelectorAll(".field[data-kind]"));
  for (const el of fields) {
    const again = () => { if (el.classList.contains("invalid") || el.dataset.touched) show(el, check(el)); };
    el.addEventListener("input", () => { el.dataset.touched = "1"; again(); });
    el.addEventListener("change", () => {
      el.dataset.touched = "1";
      if (el.dataset.kind === "choice" && el.querySelector("input[type=radio]:checked")) {
        const typed = el.querySelector("input.typed");
        if (typed && document.activeElement !== typed) typed.value = "";
      }
      again();
    });
    const typed = el.querySelector("input.typed");
    if (typed) typed.addEventListener("input", () => {
      for (const r of el.querySelectorAll("input[type=radio]")) r.checked = false;
    });
  }
  form.addEventListener("submit", ev => {
    let first = null;
    for (const el of fields) {
      const errs = check(el);
      show(el, errs);
      if (errs.length && !first) first = el;
    }
    if (first) {
      ev.preventDefault();
      form.dataset.refused = String(Number(form.dataset.refused || 0) + 1);
      const focus = first.querySelector("input:not([type=hidden]), textarea");
      if (focus) focus.focus();
    }
  });
}

// live follows the inbox's changes (server-sent events).
function live() {
  const mode = document.body.dataset.live;
  if (!mode || !window.EventSource) return;
  const base = document.body.dataset.base || "";
  // From the version the page shows: no refetch unless the inbox changed
  // since (a reconnect sends the last event's ID instead).
  const since = document.body.dataset.since;
  const es = new EventSource(base + "/events" + (since ? "?since=" + encodeURIComponent(since) : ""));
  es.addEventListener("changed", async () => {
    if (mode === "list") {
      const box = document.getElementById("items");
      const r = await fetch(base + "/items" + (box.dataset.query || ""), { credentials: "same-origin" });
      if (!r.ok) return;
      box.innerHTML = await r.text(); // rendered and escaped by the server's templates
      box.dataset.updates = String(Number(box.dataset.updates || 0) + 1);
      tick();
    } else if (mode === "item") {
      const q = document.getElementById("question");
      if (!q) return;
      const r = await fetch(q.dataset.state, { credentials: "same-origin" });
      if (!r.ok) return;
      const st = await r.json();
      if (st.open) return;
      const gone = document.getElementById("gone");
      gone.hidden = false;
      gone.textContent = "This question no longer takes answers: " + st.closed + ". ";
      if (st.next) {
        const a = document.createElement("a");
        a.href = st.next;
        a.textContent = "The task asks this now.";
        gone.append(a);
      }
      for (const f of document.querySelectorAll("form.answer, form.refuse")) f.remove();
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("answer");
  if (form) setupForm(form);
  // A refusal or a re-ask is read out first: focus moves to it.
  // Else the first field the inbox refused is.
  const alert = document.querySelector("#problem, #reask, #closed, [data-general]");
  const refused = document.querySelector(".field.invalid input:not([type=hidden]), .field.invalid textarea");
  if (alert) { alert.tabIndex = -1; alert.focus(); } else if (refused) refused.focus();
  tick();
  setInterval(tick, 1000);
  live();
});
