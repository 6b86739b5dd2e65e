// The grading service's two pages. Every text that came from the service is put in the page with
// textContent (never as HTML); the report, an HTML page the grader wrote with everything escaped,
// is shown in a sandboxed frame, where nothing runs.
"use strict";

const $ = (id) => document.getElementById(id);

function say(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

function token() {
  const value = $("token").value.trim();
  if (value) sessionStorage.setItem("grader-token", value);
  return value;
}

async function call(path, options) {
  const answer = await fetch(path, {
    ...(options || {}),
    headers: { Authorization: "Bearer " + token(), ...((options && options.headers) || {}) },
  });
  const kind = answer.headers.get("Content-Type") || "";
  const body = kind.startsWith("application/json") ? await answer.json() : await answer.text();
  if (!answer.ok) throw new Error(typeof body === "object" && body.error ? body.error : "HTTP " + answer.status);
  return body;
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  row.appendChild(td);
  return td;
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// the student's page

async function showReport(id) {
  const html = await call(`/api/submissions/${id}/report.html`);
  $("report").srcdoc = html;
  $("report").className = "shown";
}

async function wait(id) {
  for (;;) {
    const body = await call(`/api/submissions/${id}`);
    if (body.tests) {
      const score = body.unfinished ? "unfinished" : body.score;
      say(`Submission ${id} graded: ${score}/${body.max_score}`);
      await showReport(id);
      return;
    }
    if (body.status === "done") {
      say(`Submission ${id} could not be graded: ${body.problem || "no reason given"}`, true);
      return;
    }
    say(`Submission ${id}: ${body.status}...`);
    await sleep(1000);
  }
}

async function send() {
  const file = $("file").files[0];
  if (!token()) return say("Enter your token first.", true);
  if (!file) return say("Choose your file first.", true);
  const form = new FormData();
  form.append("file", file);
  try {
    const body = await call("/api/submissions", { method: "POST", body: form });
    say(`Submission ${body.id} received; grading...`);
    await wait(body.id);
    await list();
  } catch (err) {
    say(err.message, true);
  }
}

async function list() {
  try {
    const body = await call("/api/submissions");
    const rows = $("submissions").tBodies[0];
    rows.replaceChildren();
    for (const s of body.submissions) {
      const row = document.createElement("tr");
      cell(row, s.id);
      cell(row, s.received_at);
      cell(row, s.status);
      cell(row, s.score === undefined ? "" : `${s.score === null ? "unfinished" : s.score}/${s.max_score}`);
      const view = document.createElement("button");
      view.type = "button";
      view.textContent = "report";
      view.disabled = s.score === undefined;
      view.addEventListener("click", () => showReport(s.id).catch((err) => say(err.message, true)));
      cell(row, "").appendChild(view);
      rows.appendChild(row);
    }
  } catch (err) {
    say(err.message, true);
  }
}

// the instructor's page

async function showClass() {
  try {
    const body = await call("/api/class");
    const rows = $("class").tBodies[0];
    rows.replaceChildren();
    for (const s of body.students) {
      const row = document.createElement("tr");
      cell(row, s.student);
      cell(row, s.submissions);
      cell(row, s.status);
      cell(row, s.score === undefined ? "" : `${s.score === null ? "unfinished" : s.score}/${s.max_score}`);
      rows.appendChild(row);
    }
    say(`${body.students.length} students`);
  } catch (err) {
    say(err.message, true);
  }
}

async function exportCsv() {
  try {
    const layout = $("layout").value;
    const text = await call(`/api/class.csv?layout=${encodeURIComponent(layout)}`);
    $("csv").textContent = text;
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    link.download = `grades-${layout}.csv`;
    link.click();
    say(`exported the ${layout} layout`);
  } catch (err) {
    say(err.message, true);
  }
}

window.addEventListener("DOMContentLoaded", () => {
  $("token").value = sessionStorage.getItem("grader-token") || "";
  if (document.body.dataset.page === "student") {
    $("send").addEventListener("click", send);
    $("refresh").addEventListener("click", list);
  } else {
    $("load").addEventListener("click", showClass);
    $("export").addEventListener("click", exportCsv);
  }
});
