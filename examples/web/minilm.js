// The MiniLM page (examples/web_minilm.cpp exports the model next to it): embeds the sentences of
// data.json (their token ids, tokenized by the C++ side) with all-MiniLM-L6-v2 in WebGPU and shows
// the cosine similarity of every pair. Reports the embeddings and similarities in
// window.tinytReport for tools/web/check_page.py.
import * as model from "./model.js";

const status = document.getElementById("status");
document.title = "all-MiniLM-L6-v2 in WebGPU";
document.getElementById("title").textContent = "Sentence similarity, all-MiniLM-L6-v2 in your browser's WebGPU";
try {
  const data = await (await fetch("data.json")).json();
  const started = performance.now();
  const [embeddings, similarity] = await model.run([new Int32Array(data.ids), new Float32Array(data.mask)]);
  const ms = performance.now() - started;
  const n = data.sentences.length;

  const table = document.createElement("table");
  const head = table.insertRow();
  head.insertCell().textContent = "";
  for (let j = 0; j < n; ++j) {
    const th = document.createElement("th");
    th.textContent = String(j + 1);
    head.append(th);
  }
  for (let i = 0; i < n; ++i) {
    const row = table.insertRow();
    const name = row.insertCell();
    name.textContent = `${i + 1}. ${data.sentences[i]}`;
    name.style.textAlign = "left";
    name.title = data.tokens[i].join(" ");
    for (let j = 0; j < n; ++j) {
      const s = similarity[i * n + j], cell = row.insertCell();
      cell.textContent = s.toFixed(3);
      const t = Math.max(0, Math.min(1, s));  // white at 0, deep blue at 1
      cell.style.background = `rgb(${Math.round(255 - 200 * t)}, ${Math.round(255 - 150 * t)}, 255)`;
      cell.style.color = t > 0.6 ? "#fff" : "#222";
      cell.style.minWidth = "52px";
    }
  }
  const out = document.getElementById("out");
  out.append(table);
  const tokens = document.createElement("p");
  tokens.style.color = "#555";
  tokens.textContent = "tokens: " + data.tokens.map((t, i) => `${i + 1}: ${t.join(" ")}`).join(" | ");
  out.append(tokens);
  status.textContent = `${n} sentences (${data.shape[1]} tokens each, padded), ${embeddings.length / n}-dimensional ` +
                       `embeddings in ${ms.toFixed(0)} ms (loading the model included); cosine similarity:`;
  window.tinytReport = { outputs: [Array.from(embeddings), Array.from(similarity)] };
} catch (e) {
  status.textContent = String(e);
  window.tinytReport = { error: String(e && e.stack || e) };
}
